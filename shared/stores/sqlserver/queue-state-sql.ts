// The queue-state fragments the claim, the renewal and the migrations share with job control (issue 16 §4): the
// queue-state table's name and columns, the claim's pause test and the renewal's cancel-marker test. A module of
// its own so that statements.ts and job-control-statements.ts both import it and not each other.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { CANCEL_MARK_PREFIX } from '../../transport/job-control';
import { leaseRosterTableName, queueStateTableName } from '../queue-state-names';
import { BIN2, exactQueueMatch } from './queue-match';

export function qualifiedQueueStateTable(names: TransportNames): string {
  return `${quoteIdentifier(names.schema, 'sqlserver')}.${quoteIdentifier(queueStateTableName(names, 'sqlserver'), 'sqlserver')}`;
}

/**
 * The claim's (and the outlook's) pause test: uncorrelated (@queue only), a startup filter over the ready seek. A
 * queue a forward target asked to back off (429/503 Retry-After, limit-statements.ts) is held like a paused one.
 */
export function pausedTest(names: TransportNames, param = 'queue'): string {
  return `EXISTS (SELECT 1 FROM ${qualifiedQueueStateTable(names)} AS paused WHERE ${exactQueueMatch('paused.queue', param)} AND (paused.paused_at IS NOT NULL OR paused.backoff_until > SYSUTCDATETIME()))`;
}

/** The renewal's answer: the row is marked (its headers_json starts with the marker). */
export const cancelRequestedTest = (column = 'headers_json') => `${column} LIKE N'${CANCEL_MARK_PREFIX}%'`;

/** The queue-state table's columns (schema version 9 and the store's phase 1). */
export function queueStateTableBody(): string {
  return [
    `    queue nvarchar(200) COLLATE ${BIN2} NOT NULL PRIMARY KEY,`,
    '    paused_at datetime2 NULL,',
    '    updated_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME()',
  ].join('\n');
}


/**
 * The limit and backoff columns (issue 17 §2), each behind its guard: version 12 and the store's phase 1.
 * The qualified name is built from validated identifiers (no quote can occur in it). PostgreSQL: ADD COLUMN IF NOT EXISTS.
 */
export function addLimitColumnsIfMissing(qualifiedStateTable: string): string[] {
  return (
    [
      ['backoff_until', 'datetime2 NULL'],
      ['rate_tokens', 'float NULL'],
      ['rate_refilled_at', 'datetime2 NULL'],
    ] as const
  ).flatMap(([column, type]) => [
    `IF COL_LENGTH(N'${qualifiedStateTable}', N'${column}') IS NULL`,
    `    ALTER TABLE ${qualifiedStateTable} ADD ${column} ${type};`,
  ]);
}

/** The lease roster of limited claims (limit-statements.ts), `{table}_leases`: schema version 17 and the store's phase 1. */
export function qualifiedLeaseRoster(names: TransportNames): string {
  return `${quoteIdentifier(names.schema, 'sqlserver')}.${quoteIdentifier(leaseRosterTableName(names, 'sqlserver'), 'sqlserver')}`;
}

/** One row per lease a limited claim handed out, keyed as the claims look it up (queue first, compared byte-wise). */
export function leaseRosterTableBody(): string {
  return [
    `    queue nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
    '    id uniqueidentifier NOT NULL,',
    '    lock_id uniqueidentifier NOT NULL,',
    '    PRIMARY KEY (queue, id, lock_id)',
  ].join('\n');
}
