// The local storage-queue trigger against Azurite: a message runs once and is deleted; a failing one comes back
// after the visibility timeout with its dequeue count up, and after maxDequeueCount failures sits on
// `<queue>-poison`; an empty queue is polled with backoff up to maxPollingInterval; host.json is read as the host reads it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { QueueServiceClient } from '@azure/storage-queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAzurite, type Azurite } from '../../local/azurite';
import { decodeMessage, HOST_QUEUE_DEFAULTS, startQueueTrigger, type QueueMessageMetadata } from '../../local/queue-trigger';
import { readQueueSettings } from '../../local/settings';
import { eventually, sleep } from '../support/messages';

let azurite: Azurite;
let service: QueueServiceClient;
beforeAll(async () => {
  azurite = await startAzurite({ location: 'memory' });
  service = QueueServiceClient.fromConnectionString(azurite.connectionString);
}, 30_000);
afterAll(() => azurite?.stop());

const settings = { ...HOST_QUEUE_DEFAULTS, maxPollingIntervalMs: 400, visibilityTimeoutMs: 1000, maxDequeueCount: 2, batchSize: 1, newBatchThreshold: 0 };
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');

describe('local queue trigger', () => {
  it('runs a message with its decoded JSON and trigger metadata, then deletes it', async () => {
    const queue = service.getQueueClient('qt-ok');
    await queue.create();
    const seen: [unknown, QueueMessageMetadata][] = [];
    const t = startQueueTrigger({ queue, poison: service.getQueueClient('qt-ok-poison'), settings, invoke: async (i, m) => void seen.push([i, m]) });
    await queue.sendMessage(b64({ queues: ['worker'] }));
    await eventually(() => seen.length === 1 || undefined, 'the invocation');
    await t.stop();
    expect(seen[0]![0]).toEqual({ queues: ['worker'] });
    expect(seen[0]![1]).toMatchObject({ dequeueCount: 1, queueTrigger: '{"queues":["worker"]}' });
    expect((await queue.getProperties()).approximateMessagesCount).toBe(0);
  });

  it('a failing message comes back after the visibility timeout and goes to the poison queue after maxDequeueCount', async () => {
    const queue = service.getQueueClient('qt-fail');
    const poison = service.getQueueClient('qt-fail-poison');
    await queue.create();
    const attempts: { count: number; at: number }[] = [];
    const t = startQueueTrigger({
      queue,
      poison,
      settings,
      invoke: async (_i, m) => {
        attempts.push({ count: m.dequeueCount, at: Date.now() });
        throw new Error('boom');
      },
    });
    await queue.sendMessage(b64({ queues: ['worker'] }));
    await eventually(async () => ((await poison.exists()) && (await poison.peekMessages()).peekedMessageItems.length === 1) || undefined, 'the poison message', 10_000);
    await t.stop();
    expect(attempts.map((a) => a.count)).toEqual([1, 2]);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(900); // hidden for visibilityTimeout
    const [p] = (await poison.peekMessages()).peekedMessageItems;
    expect(decodeMessage(p!.messageText, 'base64').input).toEqual({ queues: ['worker'] });
    expect((await queue.getProperties()).approximateMessagesCount).toBe(0);
  });

  it('polls an empty queue with backoff: a message sent after a quiet spell waits at most maxPollingInterval', async () => {
    const queue = service.getQueueClient('qt-idle');
    await queue.create();
    let ranAt = 0;
    const t = startQueueTrigger({ queue, poison: service.getQueueClient('qt-idle-poison'), settings, invoke: async () => void (ranAt = Date.now()) });
    await sleep(2000); // backed off to the 400 ms ceiling
    const sentAt = Date.now();
    await queue.sendMessage(b64({ queues: [] }));
    await eventually(() => ranAt || undefined, 'the invocation');
    await t.stop();
    expect(ranAt - sentAt).toBeLessThan(400 + 300);
  });

  it('reads host.json extensions.queues over the host defaults', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hostjson-'));
    writeFileSync(path.join(dir, 'host.json'), JSON.stringify({ extensions: { queues: { maxPollingInterval: '00:00:02.5', batchSize: 4 } } }));
    expect(readQueueSettings(dir)).toEqual({ ...HOST_QUEUE_DEFAULTS, maxPollingIntervalMs: 2500, batchSize: 4, newBatchThreshold: 2 });
    expect(readQueueSettings(path.join(__dirname, '..', '..'))).toMatchObject({ batchSize: 1, newBatchThreshold: 0, maxPollingIntervalMs: 500, messageEncoding: 'base64' });
  });
});
