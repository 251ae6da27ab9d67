// A queue's waiting jobs, one statement per (state, order): the ORDER BY direction and the available_at bound
// are text so each reads the ready index (queue, priority DESC, available_at, created_at) forwards or backwards
// (the claim's order, or its reverse) and stops at LIMIT. Every value is a parameter; now() is the database clock. The SQL Server twin is
// stores/sqlserver/waiting-statements.ts.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import type { WaitingOrder, WaitingState } from '../../transport/waiting';

const UNLEASED = '(locked_until IS NULL OR locked_until <= now())';

export type PgWaitingStatements = Record<`${WaitingState}:${WaitingOrder}`, string>;

export function pgWaitingStatements(names: TransportNames): PgWaitingStatements {
  const t = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(names.table, 'postgres')}`;
  const list = (state: WaitingState, order: WaitingOrder) => {
    const bound = state === 'ready' ? 'available_at <= now()' : 'available_at > now()';
    const dir = order === 'oldest' ? '' : ' DESC';
    const priorityDir = order === 'oldest' ? ' DESC' : '';
    return `SELECT id, payload_json, headers_json, attempts, available_at, created_at, priority, ordering_key FROM ${t}
WHERE queue = $1 AND ${bound} AND ${UNLEASED}
ORDER BY priority${priorityDir}, available_at${dir}, created_at${dir}
LIMIT $2`;
  };
  return {
    'ready:oldest': list('ready', 'oldest'),
    'ready:newest': list('ready', 'newest'),
    'delayed:oldest': list('delayed', 'oldest'),
    'delayed:newest': list('delayed', 'newest'),
  };
}
