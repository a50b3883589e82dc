/**
 * Credentials kept out of what weir writes: logs, error messages, the exception history the
 * REST API and dashboard serve (read by any local user, without a token, as in Flink). A value
 * echoed in a message (a flag, a record that failed, a user function's error) may hold a URL
 * with a password; its user:password@ part is blanked wherever text leaves weir.
 */

/**
 * The user:password@ part of a URL's authority: up to its last @ (a password may hold @, and URL
 * parsers end the user info at the last one before the path), not past a /, ? or #.
 */
const USERINFO = /\/\/[^/?#\s]*@/g;

/** `text` with every URL's user:password@ part blanked, for messages that echo a value. */
export function redactUserinfo(text: string): string {
  return text.replace(USERINFO, '//***@');
}

/** Whether `text` holds a URL with user info (a refusal names it, redacted). */
export function hasUserinfo(text: string): boolean {
  return new RegExp(USERINFO.source).test(text);
}
