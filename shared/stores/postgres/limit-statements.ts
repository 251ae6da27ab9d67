// The PostgreSQL statements of queue limits (issue 17 §2): the limited claim and the backoff a forward target asks
// for. The SQL Server twins live in stores/sqlserver/limit-statements.ts; the arithmetic is transport/limits.ts's.
//
// A limited claim is one short transaction: `lock` takes the queue's queue-state row FOR UPDATE as a statement of
// its own (in READ COMMITTED a statement's snapshot is taken when it starts, so counting leased rows in the
// statement that waited for the lock would miss what the previous holder committed meanwhile), then `claim` runs on
// a fresh snapshot: it counts the queue's leases (claimed rows count as running), refills the token bucket on
// the database clock, claims at most the room, and spends the tokens — one statement. Claimers of one limited queue
// therefore run one after another; other queues and unlimited queues never touch that row lock.
//
// The leases are the queue's live leases in the leased index (the ready set, schema version 18: (queue, locked_until)
// WHERE lock_id IS NOT NULL): one range of as many entries as jobs run, whatever the backlog. Before the ready set no
// index found leased rows, and a lease roster ({table}_leases, version 15) that limited claims enrolled into stood in
// for one; it is no longer written. A lease counts while it is live (locked_until ahead): a lapsed one does not,
// and its owner cannot renew it (statements.ts renew), so a slot given away on a lapse stays given (review M2). Every
// instance's leases count, limited or not.

import { derivedName, IDENTIFIER_CAP, quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { leaseRosterTableName, queueStateTableName } from '../queue-state-names';
import { CLAIM_TIMES } from './statements';
import { pgClaimCandidates, pgPromoteVacant } from './ready-set';
import { whereAsyncCommit } from './async-commit';
import { CLAIM_ARGS, CLAIM_RESULT_COLUMNS, pgClaimRoutine } from './claim-routine';

export interface PgLimitStatements {
  /** Locks the queue's state row ($1); no row = none yet (insert it with `ensureRow`, then lock again). */
  lock: string;
  ensureRow: string;
  /**
   * $1 queue, $2 max rows, $3 lease ms, $4 lock id, $5 concurrency limit (null = none), $6 rate per second
   * (null = none), $7 bucket size. One row per claimed job (kind 'job'), then one summary row (kind 'state').
   */
  claim: string;
  /** $1 queue, $2 ms: backoff_until = the later of the stored one and now + $2; returns it. */
  backOff: string;
  /** `lock`, `ensureRow` and `claim` in one round trip: the routine pgLimitedClaimRoutineDdl creates ($1–$7 as `claim`). */
  claimCall: string;
}

const MS = "* interval '1 millisecond'";

/** `asyncCommit` (default true): the limited claim commits without waiting for the WAL flush (async-commit.ts). */
export function pgLimitStatements(names: TransportNames, { asyncCommit: relaxed = true }: { asyncCommit?: boolean } = {}): PgLimitStatements {
  const t = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(names.table, 'postgres')}`;
  const s = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(queueStateTableName(names, 'postgres'), 'postgres')}`;
  const elapsedS = 'GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - q.rate_refilled_at))';
  return {
    lock: `SELECT 1 AS locked FROM ${s} WHERE queue = $1 FOR UPDATE`,
    ensureRow: `INSERT INTO ${s} (queue) VALUES ($1) ON CONFLICT (queue) DO NOTHING`,
    claim: `WITH leases AS (
  ${liveLeases(t, '$1')} AND $5::int IS NOT NULL),
st AS (
  SELECT (q.paused_at IS NOT NULL OR COALESCE(q.backoff_until > clock_timestamp(), false)) AS held,
         CASE WHEN q.backoff_until > clock_timestamp() THEN (EXTRACT(EPOCH FROM q.backoff_until - clock_timestamp()) * 1000)::float8 END AS backoff_ms,
         CASE WHEN $6::float8 IS NULL THEN NULL
              WHEN q.rate_tokens IS NULL OR q.rate_refilled_at IS NULL THEN $7::float8
              ELSE LEAST($7::float8, q.rate_tokens + ${elapsedS} * $6::float8) END AS tokens,
         (SELECT count(*) FROM leases)::int AS leased
  FROM ${s} AS q WHERE q.queue = $1),
room AS (
  SELECT st.*, CASE WHEN st.held THEN 0 ELSE GREATEST(0, LEAST($2::int,
    COALESCE($5::int - st.leased, $2::int), COALESCE(floor(st.tokens)::int, $2::int))) END AS n
  FROM st),
${pgClaimCandidates(names, { queueParam: '$1', n: '(SELECT n FROM room)' })},
claimed AS (
  UPDATE ${t} AS m
  SET attempts = m.attempts + 1, locked_until = clock_timestamp() + $3::bigint ${MS}, lock_id = $4::uuid, state = NULL
  WHERE m.ctid = ANY(ARRAY(SELECT ctid FROM picked))
  RETURNING m.id, m.queue, m.payload_json, m.headers_json, m.attempts, m.lock_id, ${CLAIM_TIMES}, m.priority, m.ordering_key, m.seq),
${pgPromoteVacant(names, '$1')},
spent AS (
  UPDATE ${s} SET rate_tokens = (SELECT tokens FROM room) - (SELECT count(*) FROM claimed), rate_refilled_at = clock_timestamp()
  WHERE queue = $1 AND $6::float8 IS NOT NULL
  RETURNING rate_tokens)
SELECT 'job' AS kind, c.id, c.queue, c.payload_json, c.headers_json, c.attempts, c.lock_id, c.created_ms, c.available_ms, c.priority, c.ordering_key, c.seq,
       NULL::boolean AS held, NULL::float8 AS backoff_ms, NULL::float8 AS tokens_left, NULL::int AS leased, NULL::float8 AS lease_lapses_in_ms
FROM claimed AS c
UNION ALL
SELECT 'state', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, o.held, o.backoff_ms,
       (SELECT rate_tokens FROM spent), o.leased,
       CASE WHEN $5::int IS NOT NULL AND o.leased >= $5::int THEN (
         SELECT (EXTRACT(EPOCH FROM min(x.locked_until) - clock_timestamp()) * 1000)::float8 FROM leases AS x) END
FROM room AS o`,
    claimCall: `SELECT * FROM ${qualifiedClaimLimited(names)}($1, $2, $3, $4, $5, $6, $7)${whereAsyncCommit(relaxed)}`,
    backOff: `INSERT INTO ${s} AS q (queue, backoff_until, updated_at) VALUES ($1, clock_timestamp() + $2::bigint ${MS}, clock_timestamp())
ON CONFLICT (queue) DO UPDATE SET
  backoff_until = GREATEST(COALESCE(q.backoff_until, EXCLUDED.backoff_until), EXCLUDED.backoff_until),
  updated_at = clock_timestamp()
RETURNING backoff_until`,
  };
}

export function qualifiedClaimLimited(names: TransportNames): string {
  return `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(derivedName(names.table, '_claim_limited', IDENTIFIER_CAP.postgres), 'postgres')}`;
}

/**
 * Version 18: the limited claim as one routine, so it takes one round trip instead of four (BEGIN, the lock, the
 * claim, COMMIT) and the queue-state row is held only while the database runs the claim, not across the client's
 * round trips: a limited queue's claims run one after another on that row, so its hold time is their throughput.
 * Each statement of a PL/pgSQL routine takes its own snapshot, so the claim still counts what the previous holder of
 * the lock committed. The claim's text is `claim` with its parameters as the routine's arguments. From version 25
 * its statements keep one generic plan per session (claim-routine.ts says why).
 */
/** The limited claim's parameters ($1–$7, `claim`) as its routine's arguments: the claim's, then the limits. */
export const LIMITED_CLAIM_ARGS = [...CLAIM_ARGS, ['p_limit', 'integer'], ['p_rate', 'double precision'], ['p_burst', 'double precision']] as const;

export function pgLimitedClaimRoutineDdl(names: TransportNames): string {
  const sql = pgLimitStatements(names);
  const returns = `kind text, ${CLAIM_RESULT_COLUMNS}, held boolean, backoff_ms double precision, tokens_left double precision, leased integer, lease_lapses_in_ms double precision`;
  return pgClaimRoutine(qualifiedClaimLimited(names), LIMITED_CLAIM_ARGS, returns, (bind) => `  PERFORM 1 FROM (${bind(sql.lock)}) AS l;
  IF NOT FOUND THEN
    ${bind(sql.ensureRow)};
    PERFORM 1 FROM (${bind(sql.lock)}) AS l;
  END IF;
  RETURN QUERY ${bind(sql.claim)};`);
}

/** Migration: the queue-state columns of limits and backoff (SQL Server's twin adds the same three). */
export function pgLimitColumnsDdl(schema: string, queueStateTable: string): string {
  return `ALTER TABLE ${quoteIdentifier(schema, 'postgres')}.${quoteIdentifier(queueStateTable, 'postgres')}
    ADD COLUMN IF NOT EXISTS backoff_until timestamptz NULL,
    ADD COLUMN IF NOT EXISTS rate_tokens float8 NULL,
    ADD COLUMN IF NOT EXISTS rate_refilled_at timestamptz NULL`;
}

export function qualifiedLeaseRoster(names: TransportNames): string {
  return `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(leaseRosterTableName(names, 'postgres'), 'postgres')}`;
}

/** The live leases of queue `queueParam` (locked_until), one range of the leased index (ready-set.ts). */
export function liveLeases(transport: string, queueParam: string): string {
  return `SELECT locked_until FROM ${transport} WHERE queue = ${queueParam} AND lock_id IS NOT NULL AND locked_until > now()`;
}

/** Migration (version 15) and a store's own schema: the lease roster of limited claims before the ready set (no longer written). */
export function pgLeaseRosterDdl(names: TransportNames): string {
  return `CREATE TABLE IF NOT EXISTS ${qualifiedLeaseRoster(names)} (
    queue text COLLATE "C" NOT NULL,
    id uuid NOT NULL,
    lock_id uuid NOT NULL,
    PRIMARY KEY (queue, id, lock_id))`;
}
