/**
 * The input gate's ready queue with channels in one thread and one credit: taking a batch returns
 * the credit at once, the producer pushes its next batch and the channel queues itself again,
 * before poll() looks at it. It was queued a second time there, one entry more per batch, so an
 * element of another channel (a barrier, a watermark) waited behind all of them.
 */
import { describe, expect, it } from 'vitest';
import { InputChannel, OutputChannel } from '../../src/runtime/channels/channel.ts';
import { InputGate } from '../../src/runtime/input-gate.ts';

function pair(id: number, credits: number): { out: OutputChannel; input: InputChannel } {
  let input: InputChannel | undefined;
  const out = new OutputChannel(id, credits, (el) => input!.push(el));
  input = new InputChannel(id, id, () => out.addCredit(1));
  return { out, input };
}

describe('input gate, channels in one thread', () => {
  for (const credits of [1, 2, 4]) {
    it(`credits ${credits}: a channel kept full by its producer does not crowd out another channel's barrier (before, with 1 credit: 1,002 polls after 1,000 batches)`, () => {
      const a = pair(0, credits);
      const b = pair(1, credits);
      const gate = new InputGate(0, [a.input, b.input]);
      let next = 0;
      const refill = () => {
        while (a.out.backlogLength() < 2) a.out.send({ values: [next++], timestamps: [0] });
      };
      refill();
      for (let k = 0; k < 1000; k++) {
        gate.poll();
        refill();
      }
      b.out.send({ kind: 'barrier', checkpointId: 1, timestamp: 0, type: 'checkpoint', location: '' });
      let polls = 0;
      for (;;) {
        const el = gate.poll() as { kind?: string } | undefined;
        refill();
        polls++;
        if (el?.kind === 'barrier' || polls > 2000) break;
      }
      expect(polls).toBeLessThanOrEqual(2);
    });
  }
});
