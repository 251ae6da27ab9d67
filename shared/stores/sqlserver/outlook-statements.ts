// The claim-outlook probe in T-SQL (queue mode: after a drain, and when an instance starts): is a row of exactly
// @queue claimable now, and if none is, when does its earliest lease lapse (ms on the database clock)?
// PostgreSQL twin: stores/postgres/outlook-statements.ts (one SELECT with a lazily evaluated CASE).
//
// Both halves seek the ready index (queue, priority DESC, available_at, created_at) on @queue: a leased row keeps the
// available_at it was claimed with (≤ now), so `available_at <= SYSUTCDATETIME()` selects the leased rows too. Since
// priorities (schema version 14) that bound is a residual predicate on the index rather than the end of a range: the
// seek passes over the index entries of the queue's delayed rows (no lookups for them). The lease half runs only
// when nothing is due (IF … ELSE). The same exact queue match as the claim, so a row the probe calls due is
// one the claim can take.
// A keyed row counts as due only as the head of its key (ordering-sql.ts): rows held behind a running or delayed
// head would make a drain that claims nothing, and then announce again (a loop).

import * as sql from 'mssql';
import type { TransportNames } from '../../sql/identifiers';
import type { ClaimOutlook } from '../../transport/types';
import { exactQueueMatch, qualifiedTable, type Statement } from './statements';
import { pausedTest, qualifiedQueueStateTable } from './job-control-statements';
import { headOfKeyLines } from './ordering-sql';

export function claimOutlook(names: TransportNames): Statement<'queue'> {
  const t = qualifiedTable(names);
  const where = `WHERE ${exactQueueMatch('queue', 'queue')} AND available_at <= SYSUTCDATETIME()`;
  return {
    text: [
      // a paused (or backed-off) queue is never due (its drain would claim nothing, and announce again: a loop)
      `IF NOT ${pausedTest(names)} AND EXISTS (SELECT 1 FROM ${t} AS candidate ${where} AND (locked_until IS NULL OR locked_until <= SYSUTCDATETIME())`,
      ...headOfKeyLines(t),
      '    )',
      '    SELECT CAST(1 AS bit) AS due, CAST(NULL AS bigint) AS lease_lapses_in_ms;',
      'ELSE',
      '    SELECT CAST(0 AS bit) AS due, DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), MIN(locked_until)) AS lease_lapses_in_ms,',
      // a forward target's backoff (429/503 Retry-After): the drain request goes out when it ends
      `        (SELECT DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), backoff_until) FROM ${qualifiedQueueStateTable(names)} WHERE ${exactQueueMatch('queue', 'queue')} AND backoff_until > SYSUTCDATETIME()) AS resumes_in_ms`,
      `    FROM ${t} ${where} AND locked_until > SYSUTCDATETIME();`,
    ].join('\n'),
    params: { queue: sql.NVarChar(200) },
  };
}

/** The probe's one row as the port's answer (bit comes back as boolean, bigint as a string or number). */
export function claimOutlookOf(row: Record<string, unknown> | undefined): ClaimOutlook {
  const due = row?.due === true || row?.due === 1;
  const ms = row?.lease_lapses_in_ms;
  const resumes = row?.resumes_in_ms;
  const outlook: ClaimOutlook = { due, leaseLapsesInMs: due || ms === null || ms === undefined ? null : Number(ms) };
  if (!due && resumes !== null && resumes !== undefined) outlook.resumesInMs = Math.max(0, Number(resumes));
  return outlook;
}
