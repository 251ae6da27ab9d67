import { randomUUID } from 'node:crypto';
import type { Logger } from '../log';
import { classDelay, DEFAULT_RETRY_CLASSES, withRetry, type RetryPolicy } from '../sql/retry';
import { classifyTransient } from '../sql/transient';
import { AckBatcher } from './ack-batcher';
import { ClaimBuffer } from './claim-buffer';
import type { DeliveryPolicy } from './delivery-policy';
import { dispatchDelivery, type DeliveryOutcome, type DispatchDeps } from './dispatcher';
import { HeartbeatGroup } from './lease-heartbeat';
import type { JobHandler } from './job';
import type { ClaimedMessage, Settlement, TransportStore } from './types';
import type { WakeSignal } from './wake';
import { hasLimits, type LimitedClaim, type QueueLimits } from './limits';

export interface DrainOptions {
  store: TransportStore;
  queue: string;
  handler: JobHandler;
  policy: DeliveryPolicy;
  deadLetterQueue: string;
  lockTimeoutMs: number;
  /** Most rows one claim statement takes. */
  batchSize: number;
  concurrency: number;
  /**
   * Rows claimed ahead of free handler slots (0 = never more than the free slots). Held rows start in claim
   * order while half their lease is left; the rest, and whatever is held when the drain stops, go back
   * unstarted (not counted as an attempt).
   */
  prefetch?: number;
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
  /**
   * The queue's limits across instances (transport/limits.ts): claims go through the store's limited claim, hold
   * no prefetch (a held row would count against the limit while it waits) unless the queue's leases are far below
   * its concurrency limit, and a claim the limits held back waits for the next token, or polls while other
   * instances hold the room.
   */
  limits?: QueueLimits;
  /** Backoff per transient class after a failed claim; DEFAULT_RETRY_CLASSES when absent. */
  claimRetry?: RetryPolicy;
  /** The queue keeps history (policy.historyRetentionMs > 0): completed jobs are acked into the history table. */
  keepHistory?: boolean;
  now?: () => number;
}

/** Claims at once while the queue has a backlog (each full claim says there is more). */
const MAX_PARALLEL_CLAIMS = 2;

const WAIT_OVER = new Error('drain loop: the wait is over');

/** How long after the claim budget acks may still be retried. */
const SETTLE_GRACE_MS = 10_000;

/** Most sends of one ack batch (each transient fault waits its class's backoff; the lease bounds them too). */
const ACK_ATTEMPTS = 10;

export interface DrainReport {
  queue: string;
  claimed: number;
  completed: number;
  retried: number;
  deadLettered: number;
  /** Jobs out of attempts deleted instead of dead-lettered (the queue's policy has dead-lettering off). */
  dropped: number;
  /** Jobs an operator cancelled while they ran (or before a re-claim): deleted, not retried (job-control.ts). */
  cancelled: number;
  /** Rows handed back unstarted (no attempt spent). */
  released: number;
  /** Rows whose hand-back failed for good (they wait out the lease, and that claim counts as an attempt). */
  releaseFailures: number;
  /** Rows of claims whose answer was lost with their connection, handed back by the claim's lock id. */
  lostClaimsRecovered: number;
  ackFailures: number;
  claimFailures: number;
  durationMs: number;
  stoppedBy: 'idle' | 'budget' | 'shutdown' | 'error';
}

/** A report with every count zero (a drain that has not claimed anything yet). */
export function emptyDrainReport(queue: string): DrainReport {
  return { queue, claimed: 0, completed: 0, retried: 0, deadLettered: 0, dropped: 0, cancelled: 0, released: 0, releaseFailures: 0, lostClaimsRecovered: 0, ackFailures: 0, claimFailures: 0, durationMs: 0, stoppedBy: 'idle' };
}

/**
 * One timer invocation's worth of work on one queue: claim in batches (at most the free handler slots plus the
 * prefetch), run handlers concurrently, settle acks in batches, and finish with nothing leased.
 */
export async function drainQueue(o: DrainOptions): Promise<DrainReport> {
  const now = o.now ?? Date.now;
  const started = now();
  const claimDeadline = started + o.budgetMs;
  // Acks may be resent for a while after claiming stops: settling what was done beats redelivering it.
  const ackStatement = o.keepHistory ? (b: readonly Settlement[]) => o.store.ackToHistory(b) : (b: readonly Settlement[]) => o.store.ack(b);
  // An ack that removed an ordering key's head left the key vacant: its next job is claimable once the ack committed
  // (the next claim promotes it, stores/*/ready-set.ts). The drain claims again at once, even if a claim came back
  // empty meanwhile (it may have started before the commit), instead of waiting out the empty-queue poll delay. An ack
  // that took every such next job for this drain (ack-and-take-next, below) leaves none for a claim: no wake then.
  let keyedAcks = 0;
  // Ack-and-take-next (stores/postgres/ready-set.ts pgHandOver): an ack of keyed heads asks for their successors,
  // leased to this drain in the ack's statement, one claim round trip and one write per keyed job less. Only while
  // the drain claims at all (not stopping, within the budget), never under a rate limit (tokens are a claim's), and
  // at most the room a claim could fill now; the room is reserved while the ack runs, so a claim does not fill it too.
  const takeNext = o.keepHistory || o.store.ackAndTakeNext === undefined || o.limits?.ratePerSecond !== undefined ? undefined : o.store.ackAndTakeNext.bind(o.store);
  // A keyed job's finished handler frees its slot for its key's successor: the room is kept (`awaitingAck`) from the
  // moment its ack is queued until the ack is sent, so a claim sent meanwhile does not take it (with a no-op handler
  // a claim is nearly always in flight, and it would).
  let takingRows = 0;
  let claimingOver = false;
  const awaitingAck = new Set<Settlement>();
  const isKeyed = (s: Settlement) => (s as Partial<ClaimedMessage>).orderingKey !== undefined;
  const freeRoom = () => capacityNow() - inFlight.size - buffer.size - claimingRows - takingRows - awaitingAck.size;
  const handoverRoom = (b: readonly Settlement[], keyed: number) => {
    let kept = 0;
    for (const s of b) if (awaitingAck.delete(s)) kept++; // a resent batch kept nothing: it asks for free room only
    if (claimingOver || o.stopping?.aborted || now() >= claimDeadline) return 0;
    return Math.max(0, Math.min(keyed, kept + Math.max(0, freeRoom())));
  };
  // The loop waits for an ack while room is kept for it (awaitingAck, takingRows): nothing else may be in flight then.
  let ackEnded: { promise: Promise<void>; resolve: () => void } | undefined;
  const nextAckEnd = () => {
    if (!ackEnded) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      ackEnded = { promise, resolve };
    }
    return ackEnded.promise;
  };
  const settle = async (b: readonly Settlement[]) => {
    try {
      return await settleBatch(b);
    } finally {
      const ended = ackEnded;
      ackEnded = undefined;
      ended?.resolve();
    }
  };
  const settleBatch = async (b: readonly Settlement[]) => {
    const keyed = b.reduce((n, s) => (isKeyed(s) ? n + 1 : n), 0);
    let n: number;
    let left = keyed; // keys whose next job waits for a claim (at most one per acked keyed job)
    const max = takeNext && keyed > 0 ? handoverRoom(b, keyed) : 0;
    if (takeNext && max > 0) {
      const lockId = randomUUID();
      const sentAt = now();
      takingRows += max;
      try {
        const r = await takeNext(b, { queue: o.queue, max, lockTimeoutMs: o.lockTimeoutMs, lockId });
        n = r.acked;
        left = r.left;
        if (r.taken.length > 0) {
          report.claimed += r.taken.length;
          lastActivity = now();
          // the drain stopped claiming while the ack ran: the rows go back unstarted, like a late claim's
          if (claimingOver || o.stopping?.aborted) handBack(r.taken);
          else buffer.add(r.taken, sentAt);
        }
      } catch (err) {
        // the answer may be lost after the commit: the successors it took wait under lockId, handed back by it
        const cls = classifyTransient(err);
        if (cls === 'connection' || cls === 'failover') recoverLostClaim(lockId);
        throw err;
      } finally {
        takingRows -= max;
      }
    } else {
      n = await ackStatement(b);
    }
    if (left > 0) {
      keyedAcks++;
      emptyAt = undefined;
      o.wake.notify(o.queue);
    }
    return n;
  };
  // An ack batch is resent on transient faults for up to a lease (ACK_ATTEMPTS at most): with 3 attempts, a connection
  // fault that outlasted ~1.5 s of backoff gave a whole batch's jobs up to run again once their leases lapsed.
  const acks = new AckBatcher(settle, Math.max(o.batchSize, 16), o.logger, {
    policy: o.claimRetry ?? DEFAULT_RETRY_CLASSES,
    maxAttempts: ACK_ATTEMPTS,
    deadline: claimDeadline + SETTLE_GRACE_MS,
    withinMs: o.lockTimeoutMs,
  });
  if (takeNext) acks.onAdd = (s) => {
    if (isKeyed(s) && !claimingOver) awaitingAck.add(s);
  };
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
    ...(Number.isFinite(claimDeadline) ? { budgetEndsAt: claimDeadline } : {}),
    heartbeats: new HeartbeatGroup(o.lockTimeoutMs),
  };
  const report = emptyDrainReport(o.queue);
  const count = (outcome: DeliveryOutcome) => {
    if (outcome === 'completed') report.completed++;
    else if (outcome === 'retried') report.retried++;
    else if (outcome === 'dead-lettered') report.deadLettered++;
    else if (outcome === 'dropped') report.dropped++;
    else if (outcome === 'cancelled') report.cancelled++;
    else report.released++;
  };
  const inFlight = new Set<Promise<void>>();
  const limits = hasLimits(o.limits) ? o.limits : undefined;
  const prefetch = Math.max(0, o.prefetch ?? 0);
  // The queue's leases (all instances) the last limited claim reported; null until one did, or without a concurrency limit.
  let limitLeased: number | null = null;
  // A limited queue prefetches only far below its concurrency limit: held rows count against the limit, so near it
  // they would hold slots that other instances could run. Far below, it keeps its acks batched too (the count need
  // not see this drain's finished jobs gone). Never under a rate limit: tokens are spent at the claim, and rows held
  // then started together would bunch the starts.
  const farBelowLimit = () =>
    limits !== undefined &&
    limits.ratePerSecond === undefined &&
    limits.concurrency !== undefined &&
    limitLeased !== null &&
    limitLeased + o.concurrency + prefetch <= limits.concurrency / 2;
  const capacityNow = () => o.concurrency + (!limits || farBelowLimit() ? prefetch : 0);
  const buffer = new ClaimBuffer(o.lockTimeoutMs / 2);
  let lastActivity = now();
  let claimErrors = 0;
  let emptyAt: number | undefined; // when the last claim came back empty
  let retryAt = 0; // after a transient claim failure, no claim before this
  let heldUntil = 0; // a limit held the last claim back: no claim before this (a local handler ending frees room sooner)
  let heldBy: LimitedClaim<ClaimedMessage>['limitedBy'] = null;
  let failed = false; // a claim failed for good (or its retry would outlive the budget)
  // Claims run in the background, so handlers keep starting from the buffer during their round trips. While the
  // last claim came back full (a backlog), a second may run beside it: SKIP LOCKED hands them disjoint rows.
  const claims = new Set<{ done: Promise<void>; rows: number }>();
  let claimingRows = 0;
  let backlog = false;

  // one async frame a job (a .then/.finally chain allocated three promises and their closures)
  const start = (msg: ClaimedMessage) => {
    let p!: Promise<void>;
    p = (async () => {
      try {
        count(await dispatchDelivery(msg, o.handler, deps));
      } catch (err) {
        o.logger.error(`dispatching job ${msg.id} failed unexpectedly`, err);
      } finally {
        inFlight.delete(p); // runs after dispatchDelivery's first await, so p is set
      }
    })();
    inFlight.add(p);
  };
  // A hand-back lost to a fault costs the rows an attempt (their lease lapses with the claim counted), so it is
  // retried on transient faults like an ack; it is fenced on the claim, so a retry after a lost answer no-ops.
  // Hand-backs run beside the loop; the drain awaits them before it ends.
  const releasing = new Set<Promise<void>>();
  const handBack = (msgs: ClaimedMessage[]) => {
    if (msgs.length === 0) return;
    report.released += msgs.length;
    const p: Promise<void> = withRetry(() => o.store.releaseUnstarted(msgs), {
      policy: o.claimRetry ?? DEFAULT_RETRY_CLASSES,
      maxAttempts: 3,
      deadline: claimDeadline + SETTLE_GRACE_MS,
    })
      .then(
        () => undefined,
        (err) => {
          report.released -= msgs.length;
          report.releaseFailures += msgs.length;
          o.logger.error(`failed to release ${msgs.length} unstarted jobs of '${o.queue}'; their leases will lapse`, err);
        },
      )
      .finally(() => releasing.delete(p));
    releasing.add(p);
  };
  // A claim that failed on a broken connection may have committed: its rows would wait out the lease with an
  // attempt spent. The drain chose the claim's lock id, so it hands them back by it (a no-op when nothing committed).
  const recoverLostClaim = (lockId: string) => {
    const p: Promise<void> = withRetry(() => o.store.releaseLostClaim(o.queue, lockId), {
      policy: o.claimRetry ?? DEFAULT_RETRY_CLASSES,
      maxAttempts: 3,
      deadline: claimDeadline + SETTLE_GRACE_MS,
    })
      .then(
        (n) => {
          report.lostClaimsRecovered += n;
        },
        (err) => o.logger.warn(`handing back a claim of '${o.queue}' whose answer was lost failed; its rows, if any, wait out the lease`, err),
      )
      .finally(() => releasing.delete(p));
    releasing.add(p);
  };
  // A claim the limits held back waits: for the next token (rate), the backoff's end, or (concurrency) a poll while
  // other instances hold the room; a handler of this drain ending frees room at once (see the loop).
  const limitedClaim = async (rows: number, lockId: string, l: QueueLimits): Promise<ClaimedMessage[]> => {
    if (!farBelowLimit()) await acks.drain(); // near the limit the count must see this drain's finished jobs gone
    const r = await o.store.claimLimited(o.queue, rows, o.lockTimeoutMs, lockId, l);
    limitLeased = r.leased;
    heldBy = r.limitedBy;
    heldUntil = r.limitedBy === null ? 0 : now() + Math.max(1, Math.min(r.retryInMs ?? o.emptyPollDelayMs, o.emptyPollDelayMs));
    if (r.limitedBy === 'rate') lastActivity = now();
    return r.messages;
  };
  const claimInBackground = (rows: number) => {
    const claimedAt = now();
    const keyedAcksBefore = keyedAcks;
    const lockId = randomUUID();
    const done = (async () => {
      try {
        const batch = limits ? await limitedClaim(rows, lockId, limits) : await o.store.claim(o.queue, rows, o.lockTimeoutMs, lockId);
        claimErrors = 0;
        backlog = batch.length === rows;
        // a claim the rate held back is no sign of an empty queue: the next token is due soon
        emptyAt = batch.length === 0 && heldBy !== 'rate' && keyedAcks === keyedAcksBefore ? now() : undefined;
        if (batch.length > 0) {
          report.claimed += batch.length;
          lastActivity = now();
          buffer.add(batch, claimedAt);
        }
      } catch (err) {
        backlog = false;
        report.claimFailures++;
        claimErrors++;
        // The class of the fault picks the wait (a deadlock: ms; throttling / failover: seconds); the exponent
        // counts consecutive claim failures. No wait may run past the claim budget: give up and let the next run retry.
        const cls = classifyTransient(err);
        if (cls === 'connection' || cls === 'failover') recoverLostClaim(lockId);
        const delay = cls === null ? 0 : classDelay(cls, claimErrors, o.claimRetry ?? DEFAULT_RETRY_CLASSES);
        if (cls === null || now() + delay >= claimDeadline) {
          o.logger.error(`claiming from '${o.queue}' failed${cls ? ` (transient: ${cls}; the next run retries)` : ''}`, err);
          failed = true;
          return;
        }
        o.logger.warn(`claiming from '${o.queue}' failed transiently (${cls}); retrying in ${Math.round(delay)} ms`, err);
        retryAt = now() + delay;
      }
    })();
    const claim = { done: done.finally(() => {
      claims.delete(claim);
      claimingRows -= rows;
    }), rows };
    claims.add(claim);
    claimingRows += rows;
  };

  // The loop's timed wait (a held row going stale, a retry or a hold coming due, the budget's end), kept across turns
  // while it fires no later than the turn needs: a turn ends at every handler finish, and a fresh timer and abort
  // controller each time cost 0.3 µs a job. One that fires early only costs a turn.
  let timed: { at: number; done: Promise<void>; timer: NodeJS.Timeout } | undefined;
  const timedWait = (at: number): Promise<void> => {
    if (timed === undefined || timed.at > at) {
      if (timed !== undefined) clearTimeout(timed.timer);
      const next = { at } as { at: number; done: Promise<void>; timer: NodeJS.Timeout };
      next.done = new Promise<void>((resolve) => {
        next.timer = setTimeout(() => {
          if (timed === next) timed = undefined;
          resolve();
        }, Math.max(0, at - now()));
      });
      timed = next;
    }
    return timed.done;
  };

  // while this loop runs, the process's publishers know whether it has room (WakeSignal.claimsPromptly)
  const roomToken = {};
  try {
    for (;;) {
      if (failed) {
        report.stoppedBy = 'error';
        break;
      }
      if (o.stopping?.aborted) {
        report.stoppedBy = 'shutdown';
        break;
      }
      if (now() >= claimDeadline) {
        report.stoppedBy = 'budget';
        break;
      }
      const stale: ClaimedMessage[] = [];
      while (inFlight.size < o.concurrency && !o.stopping?.aborted && now() < claimDeadline) {
        const msg = buffer.take(now(), stale);
        if (!msg) break;
        start(msg); // a handler that starts synchronously may signal shutdown before the next one starts
      }
      stale.push(...buffer.takeStale(now()));
      handBack(stale);
      if (o.stopping?.aborted || now() >= claimDeadline) continue;

      const free = o.concurrency - inFlight.size;
      const capacity = capacityNow();
      // Claim again once the buffer runs dry, or once a batch's worth of room (at most half the capacity) is free.
      const refillAt = Math.max(1, Math.min(o.batchSize, Math.ceil(capacity / 2)));
      const room = capacity - inFlight.size - buffer.size - claimingRows - takingRows - awaitingAck.size;
      // room to claim into, now or once its buffer (prefetched jobs) runs low; a limit holding it back, or a claim
      // fault's wait, leaves others to be woken (WakeSignal.claimsPromptly says what that costs them)
      o.wake.room(o.queue, roomToken, room > 0 && now() >= retryAt && now() >= heldUntil);
      // The queue looked empty a moment ago: wait for a wake or the poll delay before asking again.
      const pollAt = emptyAt === undefined ? 0 : emptyAt + o.emptyPollDelayMs;
      // a limited queue near its limit claims one at a time (its claims serialize on the queue-state row anyway); far
      // below, a second claim overlaps its round trips (BEGIN, lock wait) with the first
      const parallel = backlog && (!limits || farBelowLimit()) ? MAX_PARALLEL_CLAIMS : 1;
      const wantClaim = claims.size < parallel && room > 0 && now() >= retryAt && now() >= heldUntil && (room >= refillAt || (buffer.size === 0 && free > 0));
      if (wantClaim && now() >= pollAt) {
        claimInBackground(Math.min(o.batchSize, room));
        continue;
      }
      // not idle while an ack may still bring this drain its keys' next jobs (ack-and-take-next)
      const handingOver = awaitingAck.size > 0 || takingRows > 0;
      // a wake that came while no wait listened (a row published since the last claim) is claimed, not left behind
      if (claims.size === 0 && inFlight.size === 0 && buffer.size === 0 && !handingOver && emptyAt !== undefined && now() - lastActivity >= o.idleGraceMs && !o.wake.pendingFor(o.queue)) {
        report.stoppedBy = 'idle';
        break;
      }
      // Wait for what comes first: a handler finishing, the claim answering, a held row going stale, a retry or poll
      // coming due (a same-process publish wakes an empty-queue wait at once), or the budget ending.
      const until = Math.min(
        buffer.nextStaleAt() ?? Infinity,
        claimDeadline,
        retryAt > now() ? retryAt : Infinity,
        heldUntil > now() ? heldUntil : Infinity,
        wantClaim ? pollAt : Infinity,
      );
      // The empty-queue wait gets a controller to end it once something else came first, aborted with a fixed reason:
      // the default reason is a new DOMException per loop turn, measurable CPU at thousands of jobs a second.
      let cancel: AbortController | undefined;
      const waits: Array<Promise<unknown>> = [...inFlight];
      for (const c of claims) waits.push(c.done);
      if (awaitingAck.size > 0 || takingRows > 0) waits.push(nextAckEnd());
      if (wantClaim && pollAt > now()) {
        cancel = new AbortController();
        waits.push(o.wake.wait(o.queue, Math.max(0, until - now()), [o.stopping, cancel.signal]).then((woken) => woken && (emptyAt = undefined)));
      } else if (until !== Infinity) waits.push(timedWait(until));
      const handlersBefore = inFlight.size;
      if (waits.length > 0) await Promise.race(waits);
      cancel?.abort(WAIT_OVER);
      if (inFlight.size < handlersBefore) {
        lastActivity = now();
        // the concurrency limit counted this drain's own lease: its end is room to claim into now
        if (heldBy === 'concurrency') {
          heldUntil = 0;
          emptyAt = undefined;
        }
      }
    }
  } finally {
    o.wake.room(o.queue, roomToken, false);
    if (timed !== undefined) clearTimeout(timed.timer);
  }

  // Claimed but not started: hand back at once (no attempt spent, place in line kept). A claim still answering
  // is awaited first, so its rows go back too.
  claimingOver = true;
  await Promise.all([...claims].map((c) => c.done));
  handBack(buffer.takeAll());
  await Promise.all([...inFlight, ...releasing]);
  await acks.drain();
  // an ack that took successors before claiming stopped may answer late: its rows go back too
  handBack(buffer.takeAll());
  await Promise.all([...releasing]);
  report.ackFailures = acks.failed;
  report.durationMs = now() - started;
  return report;
}
