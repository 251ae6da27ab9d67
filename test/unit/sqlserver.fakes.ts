// Test doubles for the SQL Server store: a scripted mssql pool (no server here) and catalog rows of a table
// shaped exactly like the spec's DDL, to be bent per test.

import * as sql from 'mssql';
import { serverCapabilities, type ServerCapabilities } from '../../shared/stores/sqlserver/server-version';
import type { TransportNames } from '../../shared/sql/identifiers';
import type {
  CatalogColumnRow,
  CatalogIndexRow,
  CatalogKeyColumnRow,
  CatalogObjectRow,
  TransportCatalog,
} from '../../shared/stores/sqlserver/verify';

/** An error shaped exactly as mssql's tedious driver builds it (Error + info → RequestError 'EREQUEST'). */
export function sqlError(number: number, severity: number, message = `error ${number}`): sql.RequestError {
  const inner = Object.assign(new Error(message), { info: { number, class: severity, state: 1, message } });
  return new sql.RequestError(inner, 'EREQUEST');
}

export interface FakeCall {
  text: string;
  inputs: Record<string, { type: unknown; value: unknown }>;
  requestTimeout?: number;
  inTransaction: boolean;
}

export type Row = Record<string, unknown>;
export type FakeHandler = (call: FakeCall) => Row[][] | Promise<Row[][]>;

class FakeRequest {
  private readonly inputs: FakeCall['inputs'] = {};
  constructor(
    private readonly pool: FakePool,
    private readonly inTransaction: boolean,
    private readonly requestTimeout?: number,
  ) {}
  input(name: string, type: unknown, value: unknown) {
    this.inputs[name] = { type, value };
    return this;
  }
  async query(text: string) {
    const call: FakeCall = { text, inputs: this.inputs, requestTimeout: this.requestTimeout, inTransaction: this.inTransaction };
    if (text === serverCapabilities.text) {
      // the migrator's once-per-process server probe: answered by pool.server, counted apart from the calls
      this.pool.serverProbes++;
      return { recordsets: [[this.pool.server]], recordset: [this.pool.server], rowsAffected: [], output: {} };
    }
    this.pool.calls.push(call);
    const recordsets = await this.pool.handler(call);
    return { recordsets, recordset: recordsets[0] ?? [], rowsAffected: [], output: {} };
  }
}

class FakeTransaction {
  constructor(private readonly pool: FakePool) {}
  async begin() {
    this.pool.events.push('begin');
    return this;
  }
  async commit() {
    this.pool.events.push('commit');
  }
  async rollback() {
    this.pool.events.push('rollback');
  }
  request(conf?: { requestTimeout?: number }) {
    return new FakeRequest(this.pool, true, conf?.requestTimeout);
  }
}

export class FakePool {
  connected = true;
  connectCalls = 0;
  calls: FakeCall[] = [];
  events: string[] = [];
  closed = false;
  /** What the server probe answers: SQL Server 2022 unless a test bends it. */
  server: ServerCapabilities = { product_version: '16.0.4135.4', engine_edition: 2, utf8_code_page: 65001 };
  serverProbes = 0;
  constructor(public handler: FakeHandler) {}
  async connect() {
    this.connectCalls++;
    this.connected = true;
    return this;
  }
  request(conf?: { requestTimeout?: number }) {
    return new FakeRequest(this, false, conf?.requestTimeout);
  }
  transaction() {
    return new FakeTransaction(this);
  }
  async close() {
    this.closed = true;
  }
  /** The store's constructor type. */
  asPool(): sql.ConnectionPool {
    return this as unknown as sql.ConnectionPool;
  }
}

export const isCatalogQuery = (c: FakeCall) => c.text.includes('FROM sys.objects');
export const isPhase1 = (c: FakeCall) => c.text.includes('CREATE TABLE') && !isHistoryDdl(c);
/** The job-history table's own DDL transaction, after phase 1 (history-statements.ts). */
export const isHistoryDdl = (c: FakeCall) => c.text.includes('transport history could not take');
export const isTableLock = (c: FakeCall) => c.text.includes('its table lock');
export const isIndexBuild = (c: FakeCall) => c.text.startsWith('SET LOCK_TIMEOUT');

/** A catalog column row with SQL Server's zero/false defaults, bent by `extra`. */
export function catalogColumn(
  name: string,
  type_name: string,
  extra: Partial<CatalogColumnRow> = {},
): CatalogColumnRow {
  return {
    name,
    type_name,
    max_length: 0,
    precision: 0,
    scale: 0,
    is_nullable: false,
    collation_name: null,
    is_identity: false,
    is_computed: false,
    default_object_id: 0,
    default_definition: null,
    ...extra,
  };
}

/**
 * The columns SQL Server reports for the spec's CREATE TABLE plus migration 3's computed source column, migration 13's
 * priority, migration 15's ordering key and migration 20's state and seq (its default names the sequence of `names`).
 */
export function specColumns(names?: TransportNames): CatalogColumnRow[] {
  const sequence = names ? `[${names.schema}].[${names.sequence}]` : '[dbo].[asyncresponse_transport_messages_seq]';
  return [
    catalogColumn('id', 'uniqueidentifier', { max_length: 16 }),
    catalogColumn('queue', 'nvarchar', { max_length: 400, collation_name: 'Latin1_General_100_BIN2' }),
    catalogColumn('payload_json', 'nvarchar', { max_length: -1, collation_name: 'SQL_Latin1_General_CP1_CI_AS' }),
    catalogColumn('headers_json', 'nvarchar', {
      max_length: -1,
      collation_name: 'SQL_Latin1_General_CP1_CI_AS',
      default_object_id: 101,
      default_definition: "(N'{}')",
    }),
    catalogColumn('created_at', 'datetime2', { max_length: 8, precision: 27, scale: 7, default_object_id: 102, default_definition: '(sysutcdatetime())' }),
    catalogColumn('available_at', 'datetime2', { max_length: 8, precision: 27, scale: 7, default_object_id: 103, default_definition: '(sysutcdatetime())' }),
    catalogColumn('locked_until', 'datetime2', { max_length: 8, precision: 27, scale: 7, is_nullable: true }),
    catalogColumn('lock_id', 'uniqueidentifier', { max_length: 16, is_nullable: true }),
    catalogColumn('attempts', 'int', { max_length: 4, precision: 10, default_object_id: 104, default_definition: '((0))' }),
    catalogColumn('dead_letter_reason', 'nvarchar', { max_length: -1, is_nullable: true, collation_name: 'SQL_Latin1_General_CP1_CI_AS' }),
    catalogColumn('dead_letter_source', 'nvarchar', { max_length: 400, is_nullable: true, is_computed: true, collation_name: 'Latin1_General_100_BIN2' }),
    catalogColumn('priority', 'smallint', { max_length: 2, precision: 5, default_object_id: 105, default_definition: '((0))' }),
    catalogColumn('ordering_key', 'nvarchar', { max_length: 400, is_nullable: true, collation_name: 'Latin1_General_100_BIN2' }),
    catalogColumn('state', 'tinyint', { max_length: 1, precision: 3, is_nullable: true }),
    catalogColumn('seq', 'bigint', { max_length: 8, precision: 19, is_nullable: true, default_object_id: 106, default_definition: `(NEXT VALUE FOR ${sequence})` }),
  ];
}

/** Catalog rows of a filtered index as SQL Server reports it: its keys, then its included columns, and its filter. */
export function filteredIndexRows(name: string, keys: readonly string[], filter: string, include: readonly string[] = []): CatalogIndexRow[] {
  const flags = { has_filter: true, filter_definition: filter };
  return [
    ...indexRows(name, keys, flags),
    ...include.map((column) => ({ ...indexRows(name, [column], flags)[0]!, key_ordinal: 0, is_included_column: true })),
  ];
}

/** The ready set's four filtered indexes (migrations 24–27, or the store's phase 2), as the catalog shows them. */
export function readySetIndexRows(names: TransportNames): CatalogIndexRow[] {
  return [
    ...filteredIndexRows(names.readySetIndex, ['queue', 'priority DESC', 'available_at', 'seq'], '([state] IS NULL AND [lock_id] IS NULL)'),
    ...filteredIndexRows(names.scheduledIndex, ['queue', 'available_at'], '([state]=(1))'),
    ...filteredIndexRows(names.leasedIndex, ['queue', 'locked_until'], '([lock_id] IS NOT NULL)', ['lock_id']),
    ...filteredIndexRows(names.keyOrderIndex, ['queue', 'ordering_key', 'seq'], '([ordering_key] IS NOT NULL)'),
  ];
}

export function indexRows(
  name: string,
  keys: readonly string[],
  flags: Partial<Omit<CatalogIndexRow, 'index_name' | 'column_name' | 'key_ordinal'>> = {},
): CatalogIndexRow[] {
  return keys.map((key, i) => ({
    index_name: name,
    type_desc: 'NONCLUSTERED',
    is_unique: false,
    is_primary_key: false,
    is_disabled: false,
    is_hypothetical: false,
    has_filter: false,
    is_descending_key: false,
    is_included_column: false,
    ...flags,
    // 'priority DESC': a descending key column, as the catalog reports it (is_descending_key)
    ...(key.endsWith(' DESC') ? { is_descending_key: true } : {}),
    column_name: key.replace(/ DESC$/, ''),
    key_ordinal: i + 1,
  }));
}

export function specCatalog(names: TransportNames, options: { indexes?: boolean } = {}): TransportCatalog {
  const objects: CatalogObjectRow[] = [{ name: names.table, type: 'U ', type_desc: 'USER_TABLE', is_target: true }];
  const primaryKey: CatalogKeyColumnRow[] = [{ constraint_name: 'PK__x', column_name: 'id', key_ordinal: 1 }];
  const indexes: CatalogIndexRow[] = [
    ...indexRows('PK__x', ['id'], { is_unique: true, is_primary_key: true }),
    ...(options.indexes === false
      ? []
      : [
          ...readySetIndexRows(names),
          ...indexRows(names.createdIndex, ['created_at']),
          ...indexRows(names.deadLetterIndex, ['queue', 'dead_letter_source']),
        ]),
  ];
  return { objects, columns: specColumns(names), primaryKey, indexes, database: [{ compatibility_level: 160 }], triggers: [] };
}

export function catalogRecordsets(catalog: TransportCatalog): Row[][] {
  return [catalog.objects, catalog.columns, catalog.primaryKey, catalog.indexes, catalog.database ?? [], catalog.triggers ?? []] as unknown as Row[][];
}

export const absentCatalog: TransportCatalog = { objects: [], columns: [], primaryKey: [], indexes: [] };
