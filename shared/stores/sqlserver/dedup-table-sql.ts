// The dedup table's name and columns (issue 16 §3), in a module of their own so that statements.ts (phase 1) and
// dedup-statements.ts both import them and not each other.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { dedupTableName } from '../queue-state-names';
import { BIN2 } from './queue-match';

export function qualifiedDedupTable(names: TransportNames): string {
  return `${quoteIdentifier(names.schema, 'sqlserver')}.${quoteIdentifier(dedupTableName(names, 'sqlserver'), 'sqlserver')}`;
}

/**
 * The dedup table's columns (schema version 10 and the store's phase 1); the key is 802 bytes at most. dedup_key
 * holds the key with '.' appended (storedDedupKey): SQL Server's comparisons, a unique key's too, ignore trailing
 * spaces under every collation, so 'a' and 'a ' would be one key; terminated, they are two.
 */
export function dedupTableBody(): string {
  return [
    `    queue nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
    `    dedup_key nvarchar(201) COLLATE ${BIN2} NOT NULL,`,
    '    job_id uniqueidentifier NOT NULL,',
    '    window_ends_at datetime2 NOT NULL,',
    '    PRIMARY KEY (queue, dedup_key)',
  ].join('\n');
}


/** What dedup_key stores for a key (see dedupTableBody). */
export const storedDedupKey = (key: string): string => `${key}.`;
