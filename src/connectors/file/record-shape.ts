/**
 * Which values a columnar row format (CSV, Parquet) takes as a record: an object whose fields
 * are the columns. An array, a Map, a Set, a Date or binary data is an object too, but looking
 * its columns up finds nothing: it was written as a row of empty fields, its data lost without
 * a dead letter. Such a value is refused with the reason this gives.
 */
export function notARecord(v: unknown): string | undefined {
  if (v === null) return 'null';
  if (typeof v !== 'object') return typeof v;
  const proto: unknown = Object.getPrototypeOf(v);
  // The common case first: a plain object (or one without a prototype).
  if (proto === Object.prototype || proto === null) return undefined;
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Map) return 'a Map';
  if (v instanceof Set) return 'a Set';
  if (v instanceof Date) return 'a Date';
  if (v instanceof RegExp) return 'a RegExp';
  if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) return 'binary data';
  if (v instanceof String || v instanceof Number || v instanceof Boolean) return `a boxed ${typeof v.valueOf()}`;
  // An instance of the user's own class: its fields are the columns.
  return undefined;
}

/**
 * Whether `s` is valid Unicode (no lone surrogate): UTF-8 cannot hold one, and encoders write
 * U+FFFD in its place, a changed value. String.prototype.isWellFormed (Node 20) is not in the
 * ES2022 library types this project compiles against.
 */
export function isWellFormedText(s: string): boolean {
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}
