/**
 * Writes events {"key", "ts", "value"} to a Kinesis stream (creating it with 2 shards if it is
 * missing), a batch of 500 every 100 ms, for the Kinesis example (examples/kinesis-windowed.ts).
 *
 *   npx tsx examples/kinesis-produce.ts <endpoint> <stream> [count=100000]
 */
import { CreateStreamCommand, DescribeStreamSummaryCommand, KinesisClient, PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { NodeHttpHandler } from '@smithy/node-http-handler';

const [endpoint, stream, countArg] = process.argv.slice(2);
if (endpoint === undefined || stream === undefined) throw new TypeError('usage: npx tsx examples/kinesis-produce.ts <endpoint> <stream> [count]');
const count = Number(countArg ?? 100_000);
const client = new KinesisClient({
  endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  requestHandler: new NodeHttpHandler({ connectionTimeout: 5000, requestTimeout: 10_000 }),
});
try {
  await client.send(new CreateStreamCommand({ StreamName: stream, ShardCount: 2 }));
} catch (e) {
  if ((e as Error).name !== 'ResourceInUseException') throw e;
}
for (let i = 0; i < 100; i++) {
  const s = await client.send(new DescribeStreamSummaryCommand({ StreamName: stream }));
  if (s.StreamDescriptionSummary?.StreamStatus === 'ACTIVE') break;
  await new Promise((r) => setTimeout(r, 100));
}
for (let i = 0; i < count; i += 500) {
  const now = Date.now();
  const Records = Array.from({ length: Math.min(500, count - i) }, (_, j) => {
    const key = `user${(i + j) % 50}`;
    return { PartitionKey: key, Data: Buffer.from(JSON.stringify({ key, ts: now - Math.floor(Math.random() * 3000), value: (i + j) % 100 })) };
  });
  const res = await client.send(new PutRecordsCommand({ StreamName: stream, Records }));
  if ((res.FailedRecordCount ?? 0) > 0) console.error(`${res.FailedRecordCount} records failed (not retried by this producer)`);
  await new Promise((r) => setTimeout(r, 100));
}
client.destroy();
console.log(`wrote ${count} events to ${stream}`);
