import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import {
  evaluateIndexes,
  evaluateTransportCatalog,
  hasUsableDeadLetterIndex,
  missingIndexes,
  readySetIndexWarnings,
  renderType,
  type CatalogColumnRow,
  type TransportCatalog,
} from '../../shared/stores/sqlserver/verify';
import { absentCatalog, filteredIndexRows, indexRows, readySetIndexRows, specCatalog } from './sqlserver.fakes';

const names = transportNames('dbo', 'asyncresponse_transport_messages', 'sqlserver');
const TABLE = '[dbo].[asyncresponse_transport_messages]';
const AUTO = { autoCreate: true };
const OPERATOR = { autoCreate: false };
const READY_SET_ROWS = readySetIndexRows(names);

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

  it('operator path: a missing ready-set index is a warning with the statement to run, never an error', () => {
    const none = specCatalog(names, { indexes: false });
    const result = evaluateTransportCatalog(none, names, OPERATOR);
    expect(result.problems).toEqual([]);
    expect(result.warnings).toHaveLength(5);
    expect(result.warnings[0]).toContain(`has no index serving the ready set's ready set`);
    expect(result.warnings[0]).toContain(
      'CREATE INDEX [asyncresponse_transport_messages_ready_set_idx] ON [dbo].[asyncresponse_transport_messages] (queue, priority DESC, available_at, seq) WHERE state IS NULL AND lock_id IS NULL WITH (ONLINE = ON);',
    );
    expect(result.warnings[1]).toContain('CREATE INDEX [asyncresponse_transport_messages_scheduled_idx] ON [dbo].[asyncresponse_transport_messages] (queue, available_at) WHERE state = 1');
    expect(result.warnings[2]).toContain(
      'CREATE INDEX [asyncresponse_transport_messages_leased_idx] ON [dbo].[asyncresponse_transport_messages] (queue, locked_until) INCLUDE (lock_id) WHERE lock_id IS NOT NULL',
    );
    expect(result.warnings[3]).toContain('CREATE INDEX [asyncresponse_transport_messages_key_order_idx] ON [dbo].[asyncresponse_transport_messages] (queue, ordering_key, seq) WHERE ordering_key IS NOT NULL');
    expect(result.warnings[4]).toContain('CREATE INDEX [asyncresponse_transport_messages_dead_letter_idx] ON [dbo].[asyncresponse_transport_messages] (queue, dead_letter_source)');
  });

  it('operator path: the dead-letter index may have any name and more keys, but must lead with (queue, dead_letter_source)', () => {
    const keys = ['queue', 'dead_letter_source'];
    expect(hasUsableDeadLetterIndex(indexRows('mine', keys))).toBe(true);
    expect(hasUsableDeadLetterIndex(indexRows('mine', [...keys, 'created_at']))).toBe(true);
    expect(hasUsableDeadLetterIndex(indexRows('x', ['dead_letter_source', 'queue']))).toBe(false);
    expect(hasUsableDeadLetterIndex(indexRows('x', ['queue']))).toBe(false);
    expect(hasUsableDeadLetterIndex(indexRows('x', keys, { has_filter: true }))).toBe(false);
    expect(hasUsableDeadLetterIndex(indexRows('x', keys, { is_disabled: true }))).toBe(false);
    const base = { ...specCatalog(names, { indexes: false }), indexes: READY_SET_ROWS };
    expect(evaluateTransportCatalog(base, names, OPERATOR).warnings).toHaveLength(1);
    expect(evaluateTransportCatalog(withIndex(base, 'mine', indexRows('mine', keys)), names, OPERATOR).warnings).toEqual([]);
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

  it('operator path: a ready-set index may have any name, but must be an enabled rowstore index on its keys, with its included columns and filter', () => {
    const ready = (rows: TransportCatalog['indexes']) => readySetIndexWarnings([...READY_SET_ROWS.filter((r) => r.index_name !== names.readySetIndex), ...rows], names);
    const keys = ['queue', 'priority DESC', 'available_at', 'seq'];
    const filter = '([state] IS NULL AND [lock_id] IS NULL)';
    expect(ready(filteredIndexRows('my_ready', keys, filter))).toEqual([]);
    expect(ready(filteredIndexRows('my_ready', keys, filter).map((r) => ({ ...r, type_desc: 'CLUSTERED' })))).toEqual([]);
    // the claim index of before the ready set (version 14) serves no range: unfiltered, ordered by created_at
    expect(ready(indexRows('old', ['queue', 'priority DESC', 'available_at', 'created_at']))).toHaveLength(1);
    expect(ready(indexRows('x', keys))).toHaveLength(1); // unfiltered
    expect(ready(filteredIndexRows('x', keys, '([state] IS NULL)'))).toHaveLength(1); // another filter
    expect(ready(filteredIndexRows('x', ['queue', 'available_at', 'priority DESC', 'seq'], filter))).toHaveLength(1);
    expect(ready(filteredIndexRows('x', keys, filter).map((r) => ({ ...r, is_disabled: true })))).toHaveLength(1);
    expect(ready(filteredIndexRows('x', keys, filter).map((r) => ({ ...r, is_unique: true })))).toHaveLength(1);
    // a catalog that hides the filter text (older fakes, limited views) is judged by has_filter and the keys
    expect(ready(filteredIndexRows('x', keys, filter).map((r) => ({ ...r, filter_definition: null })))).toEqual([]);
    // the leased index must carry lock_id (the lost-claim hand-back and the lapse test read it in the seek)
    const leased = (rows: TransportCatalog['indexes']) => readySetIndexWarnings([...READY_SET_ROWS.filter((r) => r.index_name !== names.leasedIndex), ...rows], names);
    expect(leased(filteredIndexRows('mine', ['queue', 'locked_until'], '([lock_id] IS NOT NULL)', ['lock_id', 'attempts']))).toEqual([]);
    expect(leased(filteredIndexRows('mine', ['queue', 'locked_until'], '([lock_id] IS NOT NULL)'))[0]).toMatch(/serving the ready set's leases.*INCLUDE \(lock_id\)/);
  });

  it('auto-created path: every index must exist by name with exactly the declared shape', () => {
    const base = specCatalog(names);
    const created = names.createdIndex;
    const check = (rows: TransportCatalog['indexes']) => evaluateIndexes(withIndex(base, created, rows).indexes, names);
    expect(check(indexRows(created, ['created_at']))).toEqual([]);
    expect(check(indexRows(created, ['created_at'], { type_desc: 'CLUSTERED' }))).toEqual([]);
    expect(check(indexRows(created, ['queue', 'created_at']))[0]).toMatch(/it is keyed \(queue, created_at\)/);
    expect(check(indexRows(created, ['created_at'], { is_unique: true }))[0]).toMatch(/it is UNIQUE/);
    expect(check(indexRows(created, ['created_at'], { has_filter: true }))[0]).toMatch(/it is filtered/);
    expect(check([])[0]).toBe(`expected the index [${created}] on ${TABLE} to exist after schema creation, but it does not.`);
    const scheduled = names.scheduledIndex;
    const bent = (rows: TransportCatalog['indexes']) => evaluateIndexes(withIndex(base, scheduled, rows).indexes, names);
    expect(bent([])).toEqual([`expected the index [${scheduled}] on ${TABLE} to exist after schema creation, but it does not.`]);
    expect(bent(indexRows(scheduled, ['queue', 'available_at']))[0]).toMatch(
      new RegExp(`the index \\[${scheduled}\\] on .* cannot serve the store: expected a rowstore index \\(queue, available_at\\) WHERE state = 1; found \\(queue, available_at\\) unfiltered`),
    );
    expect(evaluateTransportCatalog(withIndex(base, created, []), names, OPERATOR).problems).toEqual([]);
    // behind the schema gate the indexes are the migrations' (deferrable versions may still build them): warnings
    const building = withIndex(base, scheduled, []);
    expect(evaluateTransportCatalog(building, names, { autoCreate: true, indexesFromMigrations: true })).toMatchObject({ problems: [], warnings: [expect.stringMatching(/scheduled rows/)] });
  });

  it('reports which declared indexes are missing, by name', () => {
    expect(missingIndexes(specCatalog(names).indexes, names)).toEqual([]);
    expect(missingIndexes(specCatalog(names, { indexes: false }).indexes, names)).toEqual([
      names.readySetIndex,
      names.scheduledIndex,
      names.leasedIndex,
      names.keyOrderIndex,
      names.createdIndex,
      names.deadLetterIndex,
    ]);
    const upper = indexRows(names.readySetIndex.toUpperCase(), ['queue', 'priority DESC', 'available_at', 'seq']);
    expect(missingIndexes(upper, names)).toEqual([names.scheduledIndex, names.leasedIndex, names.keyOrderIndex, names.createdIndex, names.deadLetterIndex]);
  });

  it('the ordering key column (version 15) is nvarchar(200) BIN2 NULL', () => {
    const base = specCatalog(names);
    for (const mode of [OPERATOR, AUTO]) expect(evaluateTransportCatalog(base, names, mode)).toMatchObject({ problems: [], warnings: [] });
    const without = { ...base, columns: base.columns.filter((c) => c.name !== 'ordering_key') };
    expect(evaluateTransportCatalog(without, names, AUTO).problems).toEqual([`${TABLE} is missing the column 'ordering_key'; expected nvarchar(200) NULL.`]);
    const folded = { ...base, columns: base.columns.map((c) => (c.name === 'ordering_key' ? { ...c, collation_name: 'SQL_Latin1_General_CP1_CI_AS' } : c)) };
    expect(evaluateTransportCatalog(folded, names, OPERATOR).problems[0]).toMatch(/ordering_key.*expected COLLATE Latin1_General_100_BIN2/);
  });

  it('the ready set columns (version 20): state tinyint NULL, seq bigint NULL defaulting to the publish sequence; left to version 20 when recording version 1', () => {
    const base = specCatalog(names);
    const without = { ...base, columns: base.columns.filter((c) => c.name !== 'state' && c.name !== 'seq') };
    expect(evaluateTransportCatalog(without, names, AUTO).problems).toEqual([
      `${TABLE} is missing the column 'state'; expected tinyint NULL.`,
      `${TABLE} is missing the column 'seq'; expected bigint NULL.`,
    ]);
    expect(evaluateTransportCatalog(without, names, { ...OPERATOR, versionOneOnly: true }).problems).toEqual([]);
    const bend = (name: string, change: Partial<CatalogColumnRow>) => withColumn(base, name, change);
    expect(evaluateTransportCatalog(bend('state', { type_name: 'smallint', max_length: 2, precision: 5 }), names, AUTO).problems[0]).toMatch(
      /column 'state'.*expected tinyint NULL; found smallint NULL/,
    );
    expect(evaluateTransportCatalog(bend('seq', { default_object_id: 0, default_definition: null }), names, AUTO).problems[0]).toBe(
      `column 'seq' of ${TABLE} has no default; expected DEFAULT (NEXT VALUE FOR [dbo].[asyncresponse_transport_messages_seq]).`,
    );
    expect(evaluateTransportCatalog(bend('seq', { default_definition: '(NEXT VALUE FOR [dbo].[other_seq])' }), names, AUTO).problems[0]).toMatch(/column 'seq'.*found DEFAULT \(NEXT VALUE FOR \[dbo\]\.\[other_seq\]\)/);
  });
});
