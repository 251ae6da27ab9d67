// A forward target answering 429 or 503 with Retry-After backs the queue off (issue 17 §2): the header's two forms,
// the forwarder's BackOffError, and the dispatcher's settlement — the queue held on every instance for that long
// (backOffQueue), the job released (NAK) with that delay, keeping the one attempt its claim counted.

import { describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../shared/log';
import { forwardingHandler } from '../../shared/handlers/forwarder';
import type { HttpPost } from '../../shared/handlers/http-post';
import { MAX_RETRY_AFTER_MS, retryAfterMs } from '../../shared/handlers/retry-after';
import { AckBatcher } from '../../shared/transport/ack-batcher';
import { dispatchDelivery, type DispatchDeps } from '../../shared/transport/dispatcher';
import { BackOffError, type Job, type JobHandler } from '../../shared/transport/job';
import type { ClaimedMessage } from '../../shared/transport/types';

const job: Job = { id: 'j1', queue: 'worker', payload: {}, payloadJson: '{}', headers: {}, attempt: 1, createdAt: new Date() };
const ctx = { signal: new AbortController().signal, log: silentLogger };
const answering = (status: number, retryAfter?: string): HttpPost => async () => ({ status, statusText: 'Busy', text: 'slow down', ...(retryAfter === undefined ? {} : { retryAfter }) });

describe('Retry-After', () => {
  const now = Date.parse('2026-12-02T10:00:00Z');
  it('reads delay-seconds and an HTTP date (a past date is 0), capped at an hour', () => {
    expect(retryAfterMs('3', now)).toBe(3000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Wed, 02 Dec 2026 10:00:05 GMT', now)).toBe(5000);
    expect(retryAfterMs('Wed, 02 Dec 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('999999', now)).toBe(MAX_RETRY_AFTER_MS);
  });
  it('an absent or unreadable value is no backoff request', () => {
    for (const v of [undefined, '', '-1', '1.5', 'soon', '1e3']) expect(retryAfterMs(v, now), String(v)).toBeUndefined();
  });
});

describe('forwarder and Retry-After', () => {
  it('429 and 503 with Retry-After are a BackOffError carrying the delay', async () => {
    for (const status of [429, 503]) {
      const err = await forwardingHandler('http://target/jobs', 1000, answering(status, '2'))(job, ctx).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BackOffError);
      expect((err as BackOffError).delayMs).toBe(2000);
      expect((err as Error).message).toMatch(new RegExp(`answered ${status} Busy with Retry-After 2: slow down`));
    }
  });
  it('without the header, or on another status, it is a plain failure', async () => {
    for (const post of [answering(429), answering(503, 'later'), answering(500, '2')]) {
      const err = await forwardingHandler('http://target/jobs', 1000, post)(job, ctx).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(BackOffError);
    }
  });
});

describe('dispatcher and a BackOffError', () => {
  function setup(attempt: number, maxDeliveryAttempts = 5) {
    const store = {
      renew: vi.fn(async () => true as const),
      ack: vi.fn(async (_b: readonly unknown[]) => 1),
      release: vi.fn(async () => true),
      deadLetter: vi.fn(async () => true),
      hasMessage: vi.fn(async () => false),
      backOffQueue: vi.fn(async () => new Date()),
    };
    const deps: DispatchDeps = {
      store,
      acks: new AckBatcher((b) => store.ack(b), 16, silentLogger),
      policy: { maxDeliveryAttempts, redeliveryDelayMs: 5000, redeliveryMaxDelayMs: 300_000, deadLetter: true },
      lockTimeoutMs: 30_000,
      deadLetterQueue: 'dlq',
      logger: silentLogger,
    };
    const msg: ClaimedMessage = { id: 'j1', lockId: 'l1', queue: 'worker', payloadJson: '{}', headers: {}, attempt, createdAt: new Date() };
    return { store, deps, msg };
  }
  const throttled: JobHandler = async () => {
    throw new BackOffError('answered 429', 1500);
  };

  it('holds the queue back for the delay and NAKs the job with it: no extra attempt, no redelivery backoff', async () => {
    const { store, deps, msg } = setup(2);
    expect(await dispatchDelivery(msg, throttled, deps)).toBe('retried');
    expect(store.backOffQueue).toHaveBeenCalledWith('worker', 1500);
    expect(store.release).toHaveBeenCalledWith(msg, 1500);
    expect(store.deadLetter).not.toHaveBeenCalled();
  });

  it('a backoff the store cannot record still releases the job with the delay', async () => {
    const { store, deps, msg } = setup(1);
    store.backOffQueue.mockRejectedValueOnce(new Error('down'));
    expect(await dispatchDelivery(msg, throttled, deps)).toBe('retried');
    expect(store.release).toHaveBeenCalledWith(msg, 1500);
  });

  it('on its last allowed attempt the job is dead-lettered like any failure; the queue is held all the same', async () => {
    const { store, deps, msg } = setup(5, 5);
    expect(await dispatchDelivery(msg, throttled, deps)).toBe('dead-lettered');
    expect(store.backOffQueue).toHaveBeenCalledWith('worker', 1500);
    expect(store.release).not.toHaveBeenCalled();
  });
});
