/**
 * A malformed record's raw bytes as dead-letter fields, whole: `raw` is their text (UTF-8), and
 * when they are not valid UTF-8 (the text then holds U+FFFD where bytes were) `rawBase64` holds
 * the bytes exactly, so that a dead letter can be replayed as it arrived.
 */
const strict = new TextDecoder('utf-8', { fatal: true });
const lenient = new TextDecoder();

export function rawFields(data: Uint8Array): { raw: string; rawBase64?: string } {
  try {
    return { raw: strict.decode(data) };
  } catch {
    return { raw: lenient.decode(data), rawBase64: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64') };
  }
}
