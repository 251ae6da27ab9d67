import type { ClaimedMessage } from './types';

/** One claim's rows still held, from `next` on; they share the claim's time. */
interface Batch {
  rows: readonly ClaimedMessage[];
  next: number;
  /** Local time just before the claim was sent: the lease cannot have started earlier. */
  claimedAt: number;
}

/**
 * Claimed rows waiting for a free handler slot (prefetch), in claim order. A row may start only while
 * `startWithinMs` of its lease has not passed, so no handler starts on a lease about to lapse; older rows are
 * handed out as stale, to be released unstarted. Rows are kept by claim (the array the claim answered, not copied):
 * a take is an index step, with no per-row record or array shift.
 */
export class ClaimBuffer {
  private batches: Batch[] = [];
  private held = 0;

  constructor(private readonly startWithinMs: number) {}

  get size(): number {
    return this.held;
  }

  /** Keeps the claims ordered by claim time: two claims in flight may answer out of order. */
  add(batch: readonly ClaimedMessage[], claimedAt: number): void {
    if (batch.length === 0) return;
    let at = this.batches.length;
    while (at > 0 && this.batches[at - 1]!.claimedAt > claimedAt) at--;
    this.batches.splice(at, 0, { rows: batch, next: 0, claimedAt });
    this.held += batch.length;
  }

  /** The next row that may still start; rows too old to start are moved to `stale` on the way. */
  take(now: number, stale: ClaimedMessage[]): ClaimedMessage | undefined {
    while (this.batches.length > 0) {
      const first = this.batches[0]!;
      if (now - first.claimedAt >= this.startWithinMs) {
        this.dropFirst(stale);
        continue;
      }
      const msg = first.rows[first.next++]!;
      this.held--;
      if (first.next === first.rows.length) this.batches.shift();
      return msg;
    }
    return undefined;
  }

  /** Removes and returns every row that may no longer start (rows of one claim age together, oldest first). */
  takeStale(now: number): ClaimedMessage[] {
    const stale: ClaimedMessage[] = [];
    while (this.batches.length > 0 && now - this.batches[0]!.claimedAt >= this.startWithinMs) this.dropFirst(stale);
    return stale;
  }

  /** When the oldest row stops being startable; undefined when nothing is held. */
  nextStaleAt(): number | undefined {
    const first = this.batches[0];
    return first === undefined ? undefined : first.claimedAt + this.startWithinMs;
  }

  takeAll(): ClaimedMessage[] {
    const all: ClaimedMessage[] = [];
    while (this.batches.length > 0) this.dropFirst(all);
    return all;
  }

  private dropFirst(into: ClaimedMessage[]): void {
    const first = this.batches.shift()!;
    for (let i = first.next; i < first.rows.length; i++) into.push(first.rows[i]!);
    this.held -= first.rows.length - first.next;
  }
}
