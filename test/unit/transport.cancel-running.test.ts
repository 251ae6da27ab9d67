// A running job cancelled by an operator (issue 16 §4): the renewal answers 'cancel-requested', the handler's
// signal aborts with JobCancelledError, and the job ends as cancelled: its row deleted fenced (ack), no NAK, no
// dead letter, the failure hook told `cancelled`. A re-claimed marked row ends without running.
import { describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../shared/log';
import { AckBatcher } from '../../shared/transport/ack-batcher';
import { dispatchDelivery, type DispatchDeps } from '../../shared/transport/dispatcher';
import { HeartbeatGroup } from '../../shared/transport/lease-heartbeat';
import { CANCEL_REQUESTED_HEADER, JobCancelledError, type RenewResult } from '../../shared/transport/job-control';
import type { ClaimedMessage, Settlement } from '../../shared/transport/types';

const LOCK_MS = 300; // a beat every 100 ms

function claimed(headers: Record<string, string> = {}): ClaimedMessage {
  return { id: '0190a000-0000-7000-8000-00000000000a', lockId: '0190a000-0000-7000-8000-00000000000b', queue: 'q', payloadJson: '{}', headers, attempt: 1, createdAt: new Date() };
}

function fakeDeps(renewAnswers: RenewResult[]) {
  const calls = { renew: 0, ack: [] as Settlement[][], release: 0, deadLetter: 0, failed: [] as string[] };
  const store = {
    renew: vi.fn(async () => {
      calls.renew++;
      return renewAnswers[Math.min(calls.renew - 1, renewAnswers.length - 1)]!;
    }),
    ack: vi.fn(async (s: readonly Settlement[]) => {
      calls.ack.push([...s]);
      return s.length;
    }),
    release: vi.fn(async () => {
      calls.release++;
      return true;
    }),
    deadLetter: vi.fn(async () => {
      calls.deadLetter++;
      return true;
    }),
    hasMessage: vi.fn(async () => false),
    backOffQueue: vi.fn(async () => new Date()),
  };
  const deps: DispatchDeps = {
    store,
    acks: new AckBatcher((b) => store.ack(b), 16, silentLogger),
    policy: { maxDeliveryAttempts: 5, redeliveryDelayMs: 0, redeliveryMaxDelayMs: 0, deadLetter: true },
    lockTimeoutMs: LOCK_MS,
    deadLetterQueue: 'dlq',
    logger: silentLogger,
    onDeadLettered: async (_job, msg, reason) => void calls.failed.push(`${msg.id}: ${reason}`),
  };
  return { deps, calls };
}

const waitForAbort = (signal: AbortSignal) =>
  new Promise<never>((_, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

describe('cancelling a running job', () => {
  it('the renewal that learns of the cancel aborts the signal; the job ends cancelled, not retried, not dead-lettered', async () => {
    const { deps, calls } = fakeDeps([true, 'cancel-requested']);
    let reason: unknown;
    const started = Date.now();
    const outcome = await dispatchDelivery(claimed(), async (_job, ctx) => {
      try {
        return await waitForAbort(ctx.signal);
      } catch (err) {
        reason = err;
        throw err;
      }
    }, deps);
    const took = Date.now() - started;
    expect(outcome).toBe('cancelled');
    expect(reason).toBeInstanceOf(JobCancelledError);
    expect(calls.renew).toBe(2);
    expect(took).toBeGreaterThanOrEqual(180); // two beats of 100 ms
    expect(took).toBeLessThan(1500);
    expect(calls.ack).toEqual([[expect.objectContaining({ id: claimed().id, lockId: claimed().lockId })]]);
    expect(calls.release).toBe(0);
    expect(calls.deadLetter).toBe(0);
    expect(calls.failed).toEqual([`${claimed().id}: cancelled`]);
  });

  it('a handler that finishes despite the abort has done its work: completed, acked through the batcher', async () => {
    const { deps, calls } = fakeDeps(['cancel-requested']);
    const outcome = await dispatchDelivery(claimed(), async () => new Promise((r) => setTimeout(() => r('done'), 250)), deps);
    expect(outcome).toBe('completed');
    await deps.acks.drain();
    expect(calls.ack).toHaveLength(1);
    expect(calls.failed).toEqual([]);
    expect(calls.release).toBe(0);
  });

  it('a re-claimed row that carries the marker (its owner died) ends cancelled without running', async () => {
    const { deps, calls } = fakeDeps([true]);
    const handler = vi.fn(async () => 'ran');
    expect(await dispatchDelivery(claimed({ [CANCEL_REQUESTED_HEADER]: '2026-12-01T00:00:00.000Z' }), handler, deps)).toBe('cancelled');
    expect(handler).not.toHaveBeenCalled();
    expect(calls.ack).toHaveLength(1);
    expect(calls.failed).toEqual([`${claimed().id}: cancelled`]);
  });

  it('a lost lease is still a lost lease (no cancel): the failure is retried as before', async () => {
    const { deps, calls } = fakeDeps([false]);
    const outcome = await dispatchDelivery(claimed(), async (_job, ctx) => waitForAbort(ctx.signal), deps);
    expect(outcome).toBe('retried');
    expect(calls.release).toBe(1);
    expect(calls.ack).toEqual([]);
  });

  it("in a drain's heartbeat group: a cancel learnt at the first beat aborts the signal of a handler that spread its context", async () => {
    const { deps, calls } = fakeDeps(['cancel-requested']);
    deps.heartbeats = new HeartbeatGroup(LOCK_MS);
    let reason: unknown;
    const outcome = await dispatchDelivery(claimed(), async (_job, ctx) => {
      const copy = { ...ctx };
      try {
        return await waitForAbort(copy.signal);
      } catch (err) {
        reason = err;
        throw err;
      }
    }, deps);
    expect(outcome).toBe('cancelled');
    expect(reason).toBeInstanceOf(JobCancelledError);
    expect(calls.renew).toBe(1);
    expect(calls.release).toBe(0);
  });

  it("in a drain's heartbeat group: a lost lease aborts the signal and the failure is retried", async () => {
    const { deps, calls } = fakeDeps([false]);
    deps.heartbeats = new HeartbeatGroup(LOCK_MS);
    expect(await dispatchDelivery(claimed(), async (_job, ctx) => waitForAbort(ctx.signal), deps)).toBe('retried');
    expect(calls.release).toBe(1);
  });
});
