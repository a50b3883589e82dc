/** weir run's settings: flags over the config file, each value at its field, runJob's options. */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/cli/config-file.ts';
import { parseCommandLine } from '../../src/cli/flags.ts';
import { mergeSettings, runOptionsOf, settingsOf } from '../../src/cli/run-settings.ts';
import { applyCheckpointSettings, DEFAULT_CHECKPOINT_CONFIG } from '../../src/checkpoint/config.ts';
import { resolveRestartStrategy } from '../../src/cluster/restart-strategy.ts';
import { optionsOf } from '../../src/core/options/lookup.ts';
import type { Option } from '../../src/core/options/option.ts';
import { readValue } from '../../src/core/options/values.ts';

const flags = (...argv: string[]) => settingsOf(parseCommandLine(argv, 'run').values);

describe('run settings', () => {
  it('flags override the config file field by field; what neither sets stays unset', () => {
    const file = parseConfig({
      'execution.checkpointing.interval': '10 s', 'execution.checkpointing.dir': '/file/chk', 'parallelism.default': 2,
      'restart-strategy.type': 'exponential-delay', 'restart-strategy.exponential-delay.initial-backoff': '2 s',
    }, 'w.json');
    const s = mergeSettings(file, flags('--checkpoint-interval', '1s', '-p', '4', '--restart-strategy', 'fixed-delay'));
    expect(s.checkpoint).toEqual({ interval: '1s', dir: '/file/chk' });
    expect(s.parallelism).toBe(4);
    expect(s.restart).toEqual({ type: 'fixed-delay', initialBackoff: '2 s' });
    expect(s.workers).toBeUndefined();
  });

  it('restart attempts or a delay without a strategy mean fixed-delay, from flags or the file', () => {
    expect(mergeSettings(undefined, flags('--restart-attempts', '3')).restart).toEqual({ type: 'fixed-delay', attempts: 3 });
    expect(mergeSettings(parseConfig({ 'restart-strategy.fixed-delay.delay': '2 s' }, 'w.json'), {}).restart).toEqual({ type: 'fixed-delay', delay: '2 s' });
    expect(mergeSettings(undefined, flags('--restart-strategy', 'none', '--restart-attempts', '3')).restart).toEqual({ type: 'none', attempts: 3 });
    expect(mergeSettings(undefined, flags()).restart).toBeUndefined();
  });

  it('runJob options: restart settings as restartStrategy; the control API on 127.0.0.1:8081 with a fallback unless a port is given', () => {
    const defaults = runOptionsOf(mergeSettings(undefined, flags()));
    expect(defaults).toEqual({ run: { checkpoint: {} }, rest: { port: 8081, address: '127.0.0.1', fallback: true } });
    const given = runOptionsOf(mergeSettings(undefined, flags('--rest-port', '0', '--rest-address', '::1', '--from', 'latest', '--claim-mode', 'claim',
      '--allow-non-restored-state', '-w', '2', '--restart-strategy', 'none')));
    expect(given).toEqual({
      run: { checkpoint: {}, from: 'latest', claimMode: 'claim', allowNonRestoredState: true, workers: 2, restartStrategy: { type: 'none' } },
      rest: { port: 0, address: '::1', fallback: false },
    });
  });

  it('every run option with a field reaches runJob, and checkpoint and restart consumers know every field', () => {
    // One value each option accepts (its default, or the first of a few plain samples).
    const sample = (o: Option) => [o.default, '1', '1 s', '/tmp/x', true, ...o.type.describe('cli').split(' | ')]
      .filter((raw) => raw !== undefined).map((raw) => readValue(o, raw, { kind: 'code', where: 'test' })).find((r) => r.ok);
    const values = new Map<Option, unknown>();
    for (const o of optionsOf('run').filter((x) => x.field !== undefined)) {
      const r = sample(o);
      expect(r, o.label).toBeDefined();
      values.set(o, r!.ok ? r!.value : undefined);
    }
    const { run: opts, rest } = runOptionsOf(mergeSettings(undefined, settingsOf(values)));
    expect(() => applyCheckpointSettings(DEFAULT_CHECKPOINT_CONFIG, opts.checkpoint!, 'test')).not.toThrow();
    expect(() => resolveRestartStrategy(opts.restartStrategy!, 'test')).not.toThrow();
    for (const o of values.keys()) {
      const [root, leaf] = o.field!.split('.');
      const at = root === 'restart' ? opts.restartStrategy : root === 'rest' ? rest : (opts as Record<string, unknown>)[root!];
      expect(leaf === undefined ? at : (at as Record<string, unknown>)[leaf], o.field).toBeDefined();
    }
  });
});
