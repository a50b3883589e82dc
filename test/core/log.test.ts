import { describe, expect, it } from 'vitest';
import { createLogger, oneLineMessage } from '../../src/core/log.ts';

function capture(o: Parameters<typeof createLogger>[0] = {}) {
  const lines: string[] = [];
  return { lines, log: createLogger({ ...o, write: (l) => lines.push(l), now: () => Date.UTC(2026, 0, 2, 3, 4, 5) }) };
}

describe('the logger', () => {
  it('text: one line per message with the level in the prefix; below the level nothing', () => {
    const { lines, log } = capture({ level: 'info' });
    log.debug('hidden');
    log.info('job started', { jobId: 'abc' });
    log.warn('two\nlines');
    log.error('bad');
    expect(lines).toEqual(['weir: job started', 'weir: warning: two | lines', 'weir: error: bad']);
  });

  it('json: time, level, message and fields, one object per line', () => {
    const { lines, log } = capture({ format: 'json', level: 'warn' });
    log.info('not written');
    log.error('job failed:\n  at x', { jobId: 'abc', attempt: 2 });
    expect(lines.map((l) => JSON.parse(l))).toEqual([{ time: '2026-01-02T03:04:05.000Z', level: 'error', msg: 'job failed: | at x', jobId: 'abc', attempt: 2 }]);
  });

  it('job log lines are classified by their prefix', () => {
    const { lines, log } = capture({ format: 'json' });
    log.line('weir: restarting the job in 1 s');
    log.line('weir: warning: history line 3 unreadable');
    log.line('weir: error: it broke');
    log.line('no prefix');
    expect(lines.map((l) => { const o = JSON.parse(l); return [o.level, o.msg]; })).toEqual([
      ['info', 'restarting the job in 1 s'], ['warn', 'history line 3 unreadable'], ['error', 'it broke'], ['info', 'no prefix'],
    ]);
  });

  it('text with --verbose: the stack goes below the one-line message', () => {
    const { lines, log } = capture();
    log.error('failed', { stack: 'Error: failed\n    at f (x.ts:1:1)' });
    expect(lines).toEqual(['weir: error: failed', 'Error: failed\n    at f (x.ts:1:1)']);
  });

  it('a component logger: text lines name it (weir manager: …), JSON lines carry it; its line() takes its own prefix', () => {
    const text = capture();
    const m = text.log.component('manager');
    m.info('serving on http://127.0.0.1:8090');
    m.line('weir manager: app-a: deleted');
    m.warn('slow');
    expect(text.lines).toEqual(['weir manager: serving on http://127.0.0.1:8090', 'weir manager: app-a: deleted', 'weir manager: warning: slow']);
    const json = capture({ format: 'json', level: 'warn' });
    const j = json.log.component('manager');
    j.info('not written');
    j.line('weir manager: error: reconciliation failed');
    expect(json.lines.map((l) => JSON.parse(l))).toEqual([{ time: '2026-01-02T03:04:05.000Z', level: 'error', msg: 'reconciliation failed', component: 'manager' }]);
  });

  it('control characters from quoted input are written as \\xNN, in the line and in the stack below it; tabs stay', () => {
    // A malformed line's raw text is quoted in messages: ESC, BEL and a bare CR from a crafted
    // file would retitle or recolour the terminal, or overwrite the line with a forged one.
    const raw = 'x":"\u001b]0;PWNED\u0007\u001b[31mFAKE\u001b[0m\r weir: info: forged\u009b\u007f\tend';
    expect(oneLineMessage(`malformed record (raw: ${raw})`)).toBe('malformed record (raw: x":"\\x1b]0;PWNED\\x07\\x1b[31mFAKE\\x1b[0m\\x0d weir: info: forged\\x9b\\x7f\tend)');
    const { lines, log } = capture();
    log.error(`bad \u001b[2J`, { stack: `Error: bad \u001b[2J\n    at f (x.ts:1:1)` });
    expect(lines).toEqual(['weir: error: bad \\x1b[2J', 'Error: bad \\x1b[2J\n    at f (x.ts:1:1)']);
  });

  it('json: string fields (a --verbose stack) have URLs\' passwords blanked, as the message has', () => {
    const { lines, log } = capture({ format: 'json' });
    log.error('cannot reach redis://:pw1@cache:6379', { stack: 'Error: cannot reach redis://:pw1@cache:6379\n    at f (x.ts:1:1)', attempt: 2 });
    expect(lines[0]).not.toContain('pw1');
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'cannot reach redis://***@cache:6379', stack: 'Error: cannot reach redis://***@cache:6379\n    at f (x.ts:1:1)', attempt: 2 });
  });
});
