/** Text, path and switch (boolean) option values. */
import { ok, refuse, shown, type ValueType } from './value-type.ts';

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

/** A local path; Flink writes them as URIs (file:///var/chk or file:/var/chk), so those are read too. */
export function path(metavar = 'DIR'): ValueType<string> {
  return {
    metavar,
    takesValue: true,
    describe: () => 'path',
    decode: (raw) => {
      const t = textOf(raw);
      return t === undefined ? refuse('a string', raw) : ok(t.replace(/^file:(\/\/)?/, ''));
    },
    check: (v) => (typeof v === 'string' && v.trim() !== '' ? undefined : { expected: 'a non-empty path', got: shown(v) }),
    show: (v) => v,
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
