import type { Logger } from '../log';
import { classDelay, DEFAULT_RETRY_CLASSES, sleep, type RetryPolicy } from '../sql/retry';
import { classifyTransient } from '../sql/transient';
import { AckBatcher } from './ack-batcher';
import type { DeliveryPolicy } from './delivery-policy';
import { dispatchDelivery, type DeliveryOutcome, type DispatchDeps } from './dispatcher';
import type { JobHandler } from './job';
import type { TransportStore } from './types';
import type { WakeSignal } from './wake';

export interface DrainOptions {
  store: TransportStore;
  queue: string;
  handler: JobHandler;
  policy: DeliveryPolicy;
  deadLetterQueue: string;
  lockTimeoutMs: number;
  batchSize: number;
  concurrency: number;
  /** Claiming stops when this much time has passed; started handlers still finish. */
  budgetMs: number;
  /** The drain ends once the queue has stayed empty (nothing claimed, nothing running) this long. */
  idleGraceMs: number;
  emptyPollDelayMs: number;
  wake: WakeSignal;
  logger: Logger;
  /** Host shutdown: stop claiming, release claims not yet started, let started handlers finish. */
  stopping?: AbortSignal;
  onCompleted?: DispatchDeps['onCompleted'];
  onDeadLettered?: DispatchDeps['onDeadLettered'];
  /** Backoff per transient class after a failed claim; DEFAULT_RETRY_CLASSES when absent. */
  claimRetry?: RetryPolicy;
  now?: () => number;
}

/** How long after the claim budget acks may still be retried. */
const SETTLE_GRACE_MS = 10_000;

export interface DrainReport {
  queue: string;
  claimed: number;
  completed: number;
  retried: number;
  deadLettered: number;
  /** Jobs out of attempts deleted instead of dead-lettered (the queue's policy has dead-lettering off). */
  dropped: number;
  released: number;
  ackFailures: number;
  claimFailures: number;
  durationMs: number;
  stoppedBy: 'idle' | 'budget' | 'shutdown' | 'error';
}

/** A report with every count zero (a drain that has not claimed anything yet). */
export function emptyDrainReport(queue: string): DrainReport {
  return { queue, claimed: 0, completed: 0, retried: 0, deadLettered: 0, dropped: 0, released: 0, ackFailures: 0, claimFailures: 0, durationMs: 0, stoppedBy: 'idle' };
}

/**
 * One timer invocation's worth of work on one queue: claim in batches (never more than free handler slots, so
 * nothing claimed waits), run handlers concurrently, settle acks in batches, and finish with nothing leased.
 */
export async function drainQueue(o: DrainOptions): Promise<DrainReport> {
  const now = o.now ?? Date.now;
  const started = now();
  const claimDeadline = started + o.budgetMs;
  // Acks may be resent for a while after claiming stops: settling what was done beats redelivering it.
  const acks = new AckBatcher((b) => o.store.ack(b), Math.max(o.batchSize, 16), o.logger, {
    policy: o.claimRetry ?? DEFAULT_RETRY_CLASSES,
    maxAttempts: 3,
    deadline: claimDeadline + SETTLE_GRACE_MS,
  });
  const deps: DispatchDeps = {
    store: o.store,
    acks,
    policy: o.policy,
    lockTimeoutMs: o.lockTimeoutMs,
    deadLetterQueue: o.deadLetterQueue,
    logger: o.logger,
    retry: o.claimRetry ?? DEFAULT_RETRY_CLASSES,
    onCompleted: o.onCompleted,
    onDeadLettered: o.onDeadLettered,
    settleDeadline: claimDeadline + SETTLE_GRACE_MS,
  };
  const report = emptyDrainReport(o.queue);
  const count = (outcome: DeliveryOutcome) => {
    if (outcome === 'completed') report.completed++;
    else if (outcome === 'retried') report.retried++;
    else if (outcome === 'dead-lettered') report.deadLettered++;
    else if (outcome === 'dropped') report.dropped++;
    else report.released++;
  };
  const inFlight = new Set<Promise<void>>();
  let lastActivity = now();
  let claimErrors = 0;

  for (;;) {
    if (o.stopping?.aborted) {
      report.stoppedBy = 'shutdown';
      break;
    }
    const t = now();
    if (t >= claimDeadline) {
      report.stoppedBy = 'budget';
      break;
    }
    const free = o.concurrency - inFlight.size;
    if (free <= 0) {
      await Promise.race(inFlight);
      lastActivity = now();
      continue;
    }
    let batch;
    try {
      batch = await o.store.claim(o.queue, Math.min(o.batchSize, free), o.lockTimeoutMs);
      claimErrors = 0;
    } catch (err) {
      report.claimFailures++;
      claimErrors++;
      // The class of the fault picks the wait (a deadlock: ms; throttling / failover: seconds); the exponent
      // counts consecutive claim failures. No wait may run past the claim budget: give up and let the next run retry.
      const cls = classifyTransient(err);
      const delay = cls === null ? 0 : classDelay(cls, claimErrors, o.claimRetry ?? DEFAULT_RETRY_CLASSES);
      if (cls === null || now() + delay >= claimDeadline) {
        o.logger.error(`claiming from '${o.queue}' failed${cls ? ` (transient: ${cls}; the next run retries)` : ''}`, err);
        report.stoppedBy = 'error';
        break;
      }
      o.logger.warn(`claiming from '${o.queue}' failed transiently (${cls}); retrying in ${Math.round(delay)} ms`, err);
      await sleep(delay, o.stopping).catch(() => undefined);
      continue;
    }
    if (batch.length === 0) {
      if (inFlight.size === 0 && now() - lastActivity >= o.idleGraceMs) {
        report.stoppedBy = 'idle';
        break;
      }
      const wait = Math.min(o.emptyPollDelayMs, Math.max(0, claimDeadline - now()));
      // The wait is cancelled when a handler finishes first, so no stale waiter swallows the next wake.
      const cancel = new AbortController();
      await Promise.race([o.wake.wait(o.queue, wait, [o.stopping, cancel.signal]), ...inFlight]);
      cancel.abort();
      if (inFlight.size > 0) lastActivity = now();
      continue;
    }
    report.claimed += batch.length;
    lastActivity = now();
    for (const msg of batch) {
      if (o.stopping?.aborted || now() >= claimDeadline) {
        // Claimed but not started: hand it straight back (its attempt is spent, the delay is zero).
        try {
          await o.store.release(msg, 0);
        } catch (err) {
          o.logger.error(`failed to release unstarted job ${msg.id}; its lease will lapse`, err);
        }
        report.released++;
        continue;
      }
      const p: Promise<void> = dispatchDelivery(msg, o.handler, deps)
        .then(count, (err) => {
          o.logger.error(`dispatching job ${msg.id} failed unexpectedly`, err);
        })
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
  }

  await Promise.all(inFlight);
  await acks.drain();
  report.ackFailures = acks.failed;
  report.durationMs = now() - started;
  return report;
}
