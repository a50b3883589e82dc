/**
 * Reading one JSON-lines file with the file source and nothing else: what reading and parsing
 * cost, and how they scale when the file is read in byte ranges by parallel subtasks.
 *   weir run bench/jobs/file-read.ts -w 2 -p 2 -- <file.jsonl> [splitSize|Infinity] [spans.jsonl]
 * Each sink subtask counts its records; with a spans file it appends one line per subtask,
 * {records, firstMs, endMs} (epoch ms of its first record and of its end of input), so the
 * reading time can be told apart from the workers' start-up.
 */
import { appendFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { defineJob } from 'weir';

const epochMs = () => performance.timeOrigin + performance.now();

function countingSink(spans: string | undefined): { invoke(v: unknown): void; finish(): void } {
  let n = 0;
  let firstMs = 0;
  return {
    invoke() {
      if (n++ === 0) firstMs = epochMs();
    },
    finish() {
      if (spans !== undefined) appendFileSync(spans, JSON.stringify({ records: n, firstMs, endMs: epochMs() }) + '\n');
    },
  };
}

export default defineJob((env, args) => {
  const [file, splitArg, spans] = args;
  if (file === undefined) throw new TypeError('usage: file-read.ts <file.jsonl> [splitSize]');
  env.setJobName('bench file read');
  env
    .fromFile(file, { name: 'file', ...(splitArg !== undefined && splitArg !== '' ? { splitSize: Number(splitArg) } : {}) })
    .addSink(countingSink(spans))
    .name('count records');
});
