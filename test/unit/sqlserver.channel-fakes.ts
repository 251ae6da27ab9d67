// Catalog rows of the channel's objects shaped exactly like the spec's DDL (§2.2), to be bent per test, and
// predicates that tell the channel store's statements apart on the scripted pool of sqlserver.fakes.ts.

import type { ChannelNames } from '../../shared/channel/types';
import type { CatalogColumnRow, CatalogIndexRow } from '../../shared/stores/sqlserver/verify';
import type {
  CatalogSequenceRow,
  ChannelCatalog,
  ChannelCatalogColumnRow,
  ChannelCatalogIndexRow,
  ChannelCatalogKeyColumnRow,
} from '../../shared/stores/sqlserver/channel-verify';
import { catalogColumn, indexRows, type FakeCall, type Row } from './sqlserver.fakes';

export const isChannelCatalog = (c: FakeCall) => c.text.includes('FROM sys.sequences AS s');
export const isChannelDdl = (c: FakeCall) => c.text.includes('CREATE TABLE') && c.text.includes('sp_getapplock');

const BIN2 = 'Latin1_General_100_BIN2';
const CI = 'SQL_Latin1_General_CP1_CI_AS';

const column = (table: string, name: string, type_name: string, extra: Partial<CatalogColumnRow> = {}): ChannelCatalogColumnRow => ({
  table_name: table,
  ...catalogColumn(name, type_name, extra),
});

const dt2 = (extra: Partial<CatalogColumnRow> = {}): Partial<CatalogColumnRow> => ({ max_length: 8, precision: 27, scale: 7, ...extra });
const sysutc = (id: number) => ({ default_object_id: id, default_definition: '(sysutcdatetime())' });

/** The columns SQL Server reports for the spec's three CREATE TABLEs. */
export function channelSpecColumns(n: ChannelNames): ChannelCatalogColumnRow[] {
  const r = n.recoveryTable;
  const m = n.messageTable;
  const s = n.subscriberTable;
  return [
    column(r, 'correlation_id', 'nvarchar', { max_length: 800, collation_name: BIN2 }),
    column(r, 'registration_id', 'uniqueidentifier', { max_length: 16 }),
    column(r, 'state_json', 'nvarchar', { max_length: -1, collation_name: CI }),
    column(r, 'expires_at', 'datetime2', dt2()),
    column(r, 'registered_at', 'datetime2', dt2(sysutc(201))),
    column(m, 'id', 'uniqueidentifier', { max_length: 16 }),
    column(m, 'correlation_id', 'nvarchar', { max_length: 800, collation_name: BIN2 }),
    column(m, 'envelope_json', 'nvarchar', { max_length: -1, collation_name: CI }),
    column(m, 'created_at', 'datetime2', dt2(sysutc(202))),
    column(m, 'expires_at', 'datetime2', dt2()),
    column(m, 'acked_at', 'datetime2', dt2({ is_nullable: true })),
    column(m, 'acked_seq', 'bigint', { max_length: 8, precision: 19, is_nullable: true }),
    column(m, 'recovery_claimed', 'bit', { max_length: 1, precision: 1, default_object_id: 203, default_definition: '((0))' }),
    column(s, 'correlation_id', 'nvarchar', { max_length: 800, collation_name: BIN2 }),
    column(s, 'registration_id', 'uniqueidentifier', { max_length: 16 }),
    column(s, 'instance_id', 'nvarchar', { max_length: 400, collation_name: CI }),
    column(s, 'expires_at', 'datetime2', dt2()),
  ];
}

export function specSequence(n: ChannelNames, extra: Partial<CatalogSequenceRow> = {}): CatalogSequenceRow {
  return {
    name: n.ackSequence,
    type_name: 'bigint',
    increment: '1',
    minimum_value: '-9223372036854775808',
    maximum_value: '9223372036854775807',
    is_cycling: false,
    ...extra,
  };
}

const tagged = <T extends object>(table: string, rows: T[]) => rows.map((r) => ({ ...r, table_name: table }));

export function channelSpecCatalog(n: ChannelNames, options: { indexes?: boolean } = {}): ChannelCatalog {
  const pk = (table: string, cols: string[]): ChannelCatalogKeyColumnRow[] =>
    cols.map((c, i) => ({ table_name: table, constraint_name: `PK__${table}`, column_name: c, key_ordinal: i + 1 }));
  const idx = (table: string, name: string, keys: string[], flags: Partial<CatalogIndexRow> = {}): ChannelCatalogIndexRow[] =>
    tagged(table, indexRows(name, keys, flags));
  const withIndexes = options.indexes !== false;
  return {
    objects: [
      { name: n.recoveryTable, type: 'U ', type_desc: 'USER_TABLE', is_target: true },
      { name: n.messageTable, type: 'U ', type_desc: 'USER_TABLE', is_target: true },
      { name: n.subscriberTable, type: 'U ', type_desc: 'USER_TABLE', is_target: true },
      { name: n.ackSequence, type: 'SO', type_desc: 'SEQUENCE_OBJECT', is_target: false },
    ],
    columns: channelSpecColumns(n),
    primaryKey: [
      ...pk(n.recoveryTable, ['correlation_id', 'registration_id']),
      ...pk(n.messageTable, ['id']),
      ...pk(n.subscriberTable, ['correlation_id', 'registration_id']),
    ],
    indexes: [
      ...idx(n.recoveryTable, `PK__${n.recoveryTable}`, ['correlation_id', 'registration_id'], { type_desc: 'CLUSTERED', is_unique: true, is_primary_key: true }),
      ...idx(n.messageTable, `PK__${n.messageTable}`, ['id'], { is_unique: true, is_primary_key: true }),
      ...idx(n.subscriberTable, `PK__${n.subscriberTable}`, ['correlation_id', 'registration_id'], { type_desc: 'CLUSTERED', is_unique: true, is_primary_key: true }),
      ...(withIndexes
        ? [
            ...idx(n.recoveryTable, n.recoveryExpiresIndex, ['expires_at']),
            ...idx(n.messageTable, n.messageCorrelationCreatedIndex, ['correlation_id', 'created_at']),
            ...idx(n.messageTable, n.messageExpiresIndex, ['expires_at']),
            ...idx(n.subscriberTable, n.subscriberExpiresIndex, ['expires_at']),
          ]
        : []),
    ],
    sequences: [specSequence(n)],
  };
}

export const absentChannelCatalog: ChannelCatalog = { objects: [], columns: [], primaryKey: [], indexes: [], sequences: [] };

export function channelCatalogRecordsets(catalog: ChannelCatalog): Row[][] {
  return [
    catalog.objects,
    catalog.columns,
    catalog.primaryKey,
    catalog.indexes,
    catalog.sequences,
    catalog.triggers ?? [],
    catalog.database ?? [],
  ] as unknown as Row[][];
}
