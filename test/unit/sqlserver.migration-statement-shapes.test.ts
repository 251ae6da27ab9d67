// Pins every T-SQL batch of the SQL Server schema versions (migrations.ts): the runner's lock, table and
// version statements, version 1 = exactly the batches today's stores run, version 2 = the subscriptions table,
// version 3 = the publish procedures (their text: sqlserver.outbox-statement-shapes.test.ts).
import { describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { channelNames, transportNames } from '../../shared/sql/identifiers';
import { schemaNames } from '../../shared/stores/schema-names';
import { channelDdl } from '../../shared/stores/sqlserver/channel-statements';
import {
  printSqlServerMigrations,
  sqlServerMigrations,
  sqlServerMigrationStatements,
  sqlServerRunnerStatements,
} from '../../shared/stores/sqlserver/migrations';
import {
  createIndexIfMissing,
  DEAD_LETTER_SOURCE_DEFINITION,
  ddlBuildIndexes,
  ddlPhase1,
  LEGACY_READY_INDEX_KEYS,
  type Statement,
} from '../../shared/stores/sqlserver/statements';
import { PRINTED_SCRIPT_SET_OPTIONS } from '../../shared/stores/sqlserver/migrations';
import { length, typeName } from '../support/sqlserver-statements';

const names = schemaNames(transportNames('dbo', 'jobs', 'sqlserver'), channelNames('dbo', DEFAULT_CHANNEL_TABLES, 'sqlserver'), 'sqlserver');
const r = sqlServerRunnerStatements(names);
const all = sqlServerMigrations(names);
const [v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19] = all;
const v = (version: number) => all.find((m) => m.version === version)!;

/** createIndexOnlineIfMissing's text for `create` (reviews M3, M4): low-priority wait, online, or offline up to a row count. */
function online(index: string, create: string, table = '[dbo].[jobs]'): string[] {
  return [
    `IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'${table}', N'U') AND name = N'${index}')`,
    'BEGIN',
    "    IF CAST(SERVERPROPERTY('EngineEdition') AS int) IN (5, 8) OR (CAST(SERVERPROPERTY('EngineEdition') AS int) = 3 AND CAST(SERVERPROPERTY('ProductMajorVersion') AS int) >= 16)",
    `        EXEC (N'${create} WITH (ONLINE = ON (WAIT_AT_LOW_PRIORITY (MAX_DURATION = 1 MINUTES, ABORT_AFTER_WAIT = SELF)));');`,
    "    ELSE IF CAST(SERVERPROPERTY('EngineEdition') AS int) IN (3, 5, 8)",
    `        EXEC (N'${create} WITH (ONLINE = ON);');`,
    '    ELSE',
    '    BEGIN',
    "        IF CAST(SERVERPROPERTY('EngineEdition') AS int) NOT IN (3, 5, 8)",
    `            AND (SELECT SUM(p.rows) FROM sys.partitions AS p WHERE p.object_id = OBJECT_ID(N'${table}', N'U') AND p.index_id IN (0, 1)) > 100000`,
    `            THROW 51010, N'AsyncResponse schema: building the index [${index}] on ${table} reads or rewrites the whole table while it is locked on this edition (no online schema change), and the table holds more than 100000 rows, so it is not done automatically. Run it in a maintenance window, then run npm run schema -- apply again: ${create};', 1;`,
    `        ${create};`,
    '    END',
    'END',
  ];
}

describe('SQL Server schema-version statement shapes', () => {
  it('names: the migrations and subscriptions tables take the transport table as their base', () => {
    expect(names.migrationsTable).toBe('jobs_migrations');
    expect(names.subscriptionsTable).toBe('jobs_subscriptions');
  });

  it('lock: XACT_ABORT, then the schema applock every component takes, owned by the transaction, 60 s at most', () => {
    expect(r.lock.text).toBe(
      [
        'SET XACT_ABORT ON;',
        'DECLARE @lock_result int;',
        "EXEC @lock_result = sp_getapplock @Resource = N'asyncresponse:ddl:dbo', @LockMode = 'Exclusive',",
        "    @LockOwner = 'Transaction', @LockTimeout = 60000;",
        'IF @lock_result < 0',
        "    THROW 51000, N'AsyncResponse schema migrations could not take the schema DDL lock asyncresponse:ddl:dbo within 60000 ms.', 1;",
      ].join('\n'),
    );
    expect(r.lock.params).toEqual({});
  });

  it('migrations table: version int PK, name, applied_at on the database clock, behind guards', () => {
    expect(r.ensureMigrationsTable.text).toBe(
      [
        "IF SCHEMA_ID(N'dbo') IS NULL",
        "    EXEC (N'CREATE SCHEMA [dbo]');",
        "IF OBJECT_ID(N'[dbo].[jobs_migrations]', N'U') IS NULL",
        'BEGIN',
        'CREATE TABLE [dbo].[jobs_migrations] (',
        '    version int NOT NULL PRIMARY KEY,',
        '    name nvarchar(200) NOT NULL,',
        '    applied_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME()',
        ');',
        'END',
      ].join('\n'),
    );
  });

  it('version reads and the record insert, with typed parameters', () => {
    expect(r.migrationsTableExists.text).toBe("SELECT CAST(CASE WHEN OBJECT_ID(@table, N'U') IS NULL THEN 0 ELSE 1 END AS bit) AS present;");
    expect([typeName(r.migrationsTableExists as Statement, 'table'), length(r.migrationsTableExists as Statement, 'table')]).toEqual(['NVarChar', 300]);
    expect(r.recordedVersions.text).toBe('SELECT version FROM [dbo].[jobs_migrations] ORDER BY version;');
    expect(r.recordVersion.text).toBe('INSERT INTO [dbo].[jobs_migrations] (version, name, applied_at) VALUES (@version, @name, SYSUTCDATETIME());');
    expect(typeName(r.recordVersion as Statement, 'version')).toBe('Int');
    expect([typeName(r.recordVersion as Statement, 'name'), length(r.recordVersion as Statement, 'name')]).toEqual(['NVarChar', 200]);
    expect(r.baselineTables.text).toBe("SELECT v.name FROM (VALUES (@t1), (@t2), (@t3), (@t4)) AS v(name)\nWHERE OBJECT_ID(v.name, N'U') IS NOT NULL;");
    for (const p of ['t1', 't2', 't3', 't4']) expect(typeName(r.baselineTables as Statement, p)).toBe('NVarChar');
    expect(r.baselineTableNames).toEqual(['[dbo].[jobs]', '[dbo].[asyncresponse_recovery_state]', '[dbo].[asyncresponse_channel_messages]', '[dbo].[asyncresponse_channel_subscribers]']);
  });

  it("version 1 is today's schema: every batch is a block of the stores' own DDL, and together they cover it", () => {
    expect(v1!.name).toBe('transport and channel tables');
    // today's stores build the priority ready index instead of version 1's (version 14 replaces it): that one batch is the legacy block
    const legacyReady = createIndexIfMissing('[dbo].[jobs]', names.transport.legacyReadyIndex, LEGACY_READY_INDEX_KEYS).join('\n');
    const today = [ddlPhase1(names.transport).text, ddlBuildIndexes(names.transport).text, channelDdl(names.channel).text, legacyReady].join('\n');
    expect(v1!.statements.find((st) => st.name === 'create transport ready index')?.text).toBe(legacyReady);
    for (const s of v1!.statements) expect(today, s.name).toContain(s.text);
    const covered = v1!.statements.map((s) => s.text).join('\n');
    for (const object of ['[dbo].[jobs]', 'jobs_ready_idx', 'jobs_created_idx', '[dbo].[asyncresponse_recovery_state]', '[dbo].[asyncresponse_channel_messages]',
      '[dbo].[asyncresponse_channel_subscribers]', 'asyncresponse_channel_messages_ack_seq', 'asyncresponse_recovery_state_expires_idx',
      'asyncresponse_channel_messages_correlation_created_idx', 'asyncresponse_channel_messages_expires_idx', 'asyncresponse_channel_subscribers_expires_idx']) {
      expect(covered).toContain(object);
    }
    expect(covered).not.toContain('sp_getapplock'); // the runner holds the lock around the whole version
  });

  it('version 2: the subscriptions table, exact-compare names, created on the database clock', () => {
    expect(v2!.statements).toEqual([
      {
        name: 'create subscriptions table',
        text: [
          "IF OBJECT_ID(N'[dbo].[jobs_subscriptions]', N'U') IS NULL",
          'BEGIN',
          'CREATE TABLE [dbo].[jobs_subscriptions] (',
          '    topic nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL,',
          '    subscription nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL,',
          '    created_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(),',
          '    PRIMARY KEY (topic, subscription)',
          ');',
          'END',
        ].join('\n'),
      },
    ]);
  });

  it('version 4: the computed source column alone, its Sch-M wait bounded to 5 s (H3)', () => {
    expect(v4).toMatchObject({ version: 4, name: 'dead-letter source column' });
    expect(v4!.statements).toEqual([
      {
        name: 'add transport dead_letter_source column',
        text: [
          'SET LOCK_TIMEOUT 5000;',
          "IF NOT EXISTS (SELECT 1 FROM sys.columns WHERE object_id = OBJECT_ID(N'[dbo].[jobs]', N'U') AND name = N'dead_letter_source')",
          `    ALTER TABLE [dbo].[jobs] ADD dead_letter_source AS ${DEAD_LETTER_SOURCE_DEFINITION};`,
        ].join('\n'),
      },
    ]);
  });

  it('version 13: the priority column alone (smallint NOT NULL DEFAULT 0, metadata-only), its Sch-M wait bounded to 5 s', () => {
    expect(v13).toMatchObject({ version: 13, name: 'job priority column' });
    expect(v13!.statements).toEqual([
      {
        name: 'add transport priority column',
        text: [
          'SET LOCK_TIMEOUT 5000;',
          "IF NOT EXISTS (SELECT 1 FROM sys.columns WHERE object_id = OBJECT_ID(N'[dbo].[jobs]', N'U') AND name = N'priority')",
          'BEGIN',
          // an edition without online schema change rewrites every row: refused above a row count, with the statement (M3)
          "    IF CAST(SERVERPROPERTY('EngineEdition') AS int) NOT IN (3, 5, 8)",
          "        AND (SELECT SUM(p.rows) FROM sys.partitions AS p WHERE p.object_id = OBJECT_ID(N'[dbo].[jobs]', N'U') AND p.index_id IN (0, 1)) > 100000",
          "        THROW 51010, N'AsyncResponse schema: adding the priority column on [dbo].[jobs] reads or rewrites the whole table while it is locked on this edition (no online schema change), and the table holds more than 100000 rows, so it is not done automatically. Run it in a maintenance window, then run npm run schema -- apply again: ALTER TABLE [dbo].[jobs] ADD priority smallint NOT NULL DEFAULT 0;', 1;",
          '    ALTER TABLE [dbo].[jobs] ADD priority smallint NOT NULL DEFAULT 0;',
          'END',
        ].join('\n'),
      },
    ]);
  });

  it('versions 15 and 16: the ordering key column alone (nvarchar(200) BIN2 NULL), then its filtered index online where the edition has it', () => {
    expect(v15).toMatchObject({ version: 15, name: 'ordering key column' });
    expect(v15!.statements.map((st) => st.name)).toEqual(['add transport ordering_key column']);
    expect(v15!.statements[0]!.text).toBe("SET LOCK_TIMEOUT 5000;\nIF COL_LENGTH(N'[dbo].[jobs]', N'ordering_key') IS NULL\n    ALTER TABLE [dbo].[jobs] ADD ordering_key nvarchar(200) COLLATE Latin1_General_100_BIN2 NULL;");
    expect(v16).toMatchObject({ version: 16, name: 'ordering index' });
    expect(v16!.statements[0]!.text).toContain('(queue, ordering_key, created_at, id)');
    expect(v16!.statements[0]!.text).toContain('WHERE ordering_key IS NOT NULL');
  });

  it('version 19: the history columns priority (smallint) and ordering_key (nvarchar(200) BIN2), nullable, each behind its guard, the Sch-M wait bounded', () => {
    expect(v19).toMatchObject({ version: 19, name: 'history priority and ordering key' });
    expect(v19!.statements[0]!.text).toBe(
      [
        'SET LOCK_TIMEOUT 5000;',
        "IF COL_LENGTH(N'[dbo].[jobs_history]', N'priority') IS NULL",
        '    ALTER TABLE [dbo].[jobs_history] ADD priority smallint NULL;',
        "IF COL_LENGTH(N'[dbo].[jobs_history]', N'ordering_key') IS NULL",
        '    ALTER TABLE [dbo].[jobs_history] ADD ordering_key nvarchar(200) COLLATE Latin1_General_100_BIN2 NULL;',
      ].join('\n'),
    );
  });

  it('version 17: the lease roster, a new table keyed (queue BIN2, id, lock_id), built empty behind its guard', () => {
    expect(v17).toMatchObject({ version: 17, name: 'lease roster table' });
    expect(v17!.statements[0]!.text).toBe(
      [
        "IF OBJECT_ID(N'[dbo].[jobs_leases]', N'U') IS NULL",
        'BEGIN',
        'CREATE TABLE [dbo].[jobs_leases] (',
        '    queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL,',
        '    id uniqueidentifier NOT NULL,',
        '    lock_id uniqueidentifier NOT NULL,',
        '    PRIMARY KEY (queue, id, lock_id)',
        ');',
        'END',
      ].join('\n'),
    );
  });

  it("version 14: the claim's index (queue, priority DESC, available_at, created_at) online where the edition has it, then the old ready index is dropped", () => {
    expect(v14).toMatchObject({ version: 14, name: 'job priority ready index' });
    expect(v14!.statements.map((st) => st.name)).toEqual(['create transport priority ready index', 'drop transport legacy ready index']);
    expect(v14!.statements[0]!.text).toBe(
      ['SET LOCK_TIMEOUT 5000;', ...online('jobs_priority_ready_idx', 'CREATE INDEX [jobs_priority_ready_idx] ON [dbo].[jobs] (queue, priority DESC, available_at, created_at)')].join('\n'),
    );
    expect(v14!.statements[1]!.text).toBe(
      [
        'SET LOCK_TIMEOUT 5000;',
        "IF EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[dbo].[jobs]', N'U') AND name = N'jobs_ready_idx')",
        '    DROP INDEX [jobs_ready_idx] ON [dbo].[jobs];',
      ].join('\n'),
    );
  });

  it('version 5: the dead-letter index in a transaction of its own, online where the edition has it (H3)', () => {
    expect(v5).toMatchObject({ version: 5, name: 'dead-letter source index' });
    expect(v5!.statements).toEqual([
      {
        name: 'create transport dead-letter index',
        text: ['SET LOCK_TIMEOUT 5000;', ...online('jobs_dead_letter_idx', 'CREATE INDEX [jobs_dead_letter_idx] ON [dbo].[jobs] (queue, dead_letter_source)')].join('\n'),
      },
    ]);
  });

  it('version 10: the dedup table (BIN2 key of queue and dedup key) and its window index, built empty', () => {
    expect(v10).toMatchObject({ version: 10, name: 'dedup keys table' });
    expect(v10!.statements).toEqual([
      {
        name: 'create dedup table',
        text: [
          "IF OBJECT_ID(N'[dbo].[jobs_dedup]', N'U') IS NULL",
          'BEGIN',
          'CREATE TABLE [dbo].[jobs_dedup] (',
          '    queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL,',
          '    dedup_key nvarchar(201) COLLATE Latin1_General_100_BIN2 NOT NULL,',
          '    job_id uniqueidentifier NOT NULL,',
          '    window_ends_at datetime2 NOT NULL,',
          '    PRIMARY KEY (queue, dedup_key)',
          ');',
          'END',
        ].join('\n'),
      },
      {
        name: 'create dedup window index',
        text: [
          "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[dbo].[jobs_dedup]', N'U') AND name = N'jobs_dedup_window_idx')",
          '    CREATE INDEX [jobs_dedup_window_idx] ON [dbo].[jobs_dedup] (window_ends_at);',
        ].join('\n'),
      },
    ]);
  });

  it('the enumeration lists every batch once, runner first, by unique name (for grammar tests)', () => {
    const all = sqlServerMigrationStatements(names);
    expect(new Set(all.map((s) => s.name)).size).toBe(all.length);
    expect(all.map((s) => s.name).slice(0, 6)).toEqual([
      'runner: lock',
      'runner: tableLock',
      'runner: ensureMigrationsTable',
      'runner: migrationsTableExists',
      'runner: recordedVersions',
      'runner: recordVersion',
    ]);
    expect(all).toHaveLength(7 + sqlServerMigrations(names).reduce((sum, m) => sum + m.statements.length, 0));
    expect(all).toContainEqual({ name: 'v2: create subscriptions table', text: v2!.statements[0]!.text });
    expect(all).toContainEqual({ name: 'v3: create publish topic procedure', text: v3!.statements[2]!.text });
    expect(all).toContainEqual({ name: 'v5: create transport dead-letter index', text: v5!.statements[0]!.text });
    expect(all).toContainEqual({ name: 'v6: create publish topic procedure', text: v6!.statements[2]!.text });
    expect(all).toContainEqual({ name: 'v11: create history correlation index', text: v11!.statements[3]!.text });
    expect(all).toContainEqual({ name: 'v9: create queue state table', text: v9!.statements[0]!.text });
    expect(all).toContainEqual({ name: 'v12: add queue state limit columns', text: v12!.statements[0]!.text });
    expect(all).toContainEqual({ name: 'v13: add transport priority column', text: v13!.statements[0]!.text });
    expect(all).toContainEqual({ name: 'v14: drop transport legacy ready index', text: v14!.statements[1]!.text });
    expect(all).toContainEqual({ name: 'v16: create transport ordering index', text: v16!.statements[0]!.text });
    expect(all).toContainEqual({ name: 'v17: create lease roster table', text: v17!.statements[0]!.text });
    expect(all).toContainEqual({ name: 'v18: alter publish topic procedure: job fields', text: v18!.statements[2]!.text });
    expect(all).toContainEqual({ name: 'v19: add history priority and ordering key columns', text: v19!.statements[0]!.text });
    expect(all).toContainEqual({ name: 'v28: drop transport ordering index', text: v(28).statements[1]!.text });
    expect(all.at(-1)).toEqual({ name: 'v29: create flow steps table', text: v(29).statements[0]!.text });
  });

  it('the printed script: one transaction per version under the applock, each recorded if not yet', () => {
    const script = printSqlServerMigrations(names);
    // every version's record under the schema applock; a deferrable version's builds before it under the table applock
    expect(script.match(/BEGIN TRANSACTION;\nSET XACT_ABORT ON;\nDECLARE @lock_result int;\nEXEC @lock_result = sp_getapplock @Resource = N'asyncresponse:ddl:dbo'/g)).toHaveLength(29);
    expect(script.match(/BEGIN TRANSACTION;\nSET XACT_ABORT ON;\nDECLARE @lock_result int;\nEXEC @lock_result = sp_getapplock @Resource = N'asyncresponse:ddl:dbo\.jobs'/g)).toHaveLength(5);
    expect(script).toContain("IF NOT EXISTS (SELECT 1 FROM [dbo].[jobs_migrations] WHERE version = 2)\n    INSERT INTO [dbo].[jobs_migrations] (version, name) VALUES (2, N'topic subscriptions table');\nCOMMIT;\nGO");
    expect(script.indexOf('-- version 1:')).toBeLessThan(script.indexOf('-- version 2:'));
    expect(script.indexOf('-- version 2:')).toBeLessThan(script.indexOf('-- version 3: publish procedures (outbox)'));
    expect(script.indexOf('-- version 3:')).toBeLessThan(script.indexOf('-- version 4: dead-letter source column'));
    expect(script.indexOf('-- version 4:')).toBeLessThan(script.indexOf('-- version 5: dead-letter source index'));
    expect(script.indexOf('-- version 6:')).toBeLessThan(script.indexOf('-- version 7: durable flow state table'));
    expect(script).toContain("INSERT INTO [dbo].[jobs_migrations] (version, name) VALUES (7, N'durable flow state table');");
  });

  it('version 11: the job history table (BIN2 queue and correlation id, no unique id), clustered on (queue, completed_at, id), and its two other indexes', () => {
    expect(v11).toMatchObject({ version: 11, name: 'job history table' });
    expect(v11!.statements.map((s) => s.name)).toEqual([
      'create history table',
      'create history queue index',
      'create history id index',
      'create history correlation index',
    ]);
    expect(v11!.statements[0]!.text).toBe(
      [
        "IF OBJECT_ID(N'[dbo].[jobs_history]', N'U') IS NULL",
        'BEGIN',
        'CREATE TABLE [dbo].[jobs_history] (',
        '    id uniqueidentifier NOT NULL,',
        '    queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL,',
        '    state nvarchar(20) COLLATE Latin1_General_100_BIN2 NOT NULL,',
        '    correlation_id nvarchar(400) COLLATE Latin1_General_100_BIN2 NULL,',
        '    payload_json nvarchar(max) NOT NULL,',
        '    headers_json nvarchar(max) NOT NULL,',
        '    attempts int NOT NULL,',
        '    created_at datetime2 NOT NULL,',
        '    available_at datetime2 NOT NULL,',
        '    completed_at datetime2 NOT NULL',
        ');',
        'END',
      ].join('\n'),
    );
    expect(v11!.statements.slice(1).map((s) => s.text)).toEqual([
      [
        "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[dbo].[jobs_history]', N'U') AND name = N'jobs_history_queue_idx')",
        '    CREATE CLUSTERED INDEX [jobs_history_queue_idx] ON [dbo].[jobs_history] (queue, completed_at, id);',
      ].join('\n'),
      [
        "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[dbo].[jobs_history]', N'U') AND name = N'jobs_history_id_idx')",
        '    CREATE INDEX [jobs_history_id_idx] ON [dbo].[jobs_history] (id);',
      ].join('\n'),
      [
        "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[dbo].[jobs_history]', N'U') AND name = N'jobs_history_corr_idx')",
        '    CREATE INDEX [jobs_history_corr_idx] ON [dbo].[jobs_history] (correlation_id, completed_at, id);',
      ].join('\n'),
    ]);
  });

  it('version 7: the flow state table (binary flow_id, datetime2(7), unnamed revision default) and its two indexes', () => {
    expect(v7).toMatchObject({ version: 7, name: 'durable flow state table' });
    expect(v7!.statements).toEqual([
      {
        name: 'create flow state table',
        text: [
          "IF OBJECT_ID(N'[dbo].[asyncresponse_flow_state]', N'U') IS NULL",
          'BEGIN',
          'CREATE TABLE [dbo].[asyncresponse_flow_state] (',
          '    flow_id nvarchar(400) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY,',
          '    flow_name nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL,',
          '    status nvarchar(16) COLLATE Latin1_General_100_BIN2 NOT NULL,',
          '    last_message nvarchar(400) NULL,',
          '    state_json nvarchar(max) NOT NULL,',
          '    created_at_utc datetime2(7) NOT NULL DEFAULT SYSUTCDATETIME(),',
          '    updated_at_utc datetime2(7) NOT NULL,',
          '    expires_at_utc datetime2(7) NOT NULL,',
          '    revision bigint NOT NULL DEFAULT 0,',
          '    lease_id nvarchar(64) NULL,',
          '    lease_expires_at_utc datetime2(7) NULL',
          ');',
          'END',
        ].join('\n'),
      },
      {
        name: 'create flow state expires index',
        text: [
          "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[dbo].[asyncresponse_flow_state]', N'U') AND name = N'asyncresponse_flow_state_expires_idx')",
          '    CREATE INDEX [asyncresponse_flow_state_expires_idx] ON [dbo].[asyncresponse_flow_state] (expires_at_utc);',
        ].join('\n'),
      },
      {
        name: 'create flow state list index',
        text: [
          "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[dbo].[asyncresponse_flow_state]', N'U') AND name = N'asyncresponse_flow_state_list_idx')",
          '    CREATE INDEX [asyncresponse_flow_state_list_idx] ON [dbo].[asyncresponse_flow_state] (status, updated_at_utc, flow_id) INCLUDE (flow_name, expires_at_utc);',
        ].join('\n'),
      },
    ]);
    expect(v7!.statements.some((s) => /CONSTRAINT|\bDF_/.test(s.text))).toBe(false);
  });

  it('version 7 with a 117-character flow table name: derived index names keep their suffix within 128 characters', () => {
    const long = 'f'.repeat(117);
    const n = schemaNames(transportNames('dbo', 'jobs', 'sqlserver'), channelNames('dbo', DEFAULT_CHANNEL_TABLES, 'sqlserver'), 'sqlserver', long);
    expect(n.flowStateExpiresIndex).toHaveLength(128);
    expect(n.flowStateExpiresIndex.endsWith('_expires_idx')).toBe(true);
    expect(n.flowStateListIndex.endsWith('_list_idx')).toBe(true);
    expect(n.flowStateListIndex.length).toBeLessThanOrEqual(128);
    expect(() => schemaNames(transportNames('dbo', 'jobs', 'sqlserver'), channelNames('dbo', DEFAULT_CHANNEL_TABLES, 'sqlserver'), 'sqlserver', 'jobs')).toThrow(
      /flow state table \('jobs'\) resolve to the same name/,
    );
  });

  it('the printed script sets the session options procedures capture before any batch (M1)', () => {
    const batches = printSqlServerMigrations(names).split('\nGO\n').filter((b) => b.trim() !== '');
    expect(batches[0]!.split('\n').filter((l) => !l.startsWith('--'))).toEqual([...PRINTED_SCRIPT_SET_OPTIONS]);
    expect(PRINTED_SCRIPT_SET_OPTIONS).toContain('SET QUOTED_IDENTIFIER ON;');
    const firstProcedure = batches.findIndex((b) => b.includes('CREATE OR ALTER PROCEDURE'));
    expect(firstProcedure).toBeGreaterThan(0);
  });

  it('the printed script records no version after a failed batch, and no version whose predecessor is missing (M1)', () => {
    const batches = printSqlServerMigrations(names).split('\nGO\n').filter((b) => b.trim() !== '');
    const stop = (b: string) => b.startsWith('IF @@ERROR <> 0 OR @@TRANCOUNT = 0') && b.includes('SET NOEXEC ON;');
    for (const [i, b] of batches.entries()) {
      const isStatement = [v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12].some((v) => v!.statements.some((s) => b.endsWith(s.text))) || b.endsWith(r.lock.text);
      // every migration batch and every lock batch is followed by the check that turns execution off
      if (isStatement) expect(stop(batches[i + 1] ?? ''), `batch ${i} is not followed by the failure check`).toBe(true);
    }
    for (const v of [2, 3, 4, 5, 6]) {
      expect(batches.some((b) => b.includes(`IF NOT EXISTS (SELECT 1 FROM [dbo].[jobs_migrations] WHERE version = ${v - 1})\nBEGIN`) && b.includes('SET NOEXEC ON;'))).toBe(true);
    }
    // the records come only after their versions' checks; execution is back on at the end, leftovers rolled back
    expect(batches.at(-1)).toContain('SET NOEXEC OFF;\nIF @@TRANCOUNT > 0\nBEGIN\n    ROLLBACK;');
  });

  it('version 20: the ready set\'s sequence, columns (no row touched), keys table and no lock escalation, each Sch-M wait bounded', () => {
    expect(v(20)).toMatchObject({ version: 20, name: 'ready set columns and ordering keys table' });
    expect(v(20).deferrable).toBeUndefined();
    expect(v(20).statements.map((st) => st.name)).toEqual(['create publish sequence', 'add state and seq columns', 'create ordering keys table', 'disable lock escalation']);
    expect(v(20).statements[0]!.text).toBe(
      ['SET LOCK_TIMEOUT 5000;', "IF OBJECT_ID(N'[dbo].[jobs_seq]', N'SO') IS NULL", '    CREATE SEQUENCE [dbo].[jobs_seq] AS bigint START WITH 1 INCREMENT BY 1;'].join('\n'),
    );
    expect(v(20).statements[1]!.text).toBe(
      [
        'SET LOCK_TIMEOUT 5000;',
        "IF COL_LENGTH(N'[dbo].[jobs]', N'state') IS NULL",
        '    ALTER TABLE [dbo].[jobs] ADD state tinyint NULL;',
        "IF COL_LENGTH(N'[dbo].[jobs]', N'seq') IS NULL",
        // nullable and without WITH VALUES: existing rows stay NULL, metadata only on every edition
        '    ALTER TABLE [dbo].[jobs] ADD seq bigint NULL DEFAULT (NEXT VALUE FOR [dbo].[jobs_seq]);',
      ].join('\n'),
    );
    expect(v(20).statements[2]!.text).toContain('CREATE INDEX [jobs_keys_vacant_idx] ON [dbo].[jobs_keys] (queue) WHERE vacant = 1;');
    expect(v(20).statements[3]!.text).toContain('    ALTER TABLE [dbo].[jobs] SET (LOCK_ESCALATION = DISABLE);');
  });

  it('version 21: the keyed rows filed in one transaction (numbered in their old order, counted, the rest queued behind each head); 22: the procedure files its rows', () => {
    expect(v(21)).toMatchObject({ version: 21, name: 'ready set: file keyed rows' });
    expect(v(21).statements.map((st) => st.name)).toEqual(['number keyed rows', 'count keys', 'queue keyed rows behind their heads', 'schedule delayed heads']);
    expect(v(21).statements[0]!.text).toContain(
      'SELECT id, NEXT VALUE FOR [dbo].[jobs_seq] OVER (ORDER BY created_at, id) FROM [dbo].[jobs] WHERE ordering_key IS NOT NULL AND dead_letter_reason IS NULL AND seq IS NULL;',
    );
    expect(v(21).statements[2]!.text).toContain('AND o.dead_letter_reason IS NULL AND o.seq < m.seq);');
    expect(v(21).statements.every((st) => !st.autocommit)).toBe(true);
    expect(v(22).statements.map((st) => st.name)).toEqual(['alter enqueue procedure: ready set']);
  });

  it('versions 23–28 are deferrable: the batched filing (autocommit), one ready-set index per version (online, low priority, M3 guard), then the drops', () => {
    expect(all.filter((m) => m.deferrable).map((m) => m.version)).toEqual([23, 24, 25, 26, 27, 28]);
    expect(v(23).statements).toHaveLength(1);
    expect(v(23).statements[0]!.autocommit).toBe(true);
    const walk = v(23).statements[0]!.text;
    expect(walk).toContain('        INSERT INTO @ids (id) SELECT TOP (5000) id FROM [dbo].[jobs] WHERE id > @last ORDER BY id;');
    expect(walk).toContain('    UPDATE m SET state = 1');
    expect(walk).toContain('    WHERE m.state IS NULL AND m.ordering_key IS NULL AND m.lock_id IS NULL AND m.dead_letter_reason IS NULL\n      AND m.available_at > SYSUTCDATETIME();');
    expect(walk).not.toMatch(/BEGIN TRAN/);
    const creates = [
      'CREATE INDEX [jobs_ready_set_idx] ON [dbo].[jobs] (queue, priority DESC, available_at, seq) WHERE state IS NULL AND lock_id IS NULL',
      'CREATE INDEX [jobs_scheduled_idx] ON [dbo].[jobs] (queue, available_at) WHERE state = 1',
      'CREATE INDEX [jobs_leased_idx] ON [dbo].[jobs] (queue, locked_until) INCLUDE (lock_id) WHERE lock_id IS NOT NULL',
      'CREATE INDEX [jobs_key_order_idx] ON [dbo].[jobs] (queue, ordering_key, seq) WHERE ordering_key IS NOT NULL',
    ];
    creates.forEach((create, i) => {
      const m = v(24 + i);
      const index = /\[(\w+)\]/.exec(create)![1]!;
      expect(m.name).toBe(`ready set index ${index}`);
      expect(m.statements.map((st) => st.text)).toEqual([['SET LOCK_TIMEOUT 5000;', ...online(index, create)].join('\n')]);
    });
    // the drops come last and apart from every build (M4), each in its own statement
    expect(v(28).statements.map((st) => st.text)).toEqual([
      ['SET LOCK_TIMEOUT 5000;', "IF EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[dbo].[jobs]', N'U') AND name = N'jobs_priority_ready_idx')", '    DROP INDEX [jobs_priority_ready_idx] ON [dbo].[jobs];'].join('\n'),
      ['SET LOCK_TIMEOUT 5000;', "IF EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[dbo].[jobs]', N'U') AND name = N'jobs_ordering_idx')", '    DROP INDEX [jobs_ordering_idx] ON [dbo].[jobs];'].join('\n'),
    ]);
    expect(all.filter((m) => !m.deferrable).some((m) => m.statements.some((st) => /CREATE INDEX \[jobs_(ready_set|scheduled|leased|key_order)_idx\]/.test(st.text)))).toBe(false);
  });

  it('the runner\'s table lock: XACT_ABORT, the transport table\'s applock (the stores\' index phase takes it too), 5 s', () => {
    expect(r.tableLock.text).toContain("EXEC @lock_result = sp_getapplock @Resource = N'asyncresponse:ddl:dbo.jobs', @LockMode = 'Exclusive',");
    expect(r.tableLock.text).toContain("@LockOwner = 'Transaction', @LockTimeout = 5000;");
    expect(r.tableLock.text.startsWith('SET XACT_ABORT ON;')).toBe(true);
  });

  it('the printed script runs a deferrable version as the runner does: the walk outside a transaction, builds under the table applock, the record under the schema applock', () => {
    const script = printSqlServerMigrations(names);
    const v23 = script.slice(script.indexOf('-- version 23:'), script.indexOf('-- version 24:'));
    expect(v23).toContain('-- file delayed rows in batches (outside a transaction: each batch commits by itself)');
    expect(v23.indexOf('DECLARE @last uniqueidentifier;')).toBeLessThan(v23.indexOf('BEGIN TRANSACTION;'));
    expect(v23).toContain("INSERT INTO [dbo].[jobs_migrations] (version, name) VALUES (23, N'ready set: file delayed rows');");
    const v24 = script.slice(script.indexOf('-- version 24:'), script.indexOf('-- version 25:'));
    expect(v24.indexOf("@Resource = N'asyncresponse:ddl:dbo.jobs'")).toBeLessThan(v24.indexOf('-- create jobs_ready_set_idx'));
    expect(v24.indexOf('-- create jobs_ready_set_idx')).toBeLessThan(v24.indexOf("@Resource = N'asyncresponse:ddl:dbo'"));
  });
});
