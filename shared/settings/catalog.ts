// Every setting the app reads, its default and meaning: docs/configuration.md's table mirrors this list
// (test/unit/docs.readme-settings.test.ts) and so do the Bicep's app settings (test/unit/infra.settings-drift.test.ts).
// The readers of each area are beside it in this folder.

import { DEFAULT_CORRELATION_ID_JSON_PATHS } from '../channel/correlation-extractor';
import { DEFAULT_TRANSPORT_TABLE } from '../stores/options';
import { DRAIN_REQUEST_SETTINGS } from './drain-requests';
import { PER_QUEUE_SETTINGS, QUEUE_SETTING_PATTERN } from './per-queue';
import { TOPIC_SETTING_PATTERN } from './topics';

export interface Setting {
  name: string;
  default: string;
  description: string;
  /** A family of settings (the name is its template): the names it matches. */
  pattern?: RegExp;
}

/** Every setting, its default and meaning. docs/configuration.md's table mirrors this list. */
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
  { name: 'DURABLE_CLAIMS_AND_ACKS', default: 'false', description: 'PostgreSQL: claims and acks wait for the WAL flush like every other write. false: they commit without it, and a database crash can forget the last fraction of a second of them; those jobs run again (at-least-once). SQL Server always waits.' },
  { name: 'AUTO_CREATE_SCHEMA', default: 'true', description: 'Create schema, table and indexes at first use; false = verify only (migrations / `npm run schema -- apply` own it).' },
  { name: 'SQL_POOL_MAX', default: '10', description: 'Maximum connections in the pool, per instance.' },
  { name: 'SQL_POOL_MIN', default: '0', description: 'Minimum idle connections kept open.' },
  { name: 'SQL_CONNECT_TIMEOUT_SECONDS', default: '15', description: 'Connect (and pool acquire) timeout.' },
  { name: 'SQL_REQUEST_TIMEOUT_SECONDS', default: '30', description: 'Per-statement timeout.' },
  { name: 'AZURE_CLIENT_ID', default: '', description: 'Client id of the user-assigned managed identity used for Entra auth in Azure.' },
  { name: 'QUEUES', default: 'worker', description: 'Comma-separated worker queues that accept publishes; publishing elsewhere is a 404.' },
  { name: 'TOPICS', default: '', description: 'Comma-separated topics that accept publishes (POST /api/topics/{topic}/messages); publishing to another topic is a 404.' },
  { name: 'SCHEDULES', default: '', description: 'Static recurring schedules applied at start-up (idempotent upsert): a JSON object of name → the PUT /api/schedules/{name} body.' },
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
  {
    name: 'JOB_HISTORY_RETENTION_DAYS',
    default: '0',
    description:
      'How long a completed job stays findable (GET /api/jobs/{id}, GET /api/jobs): > 0 = its ack moves the row into the history table in the same statement, and the prune-deadletters timer deletes rows older than this in bounded batches; 0 = the ack deletes the row (no history). Fractions allowed (0.25 = 6 h); per queue: QUEUE__<key>__JOB_HISTORY_RETENTION_DAYS.',
  },
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
  { name: 'CONCURRENCY_LIMIT', default: '', description: 'Jobs of a queue running at once across every instance (leased rows, counted by a serialized claim); blank or 0 = no limit. Usually set per queue (QUEUE__<key>__CONCURRENCY_LIMIT).' },
  { name: 'RATE_LIMIT_PER_SECOND', default: '', description: 'Starts (claims) of a queue per second across every instance, a token bucket on the database clock; blank or 0 = no limit. Usually set per queue.' },
  { name: 'RATE_LIMIT_BURST', default: 'RATE_LIMIT_PER_SECOND / 10, at least 1', description: 'Token-bucket size of the rate limit: starts allowed at once after an idle spell.' },
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
