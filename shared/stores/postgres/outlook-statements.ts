// The claim-outlook probe (queue mode: after a drain, and when an instance starts): is a row of exactly the queue
// claimable now, and if none is, when does its earliest lease lapse (and when does a forward backoff end)? The SQL
// Server twin is stores/sqlserver/outlook-statements.ts.
//
// "Claimable" reads the claim's own ranges (ready-set.ts pgClaimableExists): one index descent each, whatever else
// the queue holds; the lease half reads the leased index's first entry, and runs only when nothing is due.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { queueStateTableName } from '../queue-state-names';
import { pgJobControlStatements } from './job-control-statements';
import { pgClaimableExists, pgLeaseLapsesInMs } from './ready-set';
import { liveLeases } from './limit-statements';


const tables = (names: TransportNames) => ({
  t: `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(names.table, 'postgres')}`,
  s: `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(queueStateTableName(names, 'postgres'), 'postgres')}`,
});

/** Milliseconds until the queue's backoff ends (NULL: none). */
const backoffMs = (s: string) =>
  `SELECT (EXTRACT(EPOCH FROM backoff_until - clock_timestamp()) * 1000)::float8 FROM ${s} WHERE queue = $1 AND backoff_until > clock_timestamp()`;

export function pgClaimOutlookStatement(names: TransportNames): string {
  const { t, s } = tables(names);
  // a paused (or backed-off) queue is never due (its drain would claim nothing, and announce again: a loop)
  const paused = pgJobControlStatements(names, queueStateTableName(names, 'postgres')).pausedTest;
  return `SELECT d.due, CASE WHEN d.due THEN NULL ELSE ${pgLeaseLapsesInMs(names, '$1')} END AS lease_lapses_in_ms,
  CASE WHEN d.due THEN NULL ELSE (${backoffMs(s)}) END AS resumes_in_ms
FROM (SELECT NOT ${paused} AND ${pgClaimableExists(names, '$1')} AS due) AS d`;
}

/**
 * A limited queue's outlook ($1 queue, $2 concurrency limit or NULL, $3 rate or NULL, $4 bucket size): the facts
 * limitedOutlookOf (stores/limited-claim.ts) weighs — ready rows, pause, backoff, live leases (as the limited claim counts them), the bucket's tokens now (read only: NULL = a full bucket), and when nothing
 * can be claimed now, the earliest lease lapse: of the roster's leases when the limit is reached, else of any leased
 * row of the queue (a lapse makes that row claimable again).
 */
export function pgLimitedOutlookStatement(names: TransportNames): string {
  const { t, s } = tables(names);
  const leases = `(${liveLeases(t, '$1')} AND $2::int IS NOT NULL)`;
  return `SELECT f.*, CASE
    WHEN $2::int IS NOT NULL AND f.leased >= $2::int THEN (SELECT (EXTRACT(EPOCH FROM min(x.locked_until) - clock_timestamp()) * 1000)::float8 FROM ${leases} AS x)
    WHEN NOT f.ready THEN ${pgLeaseLapsesInMs(names, '$1')} END AS lease_lapses_in_ms
FROM (SELECT ${pgClaimableExists(names, '$1')} AS ready,
  COALESCE((SELECT paused_at IS NOT NULL FROM ${s} WHERE queue = $1), false) AS paused,
  (${backoffMs(s)}) AS backoff_ms,
  CASE WHEN $3::float8 IS NULL THEN NULL ELSE (
    SELECT LEAST($4::float8, rate_tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - rate_refilled_at)) * $3::float8)
    FROM ${s} WHERE queue = $1) END AS tokens,
  (SELECT count(*) FROM ${leases} AS x)::int AS leased) AS f`;
}
