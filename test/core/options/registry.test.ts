/**
 * The option registry's invariants: every name leads to one option, every value a config file
 * or flag can set has somewhere to go, and defaults obey their own bounds.
 */
import { describe, expect, it } from 'vitest';
import { ALL_COMMANDS } from '../../../src/core/options/commands.ts';
import { allKeys, byFlag, byKey, byShort, fieldsUnder, optionsOf } from '../../../src/core/options/lookup.ts';
import { defaultOf, SECTIONS } from '../../../src/core/options/option.ts';
import { ALL_OPTIONS, OPTIONS } from '../../../src/core/options/registry.ts';

const dupes = (xs: readonly string[]) => xs.filter((x, i) => xs.indexOf(x) !== i);

describe('option registry', () => {
  it('within a command, every flag and short alias names one option', () => {
    for (const c of ALL_COMMANDS) {
      const options = optionsOf(c);
      expect(dupes(options.flatMap((o) => (o.flag !== undefined ? [o.flag] : []))), c).toEqual([]);
      expect(dupes(options.flatMap((o) => (o.short !== undefined ? [o.short] : []))), c).toEqual([]);
    }
  });

  it('every Flink key, current or older, names one option', () => {
    const keys = ALL_OPTIONS.flatMap((o) => [o.key, ...(o.deprecatedKeys ?? [])].filter((k) => k !== undefined));
    expect(dupes(keys as string[])).toEqual([]);
    expect(new Set(allKeys())).toEqual(new Set(keys));
  });

  it('every option can be set (a flag or a key), and a key\'s value has a field to go to in weir run', () => {
    for (const o of ALL_OPTIONS) {
      expect(o.flag !== undefined || o.key !== undefined, o.label).toBe(true);
      if (o.key !== undefined) {
        expect(o.field, o.key).toBeDefined();
        expect(o.commands, o.key).toContain('run'); // only weir run reads a config file
      }
    }
  });

  it('every command has --help (-h) and --verbose', () => {
    for (const c of ALL_COMMANDS) {
      expect(byFlag(c, 'help')).toBe(OPTIONS.help);
      expect(byShort(c, 'h')).toBe(OPTIONS.help);
      expect(byFlag(c, 'verbose')).toBe(OPTIONS.verbose);
    }
  });

  it('defaults obey their own option\'s bounds', () => {
    for (const o of ALL_OPTIONS) {
      if (o.default !== undefined) expect(o.type.check(o.default), o.label).toBeUndefined();
    }
  });

  it('run options have a docs section; labels and descriptions are one line', () => {
    for (const o of optionsOf('run')) expect(SECTIONS, o.label).toContain(o.section);
    for (const o of ALL_OPTIONS) {
      expect(o.label.trim(), o.label).not.toBe('');
      expect(o.description, o.label).not.toMatch(/\n/);
    }
  });

  it('lookups: older keys find the current option; fields under a root by their last part', () => {
    expect(byKey('state.checkpoints.dir')).toBe(OPTIONS.checkpointDir);
    expect(byKey('restart-strategy')).toBe(OPTIONS.restartStrategy);
    expect(byKey('execution.checkpointing.intervall')).toBeUndefined();
    expect(byShort('run', 'p')).toBe(OPTIONS.parallelism);
    expect(byFlag('list', 'parallelism')).toBeUndefined();
    expect([...fieldsUnder('checkpoint').keys()].sort()).toEqual(
      ['alignedCheckpointTimeout', 'dir', 'incremental', 'incrementalMaxDeltaRatio', 'incrementalMaxDeltas', 'interval', 'maxConcurrent', 'memoryThreshold', 'minPause', 'mode', 'numRetained', 'retention', 'savepointDir', 'timeout', 'tolerableFailures', 'unaligned'],
    );
    // Two keys share restart.delay (fixed-delay and failure-rate); the flag's option stands for it.
    expect(fieldsUnder('restart').get('delay')).toBe(OPTIONS.restartDelay);
  });

  it('defaultOf refuses an option without a single default', () => {
    expect(defaultOf(OPTIONS.restPort)).toBe(8081);
    expect(() => defaultOf(OPTIONS.checkpointInterval)).toThrow('option "checkpoint interval" has no default');
  });
});
