/** Text, path and switch (boolean) option values. */
import { ok, oneOf, refuse, shown, type ValueType } from './value-type.ts';
import { hasUserinfo, redactUserinfo } from '../redact.ts';

/** Config files may hold numbers where text is meant ("dir": 5); they are taken as text. */
function textOf(raw: unknown): string | undefined {
  return typeof raw === 'string' ? raw : typeof raw === 'number' ? String(raw) : undefined;
}

/** Non-empty text; `expected` says what it stands for ("latest, latest-or-empty or a path"). */
export function text(metavar: string, expected = 'a non-empty string'): ValueType<string> {
  return {
    metavar,
    takesValue: true,
    describe: () => 'string',
    decode: (raw) => {
      const t = textOf(raw);
      return t === undefined ? refuse('a string', raw) : ok(t);
    },
    check: (v) => (typeof v === 'string' && v.trim() !== '' ? undefined : { expected, got: shown(v) }),
    show: (v) => v,
  };
}

/** A URL's scheme ('s3', 'hdfs'), or undefined for a path. */
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
/** A file URI with its host: file://host/path (Flink writes file:///path, an empty host). */
const FILE_URI = /^file:\/\/([^/]*)/i;

/**
 * A path; Flink writes local ones as URIs (file:///var/chk or file:/var/chk), so those are read
 * too. `remote` lists the URL schemes the path may also take (['s3'] where checkpoint storage
 * goes): any other scheme (hdfs://, gs://, s3a://) is refused, since as a path it would become a
 * relative local directory named after it ("./s3a:/bucket/..."), its checkpoints kept on the
 * machine and looked for elsewhere. A file URI naming another host is refused for the same reason.
 */
export { redactUserinfo };

export function path(metavar = 'DIR', remote: readonly string[] = []): ValueType<string> {
  const expected = remote.length === 0 ? 'a local path' : `a local path or ${oneOf(remote.map((s) => `${s}://...`))}`;
  const hint = remote.includes('s3') ? ' (s3a:// and s3p:// are written s3:// here)' : '';
  return {
    metavar,
    takesValue: true,
    describe: () => (remote.length === 0 ? 'path' : `path or ${oneOf(remote.map((s) => `${s}:// URL`))}`),
    decode: (raw) => {
      const t = textOf(raw);
      if (t === undefined) return refuse('a string', raw);
      const host = FILE_URI.exec(t)?.[1];
      if (host !== undefined && host !== '' && host.toLowerCase() !== 'localhost') {
        return refuse(`${expected} (a file URI with a host, file://${host}/..., names another machine; write file:///path)`, raw);
      }
      return ok(host !== undefined ? t.slice(7 + host.length) : t.replace(/^file:/i, ''));
    },
    check: (v) => {
      if (typeof v !== 'string' || v.trim() === '') return { expected: 'a non-empty path', got: shown(v) };
      const scheme = SCHEME.exec(v)?.[1];
      if (scheme !== undefined && !remote.includes(scheme)) return { expected: expected + hint, got: shown(redactUserinfo(v)) };
      // A key and secret in the URL would be shown by the REST API and in storage errors.
      if (scheme !== undefined && hasUserinfo(v)) return { expected: `${expected} without credentials in it (use the AWS credential chain: AWS_ACCESS_KEY_ID, profiles)`, got: shown(redactUserinfo(v)) };
      return undefined;
    },
    show: (v) => v,
  };
}

/**
 * Where a job starts from: latest, latest-or-empty, or a checkpoint or savepoint path (local or
 * one of `remote`'s URL schemes), checked as path() checks a directory: a key and secret in an
 * s3:// URL is refused (and not echoed), as for the checkpoint directory; before, --from took
 * one as plain text and every error about it printed it.
 */
export function startSnapshot(remote: readonly string[]): ValueType<string> {
  const p = path('X', remote);
  const words = ['latest', 'latest-or-empty'];
  return {
    ...p,
    describe: (d) => `latest, latest-or-empty or a checkpoint/savepoint ${p.describe(d)}`,
    decode: (raw, d) => (typeof raw === 'string' && words.includes(raw.trim()) ? ok(raw.trim()) : p.decode(raw, d)),
    check: (v) => {
      if (typeof v === 'string' && words.includes(v)) return undefined;
      if (typeof v !== 'string' || v.trim() === '') return { expected: 'latest, latest-or-empty or a checkpoint/savepoint path', got: shown(v) };
      return p.check(v);
    },
  };
}

/** On or off: a flag's presence; true/false (or "true"/"false") in a config file. */
export function onOff(): ValueType<boolean> {
  return {
    metavar: '',
    takesValue: false,
    describe: () => 'boolean',
    decode: (raw) => {
      const b = typeof raw === 'string' ? ({ true: true, false: false } as Record<string, boolean>)[raw.trim().toLowerCase()] : raw;
      return typeof b === 'boolean' ? ok(b) : refuse('true or false', raw);
    },
    check: (v) => (typeof v === 'boolean' ? undefined : { expected: 'true or false', got: shown(v) }),
    show: (v) => String(v),
  };
}

/**
 * On or off as a value (`--record-counters off`), for a switch that is on by default and so
 * cannot be a flag's presence: on/off/true/false on the command line, true/false (or the same
 * words) in a config file.
 */
export function onOffValue(): ValueType<boolean> {
  const words: Record<string, boolean> = { on: true, off: false, true: true, false: false };
  return {
    metavar: 'on|off',
    takesValue: true,
    describe: (d) => (d === 'flink' ? 'true | false' : 'on | off'),
    decode: (raw, d) => {
      const b = typeof raw === 'string' ? words[raw.trim().toLowerCase()] : raw;
      return typeof b === 'boolean' ? ok(b) : refuse(d === 'flink' ? 'true or false' : 'on or off', raw);
    },
    check: (v) => (typeof v === 'boolean' ? undefined : { expected: 'true or false', got: shown(v) }),
    show: (v, d) => (d === 'flink' ? String(v) : v ? 'on' : 'off'),
  };
}
