/**
 * The data plane between two threads (here two ends of one MessageChannel): batches, events and
 * credits arrive in the order they were sent, whether taken between scheduler steps (poll) or
 * by the port's listener, and never twice; credits come back within the window.
 */
import { MessageChannel } from 'node:worker_threads';
import { setImmediate as tick } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { DataPlane } from '../../src/cluster/data-plane.ts';
import { decodeBatch } from '../../src/core/codec.ts';
import { InputChannel, OutputChannel } from '../../src/runtime/channels/channel.ts';
import { isEvent, watermark, type ChannelElement } from '../../src/runtime/events.ts';

const planes: DataPlane[] = [];
afterEach(() => {
  for (const p of planes.splice(0)) p.close();
});

/** Producer plane (worker 0) and consumer plane (worker 1) joined by one channel id 7. */
function pair(credits: number) {
  const { port1, port2 } = new MessageChannel();
  const producer = new DataPlane();
  const consumer = new DataPlane();
  planes.push(producer, consumer);
  producer.addPeer(1, port1);
  consumer.addPeer(0, port2);
  const out = new OutputChannel(7, credits, producer.transmitTo(1, 7));
  producer.registerOutput(out);
  const input = new InputChannel(7, 0, consumer.creditTo(0, 7), decodeBatch);
  consumer.registerInput(input);
  const drain = (): number[] => {
    const seen: number[] = [];
    for (let el = input.poll(); el !== undefined; el = input.poll()) seen.push(...elementIds(el));
    return seen;
  };
  return { producer, consumer, out, input, drain };
}

/** Batches carry their record ids; a watermark is written as -timestamp. */
function elementIds(el: ChannelElement): number[] {
  if (isEvent(el)) return el.kind === 'watermark' ? [-el.timestamp] : [];
  return el.values.map((v) => (v as { id: number }).id);
}

const batchOf = (ids: number[]) => ({ values: ids.map((id) => ({ id })), timestamps: ids.map(() => 0) });

describe('data plane between threads', () => {
  it('poll() takes what was sent without waiting for the event loop, in order, and the listener does not deliver it again', async () => {
    const { consumer, out, input, drain } = pair(8);
    out.send(batchOf([1, 2]));
    out.send(watermark(3));
    out.send(batchOf([4]));
    expect(input.isEmpty()).toBe(true); // no event-loop turn yet: the listener has not run
    consumer.poll();
    const first = drain();
    out.send(batchOf([5]));
    consumer.poll();
    expect([...first, ...drain()]).toEqual([1, 2, -3, 4, 5]);
    await tick();
    await tick();
    expect(input.isEmpty()).toBe(true);
  });

  it('without poll the listener delivers everything, in order', async () => {
    const { out, drain } = pair(8);
    const sent: number[] = [];
    for (let i = 0; i < 20; i++) {
      out.send(batchOf([i * 2, i * 2 + 1]));
      sent.push(i * 2, i * 2 + 1);
      if (i % 5 === 0) {
        out.send(watermark(1000 + i));
        sent.push(-(1000 + i));
      }
    }
    const seen: number[] = [];
    for (let k = 0; k < 50 && seen.length < sent.length; k++) {
      await tick();
      seen.push(...drain());
    }
    // Only the credit window (8 batches) went out: the rest waits for credit, which the drain returns.
    expect(seen).toEqual(sent.slice(0, seen.length));
  });

  it('credits come back through poll, so a producer out of credit resumes within a step', () => {
    const { producer, consumer, out, input } = pair(2);
    out.send(batchOf([1]));
    out.send(batchOf([2]));
    out.send(batchOf([3])); // no credit left: backlog
    expect(out.isAvailable()).toBe(false);
    // Synchronously, as between two scheduler steps on each side (messages still have to cross
    // the channel, which the test cannot force: poll until they did, boundedly).
    const deadline = Date.now() + 5000;
    while (input.size() < 2 && Date.now() < deadline) consumer.poll();
    expect(input.size()).toBe(2);
    input.poll();
    input.poll(); // the second credit reaches the data plane's batch of 2 and is sent at once
    while (!out.isAvailable() && Date.now() < deadline) producer.poll();
    expect(out.isAvailable()).toBe(true);
    while (input.size() < 1 && Date.now() < deadline) consumer.poll();
    expect(elementIds(input.poll()!)).toEqual([3]);
  });
});

describe('a batch that cannot cross threads', () => {
  it('fails with an error saying what failed and what records may hold (before: the codec\'s words only, e.g. "Unknown type: symbol")', () => {
    const { out } = pair(8);
    expect(() => out.send({ values: [{ id: 1, tag: Symbol('x') }, { id: 2 }], timestamps: [0, 0] })).toThrow(
      /^a batch of 2 records for another worker thread \(channel 7\) cannot be encoded: .*symbol.*; records that cross threads must be plain data/,
    );
  });
});
