// The claim-outlook probe in T-SQL (queue mode: after a drain, and when an instance starts): is a row of exactly
// @queue claimable now, and if none is, when does its earliest lease lapse (ms on the database clock)?
// PostgreSQL twin: stores/postgres/outlook-statements.ts (one SELECT with a lazily evaluated CASE).
//
// "Claimable" reads the claim's own ranges (ready-set.ts claimableExists): one seek of each filtered index (the
// ready set, the scheduled rows up to now, the lapsed leases) and of the vacant keys, whatever else the queue
// holds, so delayed rows, rows behind a running head and other queues' rows cost nothing (review H1). The lease half runs
// only when nothing is due (IF … ELSE) and reads the leased index's first live entry. The same exact queue match as
// the claim, so a row the probe calls due is one the claim can take; a vacant key counts (its claim promotes the
// successor, or schedules it when it is not due: then the next outlook waits for it).

import * as sql from 'mssql';
import type { TransportNames } from '../../sql/identifiers';
import type { ClaimOutlook } from '../../transport/types';
import { exactQueueMatch, type Statement } from './statements';
import { pausedTest, qualifiedQueueStateTable } from './job-control-statements';
import { claimableExists, leaseLapsesInMs } from './ready-set';

export function claimOutlook(names: TransportNames): Statement<'queue'> {
  return {
    text: [
      // a paused (or backed-off) queue is never due (its drain would claim nothing, and announce again: a loop)
      `IF NOT ${pausedTest(names)} AND ${claimableExists(names)}`,
      '    SELECT CAST(1 AS bit) AS due, CAST(NULL AS bigint) AS lease_lapses_in_ms;',
      'ELSE',
      `    SELECT CAST(0 AS bit) AS due, ${leaseLapsesInMs(names)} AS lease_lapses_in_ms,`,
      // a forward target's backoff (429/503 Retry-After): the drain request goes out when it ends
      `        (SELECT DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), backoff_until) FROM ${qualifiedQueueStateTable(names)} WHERE ${exactQueueMatch('queue', 'queue')} AND backoff_until > SYSUTCDATETIME()) AS resumes_in_ms;`,
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
