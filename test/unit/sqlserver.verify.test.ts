import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import {
  evaluateIndexes,
  evaluateTransportCatalog,
  hasUsableDeadLetterIndex,
  hasUsableDequeueIndex,
  hasUsableOrderingIndex,
  missingIndexes,
  renderType,
  type CatalogColumnRow,
  type TransportCatalog,
} from '../../shared/stores/sqlserver/verify';
import { absentCatalog, indexRows, specCatalog } from './sqlserver.fakes';

const names = transportNames('dbo', 'asyncresponse_transport_messages', 'sqlserver');
const TABLE = '[dbo].[asyncresponse_transport_messages]';
const AUTO = { autoCreate: true };
const OPERATOR = { autoCreate: false };
const ORDERING_ROWS = indexRows(names.orderingIndex, ['queue', 'ordering_key', 'created_at', 'id'], { has_filter: true });

function withColumn(catalog: TransportCatalog, name: string, change: Partial<CatalogColumnRow>): TransportCatalog {
  return { ...catalog, columns: catalog.columns.map((c) => (c.name === name ? { ...c, ...change } : c)) };
}

function withIndex(catalog: TransportCatalog, name: string, rows: TransportCatalog['indexes']): TransportCatalog {
  return { ...catalog, indexes: [...catalog.indexes.filter((r) => r.index_name !== name), ...rows] };
}

describe('SQL Server catalog verification', () => {
  it('accepts exactly the documented table on both paths, with no warning', () => {
    for (const mode of [AUTO, OPERATOR]) {
      expect(evaluateTransportCatalog(specCatalog(names), names, mode)).toEqual({ status: 'present', problems: [], warnings: [] });
    }
  });

  it('renders types with their width and fractional-seconds scale', () => {
    const base = { precision: 0, scale: 0 };
    expect(renderType({ ...base, type_name: 'nvarchar', max_length: 400 })).toBe('nvarchar(200)');
    expect(renderType({ ...base, type_name: 'nvarchar', max_length: -1 })).toBe('nvarchar(max)');
    expect(renderType({ ...base, type_name: 'varchar', max_length: 200 })).toBe('varchar(200)');
    expect(renderType({ type_name: 'datetime2', max_length: 8, precision: 27, scale: 7 })).toBe('datetime2(7)');
    expect(renderType({ type_name: 'datetime2', max_length: 7, precision: 23, scale: 3 })).toBe('datetime2(3)');
    expect(renderType({ ...base, type_name: 'int', max_length: 4 })).toBe('int');
  });

  it('rejects a reduced-scale datetime2 naming both renderings', () => {
    const catalog = withColumn(specCatalog(names), 'created_at', { scale: 3, precision: 23, max_length: 7 });
    const { problems } = evaluateTransportCatalog(catalog, names, OPERATOR);
    expect(problems).toEqual([
      `column 'created_at' of ${TABLE}: expected datetime2(7) NOT NULL; found datetime2(3) NOT NULL.`,
    ]);
  });

  it('rejects a wrong nvarchar width, naming the column, what was expected and what was found', () => {
    const catalog = withColumn(specCatalog(names), 'payload_json', { max_length: 400 });
    const { problems } = evaluateTransportCatalog(catalog, names, OPERATOR);
    expect(problems).toEqual([`column 'payload_json' of ${TABLE}: expected nvarchar(max) NOT NULL; found nvarchar(200) NOT NULL.`]);
  });

  it('rejects wrong nullability and a missing column', () => {
    const nullable = withColumn(specCatalog(names), 'attempts', { is_nullable: true });
    expect(evaluateTransportCatalog(nullable, names, AUTO).problems[0]).toMatch(/'attempts'.*expected int NOT NULL; found int NULL/);
    const missing = { ...specCatalog(names), columns: specCatalog(names).columns.filter((c) => c.name !== 'lock_id') };
    expect(evaluateTransportCatalog(missing, names, AUTO).problems).toEqual([
      `${TABLE} is missing the column 'lock_id'; expected uniqueidentifier NULL.`,
    ]);
  });

  it('compares defaults case-insensitively and reports a missing one', () => {
    const upper = withColumn(specCatalog(names), 'created_at', { default_definition: '(SYSUTCDATETIME())' });
    expect(evaluateTransportCatalog(upper, names, AUTO).problems).toEqual([]);
    const none = withColumn(specCatalog(names), 'attempts', { default_object_id: 0, default_definition: null });
    expect(evaluateTransportCatalog(none, names, AUTO).problems).toEqual([
      `column 'attempts' of ${TABLE} has no default; expected DEFAULT ((0)).`,
    ]);
    const wrong = withColumn(specCatalog(names), 'available_at', { default_definition: '(getdate())' });
    expect(evaluateTransportCatalog(wrong, names, AUTO).problems[0]).toMatch(/expected DEFAULT \(sysutcdatetime\(\)\); found DEFAULT \(getdate\(\)\)/);
  });

  it('a default whose text this login cannot read is a warning, not a failure', () => {
    const hidden = withColumn(specCatalog(names), 'headers_json', { default_definition: null });
    const result = evaluateTransportCatalog(hidden, names, OPERATOR);
    expect(result.problems).toEqual([]);
    expect(result.warnings[0]).toMatch(/headers_json.*not visible/);
  });

  it('matches catalog names case-insensitively', () => {
    const catalog = specCatalog(names);
    const shouting = { ...catalog, columns: catalog.columns.map((c) => ({ ...c, name: c.name.toUpperCase() })) };
    expect(evaluateTransportCatalog(shouting, names, AUTO).problems).toEqual([]);
  });

  it('reports a missing primary key and a primary key on other columns', () => {
    expect(evaluateTransportCatalog({ ...specCatalog(names), primaryKey: [] }, names, OPERATOR).problems).toEqual([
      `${TABLE} has no primary key; expected PRIMARY KEY (id).`,
    ]);
    const composite = {
      ...specCatalog(names),
      primaryKey: [
        { constraint_name: 'pk', column_name: 'queue', key_ordinal: 1 },
        { constraint_name: 'pk', column_name: 'id', key_ordinal: 2 },
      ],
    };
    expect(evaluateTransportCatalog(composite, names, OPERATOR).problems[0]).toMatch(/primary key .* is on \(queue, id\)/);
  });

  it('queue column: exactly nvarchar(200) BIN2 on the auto-created path; any type and collation on the operator path', () => {
    const ci = withColumn(specCatalog(names), 'queue', { collation_name: 'SQL_Latin1_General_CP1_CI_AS' });
    expect(evaluateTransportCatalog(ci, names, AUTO).problems[0]).toMatch(
      /column 'queue'.*expected COLLATE Latin1_General_100_BIN2; found SQL_Latin1_General_CP1_CI_AS/,
    );
    expect(evaluateTransportCatalog(ci, names, OPERATOR).problems).toEqual([]);
    const varchar = withColumn(specCatalog(names), 'queue', { type_name: 'varchar', max_length: 100 });
    expect(evaluateTransportCatalog(varchar, names, AUTO).problems[0]).toMatch(/expected nvarchar\(200\) NOT NULL; found varchar\(100\) NOT NULL/);
    expect(evaluateTransportCatalog(varchar, names, OPERATOR).problems).toEqual([]);
    // allowed, but the nvarchar parameter converts the column on every claim: a warning says so
    expect(evaluateTransportCatalog(varchar, names, OPERATOR).warnings).toEqual([expect.stringMatching(/\.queue is varchar\(100\); the store binds queue names as nvarchar\(200\)/)]);
    expect(evaluateTransportCatalog(ci, names, OPERATOR).warnings).toEqual([]);
    const nullable = withColumn(specCatalog(names), 'queue', { type_name: 'varchar', max_length: 100, is_nullable: true });
    expect(evaluateTransportCatalog(nullable, names, OPERATOR).problems).toEqual([`column 'queue' of ${TABLE}: expected NOT NULL; found NULL.`]);
  });

  it('a database below compatibility level 130 fails verification with the statement that fixes it (OPENJSON)', () => {
    for (const mode of [AUTO, OPERATOR]) {
      const old = { ...specCatalog(names), database: [{ compatibility_level: 120 }] };
      expect(evaluateTransportCatalog(old, names, mode).problems).toEqual([
        expect.stringMatching(/compatibility level is 120; .*OPENJSON, which needs 130 .*ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = 130;/),
      ]);
    }
    expect(evaluateTransportCatalog({ ...specCatalog(names), database: [{ compatibility_level: 130 }] }, names, OPERATOR).problems).toEqual([]);
    expect(evaluateTransportCatalog({ ...specCatalog(names), database: [] }, names, OPERATOR).problems).toEqual([]); // not readable: no verdict
  });

  it('enabled triggers on the table fail verification (OUTPUT without INTO is refused, error 334), naming them', () => {
    const audited = { ...specCatalog(names), triggers: [{ trigger_name: 'audit_ins' }, { trigger_name: 'audit_upd' }] };
    const { problems } = evaluateTransportCatalog(audited, names, OPERATOR);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.startsWith(`${TABLE} has enabled trigger(s) [audit_ins], [audit_upd]: `)).toBe(true);
    expect(problems[0]).toContain('(error 334)');
  });

  it('extra columns are allowed unless NOT NULL without a default', () => {
    const base = specCatalog(names);
    const extra = (c: Partial<CatalogColumnRow>) => ({
      ...base,
      columns: [...base.columns, { ...base.columns[0]!, name: 'tenant', type_name: 'int', default_object_id: 0, ...c }],
    });
    expect(evaluateTransportCatalog(extra({ is_nullable: true }), names, AUTO).problems).toEqual([]);
    expect(evaluateTransportCatalog(extra({ default_object_id: 9, default_definition: '((1))' }), names, AUTO).problems).toEqual([]);
    expect(evaluateTransportCatalog(extra({ is_identity: true }), names, AUTO).problems).toEqual([]);
    expect(evaluateTransportCatalog(extra({}), names, AUTO).problems[0]).toMatch(/'tenant'.*NOT NULL without a default.*515/);
  });

  it('a view holding the name fails verification naming the view', () => {
    const view: TransportCatalog = {
      ...absentCatalog,
      objects: [{ name: 'asyncresponse_transport_messages', type: 'V ', type_desc: 'VIEW', is_target: false }],
    };
    for (const mode of [AUTO, OPERATOR]) {
      const result = evaluateTransportCatalog(view, names, mode);
      expect(result.problems).toEqual([
        `expected ${TABLE} to be a user table, but the name is occupied by a view ([asyncresponse_transport_messages]).`,
      ]);
    }
  });

  it('an absent table is "absent" on the operator path and a failure after schema creation', () => {
    expect(evaluateTransportCatalog(absentCatalog, names, OPERATOR)).toEqual({ status: 'absent', problems: [], warnings: [] });
    const auto = evaluateTransportCatalog(absentCatalog, names, AUTO);
    expect(auto.status).toBe('absent');
    expect(auto.problems).toEqual([`expected ${TABLE} to exist after schema creation, but it does not.`]);
  });

  it('operator path: no usable dequeue index is a warning with the statement to run, never an error', () => {
    const none = specCatalog(names, { indexes: false });
    const result = evaluateTransportCatalog(none, names, OPERATOR);
    expect(result.problems).toEqual([]);
    expect(result.warnings).toHaveLength(3);
    expect(result.warnings[0]).toContain('CREATE INDEX [asyncresponse_transport_messages_priority_ready_idx] ON [dbo].[asyncresponse_transport_messages] (queue, priority DESC, available_at, created_at)');
    expect(result.warnings[1]).toContain('CREATE INDEX [asyncresponse_transport_messages_dead_letter_idx] ON [dbo].[asyncresponse_transport_messages] (queue, dead_letter_source)');
    expect(result.warnings[2]).toContain(
      'CREATE INDEX [asyncresponse_transport_messages_ordering_idx] ON [dbo].[asyncresponse_transport_messages] (queue, ordering_key, created_at, id) WHERE ordering_key IS NOT NULL',
    );
  });

  it('operator path: the dead-letter index may have any name and more keys, but must lead with (queue, dead_letter_source)', () => {
    const keys = ['queue', 'dead_letter_source'];
    expect(hasUsableDeadLetterIndex(indexRows('mine', keys))).toBe(true);
    expect(hasUsableDeadLetterIndex(indexRows('mine', [...keys, 'created_at']))).toBe(true);
    expect(hasUsableDeadLetterIndex(indexRows('x', ['dead_letter_source', 'queue']))).toBe(false);
    expect(hasUsableDeadLetterIndex(indexRows('x', ['queue']))).toBe(false);
    expect(hasUsableDeadLetterIndex(indexRows('x', keys, { has_filter: true }))).toBe(false);
    expect(hasUsableDeadLetterIndex(indexRows('x', keys, { is_disabled: true }))).toBe(false);
    const ready = indexRows('my_claim', ['queue', 'priority DESC', 'available_at', 'created_at']);
    const base = withIndex(specCatalog(names, { indexes: false }), names.orderingIndex, ORDERING_ROWS);
    expect(evaluateTransportCatalog(withIndex(base, 'my_claim', ready), names, OPERATOR).warnings).toHaveLength(1);
    expect(evaluateTransportCatalog(withIndex(withIndex(base, 'my_claim', ready), 'mine', indexRows('mine', keys)), names, OPERATOR).warnings).toEqual([]);
  });

  it('the computed dead_letter_source column (schema version 3) is required, computed, nvarchar(200) BIN2, on both paths', () => {
    const base = specCatalog(names);
    const without = { ...base, columns: base.columns.filter((c) => c.name !== 'dead_letter_source') };
    for (const mode of [OPERATOR, AUTO]) {
      expect(evaluateTransportCatalog(base, names, mode).problems).toEqual([]);
      expect(evaluateTransportCatalog(without, names, mode).problems).toEqual([
        `${TABLE} is missing the column 'dead_letter_source'; expected nvarchar(200) NULL.`,
      ]);
    }
    const bend = (extra: Partial<CatalogColumnRow>) => ({
      ...base,
      columns: base.columns.map((c) => (c.name === 'dead_letter_source' ? { ...c, ...extra } : c)),
    });
    expect(evaluateTransportCatalog(bend({ is_computed: false }), names, AUTO).problems[0]).toMatch(/expected a computed column AS CAST\(CASE WHEN ISJSON/);
    expect(evaluateTransportCatalog(bend({ max_length: 8000 }), names, AUTO).problems[0]).toMatch(/expected nvarchar\(200\) NULL; found nvarchar\(4000\) NULL/);
    expect(evaluateTransportCatalog(bend({ collation_name: 'SQL_Latin1_General_CP1_CI_AS' }), names, OPERATOR).problems[0]).toMatch(/expected COLLATE Latin1_General_100_BIN2/);
  });

  it('the priority column (schema version 13) is required as smallint NOT NULL with a default on both paths, and left to version 13 when recording version 1', () => {
    const base = specCatalog(names);
    const without = { ...base, columns: base.columns.filter((c) => c.name !== 'priority') };
    for (const mode of [OPERATOR, AUTO]) {
      expect(evaluateTransportCatalog(without, names, mode).problems).toEqual([`${TABLE} is missing the column 'priority'; expected smallint NOT NULL.`]);
    }
    expect(evaluateTransportCatalog(without, names, { ...OPERATOR, versionOneOnly: true }).problems).toEqual([]);
    const nullable = { ...base, columns: base.columns.map((c) => (c.name === 'priority' ? { ...c, is_nullable: true } : c)) };
    expect(evaluateTransportCatalog(nullable, names, AUTO).problems[0]).toMatch(/priority.*expected smallint NOT NULL; found smallint NULL/);
    const wide = { ...base, columns: base.columns.map((c) => (c.name === 'priority' ? { ...c, type_name: 'int', max_length: 4, precision: 10 } : c)) };
    expect(evaluateTransportCatalog(wide, names, AUTO).problems[0]).toMatch(/priority.*expected smallint NOT NULL; found int NOT NULL/);
  });

  it('operator path: any name serves, but only enabled, real, unfiltered indexes keyed exactly (queue, priority DESC, available_at, created_at)', () => {
    const dl = names.deadLetterIndex; // present, so only the dequeue index is in question
    const base = withIndex(withIndex(specCatalog(names, { indexes: false }), dl, indexRows(dl, ['queue', 'dead_letter_source'])), names.orderingIndex, ORDERING_ROWS);
    const keys = ['queue', 'priority DESC', 'available_at', 'created_at'];
    // the ready index before priorities (schema version 1) no longer serves the claim's order
    expect(hasUsableDequeueIndex(indexRows('x', ['queue', 'available_at', 'created_at']))).toBe(false);
    expect(hasUsableDequeueIndex(indexRows('x', ['queue', 'priority', 'available_at', 'created_at']))).toBe(false);
    expect(hasUsableDequeueIndex(indexRows('my_claim', keys))).toBe(true);
    expect(hasUsableDequeueIndex(indexRows('my_claim', keys, { type_desc: 'CLUSTERED' }))).toBe(true);
    expect(hasUsableDequeueIndex(indexRows('x', keys, { is_disabled: true }))).toBe(false);
    expect(hasUsableDequeueIndex(indexRows('x', keys, { is_hypothetical: true }))).toBe(false);
    expect(hasUsableDequeueIndex(indexRows('x', keys, { has_filter: true }))).toBe(false);
    expect(hasUsableDequeueIndex(indexRows('x', ['queue', 'available_at']))).toBe(false);
    expect(hasUsableDequeueIndex(indexRows('legacy_claim_idx', ['queue', 'available_at', 'locked_until', 'created_at']))).toBe(false);
    expect(hasUsableDequeueIndex(indexRows('x', ['queue', 'created_at', 'available_at']))).toBe(false);
    expect(hasUsableDequeueIndex(indexRows('x', keys, { is_descending_key: true }))).toBe(false);
    const included = [...indexRows('x', keys), { ...indexRows('x', ['lock_id'])[0]!, key_ordinal: 0, is_included_column: true }];
    expect(hasUsableDequeueIndex(included)).toBe(true);
    expect(evaluateTransportCatalog(withIndex(base, 'my_claim', indexRows('my_claim', keys)), names, OPERATOR).warnings).toEqual([]);
  });

  it('auto-created path: both indexes must exist by name with exactly the declared shape', () => {
    const base = specCatalog(names);
    const ready = names.readyIndex;
    const keys = ['queue', 'priority DESC', 'available_at', 'created_at'];
    const check = (rows: TransportCatalog['indexes']) => evaluateIndexes(withIndex(base, ready, rows).indexes, names);
    expect(check(indexRows(ready, keys))).toEqual([]);
    expect(check(indexRows(ready, keys, { type_desc: 'CLUSTERED' }))).toEqual([]);
    expect(check(indexRows(ready, ['queue', 'created_at']))[0]).toMatch(/it is keyed \(queue, created_at\)/);
    expect(check(indexRows(ready, keys, { is_unique: true }))[0]).toMatch(/it is UNIQUE/);
    expect(check(indexRows(ready, keys, { has_filter: true }))[0]).toMatch(/it is filtered/);
    expect(check(indexRows(ready, keys, { is_disabled: true }))[0]).toMatch(/it is disabled/);
    expect(check(indexRows(ready, keys, { type_desc: 'NONCLUSTERED_COLUMNSTORE' }))[0]).toMatch(/nonclustered columnstore/);
    expect(check([])[0]).toBe(
      `expected the index [${ready}] on ${TABLE} to exist after schema creation, but it does not.`,
    );
    expect(evaluateTransportCatalog(withIndex(base, ready, []), names, OPERATOR).problems).toEqual([]);
  });

  it('reports which declared indexes are missing, by name', () => {
    expect(missingIndexes(specCatalog(names).indexes, names)).toEqual([]);
    expect(missingIndexes(specCatalog(names, { indexes: false }).indexes, names)).toEqual([names.readyIndex, names.createdIndex, names.deadLetterIndex, names.orderingIndex]);
    const upper = indexRows(names.readyIndex.toUpperCase(), ['queue', 'priority DESC', 'available_at', 'created_at']);
    expect(missingIndexes(upper, names)).toEqual([names.createdIndex, names.deadLetterIndex, names.orderingIndex]);
  });

  it('the ordering key column (version 15) is nvarchar(200) BIN2 NULL; its filtered index (version 16) is required by name when self-created', () => {
    const base = specCatalog(names);
    for (const mode of [OPERATOR, AUTO]) expect(evaluateTransportCatalog(base, names, mode)).toMatchObject({ problems: [], warnings: [] });
    const without = { ...base, columns: base.columns.filter((c) => c.name !== 'ordering_key') };
    expect(evaluateTransportCatalog(without, names, AUTO).problems).toEqual([`${TABLE} is missing the column 'ordering_key'; expected nvarchar(200) NULL.`]);
    const folded = { ...base, columns: base.columns.map((c) => (c.name === 'ordering_key' ? { ...c, collation_name: 'SQL_Latin1_General_CP1_CI_AS' } : c)) };
    expect(evaluateTransportCatalog(folded, names, OPERATOR).problems[0]).toMatch(/ordering_key.*expected COLLATE Latin1_General_100_BIN2/);
    const noIndex = { ...base, indexes: base.indexes.filter((i) => i.index_name !== names.orderingIndex) };
    expect(evaluateIndexes(noIndex.indexes, names)).toEqual([`expected the index [${names.orderingIndex}] on ${TABLE} to exist after schema creation, but it does not.`]);
    const wrong = withIndex(base, names.orderingIndex, indexRows(names.orderingIndex, ['queue', 'ordering_key'], { has_filter: true }));
    expect(evaluateIndexes(wrong.indexes, names)[0]).toMatch(/cannot serve the claim's ordering-key probe: .*found \(queue, ordering_key\)/);
    expect(hasUsableOrderingIndex(indexRows('mine', ['queue', 'ordering_key', 'created_at', 'id']))).toBe(true);
    expect(hasUsableOrderingIndex(indexRows('mine', ['queue', 'ordering_key', 'created_at', 'id'], { is_disabled: true }))).toBe(false);
  });
});
