/**
 * JSON read from a user's file (a --config file, an --args-file, a .json application spec):
 * JSON.parse, but a key given twice in one object is refused instead of the last one winning
 * silently, and a problem is reported by its place only (line and column). JSON.parse's own
 * messages quote the text around the fault, which in such a file can be a password.
 */

/** The file's problem: `message` names no content of the file, only where (and a duplicate's key). */
export class JsonTextError extends Error {
  constructor(message: string, readonly line: number, readonly column: number, readonly duplicateKey?: string) {
    super(message);
  }
}

/** One line for a file's JsonTextError: "<what> is not valid JSON: line 1, column 9: ..." or "<what>: line 2, ...". */
export function jsonTextProblem(what: string, e: JsonTextError): string {
  return e.duplicateKey !== undefined ? `${what}: ${e.message}` : `${what} is not valid JSON: ${e.message}`;
}

/** Parses `text` as JSON; throws JsonTextError ("line 3, column 7: ...") for bad JSON or a duplicate key. */
export function parseJsonText(text: string): unknown {
  new Scanner(text).document();
  return JSON.parse(text) as unknown;
}

const WS = new Set([' ', '\t', '\n', '\r']);
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
// A string token: no raw control characters, escapes as JSON has them.
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;

/** Checks the grammar and the keys; the value itself is JSON.parse's. */
class Scanner {
  private i = 0;

  constructor(private readonly text: string) {}

  document(): void {
    this.value(0);
    this.space();
    if (this.i < this.text.length) this.fail('unexpected content after the JSON value');
  }

  private value(depth: number): void {
    if (depth > 1000) this.fail('nested too deeply');
    this.space();
    const c = this.text[this.i];
    if (c === '{') return this.object(depth);
    if (c === '[') return this.array(depth);
    if (c === '"') return void this.string();
    for (const word of ['true', 'false', 'null']) {
      if (this.text.startsWith(word, this.i)) {
        this.i += word.length;
        return;
      }
    }
    NUMBER.lastIndex = this.i;
    if (NUMBER.test(this.text)) {
      this.i = NUMBER.lastIndex;
      return;
    }
    this.fail(c === undefined ? 'unexpected end of the file, a value expected' : 'a value expected (a string, number, object, list, true, false or null)');
  }

  private object(depth: number): void {
    this.i++; // {
    const keys = new Set<string>();
    this.space();
    if (this.text[this.i] === '}') {
      this.i++;
      return;
    }
    for (;;) {
      this.space();
      if (this.text[this.i] !== '"') this.fail('a key in double quotes expected');
      const at = this.i;
      const key = this.string();
      if (keys.has(key)) this.fail(`the key ${JSON.stringify(key)} is given twice in one object (JSON.parse would keep the last silently)`, at, key);
      keys.add(key);
      this.space();
      if (this.text[this.i] !== ':') this.fail('":" expected after the key');
      this.i++;
      this.value(depth + 1);
      this.space();
      const c = this.text[this.i];
      this.i++;
      if (c === '}') return;
      if (c !== ',') this.fail('"," or "}" expected', this.i - 1);
    }
  }

  private array(depth: number): void {
    this.i++; // [
    this.space();
    if (this.text[this.i] === ']') {
      this.i++;
      return;
    }
    for (;;) {
      this.value(depth + 1);
      this.space();
      const c = this.text[this.i];
      this.i++;
      if (c === ']') return;
      if (c !== ',') this.fail('"," or "]" expected', this.i - 1);
    }
  }

  /** The string token at i, decoded. */
  private string(): string {
    STRING.lastIndex = this.i;
    if (!STRING.test(this.text)) this.fail('a string with a bad character or escape, or without its closing quote');
    const token = this.text.slice(this.i, STRING.lastIndex);
    this.i = STRING.lastIndex;
    return JSON.parse(token) as string;
  }

  private space(): void {
    while (this.i < this.text.length && WS.has(this.text[this.i]!)) this.i++;
  }

  private fail(problem: string, at = this.i, duplicateKey?: string): never {
    if (at >= this.text.length && duplicateKey === undefined) problem = 'unexpected end of the file';
    const before = this.text.slice(0, Math.min(at, this.text.length));
    const line = before.split('\n').length;
    const column = before.length - before.lastIndexOf('\n');
    throw new JsonTextError(`line ${line}, column ${column}: ${problem}`, line, column, duplicateKey);
  }
}
