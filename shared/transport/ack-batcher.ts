import type { Logger } from '../log';
import { withRetry, type RetryPolicy } from '../sql/retry';
import type { Settlement } from './types';

export interface AckRetry {
  policy: RetryPolicy;
  maxAttempts: number;
  /** epoch ms: no retry wait runs past it. */
  deadline?: number;
  /**
   * ms from a batch's first send: no retry wait runs past it either. The drain gives its acks a lease's length: by
   * then the rows' leases have lapsed and a claim may have taken them (a later ack is still fenced, but the job has
   * likely run again), and a drain that stops waits no longer than that for its acks.
   */
  withinMs?: number;
}

/**
 * Collects acks from handlers finishing close together and deletes them in one fenced statement, so the hot
 * path has no per-job round trip. A transient failure is retried: the DELETE is fenced on (id, lock_id), so
 * resending it after an ambiguous commit deletes nothing twice. A flush that still fails (out of attempts, or of
 * time: `withinMs`, the deadline) is logged: the leases lapse and the jobs are redelivered (at-least-once), the same
 * outcome as a lost single ack.
 */
export class AckBatcher {
  private pending: Settlement[] = [];
  private scheduled = false;
  private readonly flushes = new Set<Promise<void>>();
  acked = 0;
  failed = 0;
  /** Called with each settlement as it is queued (the drain loop keeps a keyed job's room for its successor). */
  onAdd?: (s: Settlement) => void;

  constructor(
    private readonly ack: (batch: readonly Settlement[]) => Promise<number>,
    private readonly maxBatch: number,
    private readonly logger: Logger,
    private readonly retry?: AckRetry,
  ) {}

  add(s: Settlement): void {
    this.onAdd?.(s);
    this.pending.push(s);
    if (this.pending.length >= this.maxBatch) this.flushNow();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flushNow());
    }
  }

  /** Flushes what is pending and waits for every flush in flight. */
  async drain(): Promise<void> {
    this.flushNow();
    while (this.flushes.size > 0) await Promise.all([...this.flushes]);
  }

  private flushNow(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    const attempt = () => this.ack(batch);
    const deadline = this.retry ? Math.min(this.retry.deadline ?? Infinity, this.retry.withinMs === undefined ? Infinity : Date.now() + this.retry.withinMs) : Infinity;
    const send = this.retry
      ? withRetry(attempt, {
          maxAttempts: this.retry.maxAttempts,
          policy: this.retry.policy,
          deadline: Number.isFinite(deadline) ? deadline : undefined,
          onRetry: (err, _attempt, delay, cls) => this.logger.warn(`ack of ${batch.length} jobs failed transiently (${cls}); resending in ${Math.round(delay)} ms`, err),
        })
      : attempt();
    const p = send
      .then((n) => {
        this.acked += n;
        if (n < batch.length) this.logger.debug(`${batch.length - n} of ${batch.length} acks matched no row (lease lost to a peer)`);
      })
      .catch((err) => {
        this.failed += batch.length;
        this.logger.error(`failed to ack ${batch.length} jobs; their leases will lapse and they will be redelivered`, err);
      })
      .finally(() => this.flushes.delete(p));
    this.flushes.add(p);
  }
}
