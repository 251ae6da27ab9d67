import type { Logger } from '../log';
import type { Settlement } from './types';

/**
 * Collects acks from handlers finishing close together and deletes them in one fenced statement, so the hot
 * path has no per-job round trip. A failed flush is logged: the leases lapse and the jobs are redelivered
 * (at-least-once), which is the same outcome as a lost single ack.
 */
export class AckBatcher {
  private pending: Settlement[] = [];
  private scheduled = false;
  private readonly flushes = new Set<Promise<void>>();
  acked = 0;
  failed = 0;

  constructor(
    private readonly ack: (batch: readonly Settlement[]) => Promise<number>,
    private readonly maxBatch: number,
    private readonly logger: Logger,
  ) {}

  add(s: Settlement): void {
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
    const p = this.ack(batch)
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
