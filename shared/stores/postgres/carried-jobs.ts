// Jobs a flow-state write carries (flows/jobs.ts CarriedJob): inserted by the write's own statement, so a run's
// start and its start job, or an awaited step's breadcrumb and its request, commit together in one round trip.
// The rows are the publish statement's plain rows (statements.ts ins_plain: no ordering key, no dedup key, which the
// engine never carries) and NOTIFY the same way, but for queues a drain of the writing process waits on (`quiet`: it
// is woken in process); they are inserted only when the write took (`gate`, a CTE that has a row then), and an id
// already present is left alone (ON CONFLICT DO NOTHING), as a publish does.

import type { TransportNames } from '../../sql/identifiers';
import type { CarriedJob } from '../../flows/jobs';
import { TRANSPORT_NOTIFY_CHANNEL } from './notify-channel';
import { notifyPrefix, pgInsertPlainRows } from './statements';
import { pgTables } from './ready-set';

/** How many parameters the carried jobs take, from `first`. */
export const CARRIED_JOB_PARAMS = 8;

/**
 * Two CTEs, `jobs` (the inserted rows) and `jobs_woken` (their NOTIFYs), to follow the gate's CTE. The statement's
 * final SELECT must read `jobs_woken` (count it): a plain SELECT CTE nobody reads is not run.
 */
export function pgCarriedJobsCtes(names: TransportNames, gate: string, first: number): string {
  const { t } = pgTables(names);
  const p = (i: number) => `$${first + i}`;
  const source = `unnest(${p(0)}::uuid[], ${p(1)}::text[], ${p(2)}::text[], ${p(3)}::text[], ${p(4)}::bigint[], ${p(5)}::smallint[]) WITH ORDINALITY AS s(id, queue, payload_json, headers_json, delay_ms, priority, ord)`;
  return `jobs AS (
${pgInsertPlainRows(t, `${source} WHERE EXISTS (SELECT 1 FROM ${gate})`, 'id, queue, state IS NULL AS due')}),
jobs_woken AS (SELECT pg_notify('${TRANSPORT_NOTIFY_CHANNEL}', ${p(6)} || q.queue) FROM (SELECT DISTINCT queue FROM jobs WHERE due AND queue <> ALL(${p(7)}::text[])) AS q)`;
}

/** The carried jobs' parameters, in CARRIED_JOB_PARAMS order. */
export function carriedJobValues(names: TransportNames, jobs: readonly CarriedJob[]): unknown[] {
  return [
    jobs.map((j) => j.id),
    jobs.map((j) => j.queue),
    jobs.map((j) => j.payloadJson),
    jobs.map((j) => j.headersJson),
    jobs.map((j) => Math.max(0, Math.round(j.delayMs))),
    jobs.map((j) => j.priority),
    notifyPrefix(names),
    // a queue NOTIFYs when any of its jobs here is not quiet
    [...new Set(jobs.filter((j) => j.quiet === true).map((j) => j.queue))].filter((q) => !jobs.some((j) => j.queue === q && j.quiet !== true)),
  ];
}
