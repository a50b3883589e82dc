/**
 * The one module that owns every storage name: the names it builds are the ones weir has
 * always written (checked against the golden savepoint from an earlier weir), what it parses
 * round-trips, and references join the same way for local paths and URLs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseMetadata } from '../../src/checkpoint/metadata.ts';
import {
  baseNameOf, checkpointDirName, checkpointReference, childReference, HISTORY_FILE, ID_RECORD_FILE, isPlainName, isStateFileName,
  jobDirReference, keyedBlockName, METADATA_FILE, metadataReference, normalizeReference, parentReference, parseBlockName,
  parseCheckpointDirName, parseCheckpointReference, savepointDirName, schemeOf, SHARED_DIR, stateFileName, stateFileReference,
  TASK_OWNED_DIR, tempReference, timerBlockName,
} from '../../src/checkpoint/names.ts';
import { openStateFile, StateFileReader } from '../../src/checkpoint/state-file.ts';
import { storageResolver } from '../../src/checkpoint/storage-resolver.ts';

const GOLDEN = fileURLToPath(new URL('../fixtures/savepoints/app-v1', import.meta.url));

describe('the layout weir has always written', () => {
  it('fixed names: _metadata, shared/, taskowned/, the history and the id record', () => {
    expect([METADATA_FILE, SHARED_DIR, TASK_OWNED_DIR, HISTORY_FILE, ID_RECORD_FILE]).toEqual(['_metadata', 'shared', 'taskowned', 'checkpoint-history.jsonl', 'last-checkpoint-id']);
    expect(tempReference('/c/job/chk-3/_metadata')).toBe('/c/job/chk-3/_metadata.tmp');
  });

  it('the golden savepoint holds exactly _metadata and the state files the names module names', () => {
    const m = parseMetadata(readFileSync(join(GOLDEN, METADATA_FILE), 'utf8'), 'golden');
    const named = m.operators.flatMap((o) => o.subtasks.filter((s) => s.file !== undefined).map((s) => stateFileName(o.id, s.subtask)));
    expect(m.operators.flatMap((o) => o.subtasks.flatMap((s) => (s.file === undefined ? [] : [s.file])))).toEqual(named);
    expect(readdirSync(GOLDEN).sort()).toEqual([METADATA_FILE, ...named].sort());
    for (const f of named) expect(isStateFileName(f)).toBe(true);
  });

  it('every block of the golden state files parses, as keyed state or timers of a key group in range', async () => {
    const m = parseMetadata(readFileSync(join(GOLDEN, METADATA_FILE), 'utf8'), 'golden');
    let blocks = 0;
    for (const op of m.operators) {
      for (const s of op.subtasks) {
        if (s.file === undefined) continue;
        const input = await openStateFile(storageResolver().workerView, stateFileReference(GOLDEN, s.file), s.fileSize);
        try {
          const r = await StateFileReader.open(input);
          for (const b of r.index.blocks) {
            const p = parseBlockName(b.name);
            expect(p.kind, b.name).not.toBe('unknown');
            if (p.kind === 'unknown') continue;
            expect(p.keyGroup).toBeGreaterThanOrEqual(s.keyGroupRange!.start);
            expect(p.keyGroup).toBeLessThanOrEqual(s.keyGroupRange!.end);
            expect(p.kind === 'keyed' ? keyedBlockName(p.state, p.keyGroup) : timerBlockName(p.keyGroup)).toBe(b.name);
            blocks++;
          }
        } finally {
          await input.close();
        }
      }
    }
    expect(blocks).toBeGreaterThan(0);
  });
});

describe('checkpoint, savepoint and state file names', () => {
  it('chk-<n> round-trips; anything else is not a checkpoint directory', () => {
    for (const id of [1, 7, 10, 123456789]) expect(parseCheckpointDirName(checkpointDirName(id))).toBe(id);
    for (const name of ['chk-', 'chk-x', 'chk-99x', 'chk--1', 'xchk-1', 'chk-1/', 'savepoint-1', '_metadata']) expect(parseCheckpointDirName(name), name).toBeUndefined();
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => checkpointDirName(bad)).toThrow(RangeError);
  });

  it('state files: the first 16 characters of the operator id and the subtask', () => {
    expect(stateFileName('f28f50b6be371ccc0123456789abcdef', 1)).toBe('f28f50b6be371ccc-1.state');
    expect(stateFileName('short', 0)).toBe('short-0.state');
    expect(() => stateFileName('op', -1)).toThrow(RangeError);
    expect(isStateFileName('a/b.state')).toBe(false);
  });

  it('savepoints: savepoint-<6 of the job id>-<hex>', () => {
    expect(savepointDirName('21a4c7d8e9f0', '1ec3f5df6264')).toBe('savepoint-21a4c7-1ec3f5df6264');
    expect(() => savepointDirName('21a4c7', '../x')).toThrow(RangeError);
  });

  it('blocks: k/<state>/<kg> (state names may contain slashes) and t/<kg>', () => {
    expect(keyedBlockName('count', 5)).toBe('k/count/5');
    expect(parseBlockName('k/a/b/c/17')).toEqual({ kind: 'keyed', state: 'a/b/c', keyGroup: 17 });
    expect(parseBlockName(timerBlockName(3))).toEqual({ kind: 'timers', keyGroup: 3 });
    expect(parseBlockName('x/1')).toEqual({ kind: 'unknown' });
    expect(parseBlockName('k/')).toEqual({ kind: 'unknown' });
  });
});

describe('references', () => {
  it('local paths and URLs join, split and normalize alike', () => {
    expect(schemeOf('/tmp/chk')).toBeUndefined();
    expect(schemeOf('memory://weir/job')).toBe('memory');
    expect(schemeOf('s3://bucket/prefix')).toBe('s3');
    expect(childReference('/tmp/chk', 'job')).toBe('/tmp/chk/job');
    expect(childReference('memory://weir/', 'job')).toBe('memory://weir/job');
    expect(parentReference('memory://weir/job/chk-1')).toBe('memory://weir/job');
    expect(parentReference('memory://weir')).toBe('memory://weir');
    expect(parentReference('/tmp/chk/job')).toBe('/tmp/chk');
    expect(baseNameOf('memory://weir/job/chk-1/')).toBe('chk-1');
    expect(normalizeReference('relative/dir').startsWith('/')).toBe(true);
    expect(normalizeReference('memory://weir/x//')).toBe('memory://weir/x');
    expect(() => childReference('/tmp', '../etc')).toThrow(RangeError);
    expect(() => childReference('/tmp', '/etc')).toThrow(RangeError);
    expect(isPlainName('a.state')).toBe(true);
    for (const bad of ['', '.', '..', 'a/b', 'a\\b']) expect(isPlainName(bad), bad).toBe(false);
  });

  it('<root>/<job>/chk-<n> is built and recognised under its own root only', () => {
    for (const root of ['/tmp/chk', 'memory://weir']) {
      const ref = checkpointReference(root, 'j1', 4);
      expect(ref).toBe(childReference(jobDirReference(root, 'j1'), 'chk-4'));
      expect(metadataReference(ref)).toBe(childReference(ref, '_metadata'));
      expect(parseCheckpointReference(root, ref)).toEqual({ jobId: 'j1', checkpointId: 4 });
      expect(parseCheckpointReference(root, childReference(ref, 'x'))).toBeUndefined();
      expect(parseCheckpointReference(root, childReference(root, 'savepoint-1'))).toBeUndefined();
    }
    expect(checkpointReference('/tmp/chk', 'j1', 4)).toBe(join('/tmp/chk', 'j1', 'chk-4'));
    expect(parseCheckpointReference('/other', checkpointReference('/tmp/chk', 'j1', 4))).toBeUndefined();
  });
});
