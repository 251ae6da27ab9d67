// Every PostgreSQL statement of the transport, as text over validated, double-quoted identifiers; every value
// is a $n parameter. The SQL Server twins live in stores/sqlserver/statements.ts.
//
// Clock: claims compare against now() (stable within the statement, so the index can bound available_at);
// stamps use clock_timestamp() so the rows of one batch publish keep their order.

import { derivedName, IDENTIFIER_CAP, quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { DEAD_LETTER_SOURCE_HEADER } from '../../transport/types';
import { queueStateTableName } from '../queue-state-names';
import { PG_CANCEL_REQUESTED, pgJobControlStatements } from './job-control-statements';
import { TRANSPORT_NOTIFY_CHANNEL } from './notify-channel';
import { andAsyncCommit, whereAsyncCommit } from './async-commit';
import { claimTimes, pgClaimCandidates, pgCountKeys, pgPromoteVacant, pgReleaseKeys, pgTables, READY_SET_FILTER, STATE_QUEUED, STATE_SCHEDULED, stateFor } from './ready-set';

export interface PgStatements {
  publish: string;
  existing: string;
  /** The claim's text (the claim routine's body, and what a schema without the routine runs: claim-routine.ts). */
  claim: string;
  /** The claim as a call of the claim routine (schema version 25), $1–$4 as `claim`. */
  claimCall: string;
  ack: string;
  ackUnkeyed: string;
  ackTake: string;
  release: string;
  releaseUnstarted: string;
  releaseLostClaim: string;
  renew: string;
  deadLetter: string;
  pruneDeadLetters: string;
  stats: string;
  queueNames: string;
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
/**
 * Rows that may be dead letters: those whose headers name a source queue (every dead-letter move writes it, as a .NET
 * host's does; SOURCE_QUEUE reads it). The dead-letters index (version 18) holds these rows only, so a publish, a
 * claim or a promotion (none of them a HOT update since the ready set) neither writes it nor runs SOURCE_QUEUE's
 * header parse for a live row; version 4's index held every row. A substring test, cheap on every row version.
 */
export const IS_DEAD_LETTER = `headers_json LIKE '%${DEAD_LETTER_SOURCE_HEADER}%'`;
export { TRANSPORT_NOTIFY_CHANNEL };
/** Payload prefix of a transport notification: which table it is about ("schema.table:" + queue). */
export const notifyPrefix = (names: TransportNames) => `${names.schema}.${names.table}:`;
const MS = "* interval '1 millisecond'";
/** A claimed row's times as epoch milliseconds (ready-set.ts claimTimes). */
export const CLAIM_TIMES = claimTimes('m');
/**
 * The fence of a settlement batch (`s`: unnest of ids and lock ids): each id probes the primary key, and the lock id
 * is matched through an expression. A bare `m.lock_id = s.lock_id` implies `lock_id IS NOT NULL`, the leased index's
 * predicate, and with statistics taken while few rows were leased (a quiet moment, or the load's start) the planner
 * read that whole index instead, fetching every leased row and testing it against the id array one element at a
 * time (a generic plan's `= ANY($1)` is not hashed): O(leased × batch) per ack (with the claim's id test, below,
 * 8 % of the machine's samples in a profile of the bench/peers drain).
 * A settlement naming the nil uuid matches nothing (else it would match an unleased row).
 */
const NIL_UUID = "'00000000-0000-0000-0000-000000000000'::uuid";
export const SETTLEMENT_FENCE = `m.id = ANY($1::uuid[]) AND m.id = s.id AND coalesce(m.lock_id, ${NIL_UUID}) = s.lock_id AND s.lock_id <> ${NIL_UUID}`;

/**
 * created_at of a batch's rows: the statement's start (an InitPlan, evaluated once) plus one microsecond per row, so
 * rows keep batch order even where clock_timestamp() repeats (it does, many rows per microsecond): the claim and
 * the ordering-key head test order by it. Inserting a row takes longer than a microsecond, so the last row's stamp
 * is still behind the clock when the statement commits, and a later publish stamps later.
 */
const BATCH_CREATED_AT = "(SELECT clock_timestamp()) + (s.ord - 1) * interval '1 microsecond'";

/**
 * The insert of rows without an ordering key (`s`: id, queue, payload_json, headers_json, delay_ms, priority, ord),
 * an id already present left alone: the publish's (`FROM src`), and the jobs a flow-state write carries
 * (carried-jobs.ts). `from` is the FROM clause's rest (the source and any WHERE).
 */
export function pgInsertPlainRows(t: string, from: string, returning: string): string {
  return `  INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at, priority, state)
  SELECT s.id, s.queue, s.payload_json, s.headers_json, ${BATCH_CREATED_AT},
         CASE WHEN s.delay_ms > 0 THEN clock_timestamp() + s.delay_ms ${MS} ELSE clock_timestamp() END, s.priority, ${stateFor('s.delay_ms > 0')}
  FROM ${from}
  ORDER BY s.ord
  ON CONFLICT (id) DO NOTHING
  RETURNING ${returning}`;
}

/**
 * The claim, $1 queue, $2 most rows, $3 lease ms, $4 the lock id the rows get (`paused`: the queue's pause test on $1).
 * Its rows are RETURNING's: in no order (the store sorts them).
 */
export function pgClaimText(names: TransportNames, paused: string): string {
  const t = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(names.table, 'postgres')}`;
  return `WITH ${pgClaimCandidates(names, { queueParam: '$1', n: '$2', hold: paused })},
claimed AS (
  UPDATE ${t} AS m
  SET attempts = m.attempts + 1, locked_until = clock_timestamp() + $3::bigint ${MS}, lock_id = $4::uuid, state = NULL
  WHERE m.ctid = ANY(ARRAY(SELECT ctid FROM picked))
  RETURNING m.id, m.queue, m.payload_json, m.headers_json, m.attempts, m.lock_id, ${CLAIM_TIMES}, m.priority, m.ordering_key, m.seq),
${pgPromoteVacant(names, '$1')}
SELECT * FROM claimed`;
}

/** The claim routine (claim-routine.ts, schema version 25), schema-qualified. */
export function qualifiedClaimRoutine(names: TransportNames): string {
  return `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(derivedName(names.table, '_claim', IDENTIFIER_CAP.postgres), 'postgres')}`;
}

export interface PgStatementOptions {
  /** Claims and acks commit without waiting for the WAL flush (async-commit.ts); default true. */
  asyncCommit?: boolean;
}

export function pgStatements(names: TransportNames, options: PgStatementOptions = {}): PgStatements {
  const relaxed = options.asyncCommit ?? true;
  const t = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(names.table, 'postgres')}`;
  const paused = pgJobControlStatements(names, queueStateTableName(names, 'postgres')).pausedTest;
  const { seq } = pgTables(names);
  return {
    // SQL Server: INSERT … SELECT … WHERE NOT EXISTS (… WITH (UPDLOCK, HOLDLOCK)); here ON CONFLICT DO NOTHING.
    // The same statement NOTIFYs each queue that got a row claimable now, so drain loops in other processes
    // wake at once (delivered at commit; none for delayed rows). SQL Server has no NOTIFY: peers poll.
    // Keyed rows (ready-set.ts) are counted into their keys first: the count must be exact, so they are inserted
    // without ON CONFLICT after a NOT EXISTS test; a concurrent insert of the same id fails the statement with a
    // unique violation (23505), and the store runs it again (its NOT EXISTS then sees the other row).
    publish: `WITH src AS (
  SELECT s.* FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bigint[], $7::smallint[], $8::text[]) WITH ORDINALITY AS s(id, queue, payload_json, headers_json, delay_ms, priority, ordering_key, ord)),
keyed_src AS (
  SELECT s.queue, s.ordering_key, s.ord FROM src AS s WHERE s.ordering_key IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ${t} AS e WHERE e.id = s.id)),
${pgCountKeys(names, 'keyed_src')},
ins_plain AS (
${pgInsertPlainRows(t, 'src AS s WHERE s.ordering_key IS NULL', 'id, queue, available_at, state IS NULL AS due')}),
ins_keyed AS (
  INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at, priority, ordering_key, state, seq, key_no)
  SELECT s.id, s.queue, s.payload_json, s.headers_json, ${BATCH_CREATED_AT},
         CASE WHEN s.delay_ms > 0 THEN clock_timestamp() + s.delay_ms ${MS} ELSE clock_timestamp() END, s.priority, s.ordering_key,
         CASE WHEN h.head AND s.ord = h.first THEN ${stateFor('s.delay_ms > 0')} ELSE ${STATE_QUEUED} END, nextval('${seq}'), h.key_no
  FROM src AS s JOIN key_heads AS h ON h.queue = s.queue AND h.ordering_key = s.ordering_key
  WHERE NOT EXISTS (SELECT 1 FROM ${t} AS e WHERE e.id = s.id)
  ORDER BY s.ord
  RETURNING id, queue, available_at, state IS NULL AS due),
ins AS (SELECT * FROM ins_plain UNION ALL SELECT * FROM ins_keyed),
woken AS (SELECT pg_notify('${TRANSPORT_NOTIFY_CHANNEL}', $6 || q.queue) FROM (SELECT DISTINCT queue FROM ins WHERE due) AS q)
SELECT id, available_at FROM ins, (SELECT count(*) FROM woken) AS n`,
    existing: `SELECT id, available_at, queue FROM ${t} WHERE id = ANY($1::uuid[])`,
    // SQL Server: the same ranges, promoted then claimed in one batch with UPDLOCK, ROWLOCK, READPAST; here FOR
    // UPDATE SKIP LOCKED in each leaf (ready-set.ts). The UPDATE fetches the picked rows by ctid (a TID scan, no
    // index descent per row, whatever the table's size; a join to \`picked\` was planned as a Seq Scan on tables of some
    // thousands of rows). Each picked ctid is the version its leaf locked (in READ COMMITTED a lock follows a concurrent
    // update to the latest version and returns that one), held until the commit, and no other part of the statement
    // writes those rows: it is the row to lease. A second test of the id against an array of the picked ids was a
    // linear filter, 500 × 250 uuid comparisons a claim of 500 (8 % of the drain's CPU with the ack's, bench/peers).
    // A paused queue claims nothing: the pause test is uncorrelated, a one-time filter.
    claim: `${pgClaimText(names, paused)}${whereAsyncCommit(relaxed)}`,
    // One round trip to the claim routine (claim-routine.ts): the same statement, planned once per session.
    claimCall: `SELECT * FROM ${qualifiedClaimRoutine(names)}($1, $2, $3, $4)${whereAsyncCommit(relaxed)}`,
    // `m.id = ANY($1)` beside the join: without it the planner hashes the whole table for a join with unnest's
    // 500 pairs once the table is a few hundred pages (a Seq Scan per ack, its cost growing with the backlog).
    // A head's ack marks its key vacant when rows remain (ready-set.ts pgReleaseKeys); unkeyed acks skip that part.
    ack: `WITH removed AS (
  DELETE FROM ${t} AS m USING unnest($1::uuid[], $2::uuid[]) AS s(id, lock_id)
  WHERE ${SETTLEMENT_FENCE}
  RETURNING m.queue, m.ordering_key, m.key_no, m.state, m.seq),
${pgReleaseKeys(names, 'removed')}
SELECT count(*)::int AS n FROM removed${whereAsyncCommit(relaxed)}`,
    // The ack of rows the drain claimed without an ordering key (the common case): the DELETE alone, without the
    // keys' CTEs. Those cost a quarter of a 500-row ack even with no keyed row to settle: the removed rows are kept
    // in a tuple store, grouped and scanned again (measured: 3.4–3.6 ms against 4.35 ms a batch of 500). A keyed row
    // is left alone (its key must be released), so a settlement whose row has a key after all is settled by \`ack\`.
    ackUnkeyed: `DELETE FROM ${t} AS m USING unnest($1::uuid[], $2::uuid[]) AS s(id, lock_id)
WHERE ${SETTLEMENT_FENCE} AND m.ordering_key IS NULL${andAsyncCommit(relaxed)}`,
    // The ack with ack-and-take-next (ready-set.ts pgHandOver): $3 queue, $4 most successors to take, $5 lease ms,
    // $6 their lock id. One row when nothing was taken (n, the rest NULL), else one per taken row, each with n and
    // \`left\`: the keys whose next job a claim must take (promoted but not taken, or marked vacant). The counts are
    // the outer side of the join (one row), so the planner cannot rescan the modifying CTE per row.
    ackTake: `WITH removed AS (
  DELETE FROM ${t} AS m USING unnest($1::uuid[], $2::uuid[]) AS s(id, lock_id)
  WHERE ${SETTLEMENT_FENCE}
  RETURNING m.queue, m.ordering_key, m.key_no, m.state, m.seq, m.locked_until > clock_timestamp() AS live),
${pgReleaseKeys(names, 'removed', { queue: '$3', max: '$4', leaseMs: '$5', lockId: '$6', hold: paused.replace(/\$1(?![0-9])/g, '$3') })}
SELECT c.n, c.left, p.id, p.queue, p.payload_json, p.headers_json, p.attempts, p.lock_id, p.created_ms, p.available_ms, p.priority, p.ordering_key, p.seq
FROM (SELECT (SELECT count(*) FROM removed)::int AS n,
             ((SELECT count(*) FROM promoted WHERE NOT taken) + (SELECT count(*) FROM released WHERE vacant) + (SELECT count(*) FROM lost))::int AS left) AS c
LEFT JOIN promoted AS p ON p.taken${whereAsyncCommit(relaxed)}`,
    // A keyed head stays its key's head (scheduled while it waits out the delay).
    release: `UPDATE ${t} SET available_at = clock_timestamp() + $3::bigint ${MS}, locked_until = NULL, lock_id = NULL, state = ${stateFor('$3::bigint > 0')}
WHERE id = $1 AND lock_id = $2`,
    // SQL Server: UPDATE … FROM … JOIN OPENJSON(@settlements); here unnest. available_at stays: the row keeps its place.
    releaseUnstarted: `UPDATE ${t} AS m SET attempts = GREATEST(m.attempts - 1, 0), locked_until = NULL, lock_id = NULL
FROM unnest($1::uuid[], $2::uuid[]) AS s(id, lock_id)
WHERE ${SETTLEMENT_FENCE}`,
    // A claim whose answer was lost, handed back by the lock id the drain chose: the queue's rows still leased under
    // it, found in the leased index (the queue's live leases, lock_id included). SKIP LOCKED: rows an uncommitted
    // claim holds are left to lapse. SQL Server: UPDATE … WITH (ROWLOCK, READPAST).
    releaseLostClaim: `UPDATE ${t} AS m SET attempts = GREATEST(m.attempts - 1, 0), locked_until = NULL, lock_id = NULL
WHERE m.id = ANY(ARRAY(
  SELECT id FROM ${t} WHERE queue = $1 AND lock_id IS NOT NULL AND locked_until > now() AND lock_id = $2::uuid
  FOR UPDATE SKIP LOCKED))`,
    // RETURNING tells the owner whether an operator marked the job cancelled (job-control-statements.ts). A lapsed
    // lease is not renewed (review M2): a limited claim may have given its slot away, and a claim may take the row.
    renew: `UPDATE ${t} SET locked_until = clock_timestamp() + $3::bigint ${MS} WHERE id = $1 AND lock_id = $2 AND locked_until > now()
RETURNING ${PG_CANCEL_REQUESTED} AS cancel_requested`,
    // Delete first; the insert runs only for a row the fence matched (SQL Server: IF @@ROWCOUNT = 1).
    // The dead-letter row keeps the removed row's attempts (SQL Server: OUTPUT deleted.attempts INTO @removed).
    // It keeps the priority and the ordering key too, so a requeue (redrive) puts the job back at its priority, on its key.
    // A keyed head's move lets its key go on (ready-set.ts pgReleaseKeys); the dead letter itself is counted nowhere.
    deadLetter: `WITH removed AS (DELETE FROM ${t} WHERE id = $1 AND lock_id = $2 RETURNING id, queue, attempts, priority, ordering_key, key_no, state, seq),
${pgReleaseKeys(names, 'removed')},
moved AS (
  INSERT INTO ${t} (id, queue, payload_json, headers_json, dead_letter_reason, attempts, priority, ordering_key)
  SELECT $3, $4, $5, $6, $7, attempts, priority, ordering_key FROM removed
  ON CONFLICT (id) DO NOTHING
  RETURNING id)
SELECT id FROM moved`,
    // SQL Server: SET NOCOUNT OFF; DELETE TOP (1000); PostgreSQL has no DELETE … LIMIT, so bound by ctid.
    // The dead-letter list index (queue, source, created_at) bounds the age test per source: a loose scan finds the
    // queue's sources (one probe each), then each source's oldest rows up to the cut-off are a range of the index, and
    // the rows whose source header does not parse (SOURCE_QUEUE NULL) are one more. A prune beside many dead letters
    // that are not old yet reads only those it deletes. The cut-off is on now(), stable in the statement, so it can
    // bound a range (clock_timestamp() cannot: a prune then read every dead letter of the queue, a Seq Scan of the table).
    pruneDeadLetters: `DELETE FROM ${t} WHERE ctid IN (
  WITH RECURSIVE sources AS (
    (SELECT ${SOURCE_QUEUE} AS source FROM ${t} WHERE queue = $1 AND ${IS_DEAD_LETTER} AND ${SOURCE_QUEUE} IS NOT NULL ORDER BY ${SOURCE_QUEUE} LIMIT 1)
    UNION ALL
    SELECT (SELECT ${SOURCE_QUEUE} FROM ${t} WHERE queue = $1 AND ${IS_DEAD_LETTER} AND ${SOURCE_QUEUE} > s.source ORDER BY ${SOURCE_QUEUE} LIMIT 1)
    FROM sources AS s WHERE s.source IS NOT NULL)
  SELECT o.ctid FROM (
    SELECT x.ctid FROM sources AS s, LATERAL (
      SELECT ctid FROM ${t} WHERE queue = $1 AND ${IS_DEAD_LETTER} AND ${SOURCE_QUEUE} = s.source AND created_at < now() - $2::bigint ${MS}
      ORDER BY created_at LIMIT 1000) AS x
    WHERE s.source IS NOT NULL
    UNION ALL
    (SELECT ctid FROM ${t} WHERE queue = $1 AND ${IS_DEAD_LETTER} AND ${SOURCE_QUEUE} IS NULL AND created_at < now() - $2::bigint ${MS}
     ORDER BY created_at LIMIT 1000)) AS o
  LIMIT 1000)`,
    // Queues that hold rows: a loose index scan (one probe per distinct queue) over each partial index whose rows
    // together are every row (the ready set, scheduled, leased, keyed); the ready set's states leave no other kind.
    queueNames: `WITH RECURSIVE ready_q AS (
  (SELECT queue FROM ${t} WHERE ${READY_SET_FILTER} ORDER BY queue LIMIT 1)
  UNION ALL
  SELECT (SELECT n.queue FROM ${t} AS n WHERE ${READY_SET_FILTER} AND n.queue > ready_q.queue ORDER BY n.queue LIMIT 1) FROM ready_q WHERE ready_q.queue IS NOT NULL),
scheduled_q AS (
  (SELECT queue FROM ${t} WHERE state = ${STATE_SCHEDULED} ORDER BY queue LIMIT 1)
  UNION ALL
  SELECT (SELECT n.queue FROM ${t} AS n WHERE n.state = ${STATE_SCHEDULED} AND n.queue > scheduled_q.queue ORDER BY n.queue LIMIT 1) FROM scheduled_q WHERE scheduled_q.queue IS NOT NULL),
leased_q AS (
  (SELECT queue FROM ${t} WHERE lock_id IS NOT NULL ORDER BY queue LIMIT 1)
  UNION ALL
  SELECT (SELECT n.queue FROM ${t} AS n WHERE n.lock_id IS NOT NULL AND n.queue > leased_q.queue ORDER BY n.queue LIMIT 1) FROM leased_q WHERE leased_q.queue IS NOT NULL),
keyed_q AS (
  (SELECT queue FROM ${t} WHERE state = ${STATE_QUEUED} ORDER BY queue LIMIT 1)
  UNION ALL
  SELECT (SELECT n.queue FROM ${t} AS n WHERE n.state = ${STATE_QUEUED} AND n.queue > keyed_q.queue ORDER BY n.queue LIMIT 1) FROM keyed_q WHERE keyed_q.queue IS NOT NULL)
SELECT DISTINCT queue FROM (SELECT queue FROM ready_q UNION ALL SELECT queue FROM scheduled_q UNION ALL SELECT queue FROM leased_q UNION ALL SELECT queue FROM keyed_q) AS x
WHERE queue IS NOT NULL ORDER BY queue LIMIT $1`,
    // Each part reads one partial index from the queue's prefix: the ready set, the scheduled rows, the rows queued
    // behind their keys' heads, the leases (a lapsed one counts as ready, as the claim takes it).
    stats: `SELECT count(*) FILTER (WHERE w.due)::int AS ready, count(*) FILTER (WHERE NOT w.due)::int AS delayed,
  (SELECT count(*) FROM ${t} WHERE queue = $1 AND lock_id IS NOT NULL AND locked_until > now())::int AS leased,
  (SELECT count(*) FROM ${t} WHERE queue = $2 AND ${IS_DEAD_LETTER} AND ${SOURCE_QUEUE} = $1)::int AS dead_lettered,
  EXTRACT(EPOCH FROM now() - min(w.available_at) FILTER (WHERE w.due))::float8 AS oldest_ready_age_seconds
FROM (
  SELECT available_at, available_at <= now() AS due FROM ${t} WHERE queue = $1 AND ${READY_SET_FILTER}
  UNION ALL
  SELECT available_at, available_at <= now() FROM ${t} WHERE queue = $1 AND state = ${STATE_SCHEDULED}
  UNION ALL
  SELECT available_at, available_at <= now() FROM ${t} WHERE queue = $1 AND ordering_key IS NOT NULL AND state = ${STATE_QUEUED}
  UNION ALL
  SELECT available_at, true FROM ${t} WHERE queue = $1 AND lock_id IS NOT NULL AND locked_until <= now()) AS w`,
    listDeadLetters: `SELECT id, payload_json, headers_json, dead_letter_reason, attempts, created_at FROM ${t}
WHERE queue = $1 AND ${IS_DEAD_LETTER} AND ${SOURCE_QUEUE} = $2
ORDER BY created_at DESC
LIMIT $3`,
    // Back on its queue like a new publish: a keyed job goes to the back of its key (a new seq, counted into the
    // key; it is the head when the key has no row left). `row` locks the dead letter first, so the key is counted
    // only for a row this statement moves.
    requeueDeadLetter: `WITH row AS (
  SELECT id, ordering_key FROM ${t} WHERE id = $3 AND queue = $1 AND ${IS_DEAD_LETTER} AND ${SOURCE_QUEUE} = $2 FOR UPDATE),
keyed_src AS (SELECT $2::text AS queue, ordering_key, 1 AS ord FROM row WHERE ordering_key IS NOT NULL),
${pgCountKeys(names, 'keyed_src')}
UPDATE ${t} AS m
SET queue = $2, attempts = 0, available_at = clock_timestamp(), locked_until = NULL, lock_id = NULL,
    created_at = CASE WHEN m.ordering_key IS NULL THEN m.created_at ELSE clock_timestamp() END,
    seq = CASE WHEN m.ordering_key IS NULL THEN m.seq ELSE nextval('${seq}') END,
    key_no = CASE WHEN m.ordering_key IS NULL THEN m.key_no ELSE (SELECT key_no FROM key_heads) END,
    state = CASE WHEN m.ordering_key IS NULL OR (SELECT bool_and(head) FROM key_heads) THEN NULL ELSE ${STATE_QUEUED} END,
    dead_letter_reason = NULL,
    headers_json = (m.headers_json::jsonb - 'AR-DeadLetter-Reason' - 'AR-DeadLetter-Source-Queue')::text
FROM row
WHERE m.id = row.id`,
    deleteDeadLetter: `DELETE FROM ${t} WHERE id = $3 AND queue = $1 AND ${IS_DEAD_LETTER} AND ${SOURCE_QUEUE} = $2`,
    hasMessage: `SELECT EXISTS (SELECT 1 FROM ${t} WHERE id = $2 AND queue = $1) AS present`,
    now: 'SELECT clock_timestamp() AS now',
  };
}
