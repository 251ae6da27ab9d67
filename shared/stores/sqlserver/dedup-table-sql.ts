// The dedup table's name and columns (issue 16 §3), in a module of their own so that statements.ts (phase 1) and
// dedup-statements.ts both import them and not each other.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { dedupTableName } from '../queue-state-names';
import { BIN2 } from './queue-match';

export function qualifiedDedupTable(names: TransportNames): string {
  return `${quoteIdentifier(names.schema, 'sqlserver')}.${quoteIdentifier(dedupTableName(names, 'sqlserver'), 'sqlserver')}`;
}

/** The dedup table's columns (schema version 10 and the store's phase 1); the key is 800 bytes at most. */
export function dedupTableBody(): string {
  return [
    `    queue nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
    `    dedup_key nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
    '    job_id uniqueidentifier NOT NULL,',
    '    window_ends_at datetime2 NOT NULL,',
    '    PRIMARY KEY (queue, dedup_key)',
  ].join('\n');
}

