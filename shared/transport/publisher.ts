import type { Logger } from '../log';
import { DEFAULT_RETRY_CLASSES, withRetry, type BackoffPolicy, type RetryPolicy } from '../sql/retry';
import { classifyTransient } from '../sql/transient';
import { idGenerator, idLayoutFor, type IdGenerationMode } from './ids';
import type { OutgoingMessage, PublishOutcome, TransportStore } from './types';
import type { WakeSignal } from './wake';

export interface PublishPolicy extends Partial<BackoffPolicy> {
  maxAttempts: number;
  /**
   * Backoff per transient class (lock / throttling / failover / connection); DEFAULT_RETRY_CLASSES when absent.
   * baseMs / maxMs (PUBLISH_RETRY_BASE_MS / _MAX_MS) are no longer used by the publisher: the class decides.
   */
  classes?: RetryPolicy;
  /** [0, 1); jitters the waits (tests make them deterministic). */
  random?: () => number;
  /** Ids for messages the caller gave none (generatedId): time-ordered for the store (default) or random. */
  idGeneration?: IdGenerationMode;
}

/**
 * Idempotent publish: the ids are fixed before the first attempt, so a retry after a transient fault (whose
 * first attempt may have committed) never enqueues a job twice. Each transient fault waits as its class asks
 * (a deadlock briefly, throttling and failover for seconds) and no wait runs past the caller's deadline.
 * Rows claimable at once wake this process's drain loops.
 */
export class Publisher {
  /** A new id for a message the caller gave none (ID_GENERATION): time-ordered for this store, or random. */
  readonly newId: () => string;

  constructor(
    private readonly store: TransportStore,
    private readonly wake: WakeSignal,
    private readonly policy: PublishPolicy,
    private readonly logger: Logger,
  ) {
    this.newId = idGenerator(policy.idGeneration ?? 'sequential', idLayoutFor(store.kind));
  }

  /**
   * `deadline` (epoch ms) is the remaining invocation budget: the publish gives up rather than wait past it.
   * `logger`: the invocation's (so retry warnings correlate with it); the process logger otherwise.
   */
  async publish(messages: readonly OutgoingMessage[], deadline?: number, signal?: AbortSignal, logger: Logger = this.logger): Promise<PublishOutcome[]> {
    let attempts = 0;
    const stored = await withRetry(() => (attempts++, this.store.publish(messages)), {
      maxAttempts: this.policy.maxAttempts,
      policy: this.policy.classes ?? DEFAULT_RETRY_CLASSES,
      classify: classifyTransient,
      deadline,
      signal,
      random: this.policy.random,
      onRetry: (err, attempt, delay, cls) =>
        logger.warn(
          `publish attempt ${attempt} failed transiently (${cls}); retrying in ${Math.round(delay)} ms with the same ids`,
          err,
        ),
      onGiveUp: (err, attempt, reason) =>
        logger.warn(
          `publish gave up after ${attempt} attempt(s): ${reason === 'deadline' ? 'the next wait would pass the invocation budget' : reason === 'attempts' ? 'no attempts left' : 'cancelled'}`,
          err,
        ),
    });
    // After a retry, a generated id's "duplicate" on its own queue is the earlier attempt's commit: report it inserted.
    const outcomes = stored.map((o, i) =>
      attempts > 1 && !o.inserted && messages[i]?.generatedId && o.existingQueue === messages[i]?.queue ? { ...o, inserted: true } : o,
    );
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
