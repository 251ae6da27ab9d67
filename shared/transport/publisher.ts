import type { Logger } from '../log';
import { DEFAULT_RETRY_CLASSES, withRetry, type BackoffPolicy, type RetryPolicy } from '../sql/retry';
import { classifyTransient } from '../sql/transient';
import { idGenerator, idLayoutFor, type IdGenerationMode } from './ids';
import type { OutgoingMessage, PublishOutcome, TopicPublishOutcome, TransportStore } from './types';
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
    const { result: stored, attempts } = await this.withRetries('publish', () => this.store.publish(messages), deadline, signal, logger);
    // After a retry, a generated id's "duplicate" on its own queue is the earlier attempt's commit: report it inserted
    // (not a dedup key's holder: that is another job, unless its id is this message's own).
    const outcomes = stored.map((o, i) =>
      attempts > 1 && !o.inserted && !o.debounced && messages[i]?.generatedId && o.id.toLowerCase() === messages[i]?.id.toLowerCase() && o.existingQueue === messages[i]?.queue
        ? { ...o, inserted: true }
        : o,
    );
    this.wakeQueues(messages.flatMap((m, i) => ((outcomes[i]?.inserted || outcomes[i]?.debounced) && m.delayMs <= 0 ? [m.queue] : [])));
    return outcomes;
  }

  /**
   * Topic fan-out (store.publishToTopic) with the same retries: the copy ids derive from the message ids, so a
   * retry writes no second copy. Every subscription queue that got a claimable copy is woken.
   */
  async publishToTopic(
    topic: string,
    messages: readonly OutgoingMessage[],
    deadline?: number,
    signal?: AbortSignal,
    logger: Logger = this.logger,
  ): Promise<TopicPublishOutcome[]> {
    const { result: stored, attempts } = await this.withRetries('topic publish', () => this.store.publishToTopic(topic, messages), deadline, signal, logger);
    // After a retry, a generated id's existing copies are the earlier attempt's commit: report them inserted.
    const outcomes = stored.map((o, i) => (attempts > 1 && messages[i]?.generatedId ? { ...o, copies: o.copies.map((c) => ({ ...c, inserted: true })) } : o));
    this.wakeQueues(outcomes.flatMap((o, i) => ((messages[i]?.delayMs ?? 0) <= 0 ? o.copies.filter((c) => c.inserted).map((c) => c.queue) : [])));
    return outcomes;
  }

  private async withRetries<T>(what: string, run: () => Promise<T>, deadline: number | undefined, signal: AbortSignal | undefined, logger: Logger) {
    let attempts = 0;
    const result = await withRetry(() => (attempts++, run()), {
      maxAttempts: this.policy.maxAttempts,
      policy: this.policy.classes ?? DEFAULT_RETRY_CLASSES,
      classify: classifyTransient,
      deadline,
      signal,
      random: this.policy.random,
      onRetry: (err, attempt, delay, cls) =>
        logger.warn(`${what} attempt ${attempt} failed transiently (${cls}); retrying in ${Math.round(delay)} ms with the same ids`, err),
      onGiveUp: (err, attempt, reason) =>
        logger.warn(
          `${what} gave up after ${attempt} attempt(s): ${reason === 'deadline' ? 'the next wait would pass the invocation budget' : reason === 'attempts' ? 'no attempts left' : 'cancelled'}`,
          err,
        ),
    });
    return { result, attempts };
  }

  /** Rows claimable at once wake this process's drain loops (each queue once). */
  private wakeQueues(queues: readonly string[]): void {
    for (const q of new Set(queues)) this.wake.notify(q);
  }
}
