// Ordering keys (issue 17 §1) in T-SQL: the column, its filtered index and the claim's head-of-key test.
// PostgreSQL twins: stores/postgres/ordering-sql.ts.
//
// A keyed row may be claimed only while it is the oldest row (created_at, then id) of its (queue, key) left in the
// table, whatever its state: ready, delayed (a NAK'd head waits out its delay) or leased. Rows leave the table only
// through ack, cancel and the dead-letter move, so the head stays the head until it succeeded or was buried.
//
// Why READPAST cannot skip past a head: the claim's outer scan keeps UPDLOCK, ROWLOCK, READPAST (claimers pass over
// each other's rows), but the NOT EXISTS probe carries no hint. It reads the filtered index (queue, ordering_key,
// created_at, id), which a claim's UPDATE never writes (it changes attempts, locked_until and lock_id only): a leased
// head's index key is unlocked and always found. Only an insert, an ack or a dead-letter move locks that key, and then
// the probe reads the last committed version under READ_COMMITTED_SNAPSHOT (Azure SQL's default; the head is still
// there, so its successors wait) or waits for the lock under locking read committed. A READPAST on the probe would
// skip a head being acked or inserted and let its successor run beside or before it.

import { BIN2 } from './queue-match';

export const ORDERING_KEY_COLUMN = 'ordering_key';
export const ORDERING_INDEX_KEYS = ['queue', ORDERING_KEY_COLUMN, 'created_at', 'id'] as const;
export const ORDERING_INDEX_FILTER = `${ORDERING_KEY_COLUMN} IS NOT NULL`;

/**
 * Version 13 and the store's phase 1: a nullable column, a metadata-only change; BIN2 like the queue column. The
 * qualified name is built from validated identifiers (no quote can occur in it).
 */
export function addOrderingKeyIfMissing(qualifiedTable: string): string[] {
  return [
    `IF COL_LENGTH(N'${qualifiedTable}', N'${ORDERING_KEY_COLUMN}') IS NULL`,
    `    ALTER TABLE ${qualifiedTable} ADD ${ORDERING_KEY_COLUMN} nvarchar(200) COLLATE ${BIN2} NULL;`,
  ];
}

/**
 * The claim's extra predicate on `candidate` (the outer scan's alias) of queue @queue: unkeyed, or no older row of
 * its key. The '.' sentinel makes trailing spaces count (= pads), as the exact queue match does; the plain
 * comparisons come first so the probe seeks the ordering index. In one claim statement two rows of one key cannot
 * both pass: the younger finds the older.
 */
export function headOfKeyLines(qualifiedTable: string, candidate = 'candidate'): string[] {
  const k = ORDERING_KEY_COLUMN;
  return [
    `      AND (${candidate}.${k} IS NULL OR NOT EXISTS (`,
    `          SELECT 1 FROM ${qualifiedTable} AS older`,
    `          WHERE older.queue = @queue AND older.queue + N'.' = @queue + N'.' COLLATE ${BIN2}`,
    `            AND older.${k} IS NOT NULL AND older.${k} = ${candidate}.${k} AND older.${k} + N'.' = ${candidate}.${k} + N'.'`,
    `            AND (older.created_at < ${candidate}.created_at OR (older.created_at = ${candidate}.created_at AND older.id < ${candidate}.id))))`,
  ];
}
