// The claim-outlook probe (queue mode: after a drain, and when an instance starts): is a row of exactly the queue
// claimable now, and if none is, when does its earliest lease lapse (and when does a forward backoff end)? The SQL
// Server twin is stores/sqlserver/outlook-statements.ts.
//
// Both halves seek the claim index (queue, (ordering_key IS NULL), priority DESC, available_at, created_at) on the queue: a leased row keeps
// the available_at it was claimed with (≤ now), so `available_at <= now()` selects the leased rows too. Since
// priorities (PostgreSQL version 12) that bound is an index condition per priority rather than the end of a range: the
// scan passes over the index entries of the queue's delayed rows (no heap reads for them). The lease half runs only
// when nothing is due (a CASE evaluates its subquery lazily).
// A keyed row counts as due only as the head of its key (ordering-sql.ts pgClaimableExists), as the claim takes it:
// rows held behind a running or delayed head would make a drain that claims nothing, and then announce again (a loop).

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { queueStateTableName } from '../queue-state-names';
import { pgJobControlStatements } from './job-control-statements';
import { pgClaimableExists } from './ordering-sql';
import { qualifiedLeaseRoster, rosterRows } from './limit-statements';


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
  return `SELECT d.due, CASE WHEN d.due THEN NULL ELSE (
    SELECT (EXTRACT(EPOCH FROM min(locked_until) - clock_timestamp()) * 1000)::float8 FROM ${t}
    WHERE queue = $1 AND available_at <= now() AND locked_until > now()) END AS lease_lapses_in_ms,
  CASE WHEN d.due THEN NULL ELSE (${backoffMs(s)}) END AS resumes_in_ms
FROM (SELECT NOT ${paused} AND ${pgClaimableExists(names, '$1')} AS due) AS d`;
}

/**
 * A limited queue's outlook ($1 queue, $2 concurrency limit or NULL, $3 rate or NULL, $4 bucket size): the facts
 * limitedOutlookOf (stores/limited-claim.ts) weighs — ready rows, pause, backoff, live leases of the lease roster
 * (as the limited claim counts them), the bucket's tokens now (read only: NULL = a full bucket), and when nothing
 * can be claimed now, the earliest lease lapse: of the roster's leases when the limit is reached, else of any leased
 * row of the queue (a lapse makes that row claimable again).
 */
export function pgLimitedOutlookStatement(names: TransportNames): string {
  const { t, s } = tables(names);
  const roster = `(${rosterRows(qualifiedLeaseRoster(names), t, '$1')} AND $2::int IS NOT NULL)`;
  return `SELECT f.*, CASE
    WHEN $2::int IS NOT NULL AND f.leased >= $2::int THEN (SELECT (EXTRACT(EPOCH FROM min(x.live_until) - clock_timestamp()) * 1000)::float8 FROM ${roster} AS x)
    WHEN NOT f.ready THEN (SELECT (EXTRACT(EPOCH FROM min(locked_until) - clock_timestamp()) * 1000)::float8 FROM ${t}
      WHERE queue = $1 AND available_at <= now() AND locked_until > now()) END AS lease_lapses_in_ms
FROM (SELECT ${pgClaimableExists(names, '$1')} AS ready,
  COALESCE((SELECT paused_at IS NOT NULL FROM ${s} WHERE queue = $1), false) AS paused,
  (${backoffMs(s)}) AS backoff_ms,
  CASE WHEN $3::float8 IS NULL THEN NULL ELSE (
    SELECT LEAST($4::float8, rate_tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - rate_refilled_at)) * $3::float8)
    FROM ${s} WHERE queue = $1) END AS tokens,
  (SELECT count(x.live_until) FROM ${roster} AS x)::int AS leased) AS f`;
}
