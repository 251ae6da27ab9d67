// Pins the shape of every T-SQL statement the SQL Server store runs (there is no server on this machine; the
// contract suite runs them for real when MSSQL_CONNECTION_STRING is set).

import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import {
  addDeadLetterSourceIfMissing,
  addPriorityIfMissing,
  dbClockPlus,
  DEAD_LETTER_SOURCE_DEFINITION,
  exactQueueMatch,
  printSqlServerSchema,
  schemaLockResource,
  tableLockResource,
  transportStatements,
  type Statement,
} from '../../shared/stores/sqlserver/statements';
import { addOrderingKeyIfMissing } from '../../shared/stores/sqlserver/ordering-sql';
import { length, SPLIT, typeName } from '../support/sqlserver-statements';

const names = transportNames('dbo', 'jobs', 'sqlserver');
const s = transportStatements(names);
const all = Object.entries(s) as Array<[string, Statement]>;
const SENTINEL = "queue + N'.' = @queue + N'.' COLLATE Latin1_General_100_BIN2";
const DLQ_SENTINEL = "queue = @dlq AND queue + N'.' = @dlq + N'.' COLLATE Latin1_General_100_BIN2";

describe('SQL Server statement shapes', () => {
  it('helpers: the exact-queue predicate keeps the sargable conjunct first; the interval splits ms', () => {
    expect(exactQueueMatch('queue', 'queue')).toBe(`queue = @queue AND ${SENTINEL}`);
    expect(dbClockPlus('@p')).toBe(SPLIT('@p'));
  });

  it('claim: one ordered, lock-skipping statement on exactly the queue, every row under the lock id the drain chose', () => {
    const t = s.claimBatch.text;
    expect(t).toContain('SELECT TOP (@n)');
    expect(t).toContain('FROM [dbo].[jobs] AS candidate WITH (UPDLOCK, ROWLOCK, READPAST)');
    expect(t).toContain(`queue = @queue AND ${SENTINEL}`);
    // higher priority first, then availability order: the ready index's keys after the queue, so still one ordered seek
    expect(t).toContain('    ORDER BY priority DESC, available_at, created_at\n');
    expect(t).toContain('    lock_id = @lock_id\n');
    expect(t).not.toContain('NEWID()');
    expect(typeName(s.claimBatch, 'lock_id')).toBe('UniqueIdentifier');
    expect(t).toContain('attempts = attempts + 1');
    expect(t).toContain(`locked_until = ${SPLIT('@lock_timeout_ms')}`);
    expect(t).toMatch(/available_at <= SYSUTCDATETIME\(\)/);
    expect(t).toMatch(/\(locked_until IS NULL OR locked_until <= SYSUTCDATETIME\(\)\)/);
    expect(t).toMatch(/OUTPUT inserted\.id, inserted\.queue, inserted\.payload_json, inserted\.headers_json, inserted\.attempts,\s+inserted\.lock_id, inserted\.created_at, inserted\.available_at, inserted\.priority;/);
    expect(t).not.toMatch(/claim_idx|locked_until, created_at\)/);
    expect(t.match(/;/g)).toHaveLength(1); // one statement
    expect(length(s.claimBatch, 'queue')).toBe(200);
  });

  it('publish: one insert-if-absent from one JSON parameter, no key-range lock on the probe (H2), delays on the DB clock', () => {
    const t = s.publishBatch.text;
    expect(t.match(/INSERT INTO/g)).toHaveLength(1);
    // HOLDLOCK would lock the primary key's last range, which every new time-ordered id probes
    expect(t).toContain('WHERE NOT EXISTS (SELECT 1 FROM [dbo].[jobs] AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = src.id);');
    expect(t).not.toContain('HOLDLOCK');
    expect(t).toContain('FROM OPENJSON(@batch) WITH (');
    expect(t).toContain("payload_json nvarchar(max) '$.payload_json'");
    expect(t).toContain("headers_json nvarchar(max) '$.headers_json'");
    expect(t).toContain("delay_ms bigint '$.delay_ms'");
    expect(t).toContain(
      'CASE WHEN src.delay_ms > 0 THEN DATEADD(SECOND, CAST(src.delay_ms / 1000 AS int), DATEADD(MILLISECOND, CAST(src.delay_ms % 1000 AS int), @now)) ELSE @now END',
    );
    // the job's priority: one more OPENJSON field and column (an element without it inserts 0)
    expect(t).toContain("priority smallint '$.priority'");
    expect(t).toContain('INSERT INTO [dbo].[jobs] (id, queue, payload_json, headers_json, created_at, available_at, priority, ordering_key)');
    expect(t).toContain('       COALESCE(src.priority, 0), src.ordering_key\nFROM OPENJSON(@batch)');
    expect(t).toContain('OUTPUT inserted.id, inserted.available_at');
    expect(t).toContain('DECLARE @now datetime2 = SYSUTCDATETIME();');
    // the duplicates' stored rows are read only when something was not inserted
    expect(t).toMatch(/SET @inserted = @@ROWCOUNT;\s+IF @inserted < \(SELECT COUNT\(\*\) FROM OPENJSON\(@batch\)\)/);
    expect(t).toContain('    SELECT existing.id, existing.available_at, existing.queue'); // ids are unique across queues
    expect(Object.keys(s.publishBatch.params)).toEqual(['batch']);
    expect(length(s.publishBatch, 'batch')).toBe(65535); // NVarChar(MAX)
  });

  it('ack: one fenced DELETE joined on (id, lock_id), count from @@ROWCOUNT', () => {
    const t = s.ackBatch.text;
    expect(t).toContain('DELETE target');
    expect(t).toContain("OPENJSON(@settlements) WITH (id uniqueidentifier '$.id', lock_id uniqueidentifier '$.lock_id')");
    expect(t).toContain('ON target.id = settled.id AND target.lock_id = settled.lock_id');
    expect(t).toMatch(/SELECT @@ROWCOUNT AS affected;$/);
    expect(t).not.toMatch(/SET NOCOUNT ON/);
  });

  it('release of unstarted claims: one fenced UPDATE joined on (id, lock_id) that gives the attempt back and keeps available_at', () => {
    const t = s.releaseUnstarted.text;
    expect(t).toMatch(/^UPDATE target\nSET attempts = CASE WHEN target\.attempts > 0 THEN target\.attempts - 1 ELSE 0 END, locked_until = NULL, lock_id = NULL\n/);
    expect(t).toContain('FROM [dbo].[jobs] AS target');
    expect(t).toContain("OPENJSON(@settlements) WITH (id uniqueidentifier '$.id', lock_id uniqueidentifier '$.lock_id')");
    expect(t).toContain('ON target.id = settled.id AND target.lock_id = settled.lock_id;');
    expect(t).not.toMatch(/available_at/);
    expect(t).toMatch(/SELECT @@ROWCOUNT AS affected;$/);
    expect(Object.keys(s.releaseUnstarted.params)).toEqual(['settlements']);
    expect(length(s.releaseUnstarted, 'settlements')).toBe(65535);
  });

  it('hand-back of a claim whose answer was lost: one UPDATE of the queue\'s ready rows still leased under @lock_id, skipping locked rows', () => {
    const t = s.releaseLostClaim.text;
    expect(t).toMatch(/^UPDATE \[dbo\]\.\[jobs\] WITH \(ROWLOCK, READPAST\)\nSET attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, locked_until = NULL, lock_id = NULL\n/);
    expect(t).toContain(`WHERE queue = @queue AND ${SENTINEL}`);
    expect(t).toContain('AND available_at <= SYSUTCDATETIME()');
    expect(t).toContain('AND lock_id = @lock_id AND locked_until > SYSUTCDATETIME();');
    expect(t).toMatch(/SELECT @@ROWCOUNT AS affected;$/);
    expect(Object.keys(s.releaseLostClaim.params)).toEqual(['queue', 'lock_id']);
    expect(typeName(s.releaseLostClaim, 'lock_id')).toBe('UniqueIdentifier');
    expect(length(s.releaseLostClaim, 'queue')).toBe(200);
  });

  it('NAK and renew are fenced on lock_id and read their count from the server', () => {
    expect(s.release.text).toContain('WHERE id = @id AND lock_id = @lock_id;');
    expect(s.release.text).toContain(`SET available_at = ${SPLIT('@delay_ms')}, locked_until = NULL, lock_id = NULL`);
    expect(s.release.text).toMatch(/SELECT @@ROWCOUNT AS affected;$/);
    expect(s.renew.text).toContain(`SET locked_until = ${SPLIT('@lock_timeout_ms')}`);
    expect(s.renew.text).toContain('WHERE id = @id AND lock_id = @lock_id;');
    // the renewal also answers whether an operator marked the job cancelled (the marker prefix of headers_json)
    expect(s.renew.text).toContain(`OUTPUT CASE WHEN inserted.headers_json LIKE N'{"AR-Cancel-Requested":%' THEN 1 ELSE 0 END INTO @renewed`);
    expect(s.renew.text).toMatch(/SELECT COUNT\(\*\) AS affected, CAST\(COALESCE\(MAX\(CAST\(cancel_requested AS int\)\), 0\) AS bit\) AS cancel_requested FROM @renewed;$/);
    expect(s.renew.text).not.toMatch(/attempts/);
    expect(s.release.text).not.toMatch(/attempts/);
  });

  it('dead-letter move deletes (fenced) before inserting, and inserts only when exactly that row went', () => {
    const t = s.deadLetterMove.text;
    expect(t.startsWith('SET XACT_ABORT ON;\nBEGIN TRAN;')).toBe(true);
    const del = t.indexOf('DELETE FROM [dbo].[jobs] OUTPUT deleted.attempts, deleted.priority, deleted.ordering_key INTO @removed WHERE id = @source_id AND lock_id = @lock_id;');
    const guard = t.indexOf('IF @@ROWCOUNT = 1');
    const ins = t.indexOf('INSERT INTO [dbo].[jobs] (id, queue, payload_json, headers_json, dead_letter_reason, attempts, priority, ordering_key)');
    expect(del).toBeGreaterThan(0);
    expect(guard).toBeGreaterThan(del);
    expect(ins).toBeGreaterThan(guard);
    expect(t.indexOf('ELSE')).toBeGreaterThan(ins);
    // the dead-letter row keeps the removed row's attempts; OUTPUT INTO a table variable (not a bare OUTPUT, refused on tables with triggers)
    // and its priority and ordering key, so a requeue puts the job back at its priority, on its key
    expect(t.indexOf('DECLARE @removed TABLE (attempts int NOT NULL, priority smallint NOT NULL, ordering_key nvarchar(200) COLLATE Latin1_General_100_BIN2 NULL);')).toBeLessThan(del);
    expect(t).toContain('SELECT @new_id, @dlq, @payload_json, @headers_json, @reason, attempts, priority, ordering_key FROM @removed;');
    expect(t).toContain('SELECT 1 AS moved;');
    expect(t).toContain('SELECT 0 AS moved;');
    expect(t.match(/COMMIT;/g)).toHaveLength(2); // both branches end the transaction
  });

  it('prune: NOCOUNT off first, bounded DELETE TOP (1000) of exactly the DLQ, cut-off on the DB clock', () => {
    const t = s.pruneDeadLetterBatch.text;
    expect(t.startsWith('SET NOCOUNT OFF;')).toBe(true);
    expect(t).toContain('DELETE TOP (1000) FROM [dbo].[jobs]');
    expect(t.match(/DELETE/g)).toHaveLength(1);
    expect(t).not.toMatch(/DELETE FROM/);
    expect(t).toContain(DLQ_SENTINEL);
    expect(t).toContain(`created_at < ${SPLIT('@neg_retention_ms')}`);
    expect(t).toMatch(/SELECT @@ROWCOUNT AS deleted;$/);
  });

  it('stats and dead-letter listing match queue names exactly, also the source-queue column', () => {
    // the computed column, seekable on the dead-letter index, with the same sentinel as the queue column
    const sourceMatch = (p: string) => `dead_letter_source = @${p} AND dead_letter_source + N'.' = @${p} + N'.' COLLATE Latin1_General_100_BIN2`;
    expect(s.queueStats.text).toContain(`queue = @queue AND ${SENTINEL}`);
    expect(s.queueStats.text).toContain(`${DLQ_SENTINEL}\n      AND ${sourceMatch('queue')}\n) AS d;`);
    expect(s.queueStats.text).toContain('DATEDIFF_BIG(MILLISECOND, MIN(CASE WHEN');
    for (const st of [s.queueStats, s.listDeadLetters, s.requeueDeadLetter, s.deleteDeadLetter]) {
      expect(st.text).not.toContain('ISJSON'); // no JSON parsed per row: the column's index holds the value
      expect(st.text).not.toMatch(/JSON_VALUE/);
    }
    for (const st of [s.listDeadLetters, s.requeueDeadLetter, s.deleteDeadLetter]) {
      expect(st.text).toContain(DLQ_SENTINEL);
      expect(st.text).toContain(sourceMatch('source'));
    }
    expect(s.listDeadLetters.text).toMatch(/^SELECT TOP \(@top\) id, payload_json, headers_json, dead_letter_reason, attempts, created_at/);
    expect(s.listDeadLetters.text).toMatch(/ORDER BY created_at DESC;$/);
  });

  it('the source column is a deterministic, error-free computed JSON_VALUE, added behind a guard', () => {
    expect(DEAD_LETTER_SOURCE_DEFINITION).toBe(
      "CAST(CASE WHEN ISJSON(headers_json) = 1 THEN CASE WHEN DATALENGTH(JSON_VALUE(headers_json, N'$.\"AR-DeadLetter-Source-Queue\"')) <= 400 " +
        "THEN JSON_VALUE(headers_json, N'$.\"AR-DeadLetter-Source-Queue\"') END END AS nvarchar(200)) COLLATE Latin1_General_100_BIN2",
    );
    expect(DEAD_LETTER_SOURCE_DEFINITION).not.toMatch(/PERSISTED|GETDATE|SYSUTCDATETIME|NEWID/);
    const add = addDeadLetterSourceIfMissing('[dbo].[jobs]').join('\n');
    expect(add).toBe(
      "IF NOT EXISTS (SELECT 1 FROM sys.columns WHERE object_id = OBJECT_ID(N'[dbo].[jobs]', N'U') AND name = N'dead_letter_source')\n" +
        `    ALTER TABLE [dbo].[jobs] ADD dead_letter_source AS ${DEAD_LETTER_SOURCE_DEFINITION};`,
    );
    // the store's own create path adds it too, its Sch-M wait bounded to 5 s (L4), then the priority and ordering key columns
    const priority = addPriorityIfMissing('[dbo].[jobs]').join('\n');
    expect(s.ddlPhase1.text.endsWith(`\nSET LOCK_TIMEOUT 5000;\n${add}\n${priority}\n${addOrderingKeyIfMissing('[dbo].[jobs]').join('\n')}`)).toBe(true);
    expect(s.ddlPhase1.text.indexOf('CREATE TABLE')).toBeLessThan(s.ddlPhase1.text.indexOf('ALTER TABLE'));
  });

  it('requeue resets the row onto its source queue and strips the dead-letter headers', () => {
    const t = s.requeueDeadLetter.text;
    expect(t).toContain('SET queue = @source, attempts = 0, available_at = SYSUTCDATETIME(), locked_until = NULL, lock_id = NULL');
    expect(t).toContain('dead_letter_reason = NULL');
    expect(t).toContain(`JSON_MODIFY(JSON_MODIFY(headers_json, N'$."AR-DeadLetter-Reason"', NULL)`);
    expect(t).toContain(`N'$."AR-DeadLetter-Source-Queue"', NULL)`);
    expect(t).toContain('WHERE id = @id AND');
    expect(t).toMatch(/SELECT @@ROWCOUNT AS affected;$/);
    expect(s.deleteDeadLetter.text).toMatch(/^DELETE FROM \[dbo\]\.\[jobs\]\nWHERE id = @id AND/);
  });

  it('hasMessage looks the id up on exactly one queue (the binary sentinel) and answers a bit', () => {
    expect(s.hasMessage.text).toBe(
      [
        'SELECT CAST(CASE WHEN EXISTS (',
        '    SELECT 1 FROM [dbo].[jobs]',
        `    WHERE id = @id AND queue = @queue AND ${SENTINEL}`,
        ') THEN 1 ELSE 0 END AS bit) AS present;',
      ].join('\n'),
    );
    expect(Object.keys(s.hasMessage.params).sort()).toEqual(['id', 'queue']);
  });

  it('now reads the database clock', () => {
    expect(s.now.text).toBe('SELECT SYSUTCDATETIME() AS now;');
  });

  it('phase 1 takes the schema applock (exclusive, transaction-owned, 60 s) and creates no index', () => {
    const t = s.ddlPhase1.text;
    expect(schemaLockResource('dbo')).toBe('asyncresponse:ddl:dbo');
    expect(t).toContain("sp_getapplock @Resource = N'asyncresponse:ddl:dbo', @LockMode = 'Exclusive'");
    expect(t).toContain("@LockOwner = 'Transaction', @LockTimeout = 60000;");
    expect(t).toMatch(/IF @lock_result < 0\s+THROW 51000, N'[^']+', 1;/);
    expect(t).toContain("IF SCHEMA_ID(N'dbo') IS NULL\n    EXEC (N'CREATE SCHEMA [dbo]');");
    expect(t).toContain("IF OBJECT_ID(N'[dbo].[jobs]', N'U') IS NULL");
    expect(t).not.toMatch(/CREATE (UNIQUE )?(NONCLUSTERED )?INDEX/);
    expect(t.indexOf('sp_getapplock')).toBeLessThan(t.indexOf('CREATE TABLE'));
  });

  it('phase 1 creates exactly the documented table', () => {
    expect(s.ddlPhase1.text).toContain(
      [
        'CREATE TABLE [dbo].[jobs] (',
        '    id uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED,',
        '    queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL,',
        '    payload_json nvarchar(max) NOT NULL,',
        "    headers_json nvarchar(max) NOT NULL DEFAULT N'{}',",
        '    created_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(),',
        '    available_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(),',
        '    locked_until datetime2 NULL,',
        '    lock_id uniqueidentifier NULL,',
        '    attempts int NOT NULL DEFAULT 0,',
        '    dead_letter_reason nvarchar(max) NULL',
        ');',
      ].join('\n'),
    );
  });

  it('phase 2 takes the table applock for 5 s, then builds exactly the four guarded indexes under LOCK_TIMEOUT and drops the legacy ready index', () => {
    expect(tableLockResource('dbo', 'jobs')).toBe('asyncresponse:ddl:dbo.jobs');
    expect(s.ddlTableLock.text).toContain("sp_getapplock @Resource = N'asyncresponse:ddl:dbo.jobs', @LockMode = 'Exclusive'");
    expect(s.ddlTableLock.text).toContain("@LockOwner = 'Transaction', @LockTimeout = 5000;");
    expect(s.ddlTableLock.text).toContain("THROW 51000, N'AsyncResponse transport could not take its table lock within 5000 ms.', 1;");
    const t = s.ddlBuildIndexes.text;
    expect(t.startsWith('SET LOCK_TIMEOUT 5000;\nSET XACT_ABORT ON;\n')).toBe(true); // a 1222 ends the whole batch
    expect(t.endsWith('\nSET LOCK_TIMEOUT -1;')).toBe(true);
    expect(t.match(/CREATE INDEX/g)).toHaveLength(4);
    expect(t.match(/IF NOT EXISTS \(SELECT 1 FROM sys\.indexes WHERE object_id = OBJECT_ID\(N'\[dbo\]\.\[jobs\]', N'U'\) AND name = N'/g)).toHaveLength(4);
    expect(t).toContain("AND name = N'jobs_priority_ready_idx')\n    CREATE INDEX [jobs_priority_ready_idx] ON [dbo].[jobs] (queue, priority DESC, available_at, created_at);");
    // a table self-created before priorities: the old ready index goes once the new one is built (after it, guarded)
    expect(t).toContain("IF EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[dbo].[jobs]', N'U') AND name = N'jobs_ready_idx')\n    DROP INDEX [jobs_ready_idx] ON [dbo].[jobs];");
    expect(t.indexOf('DROP INDEX')).toBeGreaterThan(t.lastIndexOf('CREATE INDEX'));
    expect(t).toContain("AND name = N'jobs_created_idx')\n    CREATE INDEX [jobs_created_idx] ON [dbo].[jobs] (created_at);");
    expect(t).toContain("AND name = N'jobs_dead_letter_idx')\n    CREATE INDEX [jobs_dead_letter_idx] ON [dbo].[jobs] (queue, dead_letter_source);");
    expect(t).toContain("AND name = N'jobs_ordering_idx')\n    CREATE INDEX [jobs_ordering_idx] ON [dbo].[jobs] (queue, ordering_key, created_at, id) WHERE ordering_key IS NOT NULL;");
    expect(t).not.toMatch(/UNIQUE|WHERE queue|INCLUDE/);
  });

  it('catalog queries are parameterised by schema and table names and pin the index flags', () => {
    const t = s.catalogSnapshot.text;
    expect(t).toContain("OBJECT_ID(QUOTENAME(@schema) + N'.' + QUOTENAME(@table), N'U')");
    expect(t).not.toContain('jobs');
    expect(Object.keys(s.catalogSnapshot.params).sort()).toEqual(['schema', 'table']);
    expect(length(s.catalogSnapshot, 'table')).toBe(128);
    expect(t.match(/^SELECT /gm)).toHaveLength(6);
    expect(t).toContain('SELECT d.compatibility_level FROM sys.databases AS d WHERE d.database_id = DB_ID();');
    expect(t).toContain('SELECT tr.name AS trigger_name FROM sys.triggers AS tr WHERE tr.parent_id = @object_id AND tr.is_disabled = 0;');
    for (const column of ['is_disabled', 'is_hypothetical', 'has_filter', 'key_ordinal', 'is_descending_key', 'type_desc', 'default_definition', 'collation_name', 'scale']) {
      expect(t).toContain(column);
    }
  });

  it('parameters carry explicit types: NVarChar(200) queues, UniqueIdentifier ids, BigInt milliseconds', () => {
    for (const [st, p] of [[s.claimBatch, 'queue'], [s.queueStats, 'queue'], [s.queueStats, 'dlq'], [s.deadLetterMove, 'dlq'], [s.listDeadLetters, 'source']] as const) {
      expect(typeName(st, p)).toBe('NVarChar');
      expect(length(st, p)).toBe(200);
    }
    for (const [st, p] of [[s.release, 'id'], [s.release, 'lock_id'], [s.renew, 'lock_id'], [s.deadLetterMove, 'new_id'], [s.requeueDeadLetter, 'id']] as const) {
      expect(typeName(st, p)).toBe('UniqueIdentifier');
    }
    for (const [st, p] of [[s.release, 'delay_ms'], [s.renew, 'lock_timeout_ms'], [s.claimBatch, 'lock_timeout_ms'], [s.pruneDeadLetterBatch, 'neg_retention_ms']] as const) {
      expect(typeName(st, p)).toBe('BigInt');
    }
    expect(typeName(s.claimBatch, 'n')).toBe('Int');
    expect(typeName(s.listDeadLetters, 'top')).toBe('Int');
    expect(typeName(s.deadLetterMove, 'payload_json')).toBe('NVarChar');
    expect(length(s.deadLetterMove, 'payload_json')).toBe(65535);
  });

  it('every @parameter used in a statement is declared, and every declared one is used', () => {
    for (const [name, st] of all) {
      const declared = new Set(
        [...st.text.matchAll(/DECLARE @(\w+)/g)].map((m) => m[1]),
      );
      const used = new Set([...st.text.matchAll(/@(\w+)/g)].map((m) => m[1]!).filter((p) => !p.startsWith('@')));
      const params = Object.keys(st.params);
      for (const p of params) expect(used.has(p), `${name}: @${p} declared but unused`).toBe(true);
      for (const p of used) {
        const known = params.includes(p) || declared.has(p) || ['ROWCOUNT', 'Resource', 'LockMode', 'LockOwner', 'LockTimeout'].includes(p);
        expect(known, `${name}: @${p} is neither a parameter nor a local`).toBe(true);
      }
    }
  });

  it('identifiers appear bracket-quoted wherever the table is named', () => {
    for (const [name, st] of all) {
      if (name === 'now' || name === 'catalogSnapshot' || name === 'ddlTableLock') continue;
      expect(st.text, name).toContain('[dbo].[jobs]');
      const rest = st.text.replace(/\[dbo\]\.\[jobs\]/g, '').replace(/asyncresponse:ddl:[\w.]+/g, '');
      expect(rest, name).not.toMatch(/\bjobs\b(?!_)/);
    }
  });

  it('a 128-character table name yields derived index names within 128 that keep their suffix', () => {
    const long = 'm'.repeat(128);
    const n = transportNames('dbo', long, 'sqlserver');
    expect(n.readyIndex).toBe('m'.repeat(109) + '_priority_ready_idx');
    expect(n.legacyReadyIndex).toBe('m'.repeat(118) + '_ready_idx');
    expect(n.createdIndex).toBe('m'.repeat(116) + '_created_idx');
    expect(n.deadLetterIndex).toBe('m'.repeat(112) + '_dead_letter_idx');
    expect(n.orderingIndex).toBe('m'.repeat(115) + '_ordering_idx');
    const built = transportStatements(n);
    for (const st of Object.values(built)) expect(st.text.length).toBeGreaterThan(0);
    const indexNames = [...built.ddlBuildIndexes.text.matchAll(/CREATE INDEX \[(\w+)\]/g)].map((m) => m[1]!);
    expect(indexNames).toHaveLength(4);
    for (const name of indexNames) {
      expect(name.length).toBeLessThanOrEqual(128);
      expect(name).toMatch(/_(priority_ready|created|dead_letter|ordering)_idx$/);
    }
    expect(built.ddlTableLock.text).toContain(`asyncresponse:ddl:dbo.${long}`);
  });

  it('the printed schema script is idempotent DDL for the same table and indexes', () => {
    const script = printSqlServerSchema(names);
    expect(script).toContain("IF SCHEMA_ID(N'dbo') IS NULL");
    expect(script).toContain("IF OBJECT_ID(N'[dbo].[jobs]', N'U') IS NULL\nCREATE TABLE [dbo].[jobs] (");
    expect(script).toContain('queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL');
    expect(script).toContain('CREATE INDEX [jobs_priority_ready_idx] ON [dbo].[jobs] (queue, priority DESC, available_at, created_at);');
    expect(script).toContain(addPriorityIfMissing('[dbo].[jobs]').join('\n'));
    expect(script).toContain('ALTER TABLE [dbo].[jobs] ADD priority smallint NOT NULL DEFAULT 0;');
    expect(script).toContain('CREATE INDEX [jobs_created_idx] ON [dbo].[jobs] (created_at);');
    expect(script).toContain('CREATE INDEX [jobs_dead_letter_idx] ON [dbo].[jobs] (queue, dead_letter_source);');
    expect(script).toContain(addDeadLetterSourceIfMissing('[dbo].[jobs]').join('\n'));
    expect(script).toContain(addOrderingKeyIfMissing('[dbo].[jobs]').join('\n'));
    expect(script).toContain('CREATE INDEX [jobs_ordering_idx] ON [dbo].[jobs] (queue, ordering_key, created_at, id) WHERE ordering_key IS NOT NULL;');
    expect(script.match(/IF NOT EXISTS \(SELECT 1 FROM sys\.indexes/g)).toHaveLength(4);
    expect(script.match(/^GO$/gm)!.length).toBeGreaterThanOrEqual(4);
  });
});
