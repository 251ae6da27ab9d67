// Every PostgreSQL statement of the transport, as text over validated, double-quoted identifiers; every value
// is a $n parameter. The SQL Server twins live in stores/sqlserver/statements.ts.
//
// Clock: claims compare against now() (stable within the statement, so the index can bound available_at);
// stamps use clock_timestamp() so the rows of one batch publish keep their order.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { queueStateTableName } from '../queue-state-names';
import { PG_CANCEL_REQUESTED, pgJobControlStatements } from './job-control-statements';
import { TRANSPORT_NOTIFY_CHANNEL } from './notify-channel';
import { pgClaimable } from './ordering-sql';

export interface PgStatements {
  publish: string;
  existing: string;
  claim: string;
  /** The claim with $5 text[]: keys whose head the caller just settled, looked up first (ordering-sql.ts pgClaimable). */
  claimFreed: string;
  ack: string;
  release: string;
  releaseUnstarted: string;
  releaseLostClaim: string;
  renew: string;
  deadLetter: string;
  pruneDeadLetters: string;
  stats: string;
  listDeadLetters: string;
  requeueDeadLetter: string;
  deleteDeadLetter: string;
  hasMessage: string;
  now: string;
}

/** Source-queue header read without failing on a row whose headers are not a JSON object. */
// jsonb refuses a \u0000 escape and surrogate escapes it cannot pair, so a row carrying \u0000 or any surrogate escape
// (rows the app writes never do: deadLetterHeaders replaces both) is read as having no source instead of failing
// the query for every queue. The pattern skips an escaped backslash (\\u0000 is the text "\u0000", harmless).
export const UNSAFE_JSON_ESCAPE = String.raw`(^|[^\\])(\\\\)*\\u(0000|d[89a-f])`;
// IMMUTABLE throughout (left, ltrim, a regex match, the text→jsonb cast, ->>), so migration 3 indexes exactly this
// expression on (queue, SOURCE_QUEUE): every dead-letter statement below must keep this text for the planner to
// match the index.
export const SOURCE_QUEUE = `(CASE WHEN left(ltrim(headers_json), 1) = '{' AND headers_json !~* '${UNSAFE_JSON_ESCAPE}' THEN headers_json::jsonb ->> 'AR-DeadLetter-Source-Queue' END)`;
const UNLEASED = '(locked_until IS NULL OR locked_until <= now())';
export { TRANSPORT_NOTIFY_CHANNEL };
/** Payload prefix of a transport notification: which table it is about ("schema.table:" + queue). */
export const notifyPrefix = (names: TransportNames) => `${names.schema}.${names.table}:`;
const MS = "* interval '1 millisecond'";
/**
 * A claimed row's times as epoch milliseconds: pg parses a float8 with parseFloat, a timestamptz with a regular
 * expression into a Date (two per row were 15 % of a drain's allocations). Date has millisecond precision anyway.
 */
export const CLAIM_TIMES = '(EXTRACT(EPOCH FROM m.created_at) * 1000)::float8 AS created_ms, (EXTRACT(EPOCH FROM m.available_at) * 1000)::float8 AS available_ms';
/** The claim's order, the claim index's keys after the queue and the keyed flag (ddl.ts CLAIM_INDEX_KEYS): higher priority first. */
export const CLAIM_ORDER = 'priority DESC, available_at, created_at';
/**
 * created_at of a batch's rows: the statement's start (an InitPlan, evaluated once) plus one microsecond per row, so
 * rows keep batch order even where clock_timestamp() repeats (it does, many rows per microsecond): the claim and
 * the ordering-key head test order by it. Inserting a row takes longer than a microsecond, so the last row's stamp
 * is still behind the clock when the statement commits, and a later publish stamps later.
 */
const BATCH_CREATED_AT = "(SELECT clock_timestamp()) + (s.ord - 1) * interval '1 microsecond'";

export function pgStatements(names: TransportNames): PgStatements {
  const t = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(names.table, 'postgres')}`;
  const paused = pgJobControlStatements(names, queueStateTableName(names, 'postgres')).pausedTest;
  return {
    // SQL Server: INSERT … SELECT … WHERE NOT EXISTS (… WITH (UPDLOCK, HOLDLOCK)); here ON CONFLICT DO NOTHING.
    // The same statement NOTIFYs each queue that got a row claimable now, so drain loops in other processes
    // wake at once (delivered at commit; none for delayed rows). SQL Server has no NOTIFY: peers poll.
    publish: `WITH ins AS (
  INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at, priority, ordering_key)
  SELECT s.id, s.queue, s.payload_json, s.headers_json, ${BATCH_CREATED_AT},
         CASE WHEN s.delay_ms > 0 THEN clock_timestamp() + s.delay_ms ${MS} ELSE clock_timestamp() END, s.priority, s.ordering_key
  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bigint[], $7::smallint[], $8::text[]) WITH ORDINALITY AS s(id, queue, payload_json, headers_json, delay_ms, priority, ordering_key, ord)
  ORDER BY s.ord
  ON CONFLICT (id) DO NOTHING
  RETURNING id, queue, available_at, available_at <= clock_timestamp() AS due),
woken AS (SELECT pg_notify('${TRANSPORT_NOTIFY_CHANNEL}', $6 || q.queue) FROM (SELECT DISTINCT queue FROM ins WHERE due) AS q)
SELECT id, available_at FROM ins, (SELECT count(*) FROM woken) AS n`,
    existing: `SELECT id, available_at, queue FROM ${t} WHERE id = ANY($1::uuid[])`,
    // SQL Server: TOP (@n) … WITH (UPDLOCK, ROWLOCK, READPAST); here FOR UPDATE SKIP LOCKED.
    // The claimed ids go to the UPDATE as an array: joined to a CTE instead, the planner hashes the CTE and
    // reads the whole table (a Seq Scan per claim on mid-sized tables); `id = ANY(array)` probes the primary key.
    // A paused queue claims nothing: the pause test is uncorrelated, a one-time filter over the same seek.
    claim: `UPDATE ${t} AS m
SET attempts = m.attempts + 1, locked_until = clock_timestamp() + $3::bigint ${MS}, lock_id = $4::uuid
WHERE m.id = ANY(ARRAY(
  ${pgClaimable(names, { queueParam: '$1', n: '$2', extraWhere: `NOT ${paused}` })}))
RETURNING m.id, m.queue, m.payload_json, m.headers_json, m.attempts, m.lock_id, ${CLAIM_TIMES}, m.priority, m.ordering_key`,
    claimFreed: `UPDATE ${t} AS m
SET attempts = m.attempts + 1, locked_until = clock_timestamp() + $3::bigint ${MS}, lock_id = $4::uuid
WHERE m.id = ANY(ARRAY(
  ${pgClaimable(names, { queueParam: '$1', n: '$2', extraWhere: `NOT ${paused}`, freedKeysParam: '$5' })}))
RETURNING m.id, m.queue, m.payload_json, m.headers_json, m.attempts, m.lock_id, ${CLAIM_TIMES}, m.priority, m.ordering_key`,
    // `m.id = ANY($1)` beside the join: without it the planner hashes the whole table for a join with unnest's
    // 500 pairs once the table is a few hundred pages (a Seq Scan per ack, its cost growing with the backlog).
    ack: `DELETE FROM ${t} AS m USING unnest($1::uuid[], $2::uuid[]) AS s(id, lock_id)
WHERE m.id = ANY($1::uuid[]) AND m.id = s.id AND m.lock_id = s.lock_id`,
    release: `UPDATE ${t} SET available_at = clock_timestamp() + $3::bigint ${MS}, locked_until = NULL, lock_id = NULL
WHERE id = $1 AND lock_id = $2`,
    // SQL Server: UPDATE … FROM … JOIN OPENJSON(@settlements); here unnest. available_at stays: the row keeps its place.
    releaseUnstarted: `UPDATE ${t} AS m SET attempts = GREATEST(m.attempts - 1, 0), locked_until = NULL, lock_id = NULL
FROM unnest($1::uuid[], $2::uuid[]) AS s(id, lock_id)
WHERE m.id = ANY($1::uuid[]) AND m.id = s.id AND m.lock_id = s.lock_id`,
    // A claim whose answer was lost, handed back by the lock id the drain chose: the queue's ready rows (the claim
    // took only rows with available_at <= now()) still leased under it. SKIP LOCKED: rows an uncommitted claim
    // holds are left to lapse. SQL Server: UPDATE … WITH (ROWLOCK, READPAST).
    releaseLostClaim: `UPDATE ${t} AS m SET attempts = GREATEST(m.attempts - 1, 0), locked_until = NULL, lock_id = NULL
WHERE m.id = ANY(ARRAY(
  SELECT id FROM ${t} WHERE queue = $1 AND available_at <= now() AND lock_id = $2::uuid AND locked_until > now()
  FOR UPDATE SKIP LOCKED))`,
    // RETURNING tells the owner whether an operator marked the job cancelled (job-control-statements.ts).
    renew: `UPDATE ${t} SET locked_until = clock_timestamp() + $3::bigint ${MS} WHERE id = $1 AND lock_id = $2
RETURNING ${PG_CANCEL_REQUESTED} AS cancel_requested`,
    // Delete first; the insert runs only for a row the fence matched (SQL Server: IF @@ROWCOUNT = 1).
    // The dead-letter row keeps the removed row's attempts (SQL Server: OUTPUT deleted.attempts INTO @removed).
    // It keeps the priority and the ordering key too, so a requeue (redrive) puts the job back at its priority, on its key.
    deadLetter: `WITH removed AS (DELETE FROM ${t} WHERE id = $1 AND lock_id = $2 RETURNING id, attempts, priority, ordering_key)
INSERT INTO ${t} (id, queue, payload_json, headers_json, dead_letter_reason, attempts, priority, ordering_key)
SELECT $3, $4, $5, $6, $7, attempts, priority, ordering_key FROM removed
ON CONFLICT (id) DO NOTHING
RETURNING id`,
    // SQL Server: SET NOCOUNT OFF; DELETE TOP (1000); PostgreSQL has no DELETE … LIMIT, so bound by ctid.
    pruneDeadLetters: `DELETE FROM ${t} WHERE ctid IN (
  SELECT ctid FROM ${t} WHERE queue = $1 AND created_at < clock_timestamp() - $2::bigint ${MS} LIMIT 1000)`,
    stats: `SELECT
  (SELECT count(*) FROM ${t} WHERE queue = $1 AND available_at <= now() AND ${UNLEASED})::int AS ready,
  (SELECT count(*) FROM ${t} WHERE queue = $1 AND available_at > now() AND ${UNLEASED})::int AS delayed,
  (SELECT count(*) FROM ${t} WHERE queue = $1 AND locked_until > now())::int AS leased,
  (SELECT count(*) FROM ${t} WHERE queue = $2 AND ${SOURCE_QUEUE} = $1)::int AS dead_lettered,
  (SELECT EXTRACT(EPOCH FROM now() - min(available_at))::float8 FROM ${t}
     WHERE queue = $1 AND available_at <= now() AND ${UNLEASED}) AS oldest_ready_age_seconds`,
    listDeadLetters: `SELECT id, payload_json, headers_json, dead_letter_reason, attempts, created_at FROM ${t}
WHERE queue = $1 AND ${SOURCE_QUEUE} = $2
ORDER BY created_at DESC
LIMIT $3`,
    // A keyed job goes to the back of its key (created_at now): with the dead letter's stamp it could run beside the
    // key's current head, which is older than the requeue but younger than that stamp.
    requeueDeadLetter: `UPDATE ${t}
SET queue = $2, attempts = 0, available_at = clock_timestamp(), locked_until = NULL, lock_id = NULL,
    created_at = CASE WHEN ordering_key IS NULL THEN created_at ELSE clock_timestamp() END,
    dead_letter_reason = NULL,
    headers_json = (headers_json::jsonb - 'AR-DeadLetter-Reason' - 'AR-DeadLetter-Source-Queue')::text
WHERE id = $3 AND queue = $1 AND ${SOURCE_QUEUE} = $2`,
    deleteDeadLetter: `DELETE FROM ${t} WHERE id = $3 AND queue = $1 AND ${SOURCE_QUEUE} = $2`,
    hasMessage: `SELECT EXISTS (SELECT 1 FROM ${t} WHERE id = $2 AND queue = $1) AS present`,
    now: 'SELECT clock_timestamp() AS now',
  };
}
