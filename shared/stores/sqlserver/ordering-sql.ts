// Ordering keys (issue 17 §1) in T-SQL: the column and version 16's filtered index. How a claim keeps one job of a
// key at a time is ready-set.ts's (the keys table, the head and queued states, the key order index): the head-of-key
// probe of before the ready set is gone (review M1, H2). PostgreSQL twins: stores/postgres/ordering-sql.ts.

import { BIN2 } from './queue-match';

export const ORDERING_KEY_COLUMN = 'ordering_key';
/** Version 16's index, superseded by the key order index (ready-set.ts) and dropped by version 27. */
export const ORDERING_INDEX_KEYS = ['queue', ORDERING_KEY_COLUMN, 'created_at', 'id'] as const;
export const ORDERING_INDEX_FILTER = `${ORDERING_KEY_COLUMN} IS NOT NULL`;

/**
 * Version 15 and the store's phase 1: a nullable column, a metadata-only change; BIN2 like the queue column. The
 * qualified name is built from validated identifiers (no quote can occur in it).
 */
export function addOrderingKeyIfMissing(qualifiedTable: string): string[] {
  return [
    `IF COL_LENGTH(N'${qualifiedTable}', N'${ORDERING_KEY_COLUMN}') IS NULL`,
    `    ALTER TABLE ${qualifiedTable} ADD ${ORDERING_KEY_COLUMN} nvarchar(200) COLLATE ${BIN2} NULL;`,
  ];
}
