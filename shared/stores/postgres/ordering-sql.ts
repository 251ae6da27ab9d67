// Ordering keys (issue 17 §1) in PostgreSQL: the column, its partial index and the claim's head-of-key test.
// SQL Server twins: stores/sqlserver/ordering-sql.ts.
//
// A keyed row may be claimed only while it is the oldest row (by created_at, then id) of its (queue, key) left in
// the table, whatever its state: ready, delayed (a NAK'd head waits out its delay) or leased. Rows leave the table
// only through ack, cancel and the dead-letter move, so the head stays the head until it succeeded or was buried.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';

export const ORDERING_KEY_COLUMN = 'ordering_key';

const q = (n: string) => quoteIdentifier(n, 'postgres');

/** Migration 11 (and the store's own schema step): a nullable column, a catalog-only change (no rewrite). */
export function pgOrderingColumnDdl(names: TransportNames): string {
  return `ALTER TABLE ${q(names.schema)}.${q(names.table)} ADD COLUMN IF NOT EXISTS ${ORDERING_KEY_COLUMN} text NULL`;
}

/** Keyed rows only, so unkeyed queues pay nothing on insert; the probe below is one descent of it. */
export function pgOrderingIndexDdl(names: TransportNames): string {
  return `CREATE INDEX IF NOT EXISTS ${q(names.orderingIndex)} ON ${q(names.schema)}.${q(names.table)} (queue, ${ORDERING_KEY_COLUMN}, created_at, id) WHERE ${ORDERING_KEY_COLUMN} IS NOT NULL`;
}

/**
 * The claim's extra predicate on the candidate row `c` of queue `queueParam`: unkeyed, or no older row of its key.
 * The older row is looked up without SKIP LOCKED (a subquery is never locked): a row another claim holds still
 * counts. In one claim statement two rows of one key cannot both pass (the younger sees the older).
 */
export function pgHeadOfKey(names: TransportNames, c: string, queueParam: string): string {
  const t = `${q(names.schema)}.${q(names.table)}`;
  return `(${c}.${ORDERING_KEY_COLUMN} IS NULL OR NOT EXISTS (
    SELECT 1 FROM ${t} AS older
    WHERE older.queue = ${queueParam} AND older.${ORDERING_KEY_COLUMN} IS NOT NULL AND older.${ORDERING_KEY_COLUMN} = ${c}.${ORDERING_KEY_COLUMN}
      AND (older.created_at, older.id) < (${c}.created_at, ${c}.id)))`;
}
