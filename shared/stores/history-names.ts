// The job-history table (issue 16 §2) and its indexes are named after the transport table, like the queue-state
// table (queue-state-names.ts): `{table}_history`.

import { derivedName, IDENTIFIER_CAP, type Dialect, type TransportNames } from '../sql/identifiers';

export interface HistoryNames {
  table: string;
  /** (id): the lookup. */
  idIndex: string;
  /** (queue, completed_at, id): a queue's search, newest first, and the prune of its expired rows. */
  queueIndex: string;
  /** (correlation_id, completed_at, id): the search by correlation id. */
  correlationIndex: string;
}

export function historyNames(transport: TransportNames, dialect: Dialect): HistoryNames {
  const cap = IDENTIFIER_CAP[dialect];
  return {
    table: derivedName(transport.table, '_history', cap),
    idIndex: derivedName(transport.table, '_history_id_idx', cap),
    queueIndex: derivedName(transport.table, '_history_queue_idx', cap),
    correlationIndex: derivedName(transport.table, '_history_corr_idx', cap),
  };
}
