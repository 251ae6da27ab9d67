// The PostgreSQL statements of queue limits (issue 17 §2): the limited claim and the backoff a forward target asks
// for. The SQL Server twins live in stores/sqlserver/limit-statements.ts; the arithmetic is transport/limits.ts's.
//
// A limited claim is one short transaction: `lock` takes the queue's queue-state row FOR UPDATE as a statement of
// its own (in READ COMMITTED a statement's snapshot is taken when it starts, so counting leased rows in the
// statement that waited for the lock would miss what the previous holder committed meanwhile), then `claim` runs on
// a fresh snapshot: it counts the queue's leased rows (claimed rows count as running), refills the token bucket on
// the database clock, claims at most the room, and spends the tokens — one statement. Claimers of one limited queue
// therefore run one after another; other queues and unlimited queues never touch that row lock.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { queueStateTableName } from '../queue-state-names';
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
  // The leased rows of the queue: the ready index's entries of the queue with available_at ≤ now, as claimOutlook
  // reads them (a leased row keeps the available_at it was claimed with). LIMIT stops the count once the limit is reached.
  const leased = `SELECT 1 FROM ${t} WHERE queue = $1 AND available_at <= now() AND locked_until > now() LIMIT $5::int`;
  const elapsedS = 'GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - q.rate_refilled_at))';
  return {
    lock: `SELECT 1 AS locked FROM ${s} WHERE queue = $1 FOR UPDATE`,
    ensureRow: `INSERT INTO ${s} (queue) VALUES ($1) ON CONFLICT (queue) DO NOTHING`,
    claim: `WITH st AS (
  SELECT (q.paused_at IS NOT NULL OR COALESCE(q.backoff_until > clock_timestamp(), false)) AS held,
         CASE WHEN q.backoff_until > clock_timestamp() THEN (EXTRACT(EPOCH FROM q.backoff_until - clock_timestamp()) * 1000)::float8 END AS backoff_ms,
         CASE WHEN $6::float8 IS NULL THEN NULL
              WHEN q.rate_tokens IS NULL OR q.rate_refilled_at IS NULL THEN $7::float8
              ELSE LEAST($7::float8, q.rate_tokens + ${elapsedS} * $6::float8) END AS tokens,
         CASE WHEN $5::int IS NULL THEN 0 ELSE (SELECT count(*) FROM (${leased}) AS l) END::int AS leased
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
  RETURNING m.id, m.queue, m.payload_json, m.headers_json, m.attempts, m.lock_id, ${CLAIM_TIMES}, m.priority),
spent AS (
  UPDATE ${s} SET rate_tokens = (SELECT tokens FROM room) - (SELECT count(*) FROM claimed), rate_refilled_at = clock_timestamp()
  WHERE queue = $1 AND $6::float8 IS NOT NULL
  RETURNING rate_tokens)
SELECT 'job' AS kind, c.id, c.queue, c.payload_json, c.headers_json, c.attempts, c.lock_id, c.created_ms, c.available_ms, c.priority,
       NULL::boolean AS held, NULL::float8 AS backoff_ms, NULL::float8 AS tokens_left, NULL::int AS leased, NULL::float8 AS lease_lapses_in_ms
FROM claimed AS c
UNION ALL
SELECT 'state', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, r.held, r.backoff_ms,
       (SELECT rate_tokens FROM spent), r.leased,
       CASE WHEN $5::int IS NOT NULL AND r.leased >= $5::int THEN (
         SELECT (EXTRACT(EPOCH FROM min(locked_until) - clock_timestamp()) * 1000)::float8 FROM ${t}
         WHERE queue = $1 AND available_at <= now() AND locked_until > now()) END
FROM room AS r`,
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
