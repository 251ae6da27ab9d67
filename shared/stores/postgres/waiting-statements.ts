// A queue's waiting jobs, one statement per (state, order): the parts of the ready set (ready-set.ts), each read
// from its own partial index in the claim's order (or its reverse) up to LIMIT, then merged. Rows queued behind
// their keys' heads are read through the key queue index and sorted (the listing is an operator's read, bounded
// by its top, not the claim). Every value is a parameter; now() is the database clock. The SQL Server twin is
// stores/sqlserver/waiting-statements.ts.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import type { WaitingOrder, WaitingState } from '../../transport/waiting';
import { READY_SET_FILTER, STATE_QUEUED, STATE_SCHEDULED } from './ready-set';

export type PgWaitingStatements = Record<`${WaitingState}:${WaitingOrder}`, string>;

const COLUMNS = 'id, payload_json, headers_json, attempts, available_at, created_at, priority, ordering_key, seq';

export function pgWaitingStatements(names: TransportNames): PgWaitingStatements {
  const t = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(names.table, 'postgres')}`;
  const list = (state: WaitingState, order: WaitingOrder) => {
    const bound = state === 'ready' ? 'available_at <= now()' : 'available_at > now()';
    const dir = order === 'oldest' ? '' : ' DESC';
    const priorityDir = order === 'oldest' ? ' DESC' : '';
    const claimOrder = `priority${priorityDir}, available_at${dir}, seq${dir}`;
    const part = (where: string, by = claimOrder) => `(SELECT ${COLUMNS} FROM ${t} WHERE queue = $1 AND ${where} ORDER BY ${by} LIMIT $2)`;
    const parts = [
      part(`${READY_SET_FILTER} AND ${bound}`),
      part(`state = ${STATE_SCHEDULED} AND ${bound}`, `available_at${dir}`),
      part(`ordering_key IS NOT NULL AND state = ${STATE_QUEUED} AND ${bound}`),
      // a lapsed lease waits to be claimed again (ready); a delayed row is never leased
      ...(state === 'ready' ? [part('lock_id IS NOT NULL AND locked_until <= now()', `locked_until${dir}`)] : []),
    ];
    return `SELECT ${COLUMNS} FROM (${parts.join('\n  UNION ALL ')}) AS w
ORDER BY ${claimOrder}
LIMIT $2`;
  };
  return {
    'ready:oldest': list('ready', 'oldest'),
    'ready:newest': list('ready', 'newest'),
    'delayed:oldest': list('delayed', 'oldest'),
    'delayed:newest': list('delayed', 'newest'),
  };
}
