// The engine as a library: stores, publisher, wake signal, response channel and the queues' routes, built from
// explicit options. No environment reads and no process-wide state: two engines in one process are independent.

import { ResponseChannel } from '../channel/response-channel';
import type { ChannelConfig } from '../channel/options';
import { announcingStores } from '../drain-requests/announcing-stores';
import { SCHEDULES_TARGET } from '../drain-requests/message';
import { createScheduleService, type ScheduleService } from '../schedules/service';
import { unavailableSchedules } from '../schedules/unavailable';
import type { FieldError } from '../validation';
import { consoleLogger, safeLogger, type Logger } from '../log';
import { BUILT_IN_QUEUES, DEFAULT_DEAD_LETTER_QUEUE, RESPONSE_QUEUE } from '../queue-names';
import { channelNames, transportNames, validateIdentifier, validateQueueName, type Dialect } from '../sql/identifiers';
import { DEFAULT_RETRY_CLASSES } from '../sql/retry';
import { openStores, type Stores } from '../stores/open';
import type { NotifyListener } from '../stores/postgres/notify-listener';
import { DEFAULT_TRANSPORT_TABLE } from '../stores/options';
import { noopMetrics } from '../telemetry/metrics';
import { carriedContext, publishTraced } from '../tracing/publish-trace';
import { drainQueue, type DrainReport } from '../transport/drain-loop';
import { Publisher } from '../transport/publisher';
import { MAX_BATCH, parsePublishBody } from '../transport/publish-request';
import { subscriptionQueue } from '../transport/topic-names';
import { subscriptionQueues, topicProblems, type TopicMap } from '../transport/topics';
import type { OutgoingMessage, QueueStats, TopicPublishOutcome, TransportStore } from '../transport/types';
import { WakeSignal } from '../transport/wake';
import type { CancelOutcome, QueueState, RescheduleOutcome, RescheduleTime } from '../transport/job-control';
import { UUID_PATTERN } from '../validation';
import {
  DEFAULT_CHANNEL,
  DEFAULT_EMPTY_POLL_DELAY_MS,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_POOL,
  DEFAULT_PUBLISH_MAX_ATTEMPTS,
  isInjected,
  type EngineOptions,
} from './options';
import { unknownOptionKeys } from './option-keys';
import { DEFAULT_QUEUE_POLICY, policyLimits, policyProblems, type QueuePolicy } from './policy';
import { historyQuery, jobSearchPage, type JobSearch, type JobSearchPage } from './job-search';
import type { JobRecord } from '../transport/history';
import { buildRoutes, routeView, type PolicyView, type QueueRoute, type RouteView } from './routes';
import { runUntilAborted } from './run-loop';
import { linkedSignal } from './signals';
import { wireFlows, type FlowsEngineOptions, type FlowsWiring } from './flows-wiring';
import type { Flows } from '../flows/flows';
import { DEFAULT_FLOWS_QUEUE, type CarriedJob, type FlowCarriedPublisher } from '../flows/jobs';
import { DEFAULT_FLOW_OPTIONS, flowOptionProblems } from '../flows/options';

export interface PublishInput {
  payload: unknown;
  /** UUID idempotency key; generated when absent. */
  id?: string;
  correlationId?: string;
  headers?: Record<string, string>;
  delaySeconds?: number;
  /** -32768..32767 (default 0): higher is claimed first, then availability order; kept through retries and dead letters. */
  priority?: number;
  /**
   * A dedup key (1–200 characters) held for dedupWindowSeconds (required with it, at most 30 days): another publish
   * with the key on this queue meanwhile enqueues nothing and answers the holder's job (duplicate: true), however
   * many publishers race. Queue publishes only.
   */
  dedupKey?: string;
  dedupWindowSeconds?: number;
  /** drop (default) or debounce: the holder's job, while still waiting, takes this payload and is due after this delay. */
  dedupMode?: 'drop' | 'debounce';
  /**
   * Jobs of this queue with the same key (1–200 characters, no control characters) run one at a time in publish
   * order, across instances and retries; a failing job holds the key until it succeeds or is dead-lettered. Queue
   * publishes only.
   */
  orderingKey?: string;
  /** A job not started by then is not run: dead-lettered with reason `expired` (dropped where dead-lettering is off). */
  expiresAt?: string;
  /** expiresAt as seconds from the publish (the app's clock); not both. */
  ttlSeconds?: number;
}

export interface PublishResult {
  id: string;
  /** The queue the job is on (a duplicate id may be on another queue: ids are unique across queues). */
  queue: string;
  availableAt: Date | null;
  /** true when a job with this id already existed, or the dedup key was held: nothing new was enqueued. */
  duplicate: boolean;
  /** Present when the dedup key's waiting job took this publish's payload, headers and due time (debounce). */
  debounced?: true;
}

export interface TopicPublishResult {
  /** The message id (the copies' ids derive from it). */
  id: string;
  topic: string;
  /** Subscriptions that got a copy or already had it; 0 = the topic had none and the message was dropped. */
  subscriptions: number;
  /** true when every subscription already had its copy (a republish): nothing new was enqueued. */
  duplicate: boolean;
  copies: Array<{ subscription: string; queue: string; id: string; duplicate: boolean; availableAt: Date | null }>;
}

/** One subscription of a topic with its queue's statistics. */
export interface SubscriptionStats extends Omit<QueueStats, 'queue'> {
  subscription: string;
  queue: string;
  /** In this engine's topics option (false: recorded in the table by another instance or an operator only). */
  configured: boolean;
}

export interface PublishCallOptions {
  /** epoch ms: retries on transient faults stop before it. */
  deadline?: number;
  signal?: AbortSignal;
  logger?: Logger;
  /**
   * The W3C trace context the jobs are published under (docs/tracing.md); default: the active OpenTelemetry
   * span's, if any. An invalid value is ignored.
   */
  traceparent?: string;
  tracestate?: string;
}

export interface DrainRequest {
  /** Claiming stops after this long; started handlers still finish and nothing stays leased. */
  budgetMs: number;
  /** The drain ends once the queue stayed empty this long. Default: the budget. */
  idleGraceMs?: number;
  /** Stop claiming now, release what was not started, finish what was. */
  signal?: AbortSignal;
  logger?: Logger;
}

export interface RunRequest {
  /** The only way a run ends. */
  signal: AbortSignal;
  logger?: Logger;
}

export interface QueueStatsWithRoute extends QueueStats {
  /** Claims from the queue are paused (on every instance); publishes are still accepted. */
  paused: boolean;
  pausedAt: Date | null;
  /** A forward target's 429/503 Retry-After holds the queue's claims back until then (every instance); null = not now. */
  backoffUntil: Date | null;
  route: RouteView;
  policy: PolicyView;
}

export interface Engine {
  readonly store: TransportStore;
  readonly stores: Stores;
  readonly channel: ResponseChannel;
  readonly publisher: Publisher;
  readonly wake: WakeSignal;
  readonly deadLetterQueue: string;
  /** The worker queues (not the built-in `response` and `callbacks`, nor the flows queue). */
  readonly queues: readonly string[];
  /** Durable flows (start, read, list, suspend, resume, cancel runs); undefined without the `flows` option. */
  readonly flows: Flows | undefined;
  /** The queue flow executions travel on (drained like every queue); undefined without flows. */
  readonly flowsQueue: string | undefined;
  /** Route of a worker or built-in queue. */
  route(queue: string): QueueRoute | undefined;
  publish(queue: string, message: PublishInput, options?: PublishCallOptions): Promise<PublishResult>;
  /** Validates every message first (nothing is written if one is bad), then inserts in statements of 100. */
  publishBatch(queue: string, messages: readonly PublishInput[], options?: PublishCallOptions): Promise<PublishResult[]>;
  /** topic → subscriptions (the topics option); each subscription's queue is one of `queues`. */
  readonly topics: TopicMap;
  /** Fans one message out to every subscription recorded for the topic (one copy each, idempotent by id). */
  publishToTopic(topic: string, message: PublishInput, options?: PublishCallOptions): Promise<TopicPublishResult>;
  /** Validates every message first, then fans out in statements of 100 messages. */
  publishBatchToTopic(topic: string, messages: readonly PublishInput[], options?: PublishCallOptions): Promise<TopicPublishResult[]>;
  /** The topic's subscriptions (configured and recorded) with their queues' statistics. */
  subscriptions(topic: string): Promise<SubscriptionStats[]>;
  /**
   * Records the configured subscriptions in the subscriptions table (insert-if-absent; never deletes). Runs once
   * per engine (again after a failure); topic publishes and drains run it first.
   */
  recordSubscriptions(): Promise<void>;
  /**
   * Recurring schedules (schedules table): put/get/list/delete/pause/resume, and evaluateDue, which fires the due
   * slots (the drain-worker timer and the schedule drain requests call it; a library host calls it from its timer).
   */
  readonly schedules: ScheduleService;
  /** One budgeted drain of a queue with its route (a timer invocation's work). */
  drain(queue: string, request: DrainRequest): Promise<DrainReport>;
  /** Long-running: drains the queues (default: every worker queue and the flows queue) without a budget until the signal aborts. */
  run(queues: string | readonly string[] | undefined, request: RunRequest): Promise<DrainReport[]>;
  stats(queue: string): Promise<QueueStatsWithRoute>;
  /**
   * Cancels a job of the queue: a waiting (ready or delayed) job is deleted ('deleted'). A running one is left alone
   * ('running') unless `running` is set: then it is marked ('cancelling'), its handler's signal aborts at its next
   * lease renewal (within a third of the lock timeout) and it ends as cancelled: deleted, not retried, not
   * dead-lettered, a correlated caller told with error `cancelled`. 'absent': no such job on the queue.
   */
  cancel(queue: string, id: string, options?: { running?: boolean }): Promise<CancelOutcome>;
  /** Moves a waiting job's due time (database clock); a running job is not touched ('running'). */
  reschedule(queue: string, id: string, when: RescheduleTime): Promise<RescheduleOutcome>;
  /**
   * One job by id, in whichever state a row holds it: waiting (ready, delayed), leased, dead-lettered (or expired),
   * or completed on a queue that keeps history (policy.historyRetentionMs). null when no row holds it (never
   * published, cancelled while waiting, completed without history, or pruned). InvalidJobIdError for a non-UUID.
   */
  job(id: string): Promise<JobRecord | null>;
  /** Completed jobs of the history, newest first, a page at a time (by queue or correlation id; JobSearchError). */
  searchJobs(search: JobSearch): Promise<JobSearchPage>;
  /** Stops every instance's claims from the queue (persisted; publishes are still accepted). */
  pause(queue: string): Promise<QueueState>;
  /** Lets claims from the queue go on, and wakes its drains (in process, NOTIFY, drain request). */
  resume(queue: string): Promise<QueueState>;
  /**
   * With drain requests (queue mode): probes every routed queue once (claimOutlook) and announces a drain for each
   * that has work due now (rows published while no instance was up, or from SQL; leases a crashed instance left
   * that lapsed) and a request at the lapse of the earliest live lease of the others. An instance calls it as it
   * starts. Resolves to the requests announced; without drain requests it probes nothing and resolves to 0.
   */
  announcePending(logger?: Logger): Promise<number>;
  /** Stops drains and runs (they settle what they started), then closes the LISTEN session and the pool. */
  close(): Promise<void>;
}

/**
 * Rows per insert statement of engine.publishBatch (validation still goes 100 at a time). PostgreSQL takes 1,000
 * (unnest arrays); SQL Server stays at 100: each row there takes a lock in the heap and in each of its indexes plus
 * key-range locks, and 1,000 rows would reach the 5,000-lock escalation threshold (a table lock that READPAST
 * claims cannot skip). A statement also stops at INSERT_BATCH_BYTES of payload, whatever the count.
 */
export const INSERT_BATCH: Readonly<Record<Dialect, number>> = { postgres: 1000, sqlserver: 100 };
export const INSERT_BATCH_BYTES = 16 * 1024 * 1024;

/** Splits rows into insert statements of at most `max` rows and (past the first row) `maxBytes` of payload. */
export function insertBatches<T extends { payloadJson: string }>(rows: readonly T[], max: number, maxBytes: number): T[][] {
  const batches: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const row of rows) {
    const size = row.payloadJson.length * 3; // UTF-8 bytes at most; the exact count would cost a pass per payload
    if (current.length > 0 && (current.length >= max || bytes + size > maxBytes)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(row);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/**
 * The insert statements of a topic publish: each message becomes one row per subscription, so the row and byte
 * caps of insertBatches apply to messages × subscriptions (the configured ones; a subscription recorded only by
 * another release adds its copies beyond this estimate).
 */
export function topicInsertBatches<T extends { payloadJson: string }>(rows: readonly T[], subscriptions: number, dialect: Dialect): T[][] {
  const copies = Math.max(1, subscriptions);
  return insertBatches(rows, Math.max(1, Math.floor(INSERT_BATCH[dialect] / copies)), Math.floor(INSERT_BATCH_BYTES / copies));
}

export class EngineOptionsError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid engine options:\n- ${problems.join('\n- ')}`);
    this.name = 'EngineOptionsError';
  }
}

export class UnknownQueueError extends Error {
  constructor(readonly queue: string, known: readonly string[]) {
    super(`queue '${queue}' has no route; the queues are ${known.join(', ')}`);
    this.name = 'UnknownQueueError';
  }
}

export class InvalidJobIdError extends Error {
  constructor(readonly id: string) {
    super(`job id '${id.slice(0, 80)}' is not a UUID`);
    this.name = 'InvalidJobIdError';
  }
}

export class UnknownTopicError extends Error {
  constructor(readonly topic: string, known: readonly string[]) {
    super(`topic '${topic}' is not configured; the topics are ${known.length > 0 ? known.join(', ') : '(none)'}`);
    this.name = 'UnknownTopicError';
  }
}

export class PublishRejectedError extends Error {
  constructor(
    readonly status: 400 | 413,
    detail: string,
    readonly errors: FieldError[],
  ) {
    super(`${detail}${errors.length ? `: ${errors.map((e) => `${e.field || '(body)'} ${e.message}`).join('; ')}` : ''}`);
    this.name = 'PublishRejectedError';
  }
}

/** An engine built with the `flows` option: its flows and their queue are there, and typed so. */
export interface EngineWithFlows extends Engine {
  readonly flows: Flows;
  readonly flowsQueue: string;
}

/**
 * Builds an engine from explicit options. With `flows`, the answer is an EngineWithFlows (`engine.flows` needs no
 * `!`); an engine may then have no worker queue at all (`queues: {}`: a flows-only worker). Every problem of the
 * options (unknown keys and bad values alike) is reported in one EngineOptionsError.
 */
export async function createEngine(options: EngineOptions & { flows: FlowsEngineOptions }): Promise<EngineWithFlows>;
export async function createEngine(options: EngineOptions): Promise<Engine>;
export async function createEngine(options: EngineOptions): Promise<Engine> {
  // before anything reads them: a misspelled key would otherwise leave its default in force without a word
  const unknownKeys = unknownOptionKeys(options);
  const logger = options.logger ?? safeLogger(consoleLogger('info'));
  const metrics = options.metrics ?? noopMetrics;
  const dialect: Dialect = !isInjected(options.store) && options.store.kind === 'sqlserver' ? 'sqlserver' : 'postgres';
  const schema = options.schema ?? (dialect === 'sqlserver' ? 'dbo' : 'public');
  const transportTable = options.transportTable ?? DEFAULT_TRANSPORT_TABLE;
  const deadLetterQueue = options.deadLetterQueue ?? DEFAULT_DEAD_LETTER_QUEUE;
  const channelConfig: ChannelConfig = { ...DEFAULT_CHANNEL, ...options.channel };
  const defaults: QueuePolicy = { ...DEFAULT_QUEUE_POLICY, ...options.defaults };
  const retry = options.retry ?? DEFAULT_RETRY_CLASSES;
  const emptyPollDelayMs = options.emptyPollDelayMs ?? DEFAULT_EMPTY_POLL_DELAY_MS;
  const maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  // every problem at once: a typo'd key and a bad value in one run are both reported
  const problems = [...unknownKeys, ...optionProblems(options, defaults, deadLetterQueue, schema, transportTable, channelConfig, dialect)];
  if (problems.length > 0) throw new EngineOptionsError(problems);

  const opened = isInjected(options.store)
    ? options.store.stores
    : await openStores(
        {
          store: options.store,
          schema,
          transportTable,
          autoCreateSchema: options.autoCreateSchema ?? true,
          durableClaimsAndAcks: options.durableClaimsAndAcks ?? false,
          pool: { ...DEFAULT_POOL, ...options.store.pool },
          azureClientId: options.store.azureClientId,
          channel: channelConfig,
        },
        logger,
      );
  // a stored response becomes overdue (the sweep routes it to its callbacks) once the confirmation timeout passed
  const stores = options.drainRequests ? announcingStores(opened, options.drainRequests, channelConfig.deliveryConfirmationTimeoutMs + 1000) : opened;
  const wake = new WakeSignal();
  const publishWake = options.wake?.inProcess === false ? new WakeSignal() : wake; // a signal nobody waits on
  const publisher = new Publisher(
    stores.transport,
    publishWake,
    { maxAttempts: options.publishMaxAttempts ?? DEFAULT_PUBLISH_MAX_ATTEMPTS, classes: retry, idGeneration: options.idGeneration ?? 'sequential' },
    logger,
  );
  const channel = new ResponseChannel(stores.channel, publishWake, channelConfig, logger, retry);
  let flowsWiring: FlowsWiring | undefined;
  if (options.flows) {
    // the opened stores' own flow store (announcing, where drain requests are on) may carry jobs into their transport
    const ownStore = options.flows.store === undefined;
    const flowStore = options.flows.store ?? stores.flows;
    flowsWiring = wireFlows({
      options: options.flows,
      store: flowStore,
      carriesJobs: ownStore && flowStore.carriesJobs === true,
      publisher,
      wake: publishWake,
      transport: stores.transport,
      channel,
      logger,
      metrics,
      publish: (queue, message) => engine.publish(queue, message),
      publishCarried: (queue, message, write) => publishCarried(queue, message, write),
    });
  }
  const routes = buildRoutes(options, { channel, channelStore: stores.channel, channelConfig, defaults, logger, metrics, internalTargets: flowsWiring?.internalTargets });
  if (flowsWiring) {
    routes.set(flowsWiring.queue, {
      queue: flowsWiring.queue,
      handler: flowsWiring.handler,
      description: { kind: 'flows' },
      hooks: {},
      policy: { ...defaults, ...options.flows?.policy },
    });
  }
  const workerQueues = Object.keys(options.queues);
  const notifyUrl = isInjected(options.store) ? options.store.notifyUrl : options.store.kind === 'postgres' ? options.store.url : undefined;
  let listener: NotifyListener | undefined;
  const activeDrains = new Map<string, number>(); // queue → drains running in this engine
  if (notifyUrl !== undefined && options.wake?.notify !== false) {
    try {
      // With drain requests, a NOTIFY for a queue no drain of this instance is running (a publish from SQL, or from
      // another instance) becomes a drain request: rows a business transaction published through the SQL function
      // are drained at once instead of at the next safety-net timer, whenever some instance is up. Every drain
      // loop, waiting or busy, runs through engine.drain and is counted in activeDrains; busy instances under load
      // add no requests (which would feed the scale controller's queue length). The sender coalesces (one request
      // per queue and second), so this instance's own publishes add nothing.
      const requests = options.drainRequests;
      const announceIdle = requests && ((queue: string) => void (activeDrains.has(queue) || requests.announce(queue, 0)));
      listener = await startWakeListener(notifyUrl, schema, transportTable, channelConfig, wake, channel, logger, announceIdle);
    } catch (err) {
      await stores.close();
      throw err;
    }
  }

  /**
   * Queue mode, after the last drain of `queue` in this engine ended (and at start-up, without a report): what the
   * table still holds becomes a drain request, so work no request announced does not wait for the safety-net timer.
   * Due rows: a request now (not after a drain stopped by its budget: drainQueues fans out then). Otherwise the
   * earliest live lease (a peer's, maybe one that crashed; or a claim this drain could not settle): a request that
   * surfaces when it lapses, at most one outstanding per queue. When the probe fails, claims this drain could not
   * settle still get theirs, at one lease from now.
   */
  const requests = options.drainRequests;
  const announceLapse = (queue: string, ms: number) =>
    requests?.announceLeaseLapse ? requests.announceLeaseLapse(queue, ms) : requests?.announce(queue, ms);
  const announceOutlook = async (queue: string, lockTimeoutMs: number, log: Logger, after?: DrainReport): Promise<boolean> => {
    if (!requests) return false;
    try {
      const route = routes.get(queue);
      const o = await stores.transport.claimOutlook(queue, route ? policyLimits(route.policy) : undefined);
      if (o.due) {
        if (after?.stoppedBy === 'budget' && after.claimed > 0) return false;
        requests.announce(queue, 0);
        return true;
      }
      // a hold (forward backoff, a limited queue's next token) ends before or after the leases lapse: ask at the first
      const at = Math.min(o.leaseLapsesInMs ?? Infinity, o.resumesInMs ?? Infinity);
      if (at === Infinity) return false;
      announceLapse(queue, at);
      return true;
    } catch (err) {
      const unsettled = after ? after.ackFailures + after.releaseFailures : 0;
      if (unsettled > 0) announceLapse(queue, lockTimeoutMs);
      log.warn(`reading what '${queue}' still holds failed${unsettled > 0 ? `; asked for a drain when the ${unsettled} claim(s) this drain could not settle lapse` : ''} (the safety-net timers drain what is left)`, err);
      return unsettled > 0;
    }
  };

  const closing = new AbortController();
  const active = new Set<Promise<unknown>>();
  const track = <T>(work: Promise<T>): Promise<T> => {
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    active.add(settled);
    void settled.finally(() => active.delete(settled));
    return work;
  };
  const jobId = (id: string): string => {
    if (!UUID_PATTERN.test(id)) throw new InvalidJobIdError(id);
    return id.toLowerCase();
  };
  /**
   * A rescheduled job is announced like a delayed publish: in-process wake when due, a drain request at its due time
   * in queue mode (PostgreSQL NOTIFYs other processes in the statement). Hints only, on the app's clock.
   */
  const wakeIfDue = (queue: string, availableAt: Date) => {
    const inMs = Math.max(0, availableAt.getTime() - Date.now());
    if (inMs <= 1000) wake.notify(queue);
    requests?.announce(queue, inMs);
  };
  const routeOf = (queue: string): QueueRoute => {
    const route = routes.get(queue);
    if (!route) throw new UnknownQueueError(queue, [...routes.keys()]);
    return route;
  };
  const publishable = (queue: string) => {
    if (!workerQueues.includes(queue) && queue !== RESPONSE_QUEUE) throw new UnknownQueueError(queue, [...workerQueues, RESPONSE_QUEUE]);
  };
  /**
   * ctx.awaitResponse's request, validated as engine.publish does, inserted by `write` (the breadcrumb's statement);
   * null for a message the carried insert does not cover (an ordering or dedup key, the response queue).
   */
  const publishCarried: FlowCarriedPublisher = async (queue, message, write) => {
    publishable(queue);
    const parsed = parsePublishBody(message, queue, maxMessageBytes, publisher.newId);
    if (!parsed.ok) throw new PublishRejectedError(parsed.status, parsed.detail, parsed.errors);
    const m = parsed.messages[0]!;
    if (queue === RESPONSE_QUEUE || parsed.messages.length !== 1 || m.orderingKey !== undefined || m.dedup !== undefined) return null;
    const job: CarriedJob = { id: m.id, queue, payloadJson: m.payloadJson, headersJson: JSON.stringify(m.headers), delayMs: m.delayMs, priority: m.priority ?? 0, quiet: m.delayMs <= 0 && publishWake.claimsPromptly(queue) };
    await publishTraced(queue, undefined, parsed.messages, () => track(write([job])));
    // committed: nothing after this may fail the caller (it would take the sent request for an unsent one). A request
    // whose id was already there was not inserted (CarriedJob.inserted): the existing job stands, as for a publish.
    try {
      if (job.inserted !== false) {
        if (m.delayMs <= 0) publishWake.notify(queue);
        metrics.jobsPublished(queue, 1);
      }
    } catch (err) {
      logger.warn(`announcing the request published on '${queue}' failed`, err);
    }
    return { id: m.id };
  };
  const insert = async (queue: string, messages: OutgoingMessage[], o: PublishCallOptions): Promise<PublishResult[]> => {
    const outcomes = await publishTraced(queue, carriedContext(o), messages, () => track(publisher.publish(messages, o.deadline, o.signal, o.logger)));
    metrics.jobsPublished(queue, outcomes.filter((x) => x.inserted).length);
    return outcomes.map((x) => ({ id: x.id, queue: x.existingQueue ?? queue, availableAt: x.availableAt, duplicate: !x.inserted, ...(x.debounced ? { debounced: true as const } : {}) }));
  };
  const topics: TopicMap = options.topics ?? {};
  const topicOf = (topic: string): readonly string[] => {
    if (!Object.hasOwn(topics, topic)) throw new UnknownTopicError(topic, Object.keys(topics));
    return topics[topic]!;
  };
  let recording: Promise<void> | undefined;
  const recordSubscriptions = (): Promise<void> => {
    const pairs = Object.entries(topics).flatMap(([topic, subs]) => subs.map((subscription) => ({ topic, subscription })));
    if (pairs.length === 0) return Promise.resolve();
    recording ??= track(stores.transport.recordSubscriptions(pairs)).then(
      (added) => {
        if (added > 0) logger.info(`recorded ${added} topic subscription(s) in the subscriptions table`);
      },
      (err: unknown) => {
        recording = undefined; // the next publish or drain tries again
        throw err;
      },
    );
    return recording;
  };
  const fanOut = async (topic: string, messages: OutgoingMessage[], o: PublishCallOptions): Promise<TopicPublishResult[]> => {
    await recordSubscriptions();
    const outcomes = await publishTraced(topic, carriedContext(o), messages, () => track(publisher.publishToTopic(topic, messages, o.deadline, o.signal, o.logger)));
    const results = outcomes.map((x) => topicResult(topic, x));
    for (const r of results) {
      for (const c of r.copies) if (!c.duplicate) metrics.jobsPublished(c.queue, 1);
      if (r.subscriptions === 0) (o.logger ?? logger).info(`topic '${topic}' has no subscription: message ${r.id} was dropped`);
    }
    return results;
  };
  const parseAll = (messages: readonly PublishInput[], queue: string, dedup: boolean): OutgoingMessage[][] => {
    const chunks: OutgoingMessage[][] = [];
    for (let i = 0; i < messages.length; i += MAX_BATCH) {
      const parsed = parsePublishBody(messages.slice(i, i + MAX_BATCH), queue, maxMessageBytes, publisher.newId, { dedup });
      if (!parsed.ok) {
        const at = (field: string) => field.replace(/^\[(\d+)\]/, (_, n: string) => `[${Number(n) + i}]`);
        throw new PublishRejectedError(parsed.status, parsed.detail, parsed.errors.map((e) => ({ ...e, field: at(e.field) })));
      }
      chunks.push(parsed.messages);
    }
    return chunks;
  };
  let closed: Promise<void> | undefined;

  const schedules = stores.schedules
    ? createScheduleService({
        store: stores.schedules,
        maxMessageBytes,
        targetProblem: (t) =>
          t.kind === 'queue'
            ? workerQueues.includes(t.name) ? null : `queue '${t.name}' has no route; the queues are ${workerQueues.join(', ')}`
            : Object.hasOwn(topics, t.name) ? null : `topic '${t.name}' is not configured; the topics are ${Object.keys(topics).join(', ') || '(none)'}`,
        beforeTopicFiring: recordSubscriptions,
        jobsInserted: (queues) => {
          for (const q of queues) {
            publishWake.notify(q);
            requests?.announce(q, 0);
          }
        },
        announceEvaluation: requests && ((delayMs: number) => requests.announce(SCHEDULES_TARGET, delayMs)),
        logger,
      })
    : unavailableSchedules();

  const engine: Engine = {
    store: stores.transport,
    stores,
    channel,
    publisher,
    wake,
    deadLetterQueue,
    queues: workerQueues,
    flows: flowsWiring?.flows,
    flowsQueue: flowsWiring?.queue,
    route: (queue) => routes.get(queue),
    schedules,

    async publish(queue, message, o = {}) {
      publishable(queue);
      const parsed = parsePublishBody(message, queue, maxMessageBytes, publisher.newId);
      if (!parsed.ok) throw new PublishRejectedError(parsed.status, parsed.detail, parsed.errors);
      const [result] = await insert(queue, parsed.messages, o);
      return result!;
    },

    async publishBatch(queue, messages, o = {}) {
      publishable(queue);
      const results: PublishResult[] = [];
      // validated 100 at a time (the HTTP batch rules), inserted INSERT_BATCH per statement: each statement is a
      // round trip, and a bulk load of 500 in five statements trailed a peer's one on PostgreSQL
      for (const batch of insertBatches(parseAll(messages, queue, true).flat(), INSERT_BATCH[dialect], INSERT_BATCH_BYTES)) {
        results.push(...(await insert(queue, batch, o)));
      }
      return results;
    },

    topics,
    recordSubscriptions,

    async publishToTopic(topic, message, o = {}) {
      topicOf(topic);
      const parsed = parsePublishBody(message, topic, maxMessageBytes, publisher.newId, { dedup: false });
      if (!parsed.ok) throw new PublishRejectedError(parsed.status, parsed.detail, parsed.errors);
      const [result] = await fanOut(topic, parsed.messages, o);
      return result!;
    },

    async publishBatchToTopic(topic, messages, o = {}) {
      topicOf(topic);
      const results: TopicPublishResult[] = [];
      // rows per statement are messages × subscriptions: the queue publish's caps apply to the copies
      const subscriptionCount = topicOf(topic).length;
      for (const chunk of topicInsertBatches(parseAll(messages, topic, false).flat(), subscriptionCount, dialect)) {
        results.push(...(await fanOut(topic, chunk, o)));
      }
      return results;
    },

    async subscriptions(topic) {
      const configured = topicOf(topic);
      await recordSubscriptions();
      const recorded = (await track(stores.transport.topicSubscriptions(topic))).map((s) => s.subscription);
      const names = [...new Set([...configured, ...recorded])].sort();
      const items: SubscriptionStats[] = [];
      // one after another: a listing must not take a pool connection per subscription
      for (const subscription of names) {
        const queue = subscriptionQueue(topic, subscription);
        const { queue: _, ...stats } = await track(stores.transport.queueStats(queue, deadLetterQueue));
        items.push({ subscription, queue, ...stats, configured: configured.includes(subscription) });
      }
      return items;
    },

    drain(queue, request) {
      const route = routeOf(queue);
      // every instance records its configured subscriptions soon after start, publishing to a topic or not
      if (recording === undefined) recordSubscriptions().catch((err: unknown) => logger.warn('recording the topic subscriptions failed; the next drain retries', err));
      const stop = linkedSignal([request.signal, closing.signal]);
      const p = route.policy;
      activeDrains.set(queue, (activeDrains.get(queue) ?? 0) + 1);
      const ended = () => {
        stop.dispose();
        const n = (activeDrains.get(queue) ?? 1) - 1;
        if (n > 0) activeDrains.set(queue, n);
        else activeDrains.delete(queue);
      };
      return track(
        drainQueue({
          store: stores.transport,
          queue,
          handler: route.handler,
          ...route.hooks,
          policy: p,
          deadLetterQueue,
          lockTimeoutMs: p.lockTimeoutMs,
          batchSize: p.batchSize,
          prefetch: p.prefetch,
          concurrency: p.concurrency,
          limits: policyLimits(p),
          budgetMs: request.budgetMs,
          idleGraceMs: request.idleGraceMs ?? request.budgetMs,
          emptyPollDelayMs,
          wake,
          logger: request.logger ?? logger,
          stopping: stop.signal,
          claimRetry: retry,
          keepHistory: p.historyRetentionMs > 0,
        })
          .finally(ended)
          .then(async (report) => {
            // the last drain of the queue here: a drain still running would see the same rows, and ask when it ends
            if (requests && !activeDrains.has(queue)) await announceOutlook(queue, p.lockTimeoutMs, request.logger ?? logger, report);
            return report;
          }),
      );
    },

    run(queues, request) {
      const list = queues === undefined ? [...workerQueues, ...(flowsWiring ? [flowsWiring.queue] : [])] : typeof queues === 'string' ? [queues] : queues;
      for (const q of list) routeOf(q);
      const stop = linkedSignal([request.signal, closing.signal]);
      const log = request.logger ?? logger;
      const drainForever = (q: string) => () => engine.drain(q, { budgetMs: Infinity, idleGraceMs: Infinity, signal: stop.signal, logger: log });
      return Promise.all(list.map((q) => runUntilAborted(q, drainForever(q), stop.signal, log))).finally(stop.dispose);
    },

    async stats(queue) {
      const route = routeOf(queue);
      const stats = await track(stores.transport.queueStats(queue, deadLetterQueue));
      const state = await track(stores.transport.queueState(queue));
      return { ...stats, paused: state.paused, pausedAt: state.pausedAt, backoffUntil: state.backoffUntil ?? null, ...routeView(route) };
    },

    async cancel(queue, id, o = {}) {
      routeOf(queue);
      return track(stores.transport.cancel(queue, jobId(id), o.running === true));
    },

    async reschedule(queue, id, when) {
      routeOf(queue);
      const outcome = await track(stores.transport.reschedule(queue, jobId(id), when));
      if (outcome.outcome === 'rescheduled') wakeIfDue(queue, outcome.availableAt);
      return outcome;
    },

    async job(id) {
      return track(stores.transport.findJob(jobId(id), deadLetterQueue));
    },

    async searchJobs(search) {
      const query = historyQuery(search);
      if (query.queue !== undefined) routeOf(query.queue);
      return jobSearchPage(await track(stores.transport.searchHistory(query)));
    },

    async pause(queue) {
      routeOf(queue);
      return track(stores.transport.setQueuePaused(queue, true));
    },

    async resume(queue) {
      const route = routeOf(queue);
      const state = await track(stores.transport.setQueuePaused(queue, false));
      wake.notify(queue);
      await announceOutlook(queue, route.policy.lockTimeoutMs, logger);
      return state;
    },

    announcePending(log = logger) {
      return track(
        (async () => {
          let announced = 0;
          if (!requests) return announced;
          // one after another: start-up must not take a pool connection per queue
          for (const [queue, route] of routes) if (await announceOutlook(queue, route.policy.lockTimeoutMs, log)) announced++;
          // the soonest schedule slot gets its request too (one whose request was lost, or sent before a restart)
          try {
            await schedules.announceSoonest();
          } catch (err) {
            log.warn('start-up: reading the soonest schedule slot failed (the safety-net timers evaluate the schedules)', err);
          }
          return announced;
        })(),
      );
    },

    close() {
      closed ??= (async () => {
        closing.abort(new Error('engine closing'));
        while (active.size > 0) await Promise.all([...active]);
        try {
          await listener?.close();
        } finally {
          await stores.close();
        }
      })();
      return closed;
    },
  };
  return engine;
}

function optionProblems(
  o: EngineOptions,
  defaults: QueuePolicy,
  deadLetterQueue: string,
  schema: string,
  table: string,
  channel: ChannelConfig,
  dialect: Dialect,
): string[] {
  const problems: string[] = [];
  // a string 'false' would read as true: the other schema mode, or the other durability of claims and acks
  for (const key of ['autoCreateSchema', 'durableClaimsAndAcks'] as const) {
    if (o[key] !== undefined && typeof o[key] !== 'boolean') problems.push(`${key} must be true or false`);
  }
  const queues = Object.keys(o.queues ?? {});
  if (queues.length === 0 && !o.flows) problems.push('queues: name at least one worker queue (or give `flows`: a flows-only engine needs none)');
  const flowsQueue = o.flows ? (o.flows.queue ?? DEFAULT_FLOWS_QUEUE) : undefined;
  if (flowsQueue !== undefined) {
    if (queues.includes(flowsQueue) || flowsQueue === deadLetterQueue || BUILT_IN_QUEUES.includes(flowsQueue)) {
      problems.push(`flows.queue '${flowsQueue}' is already a worker, built-in or dead-letter queue: flow executions need a queue of their own`);
    }
    if (typeof o.flows?.registry?.get !== 'function') problems.push('flows.registry must be a FlowRegistry');
    if (o.flows?.policy) problems.push(...policyProblems(flowsQueue, { ...defaults, ...o.flows.policy }));
    problems.push(...flowOptionProblems({ ...DEFAULT_FLOW_OPTIONS, ...o.flows?.timings }));
  }
  for (const q of [...queues, deadLetterQueue, ...(flowsQueue !== undefined ? [flowsQueue] : [])]) {
    const why = validateQueueName(q);
    if (why) problems.push(`queue '${q}': ${why}`);
  }
  for (const q of queues) {
    if (q === deadLetterQueue) problems.push(`queue '${q}' is the dead-letter queue`);
    if (BUILT_IN_QUEUES.includes(q)) problems.push(`queue '${q}' is built in (the response channel's); configure its policy with builtInPolicies`);
    const r = o.queues[q]!;
    if (typeof r.handler !== 'function') {
      if (r.handler?.kind === 'forward') {
        if (!/^https?:$/.test(safeProtocol(r.handler.url))) problems.push(`queue '${q}': the forward URL '${r.handler.url}' is not an http(s) URL`);
        const t = r.handler.timeoutMs;
        if (t !== undefined && !(t >= 1 && t <= 600_000)) problems.push(`queue '${q}': the forward timeout must be from 1 to 600000 ms`);
      } else if (r.handler?.kind !== 'echo') problems.push(`queue '${q}': handler must be a function, { kind: 'echo' } or { kind: 'forward', url }`);
    }
    problems.push(...policyProblems(q, { ...defaults, ...r.policy }));
  }
  for (const [q, p] of Object.entries(o.builtInPolicies ?? {})) problems.push(...policyProblems(q, { ...defaults, ...p }));
  const topics = o.topics ?? {};
  const fanOutQueues = subscriptionQueues(topics);
  problems.push(...topicProblems(topics, [...queues.filter((q) => !fanOutQueues.includes(q)), deadLetterQueue, ...BUILT_IN_QUEUES]));
  for (const q of fanOutQueues) {
    if (!queues.includes(q)) problems.push(`queue '${q}' (a subscription of topic '${q.slice(0, q.indexOf(':'))}') needs a route: add it to queues`);
  }
  if (!isInjected(o.store)) {
    for (const [what, value] of [
      ['schema', schema],
      ['transportTable', table],
      ['channel.recoveryTable', channel.recoveryTable],
      ['channel.messageTable', channel.messageTable],
      ['channel.subscriberTable', channel.subscriberTable],
    ] as const) {
      try {
        validateIdentifier(value, what, dialect);
      } catch (e) {
        problems.push((e as Error).message);
      }
    }
  }
  return problems;
}

function safeProtocol(url: string): string {
  try {
    return new URL(url).protocol;
  } catch {
    return '';
  }
}

/** PostgreSQL: NOTIFYs from other processes wake this engine's drain loops and waiters at once. */
async function startWakeListener(
  url: string,
  schema: string,
  table: string,
  channelConfig: ChannelConfig,
  wake: WakeSignal,
  channel: ResponseChannel,
  logger: Logger,
  /** Called for every transport NOTIFY after the local wake (queue mode: may become a drain request). */
  onNotified?: (queue: string) => void,
): Promise<NotifyListener> {
  const { startNotifyListener } = await import('../stores/postgres/notify-listener');
  const { notifyPrefix } = await import('../stores/postgres/statements');
  const { channelNotifyPrefix } = await import('../stores/postgres/channel-statements');
  return startNotifyListener(
    url,
    {
      transport: {
        prefix: notifyPrefix(transportNames(schema, table, 'postgres')),
        wake: (queue) => {
          wake.notify(queue);
          onNotified?.(queue);
        },
      },
      channel: { prefix: channelNotifyPrefix(channelNames(schema, channelConfig, 'postgres')), wake: (id) => channel.local.notify(id) },
    },
    logger,
  );
}

function topicResult(topic: string, o: TopicPublishOutcome): TopicPublishResult {
  const copies = o.copies.map((c) => ({
    subscription: c.queue.slice(topic.length + 1),
    queue: c.queue,
    id: c.id,
    duplicate: !c.inserted,
    availableAt: c.availableAt,
  }));
  return { id: o.id, topic, subscriptions: copies.length, duplicate: copies.length > 0 && copies.every((c) => c.duplicate), copies };
}
