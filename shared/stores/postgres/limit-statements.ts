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
// The leases are counted from the lease roster ({table}_leases, schema version 15), not from the transport table:
// a limited claim enrols each row it leases as (queue, id, lock_id), and an entry counts while its row still holds
// that lease (same lock id, locked_until in the future). Counting the transport table's leased rows read the queue's
// whole ready backlog on every claim (a lease changes no indexed column, so no index can find leased rows without
// ending HOT claims): 1,000 jobs/s against 28,000 unlimited. The roster holds the live leases plus those settled
// since the last limited claim, which prunes them; acks, NAKs and renewals never touch it. Only limited claims
// enrol, so rows an instance without the limit claimed are not counted (such an instance ignores the limit anyway).

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { leaseRosterTableName, queueStateTableName } from '../queue-state-names';
import { CLAIM_TIMES } from './statements';
import { pgClaimable } from './ordering-sql';

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
}

const MS = "* interval '1 millisecond'";

export function pgLimitStatements(names: TransportNames): PgLimitStatements {
  const t = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(names.table, 'postgres')}`;
  const s = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(queueStateTableName(names, 'postgres'), 'postgres')}`;
  const r = qualifiedLeaseRoster(names);
  const elapsedS = 'GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - q.rate_refilled_at))';
  return {
    lock: `SELECT 1 AS locked FROM ${s} WHERE queue = $1 FOR UPDATE`,
    ensureRow: `INSERT INTO ${s} (queue) VALUES ($1) ON CONFLICT (queue) DO NOTHING`,
    claim: `WITH roster AS (
  ${rosterRows(r, t, '$1')} AND $5::int IS NOT NULL),
st AS (
  SELECT (q.paused_at IS NOT NULL OR COALESCE(q.backoff_until > clock_timestamp(), false)) AS held,
         CASE WHEN q.backoff_until > clock_timestamp() THEN (EXTRACT(EPOCH FROM q.backoff_until - clock_timestamp()) * 1000)::float8 END AS backoff_ms,
         CASE WHEN $6::float8 IS NULL THEN NULL
              WHEN q.rate_tokens IS NULL OR q.rate_refilled_at IS NULL THEN $7::float8
              ELSE LEAST($7::float8, q.rate_tokens + ${elapsedS} * $6::float8) END AS tokens,
         (SELECT count(x.live_until) FROM roster AS x)::int AS leased
  FROM ${s} AS q WHERE q.queue = $1),
room AS (
  SELECT st.*, CASE WHEN st.held THEN 0 ELSE GREATEST(0, LEAST($2::int,
    COALESCE($5::int - st.leased, $2::int), COALESCE(floor(st.tokens)::int, $2::int))) END AS n
  FROM st),
claimed AS (
  UPDATE ${t} AS m
  SET attempts = m.attempts + 1, locked_until = clock_timestamp() + $3::bigint ${MS}, lock_id = $4::uuid
  WHERE m.id = ANY(ARRAY(
    ${pgClaimable(names, { queueParam: '$1', n: '(SELECT n FROM room)' })}))
  RETURNING m.id, m.queue, m.payload_json, m.headers_json, m.attempts, m.lock_id, ${CLAIM_TIMES}, m.priority, m.ordering_key),
pruned AS (
  DELETE FROM ${r} AS l USING roster AS x
  WHERE l.queue = $1 AND l.id = x.id AND l.lock_id = x.lock_id AND x.live_until IS NULL
  RETURNING 1),
enrolled AS (
  INSERT INTO ${r} (queue, id, lock_id) SELECT $1, c.id, c.lock_id FROM claimed AS c WHERE $5::int IS NOT NULL
  RETURNING 1),
spent AS (
  UPDATE ${s} SET rate_tokens = (SELECT tokens FROM room) - (SELECT count(*) FROM claimed), rate_refilled_at = clock_timestamp()
  WHERE queue = $1 AND $6::float8 IS NOT NULL
  RETURNING rate_tokens)
SELECT 'job' AS kind, c.id, c.queue, c.payload_json, c.headers_json, c.attempts, c.lock_id, c.created_ms, c.available_ms, c.priority, c.ordering_key,
       NULL::boolean AS held, NULL::float8 AS backoff_ms, NULL::float8 AS tokens_left, NULL::int AS leased, NULL::float8 AS lease_lapses_in_ms
FROM claimed AS c
UNION ALL
SELECT 'state', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, o.held, o.backoff_ms,
       (SELECT rate_tokens FROM spent), o.leased,
       CASE WHEN $5::int IS NOT NULL AND o.leased >= $5::int THEN (
         SELECT (EXTRACT(EPOCH FROM min(x.live_until) - clock_timestamp()) * 1000)::float8 FROM roster AS x) END
FROM room AS o`,
    backOff: `INSERT INTO ${s} AS q (queue, backoff_until, updated_at) VALUES ($1, clock_timestamp() + $2::bigint ${MS}, clock_timestamp())
ON CONFLICT (queue) DO UPDATE SET
  backoff_until = GREATEST(COALESCE(q.backoff_until, EXCLUDED.backoff_until), EXCLUDED.backoff_until),
  updated_at = clock_timestamp()
RETURNING backoff_until`,
  };
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

/**
 * The roster's entries of queue `queueParam`, each with live_until: its row's lease end while the row still holds
 * that lease, NULL once it was settled, handed back, re-claimed or lapsed (a primary-key probe per entry).
 */
export function rosterRows(roster: string, transport: string, queueParam: string): string {
  return `SELECT l.id, l.lock_id, m.locked_until AS live_until FROM ${roster} AS l
  LEFT JOIN ${transport} AS m ON m.id = l.id AND m.lock_id = l.lock_id AND m.locked_until > now()
  WHERE l.queue = ${queueParam}`;
}

/** Migration (version 15) and a store's own schema: the lease roster, keyed as limited claims look it up. */
export function pgLeaseRosterDdl(names: TransportNames): string {
  return `CREATE TABLE IF NOT EXISTS ${qualifiedLeaseRoster(names)} (
    queue text COLLATE "C" NOT NULL,
    id uuid NOT NULL,
    lock_id uuid NOT NULL,
    PRIMARY KEY (queue, id, lock_id))`;
}
