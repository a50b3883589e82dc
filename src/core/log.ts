/**
 * The one logger: levels, and text or JSON lines. Text lines are what a user reads, one line
 * each: `weir: <message>`, `weir: warning: <message>`, `weir: error: <message>`. JSON lines
 * carry the same message with its level, time and fields, for log collectors
 * (`--log-format json`). Every line is one line: newlines in a message are folded.
 */
import { redactUserinfo } from './redact.ts';
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = 'text' | 'json';

export type LogFields = Readonly<Record<string, string | number | boolean | null | undefined>>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** Writes a line as the job's log gives it ("weir: …", "weir: warning: …"), at the level its prefix says. */
  line(text: string): void;
  /**
   * The same logger for one part of weir that names itself: text lines read `weir <name>: …`
   * (`weir manager: serving on …`), JSON lines carry `component: <name>`; its line() also takes
   * lines already prefixed `weir <name>: `.
   */
  component(name: string): Logger;
}

export interface LoggerOptions {
  readonly level?: LogLevel;
  readonly format?: LogFormat;
  /** Where lines go (without the newline); default stderr. */
  readonly write?: (line: string) => void;
  readonly now?: () => number;
}

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };
const TEXT_PREFIX: Record<LogLevel, string> = { debug: 'weir: debug: ', info: 'weir: ', warn: 'weir: warning: ', error: 'weir: error: ' };

/**
 * Folds a message onto one line (a stack or a multi-line cause stays readable in a log), with
 * control characters written as \xNN: a message may quote input (a malformed line's text), and
 * ESC, BEL or a bare CR from a crafted file would otherwise reach the terminal reading the log
 * (retitle it, recolour it, overwrite a line with a forged "weir: ..." one). Tabs stay.
 */
export function oneLineMessage(msg: string): string {
  return escapeControls(redactUserinfo(msg.replace(/\s*\r?\n\s*/g, ' | ').trim()));
}

/** Control characters but tab and newline written as \xNN (see oneLineMessage). */
export function escapeControls(text: string): string {
  return text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Fields of a JSON log line with their strings' credentials blanked (a --verbose stack quotes the error). */
function redactedFields(fields: LogFields | undefined): LogFields | undefined {
  if (fields === undefined) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = typeof v === 'string' ? redactUserinfo(v) : v;
  return out as LogFields;
}

/** C0 controls but tab and newline, DEL and C1 controls. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

export function createLogger(o: LoggerOptions = {}): Logger {
  return loggerFor(o, undefined);
}

function loggerFor(o: LoggerOptions, component: string | undefined): Logger {
  const min = RANK[o.level ?? 'info'];
  const format = o.format ?? 'text';
  const write = o.write ?? ((l: string) => void process.stderr.write(l + '\n'));
  const now = o.now ?? Date.now;
  const prefix = component === undefined ? 'weir: ' : `weir ${component}: `;
  const emit = (level: LogLevel, msg: string, fields?: LogFields) => {
    if (RANK[level] < min) return;
    const text = oneLineMessage(msg);
    if (format === 'json') {
      write(JSON.stringify({ time: new Date(now()).toISOString(), level, msg: text, ...(component !== undefined ? { component } : {}), ...redactedFields(fields) }));
      return;
    }
    // In text, fields are for machines: only a stack (asked for with --verbose) is shown, below the line.
    write(component === undefined ? TEXT_PREFIX[level] + text : prefix + TEXT_PREFIX[level].slice('weir: '.length) + text);
    const stack = fields?.['stack'];
    if (typeof stack === 'string') write(escapeControls(redactUserinfo(stack))); // multi-line on purpose, but no terminal controls
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    line: (text) => {
      const body = text.startsWith(prefix) ? text.slice(prefix.length) : text;
      if (body.startsWith('error: ')) emit('error', body.slice('error: '.length));
      else if (body.startsWith('warning: ')) emit('warn', body.slice('warning: '.length));
      else emit('info', body);
    },
    component: (name) => loggerFor(o, name),
  };
}

let current: Logger = createLogger();

/** The process's logger (the CLI configures it from --log-level / --log-format). */
export function logger(): Logger {
  return current;
}

export function setLogger(l: Logger): void {
  current = l;
}
