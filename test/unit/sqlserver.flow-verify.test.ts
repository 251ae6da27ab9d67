// Catalog verification of the flow state table (SQL Server and PostgreSQL), rule by rule on catalog rows.
import { describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { channelNames, transportNames } from '../../shared/sql/identifiers';
import { schemaNames } from '../../shared/stores/schema-names';
import { evaluateFlowTable, type FlowColumnRow } from '../../shared/stores/postgres/flow-verify';
import type { CatalogColumnRow, CatalogIndexRow } from '../../shared/stores/sqlserver/catalog-common';
import { evaluateFlowCatalog, type FlowCatalog } from '../../shared/stores/sqlserver/flow-verify';

const names = schemaNames(transportNames('dbo', 'jobs', 'sqlserver'), channelNames('dbo', DEFAULT_CHANNEL_TABLES, 'sqlserver'), 'sqlserver');
const BIN2 = 'Latin1_General_100_BIN2';

function col(name: string, type: string, size: number, nullable: boolean, extra: Partial<CatalogColumnRow> = {}): CatalogColumnRow {
  const chars = type === 'nvarchar';
  return {
    name,
    type_name: type,
    max_length: chars ? (size === -1 ? -1 : size * 2) : 8,
    precision: 0,
    scale: type === 'datetime2' ? size : 0,
    is_nullable: nullable,
    collation_name: chars ? BIN2 : null,
    is_identity: false,
    is_computed: false,
    default_object_id: 0,
    default_definition: null,
    ...extra,
  };
}

const index = (name: string, cols: string[]): CatalogIndexRow[] =>
  cols.map((c, i) => ({ index_name: name, type_desc: 'NONCLUSTERED', is_unique: false, is_primary_key: false, is_disabled: false, is_hypothetical: false, has_filter: false, column_name: c, key_ordinal: i + 1, is_descending_key: false, is_included_column: false }));

function catalog(patch: (c: CatalogColumnRow[]) => CatalogColumnRow[] = (c) => c): FlowCatalog {
  const columns = [
    col('flow_id', 'nvarchar', 400, false),
    col('flow_name', 'nvarchar', 200, false),
    col('status', 'nvarchar', 16, false),
    col('last_message', 'nvarchar', 400, true),
    col('state_json', 'nvarchar', -1, false),
    col('created_at_utc', 'datetime2', 7, false, { default_object_id: 5, default_definition: '(sysutcdatetime())' }),
    col('updated_at_utc', 'datetime2', 7, false),
    col('expires_at_utc', 'datetime2', 7, false),
    col('revision', 'bigint', 0, false, { default_object_id: 6, default_definition: '((0))' }),
    col('lease_id', 'nvarchar', 64, true),
    col('lease_expires_at_utc', 'datetime2', 7, true),
  ];
  return {
    objects: [{ name: names.flowStateTable, type: 'U ', type_desc: 'USER_TABLE', is_target: true }],
    columns: patch(columns),
    primaryKey: [{ constraint_name: 'PK_x', column_name: 'flow_id', key_ordinal: 1 }],
    indexes: [...index(names.flowStateExpiresIndex, ['expires_at_utc']), ...index(names.flowStateListIndex, ['status', 'updated_at_utc', 'flow_id'])],
  };
}
const replace = (name: string, by: Partial<CatalogColumnRow>) => (cs: CatalogColumnRow[]) => cs.map((c) => (c.name === name ? { ...c, ...by } : c));
const problems = (c: FlowCatalog, autoCreate = true) => evaluateFlowCatalog(c, names, { autoCreate }).problems;

describe('SQL Server flow table verification', () => {
  it('the DDL as created passes', () => {
    expect(evaluateFlowCatalog(catalog(), names, { autoCreate: true })).toEqual({ absent: false, problems: [], warnings: [] });
  });

  it('a reduced datetime2 scale fails (it would round the lease fence)', () => {
    expect(problems(catalog(replace('lease_expires_at_utc', { scale: 3 })))).toEqual([
      "column 'lease_expires_at_utc' of [dbo].[asyncresponse_flow_state]: expected datetime2(7) NULL; found datetime2(3) NULL.",
    ]);
  });

  it('flow_id: _BIN and _BIN2 pass; a case-insensitive or linguistic collation fails with the fix', () => {
    expect(problems(catalog(replace('flow_id', { collation_name: 'Latin1_General_BIN' })))).toEqual([]);
    expect(problems(catalog(replace('flow_id', { collation_name: 'Latin1_General_100_BIN2_UTF8' })))).toEqual([]);
    const ci = problems(catalog(replace('flow_id', { collation_name: 'SQL_Latin1_General_CP1_CI_AS' })));
    expect(ci).toHaveLength(1);
    expect(ci[0]).toMatch(/case-insensitive, so flow ids that differ only in case would be one run.*COLLATE Latin1_General_100_BIN2/);
    expect(problems(catalog(replace('flow_id', { collation_name: 'Latin1_General_100_CS_AS' })))[0]).toMatch(/is not binary/);
  });

  it('widths are minimums: nvarchar(450) flow_id and a wider lease_id pass; narrower fails; state_json must be max', () => {
    expect(problems(catalog(replace('flow_id', { max_length: 900 })))).toEqual([]);
    expect(problems(catalog(replace('lease_id', { max_length: 256 })))).toEqual([]);
    expect(problems(catalog(replace('flow_name', { max_length: 100 })))[0]).toMatch(/expected nvarchar\(200\) or wider NOT NULL; found nvarchar\(50\)/);
    expect(problems(catalog(replace('state_json', { max_length: 8000 })))[0]).toMatch(/expected nvarchar\(max\) NOT NULL; found nvarchar\(4000\)/);
  });

  it('the primary key must be on flow_id alone', () => {
    const c = catalog();
    c.primaryKey.push({ constraint_name: 'PK_x', column_name: 'flow_name', key_ordinal: 2 });
    expect(problems(c)).toEqual(['the primary key of [dbo].[asyncresponse_flow_state] is on (flow_id, flow_name); expected PRIMARY KEY (flow_id).']);
  });

  it('the name held by a view is diagnosed, not an absent table; an absent table is "absent" only on the operator path', () => {
    const view: FlowCatalog = { objects: [{ name: names.flowStateTable, type: 'V ', type_desc: 'VIEW', is_target: false }], columns: [], primaryKey: [], indexes: [] };
    expect(problems(view, false)).toEqual(['expected [dbo].[asyncresponse_flow_state] to be a user table, but the name is occupied by a view ([asyncresponse_flow_state]).']);
    const none: FlowCatalog = { objects: [], columns: [], primaryKey: [], indexes: [] };
    expect(evaluateFlowCatalog(none, names, { autoCreate: false })).toEqual({ absent: true, problems: [], warnings: [] });
    expect(problems(none, true)).toEqual(['expected [dbo].[asyncresponse_flow_state] to exist after schema creation, but it does not.']);
  });

  it('after auto-create the declared indexes must exist; a missing revision default is a problem', () => {
    const c = catalog();
    c.indexes = c.indexes.filter((i) => i.index_name !== names.flowStateListIndex);
    expect(problems(c)).toEqual([`expected the index [${names.flowStateListIndex}] on [dbo].[asyncresponse_flow_state] to exist after schema creation, but it does not.`]);
    expect(problems(c, false)).toEqual([]);
    expect(problems(catalog(replace('revision', { default_object_id: 0, default_definition: null })))).toEqual([
      "column 'revision' of [dbo].[asyncresponse_flow_state] has no default; expected DEFAULT ((0)).",
    ]);
  });
});

describe('PostgreSQL flow table verification', () => {
  const pgNames = schemaNames(transportNames('s', 'jobs', 'postgres'), channelNames('s', DEFAULT_CHANNEL_TABLES, 'postgres'), 'postgres');
  const TS = 'timestamp with time zone';
  const pgCol = (column_name: string, data_type: string, nullable = false, extra: Partial<FlowColumnRow> = {}): FlowColumnRow => ({
    column_name,
    data_type,
    is_nullable: nullable ? 'YES' : 'NO',
    collation_name: data_type === 'text' ? 'C' : null,
    deterministic: data_type === 'text' ? true : null,
    ...extra,
  });
  const columns = [
    pgCol('flow_id', 'text'), pgCol('flow_name', 'text'), pgCol('status', 'text'), pgCol('last_message', 'text', true), pgCol('state_json', 'text'),
    pgCol('created_at_utc', TS), pgCol('updated_at_utc', TS), pgCol('expires_at_utc', TS), pgCol('revision', 'bigint'), pgCol('lease_id', 'text', true),
    pgCol('lease_expires_at_utc', TS, true),
  ];
  const indexes = ['CREATE INDEX a ON s.t USING btree (expires_at_utc)', 'CREATE INDEX b ON s.t USING btree (status, updated_at_utc, flow_id) INCLUDE (flow_name, expires_at_utc)'];

  it('the DDL as created passes; a nondeterministic flow_id collation, jsonb state or a wrong key fails; a missing index warns', () => {
    expect(evaluateFlowTable({ relkind: 'r', columns, primaryKey: ['flow_id'], indexes }, pgNames)).toEqual({ absent: false, problems: [], warnings: [] });
    const nd = columns.map((c) => (c.column_name === 'flow_id' ? { ...c, collation_name: 'und-x-icu-ci', deterministic: false } : c));
    expect(evaluateFlowTable({ relkind: 'r', columns: nd, primaryKey: ['flow_id'], indexes }, pgNames).problems[0]).toMatch(/nondeterministic collation 'und-x-icu-ci'.*COLLATE "C"/);
    const jsonb = columns.map((c) => (c.column_name === 'state_json' ? { ...c, data_type: 'jsonb' } : c));
    expect(evaluateFlowTable({ relkind: 'r', columns: jsonb, primaryKey: ['flow_id'], indexes }, pgNames).problems).toEqual([
      `column 'state_json' of table "s"."asyncresponse_flow_state": expected text NOT NULL; found jsonb NOT NULL`,
    ]);
    expect(evaluateFlowTable({ relkind: 'r', columns, primaryKey: ['flow_name'], indexes }, pgNames).problems[0]).toMatch(/expected PRIMARY KEY \(flow_id\)/);
    expect(evaluateFlowTable({ relkind: 'r', columns, primaryKey: ['flow_id'], indexes: [] }, pgNames).warnings).toHaveLength(2);
    expect(evaluateFlowTable({ relkind: 'v', columns: [], primaryKey: [], indexes: [] }, pgNames).problems).toEqual([
      'expected table "s"."asyncresponse_flow_state" to be a table, but the name is occupied by a view',
    ]);
    expect(evaluateFlowTable({ columns: [], primaryKey: [], indexes: [] }, pgNames).absent).toBe(true);
  });
});
