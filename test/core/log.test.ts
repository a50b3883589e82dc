import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/core/log.ts';

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
});
