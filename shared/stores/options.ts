import type { Logger } from '../log';

/** What every transport store needs besides its connection. */
export interface TransportStoreOptions {
  schema: string;
  table: string;
  /** true: create schema, table and indexes under the DDL locks; false: verify only (migrations own the schema). */
  autoCreateSchema: boolean;
  logger: Logger;
  /** The schema-version check (schema-gate.ts) run before the store's own create-or-verify; openStores wires it. */
  schemaGate?: () => Promise<void>;
  /**
   * PostgreSQL: claims and acks wait for the WAL flush like every other write (default false: they commit without
   * it, stores/postgres/async-commit.ts; a server crash can then forget the last of them, and those jobs run again).
   * SQL Server's claims and acks are always durable.
   */
  durableClaimsAndAcks?: boolean;
  /**
   * Test harness only, never an app setting: false skips the catalog verification (and reads no catalog), so the
   * contract suite can run on a T-SQL engine whose catalog views differ from SQL Server's (Babelfish). Default true.
   */
  verifyCatalog?: boolean;
}

export const DEFAULT_TRANSPORT_TABLE = 'asyncresponse_transport_messages';
export const DEAD_LETTER_PRUNE_BATCH = 1000;
/** Spec: index builds bound their lock wait with SET LOCK_TIMEOUT 5000 and run under an hour-long timeout. */
export const DDL_TABLE_LOCK_TIMEOUT_MS = 5000;
export const DDL_SCHEMA_LOCK_TIMEOUT_MS = 60000;
export const INDEX_BUILD_COMMAND_TIMEOUT_S = 3600;
