// A queue's waiting jobs in T-SQL, one statement per (state, order): the parts of the ready set (ready-set.ts), each
// read from its own filtered index in the claim's order (or its reverse) up to TOP (@top), then merged: the ready set
// (queue, priority DESC, available_at, seq), the scheduled rows (queue, available_at), the rows queued behind their
// keys' heads (the key order index, then sorted: an operator's read, bounded by its top, not the claim) and, for the
// ready list, the lapsed leases (queue, locked_until), which a claim takes again. The same exact queue match as the
// claim. PostgreSQL twin: stores/postgres/waiting-statements.ts.

import * as sql from 'mssql';
import type { TransportNames } from '../../sql/identifiers';
import type { WaitingOrder, WaitingState } from '../../transport/waiting';
import { exactQueueMatch, qualifiedTable, type Statement } from './statements';
import { LEASED_FILTER, READY_SET_FILTER, SCHEDULED_FILTER, STATE_QUEUED } from './ready-set';

export type WaitingStatements = Record<`${WaitingState}:${WaitingOrder}`, Statement<'queue' | 'top'>>;

const COLUMNS = 'id, payload_json, headers_json, attempts, available_at, created_at, priority, ordering_key, seq';

export function waitingStatements(names: TransportNames): WaitingStatements {
  const t = qualifiedTable(names);
  const match = exactQueueMatch('queue', 'queue');
  const list = (state: WaitingState, order: WaitingOrder): Statement<'queue' | 'top'> => {
    const bound = state === 'ready' ? 'available_at <= SYSUTCDATETIME()' : 'available_at > SYSUTCDATETIME()';
    const dir = order === 'oldest' ? '' : ' DESC';
    const priorityDir = order === 'oldest' ? ' DESC' : '';
    const claimOrder = `priority${priorityDir}, available_at${dir}, seq${dir}`;
    const part = (alias: string, where: string, by = claimOrder) =>
      `    SELECT * FROM (SELECT TOP (@top) ${COLUMNS} FROM ${t} WHERE ${match} AND ${where} ORDER BY ${by}) AS ${alias}`;
    const parts = [
      part('r', `${READY_SET_FILTER} AND ${bound}`),
      part('s', `${SCHEDULED_FILTER} AND ${bound}`, `available_at${dir}`),
      part('k', `ordering_key IS NOT NULL AND state = ${STATE_QUEUED} AND ${bound}`),
      // a lapsed lease waits to be claimed again (ready); a delayed row is never leased
      ...(state === 'ready' ? [part('l', `${LEASED_FILTER} AND locked_until <= SYSUTCDATETIME()`, `locked_until${dir}`)] : []),
    ];
    return {
      text: [`SELECT TOP (@top) ${COLUMNS} FROM (`, parts.join('\n    UNION ALL\n'), ') AS w', `ORDER BY ${claimOrder};`].join('\n'),
      params: { queue: sql.NVarChar(200), top: sql.Int() },
    };
  };
  return {
    'ready:oldest': list('ready', 'oldest'),
    'ready:newest': list('ready', 'newest'),
    'delayed:oldest': list('delayed', 'oldest'),
    'delayed:newest': list('delayed', 'newest'),
  };
}
