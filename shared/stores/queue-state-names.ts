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

/**
 * The lease roster (issue 17 §2, the limit-statements.ts of each store): `{table}_leases`, one row per lease a limited claim
 * handed out, so the concurrency limit counts a queue's running jobs without reading its ready backlog.
 */
export function leaseRosterTableName(transport: TransportNames, dialect: Dialect): string {
  return derivedName(transport.table, '_leases', IDENTIFIER_CAP[dialect]);
}
