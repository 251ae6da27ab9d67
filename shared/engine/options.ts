// What createEngine takes: explicit values only (no environment reads). shared/settings turns app settings into
// these; a program of its own writes them directly. Everything optional has the app settings' default.

import { DEFAULT_CORRELATION_ID_JSON_PATHS } from '../channel/correlation-extractor';
import type { ChannelConfig } from '../channel/options';
import type { HandlerSpec } from '../handlers/registry';
import type { Logger } from '../log';
import type { RetryPolicy } from '../sql/retry';
import type { Stores } from '../stores/open';
import type { PoolOptions, StoreSelection } from '../stores/selection';
import type { Metrics } from '../telemetry/metrics';
import type { DrainAnnouncer } from '../drain-requests/sender';
import type { JobHandler } from '../transport/job';
import type { IdGenerationMode } from '../transport/ids';
import type { FlowsEngineOptions } from './flows-wiring';
import type { QueuePolicy } from './policy';

export type { PoolOptions };

/** A connection the engine opens (and closes): SQL Server, a PostgreSQL server or embedded PGlite. */
export type StoreConnection = StoreSelection & { pool?: Partial<PoolOptions>; azureClientId?: string };

/** Stores opened by the caller; the engine's close() closes them too. */
export interface InjectedStores {
  stores: Stores;
  /** PostgreSQL: the server's URL, for the LISTEN session that turns other processes' NOTIFYs into wakes. */
  notifyUrl?: string;
}

export interface QueueRouteOptions {
  /** A function of your own, or a handler built from data (echo, forward to a URL). */
  handler: JobHandler | HandlerSpec;
  /** Overrides of the engine's `defaults` for this queue. */
  policy?: Partial<QueuePolicy>;
  /**
   * Correlated jobs answer through the response channel: the handler's result becomes the response, a job that
   * ends in failure publishes an error response. Default true.
   */
  respond?: boolean;
}

export interface EngineOptions {
  store: StoreConnection | InjectedStores;
  /** Default 'dbo' on SQL Server, 'public' on PostgreSQL. */
  schema?: string;
  transportTable?: string;
  /** true (default): create the schema at first use; false: verify only. */
  autoCreateSchema?: boolean;
  /**
   * PostgreSQL: claims and acks wait for the WAL flush like every other write. Default false: they commit without it
   * (stores/postgres/async-commit.ts), and a database crash can forget the last of them (those jobs run again).
   */
  durableClaimsAndAcks?: boolean;
  /** The worker queues, each with its own handler and policy. */
  queues: Record<string, QueueRouteOptions>;
  /**
   * Topics (spec 003): topic → its durable subscriptions. A subscription's copies live on the queue
   * `{topic}:{subscription}`, which must be one of `queues` (its handler and policy are that queue's).
   */
  topics?: Record<string, readonly string[]>;
  /** Policy of every queue that does not override it (the built-in `response` and `callbacks` queues too). */
  defaults?: Partial<QueuePolicy>;
  /** Policy overrides of the built-in queues. */
  builtInPolicies?: Partial<Record<'response' | 'callbacks', Partial<QueuePolicy>>>;
  deadLetterQueue?: string;
  /** How long dead letters are kept (DEAD_LETTER_RETENTION_DAYS); null or absent = forever. */
  deadLetterRetentionMs?: number | null;
  /** Wait between claims on an empty queue (a wake ends it early). Default 250. */
  emptyPollDelayMs?: number;
  /** Backoff per transient fault class for store calls. */
  retry?: RetryPolicy;
  /** Attempts of one publish on transient faults (same ids every attempt). Default 3. */
  publishMaxAttempts?: number;
  /** Ids generated for messages published without one: time-ordered for index locality (default) or random v4. */
  idGeneration?: IdGenerationMode;
  /** Largest payload accepted by publish (UTF-8 bytes of its JSON). Default 262144. */
  maxMessageBytes?: number;
  /** Response channel tables and timings; the app settings' defaults otherwise. */
  channel?: Partial<ChannelConfig>;
  logger?: Logger;
  metrics?: Metrics;
  /**
   * How a publish reaches a waiting drain: `inProcess` (same engine, at once) and, on PostgreSQL, `notify`
   * (LISTEN/NOTIFY, across processes). Both default true; without either, drains poll every emptyPollDelayMs.
   */
  wake?: { inProcess?: boolean; notify?: boolean };
  /**
   * Told (after the commit) whenever work becomes claimable: every publish, a retry's release with its backoff,
   * claims handed back, a requeued dead letter, routed callbacks, and a stored response (a sweep once it is
   * overdue). The app sends storage-queue drain requests from it (shared/drain-requests); absent: nobody is told.
   */
  drainRequests?: DrainAnnouncer;
  /**
   * Durable flows (shared/flows): the registry of flows this engine runs, their queue (default `flows`, drained
   * like every queue and by run() by default) and store (default: the opened stores' flow store).
   */
  flows?: FlowsEngineOptions;
}

export const DEFAULT_POOL: Readonly<PoolOptions> = Object.freeze({ max: 10, min: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 30_000 });
export const DEFAULT_EMPTY_POLL_DELAY_MS = 250;
export const DEFAULT_PUBLISH_MAX_ATTEMPTS = 3;
export const DEFAULT_MAX_MESSAGE_BYTES = 262_144;

/** The response channel's defaults (the same as the settings' defaults: test/unit/engine.options.test.ts). */
export const DEFAULT_CHANNEL: Readonly<ChannelConfig> = Object.freeze({
  recoveryTable: 'asyncresponse_recovery_state',
  messageTable: 'asyncresponse_channel_messages',
  subscriberTable: 'asyncresponse_channel_subscribers',
  messageRetentionMs: 3_600_000,
  deliveryConfirmationTimeoutMs: 5000,
  deliveryConfirmationPollMs: 50,
  activePollIntervalMs: 250,
  heartbeatIntervalMs: 10_000,
  heartbeatTimeoutMs: 30_000,
  pruneIntervalMs: 30_000,
  recoveryStateExpiryMs: 604_800_000,
  maxWaitSeconds: 120,
  callbackAllowedHosts: [],
  callbackTimeoutMs: 30_000,
  maxRegistrationsPerCorrelationId: 32,
  correlationIdJsonPaths: [...DEFAULT_CORRELATION_ID_JSON_PATHS],
  drainResponsesSchedule: '*/10 * * * * *',
  drainCallbacksSchedule: '*/10 * * * * *',
  sweepSchedule: '*/5 * * * * *',
});

export function isInjected(store: EngineOptions['store']): store is InjectedStores {
  return 'stores' in store;
}
