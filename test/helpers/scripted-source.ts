/** A bounded source whose splits emit scripted records at wall-clock offsets from the reader's start (event-time tests that need splits to go quiet). */
import type { PollStatus, ReaderOutput, Source, SourceReader, SourceReaderContext, SourceSplit } from '../../src/core/source.ts';

export interface Step { at: number; split: string; ts: number; v?: unknown }
export interface ScriptSplit extends SourceSplit { pos: number; steps: Step[] }

export class ScriptedSource implements Source<{ split: string; ts: number; v?: unknown }, ScriptSplit> {
  readonly name = 'scripted';
  readonly bounded = true;
  readonly maxReaders = 1;
  constructor(private readonly ids: string[], private readonly steps: Step[], private readonly endAt: number) {}
  planSplits(): ScriptSplit[] {
    return this.ids.map((id) => ({ id, pos: 0, steps: this.steps.filter((s) => s.split === id) }));
  }
  createReader(ctx: SourceReaderContext): SourceReader<any, ScriptSplit> {
    const endAt = this.endAt;
    const t0 = ctx.now();
    let splits: ScriptSplit[] = [];
    let wake: { cancel(): void } | undefined;
    return {
      addSplits(s) { splits.push(...s.map((x) => ({ ...x }))); },
      poll(out: ReaderOutput<any>): PollStatus {
        const el = ctx.now() - t0;
        let any = false;
        for (const s of splits) {
          const o = out.forSplit(s.id);
          while (s.pos < s.steps.length && s.steps[s.pos]!.at <= el) {
            const st = s.steps[s.pos++]!;
            o.collect({ split: s.id, ts: st.ts, v: st.v }, st.ts);
            any = true;
          }
        }
        if (el >= endAt && splits.every((s) => s.pos >= s.steps.length)) return 'end';
        if (any) return 'more';
        wake?.cancel();
        wake = ctx.schedule(ctx.now() + 5, () => ctx.wake());
        return 'wait';
      },
      snapshotSplits() { return splits.map((s) => ({ ...s })); },
      close() { wake?.cancel(); },
    };
  }
}
