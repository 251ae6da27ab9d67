// The claim-outlook probe (queue mode: after a drain, and when an instance starts): is a row of exactly the queue
// claimable now, and if none is, when does its earliest lease lapse? The SQL Server twin is
// stores/sqlserver/outlook-statements.ts.
//
// Both halves seek the ready index (queue, available_at, …): a leased row keeps the available_at it was claimed
// with (≤ now), so `available_at <= now()` bounds the lease scan too. The lease half runs only when nothing is due
// (a CASE evaluates its subquery lazily), and then every row it reads is leased: a handful per instance, however
// long the queue's backlog of delayed rows is.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { queueStateTableName } from '../queue-state-names';
import { pgJobControlStatements } from './job-control-statements';

const UNLEASED = '(locked_until IS NULL OR locked_until <= now())';

export function pgClaimOutlookStatement(names: TransportNames): string {
  const t = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(names.table, 'postgres')}`;
  // a paused queue is never due (its drain would claim nothing, and announce again: a loop)
  const paused = pgJobControlStatements(names, queueStateTableName(names, 'postgres')).pausedTest;
  return `SELECT d.due, CASE WHEN d.due THEN NULL ELSE (
    SELECT (EXTRACT(EPOCH FROM min(locked_until) - clock_timestamp()) * 1000)::float8 FROM ${t}
    WHERE queue = $1 AND available_at <= now() AND locked_until > now()) END AS lease_lapses_in_ms
FROM (SELECT NOT ${paused} AND EXISTS (SELECT 1 FROM ${t} WHERE queue = $1 AND available_at <= now() AND ${UNLEASED}) AS due) AS d`;
}
