import type { Logger } from '../log';
import { withRetry, type BackoffPolicy } from '../sql/retry';
import { isTransientError } from '../sql/transient';
import type { OutgoingMessage, PublishOutcome, TransportStore } from './types';
import type { WakeSignal } from './wake';

export interface PublishPolicy extends BackoffPolicy {
  maxAttempts: number;
}

/**
 * Idempotent publish: the ids are fixed before the first attempt, so a retry after a transient fault (whose
 * first attempt may have committed) never enqueues a job twice. Rows claimable at once wake this process's
 * drain loops.
 */
export class Publisher {
  constructor(
    private readonly store: TransportStore,
    private readonly wake: WakeSignal,
    private readonly policy: PublishPolicy,
    private readonly logger: Logger,
  ) {}

  async publish(messages: readonly OutgoingMessage[], deadline?: number): Promise<PublishOutcome[]> {
    const outcomes = await withRetry(() => this.store.publish(messages), {
      ...this.policy,
      isTransient: isTransientError,
      deadline,
      onRetry: (err, attempt, delay) =>
        this.logger.warn(`publish attempt ${attempt} failed transiently; retrying in ${Math.round(delay)} ms with the same ids`, err),
    });
    const woken = new Set<string>();
    messages.forEach((m, i) => {
      if (outcomes[i]?.inserted && m.delayMs <= 0 && !woken.has(m.queue)) {
        woken.add(m.queue);
        this.wake.notify(m.queue);
      }
    });
    return outcomes;
  }
}
