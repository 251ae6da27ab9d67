// The drain loop's options for unit tests over an in-memory store: small batches, short idle and poll waits, a
// queue 'q' with a no-op handler; each test overrides what it is about.
import { silentLogger } from '../../shared/log';
import type { DrainOptions } from '../../shared/transport/drain-loop';
import type { TransportStore } from '../../shared/transport/types';
import { WakeSignal } from '../../shared/transport/wake';
import type { MemoryStore } from './memory-store';

export function drainOptions(store: MemoryStore, extra: Partial<DrainOptions> = {}): DrainOptions {
  return {
    store: store as unknown as TransportStore,
    queue: 'q',
    handler: async () => undefined,
    policy: { maxDeliveryAttempts: 3, redeliveryDelayMs: 0, redeliveryMaxDelayMs: 0 },
    deadLetterQueue: 'dlq',
    lockTimeoutMs: 30_000,
    batchSize: 4,
    concurrency: 4,
    // long: a test ends its drain by idle or by a budget of its own; this one only bounds a drain that never
    // idles, and a CI machine starved for seconds must not end a drain before its work (it did, once)
    budgetMs: 30_000,
    idleGraceMs: 100,
    emptyPollDelayMs: 20,
    wake: new WakeSignal(),
    logger: silentLogger,
    ...extra,
  };
}
