// Runs one storage-queue function the way the Functions host's queue listener does: polls the queue (at once while
// it finds messages; with exponential backoff from 100 ms up to maxPollingInterval while it is empty), receives up
// to batchSize messages hidden for the invocation's lease, runs them concurrently (fetching more once no more than
// newBatchThreshold run), deletes a message whose invocation succeeded, and makes a failed one visible again after
// visibilityTimeout; a message whose invocation failed maxDequeueCount times goes to `<queue>-poison`.
import type { QueueClient } from '@azure/storage-queue';

export interface QueueTriggerSettings {
  batchSize: number;
  newBatchThreshold: number;
  maxPollingIntervalMs: number;
  /** How long a failed message stays hidden before its next attempt. */
  visibilityTimeoutMs: number;
  maxDequeueCount: number;
  messageEncoding: 'base64' | 'none';
}

/** host.json's defaults (extensions.queues) of the Functions host. */
export const HOST_QUEUE_DEFAULTS: QueueTriggerSettings = {
  batchSize: 16,
  newBatchThreshold: 8,
  maxPollingIntervalMs: 60_000,
  visibilityTimeoutMs: 0,
  maxDequeueCount: 5,
  messageEncoding: 'base64',
};

export const MIN_POLLING_INTERVAL_MS = 100;
/** A running invocation keeps its message hidden this long (host.json's functionTimeout, 10 minutes). */
const LEASE_SECONDS = 600;

/** The trigger metadata the host passes a queue function (InvocationContext.triggerMetadata). */
export interface QueueMessageMetadata {
  id: string;
  dequeueCount: number;
  insertionTime: Date;
  expirationTime: Date;
  nextVisibleTime: Date;
  popReceipt: string;
  queueTrigger: string;
}

export interface QueueTriggerOptions {
  queue: QueueClient;
  poison: QueueClient;
  settings: QueueTriggerSettings;
  /** Runs the function; rejects when it failed. */
  invoke(input: unknown, metadata: QueueMessageMetadata): Promise<unknown>;
  /** Storage faults (the poll goes on with backoff). */
  onError?(err: unknown): void;
}

export interface RunningQueueTrigger {
  /** Stops polling and waits for the invocations already running. */
  stop(): Promise<void>;
}

/** The function's input: the decoded text, parsed when it is JSON (as the Node worker does). */
export function decodeMessage(text: string, encoding: QueueTriggerSettings['messageEncoding']): { text: string; input: unknown } {
  const decoded = encoding === 'base64' ? Buffer.from(text, 'base64').toString('utf8') : text;
  try {
    return { text: decoded, input: JSON.parse(decoded) };
  } catch {
    return { text: decoded, input: decoded };
  }
}

export function startQueueTrigger(o: QueueTriggerOptions): RunningQueueTrigger {
  const s = o.settings;
  const running = new Set<Promise<void>>();
  let stopped = false;
  let wakeSleep: (() => void) | undefined;
  let ensured: Promise<unknown> | undefined;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      wakeSleep = () => {
        clearTimeout(t);
        resolve();
      };
    });
  const report = (err: unknown) => (o.onError ?? (() => undefined))(err);

  const toPoison = async (m: { messageId: string; popReceipt: string; messageText: string }) => {
    await o.poison.createIfNotExists();
    await o.poison.sendMessage(m.messageText);
    await o.queue.deleteMessage(m.messageId, m.popReceipt);
  };

  const handle = async (m: { messageId: string; popReceipt: string; messageText: string; dequeueCount: number; insertedOn: Date; expiresOn: Date; nextVisibleOn: Date }) => {
    if (m.dequeueCount > s.maxDequeueCount) return toPoison(m); // failed its attempts already (e.g. the host died mid-run)
    const { text, input } = decodeMessage(m.messageText, s.messageEncoding);
    const metadata: QueueMessageMetadata = {
      id: m.messageId,
      dequeueCount: m.dequeueCount,
      insertionTime: m.insertedOn,
      expirationTime: m.expiresOn,
      nextVisibleTime: m.nextVisibleOn,
      popReceipt: m.popReceipt,
      queueTrigger: text,
    };
    let ok = true;
    try {
      await o.invoke(input, metadata);
    } catch {
      ok = false; // the invoker logged it
    }
    if (ok) await o.queue.deleteMessage(m.messageId, m.popReceipt);
    else if (m.dequeueCount >= s.maxDequeueCount) await toPoison(m);
    else await o.queue.updateMessage(m.messageId, m.popReceipt, undefined, Math.ceil(s.visibilityTimeoutMs / 1000));
  };

  const loop = async () => {
    let delay = MIN_POLLING_INTERVAL_MS;
    while (!stopped) {
      if (running.size > s.newBatchThreshold) {
        await Promise.race(running);
        continue;
      }
      let got = 0;
      try {
        ensured ??= o.queue.createIfNotExists().catch((err: unknown) => {
          ensured = undefined;
          throw err;
        });
        await ensured;
        const r = await o.queue.receiveMessages({ numberOfMessages: Math.min(32, s.batchSize), visibilityTimeout: LEASE_SECONDS });
        got = r.receivedMessageItems.length;
        for (const m of r.receivedMessageItems) {
          const p = handle(m).catch(report);
          running.add(p);
          void p.finally(() => running.delete(p));
        }
      } catch (err) {
        report(err);
      }
      if (got > 0) {
        delay = MIN_POLLING_INTERVAL_MS;
        continue;
      }
      await sleep(delay);
      delay = Math.min(delay * 2, s.maxPollingIntervalMs);
    }
  };
  const done = loop();

  return {
    async stop() {
      stopped = true;
      wakeSleep?.();
      await done;
      await Promise.allSettled([...running]);
    },
  };
}
