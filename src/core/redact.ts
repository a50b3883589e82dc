/**
 * Credentials kept out of what weir writes: logs, error messages, the exception history the
 * REST API and dashboard serve (read by any local user, without a token, as in Flink). A value
 * echoed in a message (a flag, a record that failed, a user function's error) may hold a URL
 * with a password; its user:password@ part is blanked wherever text leaves weir.
 */

/**
 * The user:password@ part of a URL's authority, after its scheme: up to its last @ (a password
 * may hold @, and URL parsers end the user info at the last one before the path), not past a
 * /, ?, #, whitespace, quote or angle bracket. The scheme and the quote stops keep it to URLs:
 * without them it ran across JSON fields ({"site":"https://a.com","owner":"al@b.org"} lost its
 * owner) and blanked paths (/data//backups@2024).
 */
const USERINFO = /\b([a-z][a-z0-9+.-]*:)\/\/[^/?#\s"'<>]*@/gi;

/** `text` with every URL's user:password@ part blanked, for messages that echo a value. */
export function redactUserinfo(text: string): string {
  return text.replace(USERINFO, '$1//***@');
}

/** Whether `text` holds a URL with user info (a refusal names it, redacted). */
export function hasUserinfo(text: string): boolean {
  return new RegExp(USERINFO.source, 'i').test(text);
}

/**
 * A raw input line as a message quotes it: credentials blanked first, then cut to `max`
 * characters (cut first, a password whose @ fell past the cut was no longer a URL's user info).
 */
export function quoteRaw(raw: string, max = 120): string {
  const text = redactUserinfo(raw);
  return text.length > max ? text.slice(0, max - 1) + '…' : text;
}
