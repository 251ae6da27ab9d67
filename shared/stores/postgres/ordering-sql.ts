// Ordering keys (issue 17 §1) in PostgreSQL: the column and version 13's partial index. How a claim keeps one job
// of a key at a time is ready-set.ts's (keys table, head and queued states); SQL Server twins: stores/sqlserver/ordering-sql.ts.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';

export const ORDERING_KEY_COLUMN = 'ordering_key';

const q = (n: string) => quoteIdentifier(n, 'postgres');

/** Migration 11 (and the store's own schema step): a nullable column, a catalog-only change (no rewrite). */
export function pgOrderingColumnDdl(names: TransportNames): string {
  return `ALTER TABLE ${q(names.schema)}.${q(names.table)} ADD COLUMN IF NOT EXISTS ${ORDERING_KEY_COLUMN} text NULL`;
}

/** Version 13's index, superseded by the key order index (ready-set.ts) and dropped by version 19. */
export function pgOrderingIndexDdl(names: TransportNames): string {
  return `CREATE INDEX IF NOT EXISTS ${q(names.orderingIndex)} ON ${q(names.schema)}.${q(names.table)} (queue, ${ORDERING_KEY_COLUMN}, created_at, id) WHERE ${ORDERING_KEY_COLUMN} IS NOT NULL`;
}
