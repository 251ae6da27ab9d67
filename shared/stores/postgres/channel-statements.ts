// PostgreSQL twins of the channel statements (SQL Server: stores/sqlserver/channel-statements.ts).
// correlation_id uses COLLATE "C" (deterministic, byte order): ids differing only in case stay distinct.

import type { CallbackJobTarget, ChannelNames, ChannelTable } from '../../channel/types';
import { quoteIdentifier } from '../../sql/identifiers';
import { TRANSPORT_NOTIFY_CHANNEL } from './statements';

const q = (n: string) => quoteIdentifier(n, 'postgres');
const MS = "* interval '1 millisecond'";
export const CHANNEL_NOTIFY_CHANNEL = 'asyncresponse_channel';
/** Payload prefix of a channel notification ("schema.messageTable:" + correlation id). */
export const channelNotifyPrefix = (n: ChannelNames) => `${n.schema}.${n.messageTable}:`;

export function channelTables(n: ChannelNames) {
  return {
    r: `${q(n.schema)}.${q(n.recoveryTable)}`,
    m: `${q(n.schema)}.${q(n.messageTable)}`,
    s: `${q(n.schema)}.${q(n.subscriberTable)}`,
    seq: `${q(n.schema)}.${q(n.ackSequence)}`,
  };
}

/** One script, run statement by statement under the schema advisory lock. Idempotent. */
export function channelDdl(n: ChannelNames): string[] {
  const { r, m, s, seq } = channelTables(n);
  return [
    `CREATE SCHEMA IF NOT EXISTS ${q(n.schema)}`,
    `CREATE TABLE IF NOT EXISTS ${r} (
    correlation_id text COLLATE "C" NOT NULL,
    registration_id uuid NOT NULL,
    state_json text NOT NULL,
    expires_at timestamptz NOT NULL,
    registered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (correlation_id, registration_id))`,
    `CREATE INDEX IF NOT EXISTS ${q(n.recoveryExpiresIndex)} ON ${r} (expires_at)`,
    `CREATE TABLE IF NOT EXISTS ${m} (
    id uuid NOT NULL PRIMARY KEY,
    correlation_id text COLLATE "C" NOT NULL,
    envelope_json text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at timestamptz NOT NULL,
    acked_at timestamptz NULL,
    acked_seq bigint NULL,
    recovery_claimed boolean NOT NULL DEFAULT false)`,
    `ALTER TABLE ${m} ADD COLUMN IF NOT EXISTS acked_seq bigint NULL`,
    `CREATE SEQUENCE IF NOT EXISTS ${seq} AS bigint START WITH 1`,
    `CREATE INDEX IF NOT EXISTS ${q(n.messageCorrelationCreatedIndex)} ON ${m} (correlation_id, created_at)`,
    `CREATE INDEX IF NOT EXISTS ${q(n.messageExpiresIndex)} ON ${m} (expires_at)`,
    `CREATE TABLE IF NOT EXISTS ${s} (
    correlation_id text COLLATE "C" NOT NULL,
    registration_id uuid NOT NULL,
    instance_id text NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (correlation_id, registration_id))`,
    `CREATE INDEX IF NOT EXISTS ${q(n.subscriberExpiresIndex)} ON ${s} (expires_at)`,
  ];
}

export function channelStatements(n: ChannelNames, callbacks: CallbackJobTarget) {
  const { r, m, s, seq } = channelTables(n);
  const jobs = `${q(callbacks.schema)}.${q(callbacks.table)}`;
  const cols = `id, correlation_id, created_at, created_at::text AS created_at_exact, acked_at, acked_seq::text AS acked_seq, recovery_claimed`;
  return {
    // Runs after saveRegistrationLock in one transaction, so its count sees every save of this correlation id
    // that committed before (SQL Server: the count reads under UPDLOCK, HOLDLOCK). Nothing is returned when the
    // id already has $5 other unexpired registrations.
    saveRegistrationLock: 'SELECT pg_advisory_xact_lock($1::bigint)',
    saveRegistration: `INSERT INTO ${r} (correlation_id, registration_id, state_json, expires_at, registered_at)
SELECT $1, $2, $3, clock_timestamp() + $4::bigint ${MS}, clock_timestamp()
WHERE (SELECT count(*) FROM ${r} WHERE correlation_id = $1 AND registration_id <> $2 AND expires_at > now()) < $5::int
ON CONFLICT (correlation_id, registration_id) DO UPDATE
SET state_json = EXCLUDED.state_json, expires_at = EXCLUDED.expires_at, registered_at = EXCLUDED.registered_at
RETURNING expires_at`,
    loadRegistrations: `SELECT correlation_id, registration_id, state_json, registered_at, expires_at FROM ${r}
WHERE correlation_id = $1 AND expires_at > now() ORDER BY registered_at, registration_id`,
    deleteRegistration: `DELETE FROM ${r} WHERE correlation_id = $1 AND registration_id = $2`,
    // SQL Server: INSERT … WHERE NOT EXISTS (… WITH (UPDLOCK, HOLDLOCK)) OUTPUT inserted.created_at.
    // A new response NOTIFYs its correlation id so waiters in other processes scan at once instead of at
    // their next poll (SQL Server has no NOTIFY: there they poll every ActivePollInterval).
    insertMessage: `WITH ins AS (
  INSERT INTO ${m} (id, correlation_id, envelope_json, expires_at)
  VALUES ($1, $2, $3, clock_timestamp() + $4::bigint ${MS})
  ON CONFLICT (id) DO NOTHING
  RETURNING created_at, correlation_id),
woken AS (SELECT pg_notify('${CHANNEL_NOTIFY_CHANNEL}', $5 || correlation_id) FROM ins)
SELECT created_at FROM ins, (SELECT count(*) FROM woken) AS n`,
    storedMessage: `SELECT created_at, acked_at, acked_seq::text AS acked_seq, correlation_id FROM ${m} WHERE id = $1`,
    loadPending: `SELECT ${cols}, CASE WHEN acked_at IS NULL THEN envelope_json END AS envelope_json FROM ${m}
WHERE correlation_id = $1 AND expires_at > now() AND NOT recovery_claimed
  AND (acked_at IS NULL OR acked_at > $2::timestamptz OR (acked_at = $2::timestamptz AND acked_seq > $3::bigint))
  AND ($5::timestamptz IS NULL OR created_at > $5::timestamptz OR (created_at = $5::timestamptz AND id > $6::uuid))
ORDER BY created_at, id
LIMIT $4`,
    loadById: `SELECT ${cols}, envelope_json FROM ${m}
WHERE correlation_id = $1 AND id = ANY($2::uuid[]) AND expires_at > now()
ORDER BY created_at, id`,
    // Only the first delivery stamps acked_at/acked_seq; later ones (fan-out) still answer true.
    claimForDelivery: `UPDATE ${m}
SET acked_at = COALESCE(acked_at, clock_timestamp()),
    acked_seq = CASE WHEN acked_at IS NULL THEN nextval('${seq.replace(/'/g, "''")}') ELSE acked_seq END
WHERE id = $1 AND NOT recovery_claimed AND expires_at > now()
  AND (acked_at IS NULL OR acked_at > $2::timestamptz OR (acked_at = $2::timestamptz AND acked_seq > $3::bigint))
RETURNING id`,
    // The race guard: a live delivery and recovery cannot both own a response.
    claimForRecovery: `UPDATE ${m} SET recovery_claimed = true WHERE id = $1 AND acked_at IS NULL RETURNING id`,
    // Claim first, in one statement: the claim's row lock serialises two routers and the loser claims nothing,
    // so it picks no registration and enqueues nothing. Each job is a reference (ids + the registration's
    // state as a JSON string); the payload stays in the message row. A final response consumes exactly the
    // registrations it enqueued. $5 = the transport's NOTIFY prefix ("schema.table:").
    routeToCallbacks: `WITH claimed AS (
  UPDATE ${m} SET recovery_claimed = true
  WHERE id = $1 AND correlation_id = $2 AND acked_at IS NULL AND NOT recovery_claimed AND expires_at > now()
    AND EXISTS (SELECT 1 FROM ${r} WHERE correlation_id = $2 AND expires_at > now())
  RETURNING id, correlation_id),
picked AS (
  SELECT g.registration_id, g.state_json, g.registered_at FROM ${r} AS g, claimed
  WHERE g.correlation_id = $2 AND g.expires_at > now()),
jobs AS (
  INSERT INTO ${jobs} (id, queue, payload_json, headers_json, created_at, available_at)
  SELECT gen_random_uuid(), $3,
         json_build_object('messageId', c.id, 'correlationId', c.correlation_id, 'registrationId', p.registration_id, 'registration', p.state_json)::text,
         json_build_object('AR-Correlation-Id', c.correlation_id)::text, clock_timestamp(), clock_timestamp()
  FROM picked AS p, claimed AS c
  ORDER BY p.registered_at, p.registration_id
  RETURNING id),
consumed AS (DELETE FROM ${r} AS g USING picked AS p WHERE $4::boolean AND g.correlation_id = $2 AND g.registration_id = p.registration_id),
woken AS (SELECT pg_notify('${TRANSPORT_NOTIFY_CHANNEL}', $5 || $3) FROM claimed)
SELECT (SELECT count(*) FROM claimed)::int AS claimed, (SELECT count(*) FROM jobs)::int AS jobs, (SELECT count(*) FROM woken)::int AS woken`,
    // The sender's claim: also keeps the row at least $2 ms more, so prune leaves it while its callback retries.
    holdForCallback: `UPDATE ${m}
SET recovery_claimed = true, expires_at = GREATEST(expires_at, clock_timestamp() + $2::bigint ${MS})
WHERE id = $1 AND acked_at IS NULL
RETURNING envelope_json`,
    isAcknowledged: `SELECT EXISTS (SELECT 1 FROM ${m} WHERE id = $1 AND acked_at IS NOT NULL AND expires_at > now()) AS acked`,
    subscriptionStart: `SELECT clock_timestamp()::text AS started_at, nextval('${seq.replace(/'/g, "''")}')::text AS started_seq`,
    findOverdue: `SELECT x.id, x.correlation_id, x.envelope_json FROM ${m} AS x
WHERE x.acked_at IS NULL AND NOT x.recovery_claimed AND x.expires_at > now()
  AND x.created_at < now() - $1::bigint ${MS}
  AND EXISTS (SELECT 1 FROM ${r} AS g WHERE g.correlation_id = x.correlation_id AND g.expires_at > now())
ORDER BY x.created_at
LIMIT $2`,
    upsertSubscriber: `INSERT INTO ${s} (correlation_id, registration_id, instance_id, expires_at)
VALUES ($1, $2, $3, clock_timestamp() + $4::bigint ${MS})
ON CONFLICT (correlation_id, registration_id) DO UPDATE SET instance_id = EXCLUDED.instance_id, expires_at = EXCLUDED.expires_at`,
    heartbeatSubscribers: `INSERT INTO ${s} (correlation_id, registration_id, instance_id, expires_at)
SELECT x.c, x.r, $3, clock_timestamp() + $4::bigint ${MS} FROM unnest($1::text[], $2::uuid[]) AS x(c, r)
ON CONFLICT (correlation_id, registration_id) DO UPDATE SET instance_id = EXCLUDED.instance_id, expires_at = EXCLUDED.expires_at`,
    deleteSubscriber: `DELETE FROM ${s} WHERE correlation_id = $1 AND registration_id = $2`,
    countSubscribers: `SELECT count(*)::int AS n FROM ${s} WHERE correlation_id = $1 AND expires_at > now()`,
    prune: (table: ChannelTable) => {
      const t = table === 'messages' ? m : table === 'subscribers' ? s : r;
      return `DELETE FROM ${t} WHERE ctid IN (SELECT ctid FROM ${t} WHERE expires_at <= now() LIMIT 1000)`;
    },
  };
}

/** The channel script `npm run schema -- print --dialect postgres` prints. */
export function printPostgresChannelSchema(n: ChannelNames): string {
  return `-- asyncresponse channel tables (PostgreSQL). Idempotent; run as the schema owner.
BEGIN;
${channelDdl(n).map((s) => `${s};`).join('\n')}
COMMIT;
`;
}
