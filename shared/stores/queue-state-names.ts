// The queue-state table (pause and resume, issue 16 §4) is named after the transport table, like the
// subscriptions table (schema-names.ts): `{table}_queue_state`; so is the dedup-key table.

import { derivedName, IDENTIFIER_CAP, type Dialect, type TransportNames } from '../sql/identifiers';

export function queueStateTableName(transport: TransportNames, dialect: Dialect): string {
  return derivedName(transport.table, '_queue_state', IDENTIFIER_CAP[dialect]);
}

/** The dedup-key table (issue 16 §3, transport/dedup.ts): `{table}_dedup`, and its window index. */
export function dedupTableName(transport: TransportNames, dialect: Dialect): string {
  return derivedName(transport.table, '_dedup', IDENTIFIER_CAP[dialect]);
}

export function dedupWindowIndexName(transport: TransportNames, dialect: Dialect): string {
  return derivedName(transport.table, '_dedup_window_idx', IDENTIFIER_CAP[dialect]);
}
