// The SQL Server migration runner's conversation with the server (a fake pool; no SQL Server here): one
// transaction per version with the applock first, the version recorded in it; today's databases recorded as
// version 1 without running it; a newer database refused and rolled back; status reads only.
import { describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { silentLogger } from '../../shared/log';
import { channelNames, transportNames } from '../../shared/sql/identifiers';
import { schemaNames } from '../../shared/stores/schema-names';
import { sqlServerMigrations, sqlServerRunnerStatements } from '../../shared/stores/sqlserver/migrations';
import { SqlServerMigrator } from '../../shared/stores/sqlserver/migrator';
import { checkMigrations } from '../../shared/stores/migration-plan';
import { poolHolderFor } from '../../shared/stores/sqlserver/pool-guard';
import { catalogRecordsets, FakePool, isCatalogQuery, specCatalog, type FakeCall } from './sqlserver.fakes';

const names = schemaNames(transportNames('dbo', 'jobs', 'sqlserver'), channelNames('dbo', DEFAULT_CHANNEL_TABLES, 'sqlserver'), 'sqlserver');
const r = sqlServerRunnerStatements(names);
const versions = sqlServerMigrations(names);
const [v1, v2, v3, v4, v5, v6, , , , , v11, , , , , , , v18] = versions;
const v = (version: number) => versions.find((m) => m.version === version)!;
const LATEST = versions.length;
const ALL = versions.map((v) => v.version);
const recordsFrom = (from: number) => versions.filter((v) => v.version >= from).map((v) => ({ version: v.version, name: v.name }));

/** A server with a migrations table (or not), recorded versions, and the version-1 tables it has. */
function server(state: { table: boolean; recorded: number[]; tables: number }) {
  const records: Array<{ version: unknown; name: unknown }> = [];
  const pool = new FakePool((call: FakeCall) => {
    if (call.text === r.migrationsTableExists.text) return [[{ present: state.table }]];
    if (call.text === r.recordedVersions.text) return [state.recorded.map((version) => ({ version }))];
    if (call.text === r.baselineTables.text) return [r.baselineTableNames.slice(0, state.tables).map((name) => ({ name }))];
    if (isCatalogQuery(call)) return catalogRecordsets(specCatalog(names.transport));
    if (call.text === r.ensureMigrationsTable.text) state.table = true;
    if (call.text === r.recordVersion.text) {
      records.push({ version: call.inputs.version!.value, name: call.inputs.name!.value });
      state.recorded.push(Number(call.inputs.version!.value));
    }
    return [[]];
  });
  const migrator = new SqlServerMigrator(poolHolderFor(pool.asPool(), silentLogger), names);
  return { pool, migrator, records };
}

/** Version 1's tables all there, nothing recorded, the transport table's catalog as given. */
function unrecordedWithCatalog(catalog: ReturnType<typeof specCatalog>) {
  const pool = new FakePool((call: FakeCall) => {
    if (call.text === r.migrationsTableExists.text) return [[{ present: false }]];
    if (call.text === r.baselineTables.text) return [r.baselineTableNames.map((name) => ({ name }))];
    if (isCatalogQuery(call)) return catalogRecordsets(catalog);
    return [[]];
  });
  return new SqlServerMigrator(poolHolderFor(pool.asPool(), silentLogger), names);
}

const label = (c: FakeCall) =>
  c.text === r.lock.text ? 'lock' : c.text === r.tableLock.text ? 'table lock' : c.text === r.ensureMigrationsTable.text ? 'ensure table' : c.text === r.recordedVersions.text ? 'read versions'
    : c.text === r.recordVersion.text ? 'record' : c.text === r.migrationsTableExists.text ? 'table exists?' : c.text === r.baselineTables.text ? 'v1 tables?'
    : isCatalogQuery(c) ? 'catalog' : versions.flatMap((m) => m.statements.map((s) => [s.text, `v${m.version}: ${s.name}`])).find(([t]) => t === c.text)?.[1] ?? c.text;

describe('SQL Server migration runner', () => {
  it('a fresh database: each version in its own transaction, the applock first, the record last', async () => {
    const { pool, migrator, records } = server({ table: false, recorded: [], tables: 0 });
    expect(await migrator.apply()).toEqual({ from: 0, to: LATEST, baselineRecorded: false, applied: ALL });
    // a transaction per required version; a deferrable one takes three (find it, build it, record it), version 23 two
    // (its walk needs none); then the last look
    const deferrable = versions.filter((m) => m.deferrable);
    const transactions = versions.length - deferrable.length + deferrable.reduce((n, m) => n + (m.statements.some((x) => !x.autocommit) ? 3 : 2), 0) + 1;
    expect(pool.events).toEqual(Array.from({ length: transactions }, () => ['begin', 'commit']).flat());
    const inTx = pool.calls.filter((c) => c.inTransaction).map(label);
    expect(inTx).toEqual([
      'lock', 'ensure table', 'read versions', ...v1!.statements.map((s) => `v1: ${s.name}`), 'record',
      'lock', 'ensure table', 'read versions', 'v2: create subscriptions table', 'record',
      'lock', 'ensure table', 'read versions', ...v3!.statements.map((s) => `v3: ${s.name}`), 'record',
      // H3: the column's Sch-M ends with version 4's commit, before version 5 builds the index
      'lock', 'ensure table', 'read versions', 'v4: add transport dead_letter_source column', 'record',
      'lock', 'ensure table', 'read versions', 'v5: create transport dead-letter index', 'record',
      // version 6 re-creates version 3's procedures with the same text (the label finds version 3's names)
      'lock', 'ensure table', 'read versions', ...v6!.statements.map((s) => `v3: ${s.name}`), 'record',
      'lock', 'ensure table', 'read versions', 'v7: create flow state table', 'v7: create flow state expires index', 'v7: create flow state list index', 'record',
      'lock', 'ensure table', 'read versions', 'v8: create schedules table', 'v8: create schedules due index', 'record',
      'lock', 'ensure table', 'read versions', 'v9: create queue state table', 'record',
      'lock', 'ensure table', 'read versions', 'v10: create dedup table', 'v10: create dedup window index', 'record',
      'lock', 'ensure table', 'read versions', ...v11!.statements.map((s) => `v11: ${s.name}`), 'record',
      'lock', 'ensure table', 'read versions', 'v12: add queue state limit columns', 'record',
      // the priority column's Sch-M ends with version 13's commit, before version 14 builds the index
      'lock', 'ensure table', 'read versions', 'v13: add transport priority column', 'record',
      'lock', 'ensure table', 'read versions', 'v14: create transport priority ready index', 'v14: drop transport legacy ready index', 'record',
      // the ordering key's column commits (its Sch-M ends) before version 16 builds its index
      'lock', 'ensure table', 'read versions', 'v15: add transport ordering_key column', 'record',
      'lock', 'ensure table', 'read versions', 'v16: create transport ordering index', 'record',
      'lock', 'ensure table', 'read versions', 'v17: create lease roster table', 'record',
      'lock', 'ensure table', 'read versions', ...v18!.statements.map((s) => `v18: ${s.name}`), 'record',
      'lock', 'ensure table', 'read versions', 'v19: add history priority and ordering key columns', 'record',
      'lock', 'ensure table', 'read versions', ...v(20).statements.map((s) => `v20: ${s.name}`), 'record',
      'lock', 'ensure table', 'read versions', ...v(21).statements.map((s) => `v21: ${s.name}`), 'record',
      'lock', 'ensure table', 'read versions', 'v22: alter enqueue procedure: ready set', 'record',
      // deferrable (M4): the step finds it under the schema applock and lets go; version 23's walk runs in autocommit
      // (outside this list); each build holds the table applock, then the record takes the schema applock briefly
      'lock', 'ensure table', 'read versions', 'lock', 'read versions', 'record',
      ...[24, 25, 26, 27].flatMap((n) => ['lock', 'ensure table', 'read versions', 'table lock', `v${n}: ${v(n).statements[0]!.name}`, 'lock', 'read versions', 'record']),
      'lock', 'ensure table', 'read versions', 'table lock', 'v28: drop transport priority ready index', 'v28: drop transport ordering index', 'lock', 'read versions', 'record',
      'lock', 'ensure table', 'read versions', 'v29: create flow steps table', 'record',
      'lock', 'ensure table', 'read versions',
    ]);
    // the filing walk commits batch by batch: it runs outside any transaction
    const walk = pool.calls.find((c) => c.text === v(23).statements[0]!.text)!;
    expect([walk.inTransaction, walk.requestTimeout]).toEqual([false, 3_600_000]);
    expect(pool.calls.find((c) => c.text === r.tableLock.text)!.requestTimeout).toBe(35_000);
    expect(records).toEqual([
      { version: 1, name: 'transport and channel tables' },
      { version: 2, name: 'topic subscriptions table' },
      { version: 3, name: 'publish procedures (outbox)' },
      { version: 4, name: 'dead-letter source column' },
      { version: 5, name: 'dead-letter source index' },
      { version: 6, name: 'publish procedures: per-id lock' },
      { version: 7, name: 'durable flow state table' },
      { version: 8, name: 'schedules table' },
      { version: 9, name: 'queue state table' },
      { version: 10, name: 'dedup keys table' },
      { version: 11, name: 'job history table' },
      { version: 12, name: 'queue limits and backoff' },
      { version: 13, name: 'job priority column' },
      { version: 14, name: 'job priority ready index' },
      { version: 15, name: 'ordering key column' },
      { version: 16, name: 'ordering index' },
      { version: 17, name: 'lease roster table' },
      { version: 18, name: 'publish procedures: priority and ordering key' },
      { version: 19, name: 'history priority and ordering key' },
      ...recordsFrom(20),
    ]);
    // the lock batch outlives its own 60 s applock wait; migration batches get the index-build hour
    const lock = pool.calls.find((c) => c.text === r.lock.text)!;
    expect(lock.requestTimeout).toBe(90_000);
    expect(pool.calls.find((c) => c.text === v2!.statements[0]!.text)!.requestTimeout).toBe(3_600_000);
    // catalog probes stay outside the DDL transactions
    expect(pool.calls.filter((c) => c.inTransaction).some((c) => isCatalogQuery(c) || c.text === r.baselineTables.text)).toBe(false);
  });

  it("today's database (version-1 tables, verified, no record): recorded as version 1 without running it, then version 2", async () => {
    const { pool, migrator, records } = server({ table: false, recorded: [], tables: 4 });
    expect(await migrator.apply()).toEqual({ from: 1, to: LATEST, baselineRecorded: true, applied: ALL.slice(1) });
    expect(records).toEqual([{ version: 1, name: 'transport and channel tables (baseline: found in place)' }, ...recordsFrom(2)]);
    expect(pool.calls.some((c) => v1!.statements.some((s) => s.text === c.text))).toBe(false);
  });

  it('a newer database is refused before any transaction, nothing recorded', async () => {
    const { pool, migrator, records } = server({ table: true, recorded: [...ALL, LATEST + 1], tables: 4 });
    await expect(migrator.apply()).rejects.toThrow(new RegExp(`is at version ${LATEST + 1} \\(table jobs_migrations\\), newer than this app, which knows versions up to ${LATEST}`));
    expect(pool.events).toEqual([]);
    expect(records).toEqual([]);
  });

  it('an up-to-date database: apply reads the versions and takes no lock', async () => {
    const { pool, migrator } = server({ table: true, recorded: [...ALL], tables: 4 });
    expect(await migrator.apply()).toEqual({ from: LATEST, to: LATEST, baselineRecorded: false, applied: [] });
    expect(pool.events).toEqual([]);
    expect(pool.calls.map(label)).toEqual(['table exists?', 'read versions']);
  });

  it('status reads only: no transaction, no lock, no table created', async () => {
    const { pool, migrator } = server({ table: false, recorded: [], tables: 4 });
    const plan = await migrator.status();
    expect(plan).toMatchObject({ current: 1, recordBaseline: true, latest: LATEST });
    expect(plan.pending.map((m) => m.version)).toEqual(ALL.slice(1));
    expect(pool.events).toEqual([]);
    expect(pool.calls.map(label)).toEqual(['table exists?', 'v1 tables?', 'catalog']);
  });

  it('a database from before versioning (no dead_letter_source column, no dead-letter index) is recorded as version 1 (H1)', async () => {
    const preVersioning = specCatalog(names.transport);
    preVersioning.columns = preVersioning.columns.filter((c) => c.name !== 'dead_letter_source');
    preVersioning.indexes = preVersioning.indexes.filter((i) => i.index_name !== names.transport.deadLetterIndex);
    const migrator = unrecordedWithCatalog(preVersioning);
    const plan = await migrator.status();
    expect(plan.recordBaseline).toBe(true);
    expect(plan.pending.map((m) => m.version)).toEqual(ALL.slice(1));
  });

  it('at baseline a dead_letter_source column that is there must still have its shape (H1)', async () => {
    const wrong = specCatalog(names.transport);
    wrong.columns = wrong.columns.map((c) => (c.name === 'dead_letter_source' ? { ...c, is_computed: false } : c));
    const migrator = unrecordedWithCatalog(wrong);
    await expect(migrator.status()).rejects.toThrow(/dead_letter_source.*expected a computed column/);
  });

  it('a server without the UTF-8 collation (SQL Server 2016/2017) is refused before any DDL, naming what is needed (M2)', async () => {
    const { pool, migrator } = server({ table: false, recorded: [], tables: 0 });
    pool.server = { product_version: '14.0.3465.1', engine_edition: 2, utf8_code_page: null };
    const needs = /product version 14\.0\.3465\.1\) lacks the UTF-8 collation Latin1_General_100_BIN2_UTF8.*SQL Server 2019 \(15\.x\) or newer, Azure SQL Database/;
    await expect(migrator.status()).rejects.toThrow(needs);
    await expect(migrator.apply()).rejects.toThrow(needs);
    expect(pool.events).toEqual([]);
    expect(pool.calls).toEqual([]);
  });

  it('the schema gate\'s apply (required versions only) stops before the first deferrable version, and takes no lock when only deferrable ones are pending', async () => {
    const { pool, migrator, records } = server({ table: true, recorded: ALL.filter((n) => n <= 19), tables: 4 });
    // the release that ended with deferrable versions 23-28 (29, required, came later: the next test)
    Object.assign(migrator, { migrations: checkMigrations(migrator.migrations.filter((m) => m.version <= 28)) });
    expect(await migrator.apply({ requiredOnly: true })).toEqual({ from: 19, to: 22, baselineRecorded: false, applied: [20, 21, 22] });
    expect(records.map((x) => x.version)).toEqual([20, 21, 22]);
    expect(pool.calls.some((c) => c.text === r.tableLock.text)).toBe(false);
    pool.calls.length = 0;
    pool.events.length = 0;
    expect(await migrator.apply({ requiredOnly: true })).toEqual({ from: 22, to: 22, baselineRecorded: false, applied: [] });
    expect(pool.events).toEqual([]);
    expect(pool.calls.map(label)).toEqual(['table exists?', 'read versions']);
    // the deferrable ones, when asked for all
    expect((await migrator.apply()).applied).toEqual([23, 24, 25, 26, 27, 28]);
  });

  it('a required version released after deferrable ones: the gate builds those first, in order, then applies it', async () => {
    const { migrator, records } = server({ table: true, recorded: ALL.filter((n) => n <= 19), tables: 4 });
    const later = { version: ALL.length + 1, name: 'a later required version', statements: [{ name: 'later', text: 'SELECT 1 AS later' }] };
    Object.assign(migrator, { migrations: checkMigrations([...migrator.migrations, later]) });
    expect((await migrator.apply({ requiredOnly: true })).applied).toEqual([...ALL.filter((n) => n > 19), later.version]);
    expect(records.map((x) => x.version)).toEqual([...ALL.filter((n) => n > 19), later.version]);
  });

  it('a deferrable build that fails (its table applock held by another session) is rolled back and not recorded', async () => {
    const { pool, migrator, records } = server({ table: true, recorded: ALL.filter((n) => n <= 23), tables: 4 });
    const handler = pool.handler;
    pool.handler = (call) => {
      if (call.text === r.tableLock.text) throw new Error('AsyncResponse schema migrations could not take the table lock');
      return handler(call);
    };
    await expect(migrator.apply()).rejects.toThrow(/could not take the table lock/);
    expect(records).toEqual([]);
    expect(pool.events.slice(-2)).toEqual(['begin', 'rollback']);
    expect(pool.calls.some((c) => c.text === v(24).statements[0]!.text)).toBe(false);
  });

  it('the server is probed once per migrator, not on every status', async () => {
    const { pool, migrator } = server({ table: true, recorded: [...ALL], tables: 4 });
    await migrator.status();
    await migrator.apply();
    expect(pool.serverProbes).toBe(1);
  });
});

