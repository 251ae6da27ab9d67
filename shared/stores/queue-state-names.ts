// The queue-state table (pause and resume, issue 16 §4) is named after the transport table, like the
// subscriptions table (schema-names.ts): `{table}_queue_state`.

import { derivedName, IDENTIFIER_CAP, type Dialect, type TransportNames } from '../sql/identifiers';

export function queueStateTableName(transport: TransportNames, dialect: Dialect): string {
  return derivedName(transport.table, '_queue_state', IDENTIFIER_CAP[dialect]);
}
