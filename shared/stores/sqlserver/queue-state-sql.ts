// The queue-state fragments the claim, the renewal and the migrations share with job control (issue 16 §4): the
// queue-state table's name and columns, the claim's pause test and the renewal's cancel-marker test. A module of
// its own so that statements.ts and job-control-statements.ts both import it and not each other.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { CANCEL_MARK_PREFIX } from '../../transport/job-control';
import { queueStateTableName } from '../queue-state-names';
import { BIN2, exactQueueMatch } from './queue-match';

export function qualifiedQueueStateTable(names: TransportNames): string {
  return `${quoteIdentifier(names.schema, 'sqlserver')}.${quoteIdentifier(queueStateTableName(names, 'sqlserver'), 'sqlserver')}`;
}

/** The claim's (and the outlook's) pause test: uncorrelated (@queue only), a startup filter over the ready seek. */
export function pausedTest(names: TransportNames, param = 'queue'): string {
  return `EXISTS (SELECT 1 FROM ${qualifiedQueueStateTable(names)} AS paused WHERE ${exactQueueMatch('paused.queue', param)} AND paused.paused_at IS NOT NULL)`;
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

