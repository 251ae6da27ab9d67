// Sends drain requests for work that became claimable (a publish, a retry's backoff, a handed-back claim, a routed
// callback): at once when it is claimable now, with an initial visibility delay when it becomes claimable later.
// Never on the caller's critical path: announce() returns at once, the send runs in the background, and a failed
// send is logged, never thrown (the safety-net timers drain what no request announced).
//
// Coalescing: one immediate request per target per `coalesceMs`. A drain started by a request keeps claiming until
// the queue stayed empty for its idle grace (at least coalesceMs), so a job committed within the window of the
// request that was sent is still claimed by that drain. Delayed requests coalesce per target and due second. A
// lease-lapse request (the engine asks for one after a drain, or at start-up, when the earliest live lease of a
// queue lapses later) is kept to one outstanding per queue: a new one only when it surfaces earlier.

import type { Logger } from '../log';
import { encodeRequest, requestFor, type DrainRequestMessage } from './message';
import { storageUnreachable } from './unreachable';

/** The storage queue as the sender sees it (shared/drain-requests/storage-queue.ts; an in-memory one in tests). */
export interface RequestQueue {
  /** Adds a message that stays invisible for `visibilitySeconds` (0: visible at once). */
  send(text: string, visibilitySeconds: number): Promise<void>;
  /** Messages on the queue, visible or not (Storage's approximate count). */
  approximateCount(): Promise<number>;
}

/** What the engine calls when work becomes claimable (EngineOptions.drainRequests). */
export interface DrainAnnouncer {
  /** `target`: a queue (or SWEEP_TARGET); `delayMs`: when the work becomes claimable (≤ 0: now). */
  announce(target: string, delayMs: number): void;
  /**
   * A lease on `queue` (someone else's, or a claim this instance could not settle) lapses in `delayMs`: a request
   * that surfaces then, at most one outstanding per queue (a new one only when it surfaces earlier than the one
   * already sent). Announcers without it get announce().
   */
  announceLeaseLapse?(queue: string, delayMs: number): void;
}

export interface DrainRequestSenderOptions {
  /** At most one immediate request per target in this window. */
  coalesceMs: number;
  /** Requests one drain that stopped by budget asks for (more instances join). */
  fanOut: number;
  /** No extra fan-out while the request queue holds this many messages (a continuation request is still sent). */
  maxPending: number;
  logger: Logger;
  now?: () => number;
}

/** Storage's longest visibility timeout (7 days), less a second. Work due later is left to the timers. */
export const MAX_VISIBILITY_SECONDS = 7 * 24 * 3600 - 1;
const FAILURE_LOG_INTERVAL_MS = 60_000;

export interface SenderCounts {
  sent: number;
  coalesced: number;
  failed: number;
}

export class DrainRequestSender implements DrainAnnouncer {
  readonly counts: SenderCounts = { sent: 0, coalesced: 0, failed: 0 };
  private readonly lastImmediate = new Map<string, number>();
  private readonly delayed = new Map<string, number>(); // `${target}@${dueSecond}` → due epoch ms
  private readonly leaseLapse = new Map<string, number>(); // queue → due epoch ms of its outstanding lease request
  private readonly inflight = new Set<Promise<void>>();
  private lastFailureLogAt = -Infinity;
  private readonly now: () => number;

  constructor(
    private readonly queue: RequestQueue,
    private readonly options: DrainRequestSenderOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  announce(target: string, delayMs: number): void {
    const now = this.now();
    if (delayMs <= 0) {
      const last = this.lastImmediate.get(target);
      if (last !== undefined && now - last < this.options.coalesceMs) {
        this.counts.coalesced++;
        return;
      }
      this.lastImmediate.set(target, now);
      this.send(target, 0);
      return;
    }
    const seconds = Math.min(Math.ceil(delayMs / 1000), MAX_VISIBILITY_SECONDS);
    const due = now + seconds * 1000;
    const key = `${target}@${Math.floor(due / 1000)}`;
    if (this.delayed.has(key)) {
      this.counts.coalesced++;
      return;
    }
    for (const [k, at] of this.delayed) if (at <= now) this.delayed.delete(k);
    this.delayed.set(key, due);
    this.send(target, seconds);
  }

  announceLeaseLapse(queue: string, delayMs: number): void {
    const now = this.now();
    const seconds = Math.min(Math.max(1, Math.ceil(delayMs / 1000)), MAX_VISIBILITY_SECONDS);
    const due = now + seconds * 1000;
    const outstanding = this.leaseLapse.get(queue);
    // one that surfaces first is enough: the drain it starts looks again when it ends, and asks for the next lapse
    if (outstanding !== undefined && outstanding > now && outstanding <= due) {
      this.counts.coalesced++;
      return;
    }
    this.leaseLapse.set(queue, due);
    this.send(queue, seconds);
  }

  /**
   * A drain stopped by its budget with work left: `fanOut` requests (so more instances join), or one continuation
   * while the request queue already holds `maxPending`, which bounds the growth of a long backlog.
   */
  async fanOut(target: string): Promise<number> {
    let pending = 0;
    try {
      pending = await this.queue.approximateCount();
    } catch (err) {
      this.failed(err);
    }
    const n = pending >= this.options.maxPending ? 1 : this.options.fanOut;
    await Promise.all(Array.from({ length: n }, () => this.sendNow(target, 0)));
    return n;
  }

  /** Sends `message` as it is (a drain's re-check of an announce), visible after `visibilitySeconds`; never throws. */
  async sendRequest(message: DrainRequestMessage, visibilitySeconds: number): Promise<void> {
    try {
      await this.queue.send(encodeRequest(message), Math.min(Math.max(0, Math.ceil(visibilitySeconds)), MAX_VISIBILITY_SECONDS));
      this.counts.sent++;
    } catch (err) {
      this.failed(err);
    }
  }

  /** Waits (at most `timeoutMs`) for the sends still running: shutdown calls it before the process goes. */
  async settle(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all([...this.inflight]), new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }

  private send(target: string, visibilitySeconds: number): void {
    const p = this.sendNow(target, visibilitySeconds);
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  private async sendNow(target: string, visibilitySeconds: number): Promise<void> {
    try {
      await this.queue.send(encodeRequest(requestFor(target)), visibilitySeconds);
      this.counts.sent++;
    } catch (err) {
      // the window stays taken: a queue that is down is not hammered once per publish
      this.failed(err);
    }
  }

  private failed(err: unknown): void {
    this.counts.failed++;
    const now = this.now();
    if (now - this.lastFailureLogAt < FAILURE_LOG_INTERVAL_MS) return;
    this.lastFailureLogAt = now;
    const unreachable = storageUnreachable(err);
    if (unreachable) {
      // one line: what to set, not the SDK's request dump
      this.options.logger.warn(`sending a drain request failed (${this.counts.failed} so far): ${unreachable}; the safety-net timers drain what it announced`);
      return;
    }
    this.options.logger.warn(
      `sending a drain request failed (${this.counts.failed} so far); the safety-net timers drain what it announced`,
      err,
    );
  }
}
