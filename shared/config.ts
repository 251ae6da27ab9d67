// Settings from the environment → validated, typed options with the spec's defaults.
// Every setting the app reads is listed in SETTINGS (the README table and the infra drift check use it).

import { DEFAULT_CORRELATION_ID_JSON_PATHS } from './channel/correlation-extractor';
import { parseSchedule } from './ncrontab';
import { validateQueueName, validateIdentifier, type Dialect } from './sql/identifiers';
import type { Logger, LogLevel } from './log';
import type { EngineOptions } from './engine/options';
import type { HandlerRegistry } from './handlers/registry';
import type { Metrics } from './telemetry/metrics';
import { DEFAULT_RETRY_CLASSES, retryPolicy, type RetryPolicy } from './sql/retry';
import { DEFAULT_TRANSPORT_TABLE } from './stores/options';
import type { QueuePolicy } from './engine/policy';
import type { HandlerSpec } from './handlers/registry';
import { CALLBACK_QUEUE, RESPONSE_QUEUE } from './queue-names';
import { findQueueSettings, PER_QUEUE_SETTINGS, QUEUE_SETTING_PATTERN, type PerQueueSetting } from './queue-settings';
import { idGeneration, type IdGenerationMode } from './transport/ids';
import { loadTopics, TOPIC_SETTING_PATTERN } from './topic-settings';
import { subscriptionQueues, topicProblems, type TopicMap } from './transport/topics';
import { DRAIN_REQUEST_SETTINGS, loadDrainRequestConfig, QUEUE_MODE_SCHEDULE, type DrainRequestConfig } from './drain-requests/settings';

export type Env = Record<string, string | undefined>;

export type StoreSelection =
  | {
      kind: 'sqlserver';
      connectionString?: string;
      server?: string;
      database?: string;
      user?: string;
      password?: string;
      port?: number;
      trustServerCertificate?: boolean;
    }
  | { kind: 'postgres'; url: string }
  | { kind: 'pglite'; dataDir: string };

export interface AppConfig {
  store: StoreSelection;
  schema: string;
  transportTable: string;
  autoCreateSchema: boolean;
  pool: { max: number; min: number; connectTimeoutMs: number; requestTimeoutMs: number };
  azureClientId?: string;
  /** The worker queues: QUEUES, then every topic subscription's queue (`{topic}:{subscription}`). */
  queues: string[];
  /** TOPICS with their TOPIC__<key>__SUBSCRIPTIONS. */
  topics: TopicMap;
  deadLetterQueue: string;
  lockTimeoutMs: number;
  maxDeliveryAttempts: number;
  redeliveryDelayMs: number;
  redeliveryMaxDelayMs: number;
  batchSize: number;
  prefetch: number;
  handlerConcurrency: number;
  emptyPollDelayMs: number;
  publish: { maxAttempts: number; classes: RetryPolicy; idGeneration: IdGenerationMode };
  /** Backoff per transient class for every retried store call (publish, claims, response insert, recovery claim). */
  retry: RetryPolicy;
  deadLetterRetentionMs: number | null;
  maxMessageBytes: number;
  drain: { schedule: string; budgetMs: number; idleGraceMs: number };
  /** DRAIN_TRIGGER and the drain requests (shared/drain-requests/settings.ts). */
  drainRequests: DrainRequestConfig;
  pruneSchedule: string;
  /** NCRONTAB schedule of the queue-metrics timer (queue depth gauges; runs only when telemetry is on). */
  queueMetricsSchedule: string;
  workerHandler: 'echo' | 'forward';
  workerForwardUrl?: string;
  workerForwardTimeoutMs: number;
  logLevel: LogLevel;
  channel: ChannelConfig;
  /** DEAD_LETTER_ENABLED: the default of every queue's policy.deadLetter. */
  deadLetterEnabled: boolean;
  /**
   * Route and policy of every queue a drain serves: the QUEUES (with their QUEUE__<key>__* overrides over the
   * global settings), then the built-in `response` and `callbacks` (policy overrides only).
   */
  routes: Record<string, RouteConfig>;
}

/** A queue's handler as the settings describe it: `code` runs the handler registered in handlers/index.ts. */
export type HandlerSetting = HandlerSpec | { kind: 'code' } | { kind: 'built-in' };

export interface RouteConfig {
  handler: HandlerSetting;
  policy: QueuePolicy;
}

export interface LoadConfigOptions {
  /** Queues with a registered in-code handler; when given, a queue set to HANDLER=code without one is a problem. */
  codeHandlers?: readonly string[];
}

/** host.json functionTimeout (10 min) less a minute for settling, releasing and closing. */
const MAX_INVOCATION_MS = 540_000;

export interface ChannelConfig {
  recoveryTable: string;
  messageTable: string;
  subscriberTable: string;
  messageRetentionMs: number;
  deliveryConfirmationTimeoutMs: number;
  deliveryConfirmationPollMs: number;
  activePollIntervalMs: number;
  heartbeatIntervalMs: number;
  heartbeatTimeoutMs: number;
  pruneIntervalMs: number;
  recoveryStateExpiryMs: number;
  /** Unexpired callback registrations one correlation id may hold; POST /api/waiters beyond it is a 409. */
  maxRegistrationsPerCorrelationId: number;
  maxWaitSeconds: number;
  callbackAllowedHosts: string[];
  callbackSigningSecret?: string;
  /** Why callbacks are off although a secret is configured (an unresolved Key Vault reference); health shows it. */
  callbackSigningSecretProblem?: string;
  callbackTimeoutMs: number;
  correlationIdJsonPaths: string[];
  drainResponsesSchedule: string;
  drainCallbacksSchedule: string;
  sweepSchedule: string;
}

export { CALLBACK_QUEUE, RESPONSE_QUEUE };
export { DEFAULT_CORRELATION_ID_JSON_PATHS };

interface Setting {
  name: string;
  default: string;
  description: string;
  /** A family of settings (the name is its template): the names it matches. */
  pattern?: RegExp;
}

/** Every setting, its default and meaning. The README's configuration table mirrors this list. */
export const SETTINGS: readonly Setting[] = [
  { name: 'SQL_CONNECTION_STRING', default: '', description: 'SQL Server / Azure SQL connection string (ADO.NET form). Without a password, Entra auth is used.' },
  { name: 'SQL_SERVER', default: '', description: 'SQL Server host (with SQL_DATABASE), alternative to SQL_CONNECTION_STRING; Entra auth unless SQL_PASSWORD is set.' },
  { name: 'SQL_DATABASE', default: '', description: 'Database name for SQL_SERVER.' },
  { name: 'SQL_USER', default: '', description: 'SQL auth user for SQL_SERVER (dev containers).' },
  { name: 'SQL_PASSWORD', default: '', description: 'SQL auth password for SQL_SERVER (dev containers).' },
  { name: 'SQL_PORT', default: '1433', description: 'SQL Server port for SQL_SERVER.' },
  { name: 'SQL_TRUST_SERVER_CERTIFICATE', default: 'false', description: 'Accept a self-signed certificate (dev containers only) with SQL_SERVER.' },
  { name: 'DATABASE_URL', default: '', description: 'postgres://… selects the PostgreSQL store (Azure Database for PostgreSQL works the same).' },
  { name: 'PGLITE_DATA_DIR', default: '.data/pglite', description: 'Embedded PGlite data directory, used when no database is configured (memory:// = in memory).' },
  { name: 'SQL_SCHEMA', default: 'dbo (SQL Server) / public (PostgreSQL)', description: 'Schema holding the tables.' },
  { name: 'TRANSPORT_TABLE', default: DEFAULT_TRANSPORT_TABLE, description: 'Queue table name.' },
  { name: 'AUTO_CREATE_SCHEMA', default: 'true', description: 'Create schema, table and indexes at first use; false = verify only (migrations / `npm run schema -- apply` own it).' },
  { name: 'SQL_POOL_MAX', default: '10', description: 'Maximum connections in the pool, per instance.' },
  { name: 'SQL_POOL_MIN', default: '0', description: 'Minimum idle connections kept open.' },
  { name: 'SQL_CONNECT_TIMEOUT_SECONDS', default: '15', description: 'Connect (and pool acquire) timeout.' },
  { name: 'SQL_REQUEST_TIMEOUT_SECONDS', default: '30', description: 'Per-statement timeout.' },
  { name: 'AZURE_CLIENT_ID', default: '', description: 'Client id of the user-assigned managed identity used for Entra auth in Azure.' },
  { name: 'QUEUES', default: 'worker', description: 'Comma-separated worker queues that accept publishes; publishing elsewhere is a 404.' },
  { name: 'TOPICS', default: '', description: 'Comma-separated topics that accept publishes (POST /api/topics/{topic}/messages); publishing to another topic is a 404.' },
  {
    name: 'TOPIC__<key>__SUBSCRIPTIONS',
    default: '',
    pattern: TOPIC_SETTING_PATTERN,
    description:
      'Comma-separated durable subscriptions of a topic (<key> as for QUEUE__<key>__…, from the topic name). Each gets a copy of every message on its own worker queue `{topic}:{subscription}`, ' +
      'whose route and policy are set like any queue\'s (`orders:billing` → QUEUE__orders_billing__…). None = a publish is accepted and dropped. A key that is no topic\'s is a start-up error.',
  },
  { name: 'DEAD_LETTER_QUEUE', default: 'deadletter', description: 'Logical queue holding dead letters.' },
  { name: 'LOCK_TIMEOUT_SECONDS', default: '30', description: 'Lease length of a claim; renewed every third of it while a handler runs.' },
  { name: 'MAX_DELIVERY_ATTEMPTS', default: '5', description: 'Attempts before a job is dead-lettered (0 = unlimited).' },
  { name: 'REDELIVERY_DELAY_SECONDS', default: '5', description: 'Base NAK delay after a failed attempt (doubles per attempt, with jitter).' },
  { name: 'REDELIVERY_MAX_DELAY_SECONDS', default: '300', description: 'Cap of the NAK delay.' },
  { name: 'BATCH_SIZE', default: '16', description: 'Rows claimed per claim statement.' },
  { name: 'PREFETCH', default: '16', description: 'Rows claimed ahead of free handler slots (0–5000); held rows start while half their lease is left, the rest go back unstarted without spending an attempt.' },
  { name: 'HANDLER_CONCURRENCY', default: '16', description: 'Handlers running at once per queue and drain invocation.' },
  { name: 'EMPTY_POLL_DELAY_MS', default: '250', description: 'Wait between claims when the queue is empty (a same-process publish wakes at once).' },
  { name: 'PUBLISH_MAX_ATTEMPTS', default: '3', description: 'Attempts of a publish on transient faults (same id every attempt).' },
  { name: 'ID_GENERATION', default: 'sequential', description: 'Ids generated when a publish gives none: sequential (time-ordered: UUIDv7 on PostgreSQL, bytes 10–15 on SQL Server) or random (UUIDv4).' },
  { name: 'SQL_RETRY_LOCK_BASE_MS', default: '20', description: 'Retry wait base after a deadlock (1205) or lock timeout (1222); doubles per attempt, half-jittered.' },
  { name: 'SQL_RETRY_LOCK_MAX_MS', default: '200', description: 'Cap of that wait.' },
  { name: 'SQL_RETRY_THROTTLING_BASE_MS', default: '10000', description: 'Retry wait base after Azure SQL throttling (40501, 10928, 10929, 49918–49920, 1204): first wait 5–10 s, as Microsoft recommends.' },
  { name: 'SQL_RETRY_THROTTLING_MAX_MS', default: '60000', description: 'Cap of that wait.' },
  { name: 'SQL_RETRY_FAILOVER_BASE_MS', default: '10000', description: 'Retry wait base after a failover / database unavailable (40613, 40197, 40540, 4060, 4221, 40143).' },
  { name: 'SQL_RETRY_FAILOVER_MAX_MS', default: '60000', description: 'Cap of that wait.' },
  { name: 'SQL_RETRY_CONNECTION_BASE_MS', default: '500', description: 'Retry wait base after a reset, timed-out or refused connection (retried on a fresh connection).' },
  { name: 'SQL_RETRY_CONNECTION_MAX_MS', default: '15000', description: 'Cap of that wait.' },
  { name: 'DEAD_LETTER_RETENTION_DAYS', default: '14', description: 'Dead letters older than this are pruned (0 = keep forever).' },
  { name: 'MAX_MESSAGE_BYTES', default: '262144', description: 'Largest accepted payload (UTF-8 bytes of its JSON); larger is a 413 on publish, a 400 (field error) on POST /api/responses.' },
  { name: 'DRAIN_WORKER_SCHEDULE', default: '*/10 * * * * * (timer mode) / 0 */5 * * * * (queue mode)', description: 'NCRONTAB schedule (six fields, UTC) of the drain-worker timer (in queue mode a safety net for work no request announced, e.g. rows inserted straight in SQL). Every schedule setting is checked at start-up; TimeSpan schedules (hh:mm:ss) are refused (Flex Consumption runs NCRONTAB only).' },
  { name: 'DRAIN_BUDGET_SECONDS', default: '8', description: 'How long one drain invocation may claim work. The budget plus the longest handler timeout (WORKER_FORWARD_TIMEOUT_SECONDS and per-queue FORWARD_TIMEOUT_SECONDS, CALLBACK_TIMEOUT_SECONDS) must stay within 540 s, inside host.json\'s 10-minute functionTimeout.' },
  { name: 'DRAIN_IDLE_GRACE_SECONDS', default: '8 (timer mode: DRAIN_BUDGET_SECONDS) / 0 (queue mode: one claim when idle)', description: 'A timer drain ends after the queue stayed empty this long (it keeps polling until then).' },
  ...DRAIN_REQUEST_SETTINGS,
  { name: 'PRUNE_DEADLETTERS_SCHEDULE', default: '0 * * * * * (timer mode) / 0 */5 * * * * (queue mode)', description: 'NCRONTAB schedule of the prune-deadletters timer.' },
  { name: 'QUEUE_METRICS_SCHEDULE', default: '0 * * * * * (timer mode) / 0 */5 * * * * (queue mode)', description: 'NCRONTAB schedule of the queue-metrics timer (queue depth and oldest ready age of every queue to Application Insights; idle without APPLICATIONINSIGHTS_CONNECTION_STRING).' },
  { name: 'WORKER_HANDLER', default: 'echo', description: 'echo (sample: logs and returns the payload) or forward (POST to WORKER_FORWARD_URL). Default: forward when WORKER_FORWARD_URL is set, else echo.' },
  { name: 'WORKER_FORWARD_URL', default: '', description: 'When set, the worker handler POSTs each job here; 2xx = success.' },
  { name: 'WORKER_FORWARD_TIMEOUT_SECONDS', default: '30', description: 'Timeout of one forwarded job.' },
  { name: 'DEAD_LETTER_ENABLED', default: 'true', description: 'A job out of attempts (or failed for good) moves to the dead-letter queue; false = it is deleted instead (logged, counted as dropped).' },
  {
    name: 'QUEUE__<key>__<SETTING>',
    default: '',
    pattern: QUEUE_SETTING_PATTERN,
    description:
      'Per-queue override of a global setting; <key> is the queue name with every character outside A-Z, a-z, 0-9 replaced by _ (case-insensitive). ' +
      `SETTING is one of ${Object.entries(PER_QUEUE_SETTINGS).map(([k, g]) => (k === g ? k : `${k} (${g})`)).join(', ')}; HANDLER also takes code (the handler registered in handlers/index.ts). ` +
      'response and callbacks take the policy settings only. A key that is no queue\'s is a start-up error.',
  },
  { name: 'LOG_LEVEL', default: 'info', description: 'debug | info | warn | error | silent: the level of the app\'s own process log. Lines a function writes through its invocation context (handler and drain lines) are filtered by the host (host.json `logging.logLevel` on Azure; the local host prints them all).' },
  { name: 'RECOVERY_STATE_TABLE', default: 'asyncresponse_recovery_state', description: 'Channel table of recovery (callback) registrations.' },
  { name: 'CHANNEL_MESSAGE_TABLE', default: 'asyncresponse_channel_messages', description: 'Channel table of responses; its sequence is {table}_ack_seq.' },
  { name: 'CHANNEL_SUBSCRIBER_TABLE', default: 'asyncresponse_channel_subscribers', description: 'Channel table of live waiters.' },
  { name: 'MESSAGE_RETENTION_SECONDS', default: '3600', description: 'How long a response is kept for a GET that has not arrived yet.' },
  { name: 'DELIVERY_CONFIRMATION_TIMEOUT_MS', default: '5000', description: 'How long a response may wait for a live waiter before it is routed to its callback registrations.' },
  { name: 'DELIVERY_CONFIRMATION_POLL_MS', default: '50', description: 'How often POST /api/responses checks whether a live waiter took the response.' },
  { name: 'ACTIVE_POLL_INTERVAL_MS', default: '250', description: 'How often a waiting GET looks for a response from another process.' },
  { name: 'SUBSCRIBER_HEARTBEAT_INTERVAL_SECONDS', default: '10', description: 'How often a waiting GET extends its live-waiter row.' },
  { name: 'SUBSCRIBER_HEARTBEAT_TIMEOUT_SECONDS', default: '30', description: 'A live-waiter row expires this long after its last heartbeat.' },
  { name: 'PRUNE_INTERVAL_SECONDS', default: '30', description: 'Minimum time between expired-row prunes of the channel tables (0 = every sweep).' },
  { name: 'RECOVERY_STATE_EXPIRY_SECONDS', default: '604800', description: 'Default lifetime of a callback registration (7 days).' },
  { name: 'MAX_REGISTRATIONS_PER_CORRELATION_ID', default: '32', description: 'Unexpired callback registrations one correlation id may hold; one more is refused with a 409 (every registration is one signed POST per routed response).' },
  { name: 'MAX_WAIT_SECONDS', default: '120', description: 'Cap of waitSeconds on GET /api/responses (below the 230 s HTTP limit of Azure).' },
  { name: 'CALLBACK_ALLOWED_HOSTS', default: '', description: 'Comma-separated hosts callbacks may target (host, host:port or *.domain); empty = none.' },
  { name: 'CALLBACK_SIGNING_SECRET', default: '', description: 'HMAC-SHA256 key of the X-Signature header on callbacks, at least 16 characters; required to register waiters. An unresolved @Microsoft.KeyVault(...) reference is not a start-up error: callbacks are off (queued ones fail and end in the callbacks dead-letter queue; requeue them) and /api/health says so.' },
  { name: 'CALLBACK_TIMEOUT_SECONDS', default: '30', description: 'Timeout of one callback POST.' },
  { name: 'CORRELATION_ID_JSON_PATHS', default: DEFAULT_CORRELATION_ID_JSON_PATHS.join(','), description: 'Where response ingress looks for the correlation id when the AR-Correlation-Id header is absent.' },
  { name: 'DRAIN_RESPONSES_SCHEDULE', default: '*/10 * * * * * (timer mode) / 0 */5 * * * * (queue mode)', description: 'NCRONTAB schedule of the drain-responses timer (response ingress queue).' },
  { name: 'DRAIN_CALLBACKS_SCHEDULE', default: '*/10 * * * * * (timer mode) / 0 */5 * * * * (queue mode)', description: 'NCRONTAB schedule of the drain-callbacks timer (recovery callbacks).' },
  { name: 'SWEEP_CHANNEL_SCHEDULE', default: '*/5 * * * * * (timer mode) / 0 */5 * * * * (queue mode)', description: 'NCRONTAB schedule of the sweep-channel timer.' },
];

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n- ${problems.join('\n- ')}`);
    this.name = 'ConfigError';
  }
}

const RESERVED_QUEUES = [RESPONSE_QUEUE, CALLBACK_QUEUE];

export function loadConfig(env: Env = process.env, options: LoadConfigOptions = {}): AppConfig {
  const problems: string[] = [];
  const str = (name: string) => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const num = (name: string, def: number, opts: { min?: number; max?: number; integer?: boolean } = {}) => {
    const raw = str(name);
    if (raw === undefined) return def;
    const n = Number(raw);
    const { min = 0, max = Number.MAX_SAFE_INTEGER, integer = false } = opts;
    if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
      problems.push(`${name}='${raw}' must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
      return def;
    }
    return n;
  };
  const bool = (name: string, def: boolean) => {
    const raw = str(name);
    if (raw === undefined) return def;
    if (/^(true|1|yes)$/i.test(raw)) return true;
    if (/^(false|0|no)$/i.test(raw)) return false;
    problems.push(`${name}='${raw}' must be true or false`);
    return def;
  };

  const store = selectStore(env, str, problems);
  const dialect: Dialect = store.kind === 'sqlserver' ? 'sqlserver' : 'postgres';
  const schema = str('SQL_SCHEMA') ?? (dialect === 'sqlserver' ? 'dbo' : 'public');
  const transportTable = str('TRANSPORT_TABLE') ?? DEFAULT_TRANSPORT_TABLE;
  for (const [what, value] of [
    ['SQL_SCHEMA', schema],
    ['TRANSPORT_TABLE', transportTable],
  ] as const) {
    try {
      validateIdentifier(value, what, dialect);
    } catch (e) {
      problems.push((e as Error).message);
    }
  }

  const queues = (str('QUEUES') ?? 'worker').split(',').map((q) => q.trim()).filter((q) => q !== '');
  const deadLetterQueue = str('DEAD_LETTER_QUEUE') ?? 'deadletter';
  if (queues.length === 0) problems.push('QUEUES must name at least one queue');
  for (const q of [...queues, deadLetterQueue]) {
    const why = validateQueueName(q);
    if (why) problems.push(`queue '${q}': ${why}`);
  }
  if (queues.includes(deadLetterQueue)) problems.push(`QUEUES must not contain the dead-letter queue '${deadLetterQueue}'`);
  for (const reserved of RESERVED_QUEUES) {
    if (queues.includes(reserved)) problems.push(`QUEUES must not contain '${reserved}': it is reserved for the response channel`);
  }
  if (new Set(queues).size !== queues.length) problems.push('QUEUES lists a queue twice');
  const topics = loadTopics(env, problems);
  problems.push(...topicProblems(topics, [...queues, deadLetterQueue, ...RESERVED_QUEUES]));

  const lockTimeoutMs = num('LOCK_TIMEOUT_SECONDS', 30, { min: 1, max: 3600 }) * 1000;
  const redeliveryDelayMs = num('REDELIVERY_DELAY_SECONDS', 5, { max: 86400 }) * 1000;
  const redeliveryMaxDelayMs = num('REDELIVERY_MAX_DELAY_SECONDS', 300, { max: 86400 * 30 }) * 1000;
  if (redeliveryMaxDelayMs < redeliveryDelayMs) problems.push('REDELIVERY_MAX_DELAY_SECONDS must not be below REDELIVERY_DELAY_SECONDS');
  let retry: RetryPolicy = DEFAULT_RETRY_CLASSES;
  try {
    const cls = (name: string, c: keyof RetryPolicy) => ({
      baseMs: num(`SQL_RETRY_${name}_BASE_MS`, DEFAULT_RETRY_CLASSES[c].baseMs, { min: 1, max: 600_000 }),
      maxMs: num(`SQL_RETRY_${name}_MAX_MS`, DEFAULT_RETRY_CLASSES[c].maxMs, { min: 1, max: 600_000 }),
    });
    retry = retryPolicy({ lock: cls('LOCK', 'lock'), throttling: cls('THROTTLING', 'throttling'), failover: cls('FAILOVER', 'failover'), connection: cls('CONNECTION', 'connection') });
  } catch (e) {
    problems.push(`SQL_RETRY_*: ${(e as Error).message}`);
  }
  const retentionDays = num('DEAD_LETTER_RETENTION_DAYS', 14, { max: 3650 });
  const budgetMs = num('DRAIN_BUDGET_SECONDS', 8, { min: 0.1, max: 600 }) * 1000;
  const drainRequests = loadDrainRequestConfig(env, str, num, problems);
  const queueMode = drainRequests.trigger === 'queue';
  // queue mode: the timers are a safety net; one claim finds a queue empty and the run ends
  const idleGraceMs = num('DRAIN_IDLE_GRACE_SECONDS', queueMode ? 0 : budgetMs / 1000, { min: 0, max: 600 }) * 1000;
  const schedule = (name: string, timerMode: string) => str(name) ?? (queueMode ? QUEUE_MODE_SCHEDULE : timerMode);

  const forwardUrl = str('WORKER_FORWARD_URL');
  if (forwardUrl !== undefined) {
    try {
      const u = new URL(forwardUrl);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
    } catch {
      problems.push(`WORKER_FORWARD_URL='${forwardUrl}' is not an http(s) URL`);
    }
  }
  const handlerName = str('WORKER_HANDLER') ?? (forwardUrl ? 'forward' : 'echo');
  if (handlerName !== 'echo' && handlerName !== 'forward') problems.push(`WORKER_HANDLER='${handlerName}' must be echo or forward`);
  if (handlerName === 'forward' && !forwardUrl) problems.push('WORKER_HANDLER=forward needs WORKER_FORWARD_URL');

  const logLevel = (str('LOG_LEVEL') ?? 'info').toLowerCase();
  if (!['debug', 'info', 'warn', 'error', 'silent'].includes(logLevel)) problems.push(`LOG_LEVEL='${logLevel}' is not a level`);

  const config: AppConfig = {
    store,
    schema,
    transportTable,
    autoCreateSchema: bool('AUTO_CREATE_SCHEMA', true),
    pool: {
      max: num('SQL_POOL_MAX', 10, { min: 1, max: 1000, integer: true }),
      min: num('SQL_POOL_MIN', 0, { max: 1000, integer: true }),
      connectTimeoutMs: num('SQL_CONNECT_TIMEOUT_SECONDS', 15, { min: 1, max: 600 }) * 1000,
      requestTimeoutMs: num('SQL_REQUEST_TIMEOUT_SECONDS', 30, { min: 1, max: 3600 }) * 1000,
    },
    azureClientId: str('AZURE_CLIENT_ID'),
    queues: [...queues, ...subscriptionQueues(topics)],
    topics,
    deadLetterQueue,
    lockTimeoutMs,
    maxDeliveryAttempts: num('MAX_DELIVERY_ATTEMPTS', 5, { max: 1000, integer: true }),
    redeliveryDelayMs,
    redeliveryMaxDelayMs,
    batchSize: num('BATCH_SIZE', 16, { min: 1, max: 1000, integer: true }),
    prefetch: num('PREFETCH', 16, { min: 0, max: 5000, integer: true }),
    handlerConcurrency: num('HANDLER_CONCURRENCY', 16, { min: 1, max: 1000, integer: true }),
    emptyPollDelayMs: num('EMPTY_POLL_DELAY_MS', 250, { min: 1, max: 60000 }),
    publish: { maxAttempts: num('PUBLISH_MAX_ATTEMPTS', 3, { min: 1, max: 100, integer: true }), classes: retry, idGeneration: idGeneration(str('ID_GENERATION'), problems) },
    retry,
    deadLetterRetentionMs: retentionDays > 0 ? retentionDays * 86_400_000 : null,
    maxMessageBytes: num('MAX_MESSAGE_BYTES', 262144, { min: 16, max: 64 * 1024 * 1024, integer: true }),
    drain: { schedule: schedule('DRAIN_WORKER_SCHEDULE', '*/10 * * * * *'), budgetMs, idleGraceMs },
    drainRequests,
    pruneSchedule: schedule('PRUNE_DEADLETTERS_SCHEDULE', '0 * * * * *'),
    queueMetricsSchedule: schedule('QUEUE_METRICS_SCHEDULE', '0 * * * * *'),
    workerHandler: handlerName === 'forward' ? 'forward' : 'echo',
    workerForwardUrl: forwardUrl,
    workerForwardTimeoutMs: num('WORKER_FORWARD_TIMEOUT_SECONDS', 30, { min: 1, max: 600 }) * 1000,
    logLevel: logLevel as LogLevel,
    channel: undefined as unknown as ChannelConfig,
    deadLetterEnabled: bool('DEAD_LETTER_ENABLED', true),
    routes: {},
  };
  if (config.pool.min > config.pool.max) problems.push('SQL_POOL_MIN must not exceed SQL_POOL_MAX');
  config.channel = loadChannelConfig(str, num, problems, dialect);
  if (queueMode) {
    config.channel.drainResponsesSchedule = schedule('DRAIN_RESPONSES_SCHEDULE', '');
    config.channel.drainCallbacksSchedule = schedule('DRAIN_CALLBACKS_SCHEDULE', '');
    config.channel.sweepSchedule = schedule('SWEEP_CHANNEL_SCHEDULE', '');
  }
  config.routes = loadRoutes(config, env, { str, num, bool }, problems, options);
  // One drain invocation = claiming for the budget + the longest handler started at its end: it has to end inside
  // host.json's functionTimeout (10 min), or the host kills the worker mid-settlement.
  const forwardTimeouts = Object.values(config.routes).map((r) => (r.handler.kind === 'forward' ? (r.handler.timeoutMs ?? 0) : 0));
  const longestHandlerMs = Math.max(config.workerForwardTimeoutMs, config.channel.callbackTimeoutMs, ...forwardTimeouts);
  if (config.drain.budgetMs + longestHandlerMs > MAX_INVOCATION_MS) {
    problems.push(
      `DRAIN_BUDGET_SECONDS (${config.drain.budgetMs / 1000}) plus the longest handler timeout (${longestHandlerMs / 1000} s: WORKER_FORWARD_TIMEOUT_SECONDS / QUEUE__<key>__FORWARD_TIMEOUT_SECONDS / CALLBACK_TIMEOUT_SECONDS) must stay within ${MAX_INVOCATION_MS / 1000} s, inside host.json's functionTimeout of 10 minutes`,
    );
  }
  const schedules: Array<[string, string]> = [
    ['DRAIN_WORKER_SCHEDULE', config.drain.schedule],
    ['PRUNE_DEADLETTERS_SCHEDULE', config.pruneSchedule],
    ['QUEUE_METRICS_SCHEDULE', config.queueMetricsSchedule],
    ['DRAIN_RESPONSES_SCHEDULE', config.channel.drainResponsesSchedule],
    ['DRAIN_CALLBACKS_SCHEDULE', config.channel.drainCallbacksSchedule],
    ['SWEEP_CHANNEL_SCHEDULE', config.channel.sweepSchedule],
  ];
  for (const [name, expression] of schedules) {
    try {
      parseSchedule(expression);
      if (expression.trim().split(/\s+/).length !== 6) {
        // the local host understands TimeSpan schedules, Flex Consumption does not (App Service plans only)
        problems.push(`${name}='${expression}': use a six-field NCRONTAB expression; TimeSpan schedules (hh:mm:ss) run only on App Service plans, not on Flex Consumption`);
      }
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

type Readers = {
  str: (n: string) => string | undefined;
  num: (n: string, d: number, o?: { min?: number; max?: number; integer?: boolean }) => number;
  bool: (n: string, d: boolean) => boolean;
};

/**
 * Every queue's route: a QUEUE__<key>__<SETTING> (read with the same rules as the global setting it overrides)
 * wins over that global setting. The handler follows the global rule too: HANDLER when set, else forward when the
 * queue has its own FORWARD_URL, else the global choice; a forward URL and timeout fall back to the global ones.
 */
function loadRoutes(c: AppConfig, env: Env, read: Readers, problems: string[], options: LoadConfigOptions): Record<string, RouteConfig> {
  const builtIn = [RESPONSE_QUEUE, CALLBACK_QUEUE];
  const found = findQueueSettings(env, [...c.queues, ...builtIn], problems);
  const routes: Record<string, RouteConfig> = {};
  for (const queue of [...c.queues, ...builtIn]) {
    const names = found.get(queue) ?? new Map<PerQueueSetting, string>();
    const name = (s: PerQueueSetting) => names.get(s);
    const num = (s: PerQueueSetting, def: number, o: { min?: number; max?: number; integer?: boolean }) => {
      const n = name(s);
      return n === undefined ? def : read.num(n, def, o);
    };
    const policy: QueuePolicy = {
      maxDeliveryAttempts: num('MAX_DELIVERY_ATTEMPTS', c.maxDeliveryAttempts, { max: 1000, integer: true }),
      redeliveryDelayMs: num('REDELIVERY_DELAY_SECONDS', c.redeliveryDelayMs / 1000, { max: 86400 }) * 1000,
      redeliveryMaxDelayMs: num('REDELIVERY_MAX_DELAY_SECONDS', c.redeliveryMaxDelayMs / 1000, { max: 86400 * 30 }) * 1000,
      lockTimeoutMs: num('LOCK_TIMEOUT_SECONDS', c.lockTimeoutMs / 1000, { min: 1, max: 3600 }) * 1000,
      batchSize: num('BATCH_SIZE', c.batchSize, { min: 1, max: 1000, integer: true }),
      prefetch: num('PREFETCH', c.prefetch, { min: 0, max: 5000, integer: true }),
      concurrency: num('HANDLER_CONCURRENCY', c.handlerConcurrency, { min: 1, max: 1000, integer: true }),
      deadLetter: name('DEAD_LETTER_ENABLED') === undefined ? c.deadLetterEnabled : read.bool(name('DEAD_LETTER_ENABLED')!, c.deadLetterEnabled),
    };
    if ((name('REDELIVERY_DELAY_SECONDS') || name('REDELIVERY_MAX_DELAY_SECONDS')) && policy.redeliveryMaxDelayMs < policy.redeliveryDelayMs) {
      problems.push(`queue '${queue}': its redelivery delay cap (${policy.redeliveryMaxDelayMs / 1000} s) is below its redelivery delay (${policy.redeliveryDelayMs / 1000} s)`);
    }
    if (builtIn.includes(queue)) {
      for (const s of ['HANDLER', 'FORWARD_URL', 'FORWARD_TIMEOUT_SECONDS'] as const) {
        if (name(s)) problems.push(`${name(s)}: '${queue}' is a built-in queue; only its policy settings can be changed`);
      }
      routes[queue] = { handler: { kind: 'built-in' }, policy };
      continue;
    }
    routes[queue] = { handler: queueHandler(queue, c, name, read, problems, options), policy };
  }
  return routes;
}

function queueHandler(
  queue: string,
  c: AppConfig,
  name: (s: PerQueueSetting) => string | undefined,
  read: Readers,
  problems: string[],
  options: LoadConfigOptions,
): HandlerSetting {
  const urlName = name('FORWARD_URL');
  const url = urlName === undefined ? c.workerForwardUrl : read.str(urlName);
  if (urlName !== undefined && url !== undefined && !isHttpUrl(url)) problems.push(`${urlName}='${url}' is not an http(s) URL`);
  const timeoutName = name('FORWARD_TIMEOUT_SECONDS');
  const timeoutMs = timeoutName === undefined ? c.workerForwardTimeoutMs : read.num(timeoutName, c.workerForwardTimeoutMs / 1000, { min: 1, max: 600 }) * 1000;
  const kindName = name('HANDLER');
  const kind = kindName === undefined ? (urlName !== undefined ? 'forward' : c.workerHandler) : read.str(kindName)!;
  if (kind === 'forward') {
    if (url === undefined && kindName !== undefined) problems.push(`${kindName ?? 'WORKER_HANDLER'}=forward for queue '${queue}' needs ${urlName ?? 'a URL'} (QUEUE__<key>__FORWARD_URL or WORKER_FORWARD_URL)`);
    return { kind: 'forward', url: url ?? '', timeoutMs };
  }
  if (kind === 'code') {
    if (options.codeHandlers && !options.codeHandlers.includes(queue)) {
      problems.push(`${kindName}=code: no handler is registered for queue '${queue}' (add \`codeHandlers.register('${queue}', …)\` to handlers/index.ts)`);
    }
    return { kind: 'code' };
  }
  if (kind !== 'echo') problems.push(`${kindName}='${kind}' must be echo, forward or code`);
  return { kind: 'echo' };
}

function isHttpUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

function selectStore(env: Env, str: (n: string) => string | undefined, problems: string[]): StoreSelection {
  const connectionString = str('SQL_CONNECTION_STRING');
  const server = str('SQL_SERVER');
  const databaseUrl = str('DATABASE_URL');
  if (connectionString || server) {
    if (databaseUrl) problems.push('set either a SQL Server (SQL_CONNECTION_STRING / SQL_SERVER) or DATABASE_URL, not both');
    if (server && !connectionString && !str('SQL_DATABASE')) problems.push('SQL_SERVER needs SQL_DATABASE');
    const port = str('SQL_PORT');
    if (port !== undefined && !/^\d{1,5}$/.test(port)) problems.push(`SQL_PORT='${port}' must be a port number`);
    return {
      kind: 'sqlserver',
      connectionString,
      server,
      database: str('SQL_DATABASE'),
      user: str('SQL_USER'),
      password: env.SQL_PASSWORD,
      port: port ? Number(port) : undefined,
      trustServerCertificate: /^(true|1|yes)$/i.test(str('SQL_TRUST_SERVER_CERTIFICATE') ?? ''),
    };
  }
  if (databaseUrl) {
    if (!/^postgres(ql)?:\/\//i.test(databaseUrl)) problems.push('DATABASE_URL must start with postgres:// or postgresql://');
    return { kind: 'postgres', url: databaseUrl };
  }
  return { kind: 'pglite', dataDir: str('PGLITE_DATA_DIR') ?? '.data/pglite' };
}

function loadChannelConfig(
  str: (n: string) => string | undefined,
  num: (n: string, d: number, o?: { min?: number; max?: number; integer?: boolean }) => number,
  problems: string[],
  dialect: Dialect,
): ChannelConfig {
  const tables = {
    recoveryTable: str('RECOVERY_STATE_TABLE') ?? 'asyncresponse_recovery_state',
    messageTable: str('CHANNEL_MESSAGE_TABLE') ?? 'asyncresponse_channel_messages',
    subscriberTable: str('CHANNEL_SUBSCRIBER_TABLE') ?? 'asyncresponse_channel_subscribers',
  };
  for (const [what, value] of Object.entries(tables)) {
    try {
      validateIdentifier(value, what, dialect);
    } catch (e) {
      problems.push((e as Error).message);
    }
  }
  const heartbeatIntervalMs = num('SUBSCRIBER_HEARTBEAT_INTERVAL_SECONDS', 10, { min: 0.01, max: 3600 }) * 1000;
  const heartbeatTimeoutMs = num('SUBSCRIBER_HEARTBEAT_TIMEOUT_SECONDS', 30, { min: 0.02, max: 7200 }) * 1000;
  if (heartbeatIntervalMs >= heartbeatTimeoutMs) problems.push('SUBSCRIBER_HEARTBEAT_INTERVAL_SECONDS must be lower than SUBSCRIBER_HEARTBEAT_TIMEOUT_SECONDS');
  const hosts = (str('CALLBACK_ALLOWED_HOSTS') ?? '').split(',').map((h) => h.trim().toLowerCase()).filter((h) => h !== '');
  for (const h of hosts) if (!/^(\*\.)?[a-z0-9.-]+(:\d{1,5})?$/.test(h)) problems.push(`CALLBACK_ALLOWED_HOSTS entry '${h}' is not a host, host:port or *.domain`);
  const paths = (str('CORRELATION_ID_JSON_PATHS') ?? DEFAULT_CORRELATION_ID_JSON_PATHS.join(',')).split(',').map((p) => p.trim()).filter((p) => p !== '');
  let secret = str('CALLBACK_SIGNING_SECRET');
  let secretProblem: string | undefined;
  if (secret?.startsWith('@Microsoft.KeyVault(')) {
    // Not fatal: the platform passes the reference text through until the identity's access to the vault has taken
    // effect (RBAC can take minutes after a first deploy). Everything but callbacks works meanwhile.
    secret = undefined;
    secretProblem =
      'CALLBACK_SIGNING_SECRET is an unresolved Key Vault reference (the app identity needs "Key Vault Secrets User" on the vault; ' +
      'after granting it, restart the app): callbacks are off until it resolves';
  } else if (secret !== undefined && secret.length < 16) problems.push('CALLBACK_SIGNING_SECRET must be at least 16 characters');
  return {
    ...tables,
    messageRetentionMs: num('MESSAGE_RETENTION_SECONDS', 3600, { min: 1, max: 3650 * 86400 }) * 1000,
    deliveryConfirmationTimeoutMs: num('DELIVERY_CONFIRMATION_TIMEOUT_MS', 5000, { min: 1, max: 600_000 }),
    deliveryConfirmationPollMs: num('DELIVERY_CONFIRMATION_POLL_MS', 50, { min: 1, max: 60_000 }),
    activePollIntervalMs: num('ACTIVE_POLL_INTERVAL_MS', 250, { min: 1, max: 60_000 }),
    heartbeatIntervalMs,
    heartbeatTimeoutMs,
    pruneIntervalMs: num('PRUNE_INTERVAL_SECONDS', 30, { max: 86400 }) * 1000,
    recoveryStateExpiryMs: num('RECOVERY_STATE_EXPIRY_SECONDS', 604800, { min: 1, max: 3650 * 86400 }) * 1000,
    maxRegistrationsPerCorrelationId: num('MAX_REGISTRATIONS_PER_CORRELATION_ID', 32, { min: 1, max: 100_000, integer: true }),
    maxWaitSeconds: num('MAX_WAIT_SECONDS', 120, { min: 0, max: 220 }),
    callbackAllowedHosts: hosts,
    callbackSigningSecret: secret,
    ...(secretProblem ? { callbackSigningSecretProblem: secretProblem } : {}),
    callbackTimeoutMs: num('CALLBACK_TIMEOUT_SECONDS', 30, { min: 1, max: 600 }) * 1000,
    correlationIdJsonPaths: paths,
    drainResponsesSchedule: str('DRAIN_RESPONSES_SCHEDULE') ?? '*/10 * * * * *',
    drainCallbacksSchedule: str('DRAIN_CALLBACKS_SCHEDULE') ?? '*/10 * * * * *',
    sweepSchedule: str('SWEEP_CHANNEL_SCHEDULE') ?? '*/5 * * * * *',
  };
}

/**
 * The engine's options for these settings (shared/index.ts createEngine): every queue's route as data, with the
 * in-code handlers taken from `handlers` (handlers/index.ts in the app) for queues set to HANDLER=code.
 */
export function engineOptions(
  c: AppConfig,
  parts: { store: EngineOptions['store']; handlers: Pick<HandlerRegistry, 'get'>; logger: Logger; metrics?: Metrics },
): EngineOptions {
  const queues: EngineOptions['queues'] = {};
  for (const queue of c.queues) {
    const r = c.routes[queue]!;
    const h = r.handler;
    if (h.kind === 'built-in') throw new Error(`queue '${queue}' cannot have a built-in handler`);
    const handler = h.kind === 'code' ? parts.handlers.get(queue) : h;
    if (handler === undefined) throw new ConfigError([`QUEUE__…__HANDLER=code: no handler is registered for queue '${queue}'`]);
    queues[queue] = { handler, policy: r.policy };
  }
  return {
    store: parts.store,
    schema: c.schema,
    transportTable: c.transportTable,
    autoCreateSchema: c.autoCreateSchema,
    queues,
    topics: c.topics,
    builtInPolicies: { response: c.routes[RESPONSE_QUEUE]?.policy, callbacks: c.routes[CALLBACK_QUEUE]?.policy },
    deadLetterQueue: c.deadLetterQueue,
    deadLetterRetentionMs: c.deadLetterRetentionMs,
    emptyPollDelayMs: c.emptyPollDelayMs,
    retry: c.retry,
    publishMaxAttempts: c.publish.maxAttempts,
    idGeneration: c.publish.idGeneration,
    maxMessageBytes: c.maxMessageBytes,
    channel: c.channel,
    logger: parts.logger,
    metrics: parts.metrics,
  };
}
