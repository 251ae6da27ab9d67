// A queue's waiting jobs in T-SQL, one statement per (state, order): the ORDER BY direction and the available_at
// bound are text so each seeks the ready index (queue, priority DESC, available_at, created_at) forwards or
// backwards (the claim's order, or its reverse) and stops at TOP (@top). The same exact queue match as the claim. PostgreSQL twin: stores/postgres/waiting-statements.ts.

import * as sql from 'mssql';
import type { TransportNames } from '../../sql/identifiers';
import type { WaitingOrder, WaitingState } from '../../transport/waiting';
import { exactQueueMatch, qualifiedTable, type Statement } from './statements';

export type WaitingStatements = Record<`${WaitingState}:${WaitingOrder}`, Statement<'queue' | 'top'>>;

export function waitingStatements(names: TransportNames): WaitingStatements {
  const t = qualifiedTable(names);
  const list = (state: WaitingState, order: WaitingOrder): Statement<'queue' | 'top'> => {
    const bound = state === 'ready' ? 'available_at <= SYSUTCDATETIME()' : 'available_at > SYSUTCDATETIME()';
    const dir = order === 'oldest' ? '' : ' DESC';
    const priorityDir = order === 'oldest' ? ' DESC' : '';
    return {
      text: [
        'SELECT TOP (@top) id, payload_json, headers_json, attempts, available_at, created_at, priority, ordering_key',
        `FROM ${t}`,
        `WHERE ${exactQueueMatch('queue', 'queue')} AND ${bound}`,
        '  AND (locked_until IS NULL OR locked_until <= SYSUTCDATETIME())',
        `ORDER BY priority${priorityDir}, available_at${dir}, created_at${dir};`,
      ].join('\n'),
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
