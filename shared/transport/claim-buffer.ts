import type { ClaimedMessage } from './types';

interface Held {
  msg: ClaimedMessage;
  /** Local time just before the claim was sent: the lease cannot have started earlier. */
  claimedAt: number;
}

/**
 * Claimed rows waiting for a free handler slot (prefetch), in claim order. A row may start only while
 * `startWithinMs` of its lease has not passed, so no handler starts on a lease about to lapse; older rows are
 * handed out as stale, to be released unstarted.
 */
export class ClaimBuffer {
  private held: Held[] = [];

  constructor(private readonly startWithinMs: number) {}

  get size(): number {
    return this.held.length;
  }

  /** Keeps the rows ordered by claim time: two claims in flight may answer out of order. */
  add(batch: readonly ClaimedMessage[], claimedAt: number): void {
    let at = this.held.length;
    while (at > 0 && this.held[at - 1]!.claimedAt > claimedAt) at--;
    this.held.splice(at, 0, ...batch.map((msg) => ({ msg, claimedAt })));
  }

  /** The next row that may still start; rows too old to start are moved to `stale` on the way. */
  take(now: number, stale: ClaimedMessage[]): ClaimedMessage | undefined {
    for (let next = this.held.shift(); next; next = this.held.shift()) {
      if (now - next.claimedAt < this.startWithinMs) return next.msg;
      stale.push(next.msg);
    }
    return undefined;
  }

  /** Removes and returns every row that may no longer start (rows of one claim age together, oldest first). */
  takeStale(now: number): ClaimedMessage[] {
    let n = 0;
    while (n < this.held.length && now - this.held[n]!.claimedAt >= this.startWithinMs) n++;
    return this.held.splice(0, n).map((h) => h.msg);
  }

  /** When the oldest row stops being startable; undefined when nothing is held. */
  nextStaleAt(): number | undefined {
    const first = this.held[0];
    return first === undefined ? undefined : first.claimedAt + this.startWithinMs;
  }

  takeAll(): ClaimedMessage[] {
    return this.held.splice(0).map((h) => h.msg);
  }
}
