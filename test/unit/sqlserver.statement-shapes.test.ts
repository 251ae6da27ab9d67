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

  it('claim: one batch and transaction; the claim is one ordered, lock-skipping seek of the ready set on exactly the queue, every row under the lock id the drain chose', () => {
    const t = s.claimBatch.text;
    expect(t.startsWith('SET XACT_ABORT ON;\nDECLARE @vacant TABLE')).toBe(true);
    expect(t).toContain('BEGIN TRANSACTION;\nIF NOT EXISTS (SELECT 1 FROM [dbo].[jobs_queue_state] AS paused');
    expect(t.endsWith('END;\nCOMMIT;')).toBe(true);
    expect(t).toContain('        SELECT TOP (@n) id, queue, payload_json, headers_json, attempts, locked_until, lock_id, created_at, available_at, priority, ordering_key, seq\n');
    expect(t).toContain('        FROM [dbo].[jobs] WITH (UPDLOCK, ROWLOCK, READPAST)\n');
    expect(t).toContain(`        WHERE queue = @queue AND ${SENTINEL} AND state IS NULL AND lock_id IS NULL AND available_at <= SYSUTCDATETIME()\n`);
    // higher priority first, then availability, then publish order: the ready-set index's keys after the queue
    expect(t).toContain('        ORDER BY priority DESC, available_at, seq)\n');
    expect(t).toContain(`    SET attempts = attempts + 1, locked_until = ${SPLIT('@lock_timeout_ms')}, lock_id = @lock_id\n`);
    expect(t).not.toContain('NEWID()');
    expect(typeName(s.claimBatch, 'lock_id')).toBe('UniqueIdentifier');
    expect(t).toMatch(
      /OUTPUT inserted\.id, inserted\.queue, inserted\.payload_json, inserted\.headers_json, inserted\.attempts,\s+inserted\.lock_id, inserted\.created_at, inserted\.available_at, inserted\.priority, inserted\.ordering_key, inserted\.seq;/,
    );
    // no head-of-key probe, no lease test on a row: those rows are outside the ranges a claim reads
    expect(t).not.toMatch(/older|locked_until IS NULL OR|created_at <|NOT EXISTS \(\s*SELECT 1 FROM \[dbo\]\.\[jobs\] AS older/);
    expect(length(s.claimBatch, 'queue')).toBe(200);
  });

  it('publish: one insert-if-absent from one JSON parameter, no key-range lock on the probe (H2), delays on the DB clock, seq in batch order', () => {
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
    expect(t).toContain("priority smallint '$.priority'");
    // unkeyed rows only (a keyed batch is publishOrderedBatch's): a delayed row is scheduled (state 1), seq in ord order
    expect(t).toContain('INSERT INTO [dbo].[jobs] (id, queue, payload_json, headers_json, created_at, available_at, priority, state, seq)');
    expect(t).toContain('       COALESCE(src.priority, 0), CASE WHEN src.delay_ms > 0 THEN 1 END,\n       NEXT VALUE FOR [dbo].[jobs_seq] OVER (ORDER BY src.ord)\nFROM OPENJSON(@batch)');
    expect(t).not.toContain('ordering_key');
    expect(t).toContain('OUTPUT inserted.id, inserted.available_at');
    expect(t).toContain('DECLARE @now datetime2 = SYSUTCDATETIME();');
    // the duplicates' stored rows are read only when something was not inserted
    expect(t).toMatch(/SET @inserted = @@ROWCOUNT;\s+IF @inserted < \(SELECT COUNT\(\*\) FROM OPENJSON\(@batch\)\)/);
    expect(t).toContain('    SELECT existing.id, existing.available_at, existing.queue'); // ids are unique across queues
    expect(Object.keys(s.publishBatch.params)).toEqual(['batch']);
    expect(length(s.publishBatch, 'batch')).toBe(65535); // NVarChar(MAX)
  });

  it('ack: one fenced DELETE joined on (id, lock_id) in a transaction that settles the removed keyed rows\' keys; count from @@ROWCOUNT', () => {
    const t = s.ackBatch.text;
    expect(t.startsWith('SET XACT_ABORT ON;\nDECLARE @affected int;\nDECLARE @removed TABLE')).toBe(true);
    expect(t).toContain('BEGIN TRANSACTION;\nDELETE target\nOUTPUT deleted.queue, deleted.ordering_key, deleted.state, deleted.seq INTO @removed\n');
    expect(t).toContain("OPENJSON(@settlements) WITH (id uniqueidentifier '$.id', lock_id uniqueidentifier '$.lock_id')");
    expect(t).toContain('ON target.id = settled.id AND target.lock_id = settled.lock_id;\nSET @affected = @@ROWCOUNT;');
    expect(t).toContain('FROM @removed WHERE ordering_key IS NOT NULL GROUP BY queue, ordering_key;');
    expect(t).toMatch(/COMMIT;\nSELECT @affected AS affected;$/);
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

  it('hand-back of a claim whose answer was lost: one UPDATE of the queue\'s live leases under @lock_id, through the leased index, skipping locked rows (L1)', () => {
    const t = s.releaseLostClaim.text;
    expect(t).toMatch(/^UPDATE \[dbo\]\.\[jobs\] WITH \(ROWLOCK, READPAST\)\nSET attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, locked_until = NULL, lock_id = NULL\n/);
    expect(t).toContain(`WHERE queue = @queue AND ${SENTINEL}`);
    // the leased index's filter and key range (queue, locked_until > now), lock_id from its included column
    expect(t).toContain('  AND lock_id IS NOT NULL AND locked_until > SYSUTCDATETIME() AND lock_id = @lock_id;');
    expect(t).not.toContain('available_at');
    expect(t).toMatch(/SELECT @@ROWCOUNT AS affected;$/);
    expect(Object.keys(s.releaseLostClaim.params)).toEqual(['queue', 'lock_id']);
    expect(typeName(s.releaseLostClaim, 'lock_id')).toBe('UniqueIdentifier');
    expect(length(s.releaseLostClaim, 'queue')).toBe(200);
  });

  it('NAK and renew are fenced on lock_id and read their count from the server; a NAK with a delay schedules; only a live lease renews (M2)', () => {
    expect(s.release.text).toContain('WHERE id = @id AND lock_id = @lock_id;');
    expect(s.release.text).toContain(`SET available_at = ${SPLIT('@delay_ms')}, locked_until = NULL, lock_id = NULL,\n    state = CASE WHEN @delay_ms > 0 THEN 1 END`);
    expect(s.release.text).toMatch(/SELECT @@ROWCOUNT AS affected;$/);
    expect(s.renew.text).toContain(`SET locked_until = ${SPLIT('@lock_timeout_ms')}`);
    expect(s.renew.text).toContain('WHERE id = @id AND lock_id = @lock_id AND locked_until > SYSUTCDATETIME();');
    // the renewal also answers whether an operator marked the job cancelled (the marker prefix of headers_json)
    expect(s.renew.text).toContain(`OUTPUT CASE WHEN inserted.headers_json LIKE N'{"AR-Cancel-Requested":%' THEN 1 ELSE 0 END INTO @renewed`);
    expect(s.renew.text).toMatch(/SELECT COUNT\(\*\) AS affected, CAST\(COALESCE\(MAX\(CAST\(cancel_requested AS int\)\), 0\) AS bit\) AS cancel_requested FROM @renewed;$/);
    expect(s.renew.text).not.toMatch(/attempts/);
    expect(s.release.text).not.toMatch(/attempts/);
  });

  it('dead-letter move deletes (fenced) before inserting, and inserts only when exactly that row went; a keyed head lets its key go on', () => {
    const t = s.deadLetterMove.text;
    expect(t.startsWith('SET XACT_ABORT ON;\nDECLARE @moved TABLE')).toBe(true);
    const del = t.indexOf('DELETE FROM [dbo].[jobs] OUTPUT deleted.attempts, deleted.priority, deleted.ordering_key, deleted.queue, deleted.state, deleted.seq INTO @moved WHERE id = @source_id AND lock_id = @lock_id;');
    const guard = t.indexOf('IF @@ROWCOUNT = 1');
    const keys = t.indexOf('    INSERT INTO @gone (queue, ordering_key, n, head, head_seq)');
    const ins = t.indexOf('INSERT INTO [dbo].[jobs] (id, queue, payload_json, headers_json, dead_letter_reason, attempts, priority, ordering_key)');
    expect(t.indexOf('BEGIN TRAN;')).toBeLessThan(del);
    expect(del).toBeGreaterThan(0);
    expect(guard).toBeGreaterThan(del);
    expect(keys).toBeGreaterThan(guard);
    expect(ins).toBeGreaterThan(keys);
    expect(t.indexOf('\nELSE\n')).toBeGreaterThan(ins);
    // the dead-letter row keeps the removed row's attempts, priority and ordering key (a requeue puts the job back at
    // its priority, on its key); OUTPUT INTO a table variable (a bare OUTPUT is refused on tables with triggers); a row
    // of the dead-letter queue's ready set (state NULL)
    expect(t.indexOf('DECLARE @moved TABLE (attempts int NOT NULL, priority smallint NOT NULL, ordering_key nvarchar(200) COLLATE Latin1_General_100_BIN2 NULL, queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL, state tinyint NULL, seq bigint NULL);')).toBeLessThan(del);
    expect(t).toContain('SELECT @new_id, @dlq, @payload_json, @headers_json, @reason, attempts, priority, ordering_key FROM @moved;');
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

  it('stats and dead-letter listing match queue names exactly, also the source-queue column; stats read the ready set\'s parts', () => {
    // the computed column, seekable on the dead-letter index, with the same sentinel as the queue column
    const sourceMatch = (p: string) => `dead_letter_source = @${p} AND dead_letter_source + N'.' = @${p} + N'.' COLLATE Latin1_General_100_BIN2`;
    const stats = s.queueStats.text;
    expect(stats).toContain(`queue = @queue AND ${SENTINEL}`);
    expect(stats).toContain(`WHERE ${DLQ_SENTINEL}\n       AND ${sourceMatch('queue')}) AS dead_lettered`);
    expect(stats).toContain('DATEDIFF_BIG(MILLISECOND, MIN(CASE WHEN w.due = 1 THEN w.available_at END), SYSUTCDATETIME()) / 1000.0 AS oldest_ready_age_seconds');
    // one filtered index per part: the ready set, the scheduled rows, the queued keyed rows, the lapsed leases
    expect(stats).toContain(`WHERE queue = @queue AND ${SENTINEL} AND state IS NULL AND lock_id IS NULL\n    UNION ALL`);
    expect(stats).toContain(`WHERE queue = @queue AND ${SENTINEL} AND state = 1\n    UNION ALL`);
    expect(stats).toContain(`WHERE queue = @queue AND ${SENTINEL} AND ordering_key IS NOT NULL AND state = 2\n    UNION ALL`);
    expect(stats).toContain(`SELECT available_at, 1 FROM [dbo].[jobs] WHERE queue = @queue AND ${SENTINEL} AND lock_id IS NOT NULL AND locked_until <= SYSUTCDATETIME()\n) AS w;`);
    expect(stats).toContain(`(SELECT COUNT(*) FROM [dbo].[jobs] WHERE queue = @queue AND ${SENTINEL} AND lock_id IS NOT NULL AND locked_until > SYSUTCDATETIME()) AS leased`);
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
    expect(s.ddlPhase1.text).toContain(`\nSET LOCK_TIMEOUT 5000;\n${add}\n${priority}\n${addOrderingKeyIfMissing('[dbo].[jobs]').join('\n')}\n`);
    expect(s.ddlPhase1.text.indexOf('CREATE TABLE')).toBeLessThan(s.ddlPhase1.text.indexOf('ALTER TABLE'));
  });

  it('requeue resets the row onto its source queue and strips the dead-letter headers; a keyed job is counted back into its key and goes to its back', () => {
    const t = s.requeueDeadLetter.text;
    expect(t.startsWith('SET XACT_ABORT ON;')).toBe(true);
    // the dead letter is locked first, then its key, then a new seq is drawn (after the key lock: H3)
    const row = t.indexOf('SELECT @key = ordering_key FROM [dbo].[jobs] WITH (UPDLOCK, ROWLOCK) WHERE id = @id AND');
    const key = t.indexOf(`SELECT @pending = pending FROM [dbo].[jobs_keys] WITH (UPDLOCK, HOLDLOCK) WHERE queue = @source AND queue + N'.' = @source + N'.' COLLATE Latin1_General_100_BIN2 AND ordering_key = @key;`);
    const seq = t.indexOf('IF @found = 1 SET @seq = NEXT VALUE FOR [dbo].[jobs_seq];');
    const update = t.indexOf('UPDATE [dbo].[jobs]\nSET queue = @source');
    expect(row).toBeGreaterThan(0);
    expect([row < key, key < seq, seq < update]).toEqual([true, true, true]);
    expect(t).toContain("        INSERT INTO [dbo].[jobs_keys] (queue, ordering_key, pending) VALUES (@source, @key, 1);");
    expect(t).toContain('        UPDATE [dbo].[jobs_keys] SET pending = pending + 1 WHERE');
    expect(t).toContain('SET queue = @source, attempts = 0, available_at = SYSUTCDATETIME(), locked_until = NULL, lock_id = NULL');
    expect(t).toContain('    seq = @seq, state = CASE WHEN @key IS NOT NULL AND @pending > 0 THEN 2 END,');
    expect(t).toContain('dead_letter_reason = NULL');
    expect(t).toContain(`JSON_MODIFY(JSON_MODIFY(headers_json, N'$."AR-DeadLetter-Reason"', NULL)`);
    expect(t).toContain(`N'$."AR-DeadLetter-Source-Queue"', NULL)`);
    expect(t).toMatch(/COMMIT;\nSELECT @found AS affected;$/);
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

  it('queueNames seeks one row per distinct queue on the dequeue index, at most @max, in name order (issue 27)', () => {
    const t = s.queueNames.text;
    expect(t).toContain('SELECT TOP (1) @q = queue FROM [dbo].[jobs] ORDER BY queue;');
    expect(t).toContain('WHILE @q IS NOT NULL AND (SELECT COUNT(*) FROM @names) < @max');
    expect(t).toContain('    SELECT TOP (1) @next = queue FROM [dbo].[jobs] WHERE queue > @q ORDER BY queue;');
    expect(t).toMatch(/SELECT queue FROM @names ORDER BY n;$/);
    expect(Object.keys(s.queueNames.params)).toEqual(['max']);
  });

  it('now reads the database clock', () => {
    expect(s.now.text).toBe('SELECT SYSUTCDATETIME() AS now;');
  });

  it('phase 1 takes the schema applock (exclusive, transaction-owned, 60 s) and creates no index on the transport table', () => {
    const t = s.ddlPhase1.text;
    expect(schemaLockResource('dbo')).toBe('asyncresponse:ddl:dbo');
    expect(t).toContain("sp_getapplock @Resource = N'asyncresponse:ddl:dbo', @LockMode = 'Exclusive'");
    expect(t).toContain("@LockOwner = 'Transaction', @LockTimeout = 60000;");
    expect(t).toMatch(/IF @lock_result < 0\s+THROW 51000, N'[^']+', 1;/);
    expect(t).toContain("IF SCHEMA_ID(N'dbo') IS NULL\n    EXEC (N'CREATE SCHEMA [dbo]');");
    expect(t).toContain("IF OBJECT_ID(N'[dbo].[jobs]', N'U') IS NULL");
    // the only index is the new, empty keys table's
    expect(t.match(/CREATE (UNIQUE )?(NONCLUSTERED )?INDEX/g)).toEqual(['CREATE INDEX']);
    expect(t).toContain('CREATE INDEX [jobs_keys_vacant_idx] ON [dbo].[jobs_keys] (queue) WHERE vacant = 1;');
    expect(t.indexOf('sp_getapplock')).toBeLessThan(t.indexOf('CREATE TABLE'));
  });

  it('phase 1 adds the ready set: the sequence, state and seq (no row touched), the keys table, no lock escalation, and files an older table\'s rows', () => {
    const t = s.ddlPhase1.text;
    expect(t).toContain("IF OBJECT_ID(N'[dbo].[jobs_seq]', N'SO') IS NULL\n    CREATE SEQUENCE [dbo].[jobs_seq] AS bigint START WITH 1 INCREMENT BY 1;");
    expect(t).toContain("IF COL_LENGTH(N'[dbo].[jobs]', N'state') IS NULL\n    ALTER TABLE [dbo].[jobs] ADD state tinyint NULL;");
    expect(t).toContain("IF COL_LENGTH(N'[dbo].[jobs]', N'seq') IS NULL\n    ALTER TABLE [dbo].[jobs] ADD seq bigint NULL DEFAULT (NEXT VALUE FOR [dbo].[jobs_seq]);");
    expect(t).not.toContain('WITH VALUES');
    expect(t).toContain(
      [
        "IF OBJECT_ID(N'[dbo].[jobs_keys]', N'U') IS NULL",
        'BEGIN',
        'CREATE TABLE [dbo].[jobs_keys] (',
        '    queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL,',
        '    ordering_key nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL,',
        '    pending int NOT NULL,',
        '    vacant bit NOT NULL DEFAULT 0,',
        '    PRIMARY KEY (queue, ordering_key)',
        ');',
      ].join('\n'),
    );
    expect(t).toContain("IF EXISTS (SELECT 1 FROM sys.tables WHERE object_id = OBJECT_ID(N'[dbo].[jobs]', N'U') AND lock_escalation <> 1)\n    ALTER TABLE [dbo].[jobs] SET (LOCK_ESCALATION = DISABLE);");
    // whether to file is decided before the columns are added; the filing is compiled after them (EXEC)
    const decide = t.indexOf("DECLARE @file_rows bit = CASE WHEN COL_LENGTH(N'[dbo].[jobs]', N'state') IS NULL THEN 1 ELSE 0 END;");
    expect(decide).toBeGreaterThan(0);
    expect(decide).toBeLessThan(t.indexOf('ADD state tinyint NULL'));
    expect(t).toMatch(/IF @file_rows = 1\nBEGIN\n    EXEC \(N'DECLARE @last uniqueidentifier;[\s\S]*INSERT INTO \[dbo\]\.\[jobs_keys\] \(queue, ordering_key, pending\)[\s\S]*'\);\nEND;$/);
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

  it('phase 2 takes the table applock for 5 s, then builds the ready set\'s four filtered indexes and the two others under LOCK_TIMEOUT, then drops the three they replaced', () => {
    expect(tableLockResource('dbo', 'jobs')).toBe('asyncresponse:ddl:dbo.jobs');
    expect(s.ddlTableLock.text).toContain("sp_getapplock @Resource = N'asyncresponse:ddl:dbo.jobs', @LockMode = 'Exclusive'");
    expect(s.ddlTableLock.text).toContain("@LockOwner = 'Transaction', @LockTimeout = 5000;");
    expect(s.ddlTableLock.text).toContain("THROW 51000, N'AsyncResponse transport could not take its table lock within 5000 ms.', 1;");
    const t = s.ddlBuildIndexes.text;
    expect(t.startsWith('SET LOCK_TIMEOUT 5000;\nSET XACT_ABORT ON;\n')).toBe(true); // a 1222 ends the whole batch
    expect(t.endsWith('\nSET LOCK_TIMEOUT -1;')).toBe(true);
    expect(t.match(/CREATE INDEX/g)).toHaveLength(6);
    expect(t.match(/IF NOT EXISTS \(SELECT 1 FROM sys\.indexes WHERE object_id = OBJECT_ID\(N'\[dbo\]\.\[jobs\]', N'U'\) AND name = N'/g)).toHaveLength(6);
    expect(t).toContain("AND name = N'jobs_ready_set_idx')\n    CREATE INDEX [jobs_ready_set_idx] ON [dbo].[jobs] (queue, priority DESC, available_at, seq) WHERE state IS NULL AND lock_id IS NULL;");
    expect(t).toContain("AND name = N'jobs_scheduled_idx')\n    CREATE INDEX [jobs_scheduled_idx] ON [dbo].[jobs] (queue, available_at) WHERE state = 1;");
    expect(t).toContain("AND name = N'jobs_leased_idx')\n    CREATE INDEX [jobs_leased_idx] ON [dbo].[jobs] (queue, locked_until) INCLUDE (lock_id) WHERE lock_id IS NOT NULL;");
    expect(t).toContain("AND name = N'jobs_key_order_idx')\n    CREATE INDEX [jobs_key_order_idx] ON [dbo].[jobs] (queue, ordering_key, seq) WHERE ordering_key IS NOT NULL;");
    expect(t).toContain("AND name = N'jobs_created_idx')\n    CREATE INDEX [jobs_created_idx] ON [dbo].[jobs] (created_at);");
    expect(t).toContain("AND name = N'jobs_dead_letter_idx')\n    CREATE INDEX [jobs_dead_letter_idx] ON [dbo].[jobs] (queue, dead_letter_source);");
    // what the ready set replaced goes once it is built (after it, guarded): version 1's, 14's and 16's indexes
    for (const old of ['jobs_ready_idx', 'jobs_priority_ready_idx', 'jobs_ordering_idx']) {
      expect(t).toContain(`IF EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[dbo].[jobs]', N'U') AND name = N'${old}')\n    DROP INDEX [${old}] ON [dbo].[jobs];`);
      expect(t.indexOf(`DROP INDEX [${old}]`)).toBeGreaterThan(t.lastIndexOf('CREATE INDEX'));
    }
    expect(t).not.toMatch(/UNIQUE|WHERE queue/);
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
      // every variable of each DECLARE (one may declare several: DECLARE @a int, @b bigint;)
      const declared = new Set([...st.text.matchAll(/DECLARE ([^;]*);/g)].flatMap((m) => [...m[1]!.matchAll(/@(\w+)/g)].map((v) => v[1])));
      const used = new Set([...st.text.matchAll(/@(\w+)/g)].map((m) => m[1]!).filter((p) => !p.startsWith('@')));
      const params = Object.keys(st.params);
      for (const p of params) expect(used.has(p), `${name}: @${p} declared but unused`).toBe(true);
      for (const p of used) {
        const known = params.includes(p) || declared.has(p) || ['ROWCOUNT', 'TRANCOUNT', 'Resource', 'LockMode', 'LockOwner', 'LockTimeout'].includes(p);
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
    expect(n.readySetIndex).toBe('m'.repeat(114) + '_ready_set_idx');
    expect(n.sequence).toBe('m'.repeat(124) + '_seq');
    expect(n.keysTable).toBe('m'.repeat(123) + '_keys');
    const built = transportStatements(n);
    for (const st of Object.values(built)) expect(st.text.length).toBeGreaterThan(0);
    const indexNames = [...built.ddlBuildIndexes.text.matchAll(/CREATE INDEX \[(\w+)\]/g)].map((m) => m[1]!);
    expect(indexNames).toHaveLength(6);
    for (const name of indexNames) {
      expect(name.length).toBeLessThanOrEqual(128);
      expect(name).toMatch(/_(ready_set|scheduled|leased|key_order|created|dead_letter)_idx$/);
    }
    expect(built.ddlPhase1.text).toContain(`CREATE INDEX [${'m'.repeat(112)}_keys_vacant_idx]`);
    expect(built.ddlTableLock.text).toContain(`asyncresponse:ddl:dbo.${long}`);
  });

  it('the printed schema script is idempotent DDL for the same table and indexes', () => {
    const script = printSqlServerSchema(names);
    expect(script).toContain("IF SCHEMA_ID(N'dbo') IS NULL");
    expect(script).toContain("IF OBJECT_ID(N'[dbo].[jobs]', N'U') IS NULL\nCREATE TABLE [dbo].[jobs] (");
    expect(script).toContain('queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL');
    expect(script).toContain(addPriorityIfMissing('[dbo].[jobs]').join('\n'));
    expect(script).toContain('    ALTER TABLE [dbo].[jobs] ADD priority smallint NOT NULL DEFAULT 0;');
    expect(script).toContain('CREATE INDEX [jobs_ready_set_idx] ON [dbo].[jobs] (queue, priority DESC, available_at, seq) WHERE state IS NULL AND lock_id IS NULL;');
    expect(script).toContain('CREATE INDEX [jobs_created_idx] ON [dbo].[jobs] (created_at);');
    expect(script).toContain('CREATE INDEX [jobs_dead_letter_idx] ON [dbo].[jobs] (queue, dead_letter_source);');
    expect(script).toContain(addDeadLetterSourceIfMissing('[dbo].[jobs]').join('\n'));
    expect(script).toContain(addOrderingKeyIfMissing('[dbo].[jobs]').join('\n'));
    expect(script).toContain('ALTER TABLE [dbo].[jobs] ADD seq bigint NULL DEFAULT (NEXT VALUE FOR [dbo].[jobs_seq]);');
    expect(script).toContain('CREATE TABLE [dbo].[jobs_keys] (');
    expect(script.match(/IF NOT EXISTS \(SELECT 1 FROM sys\.indexes/g)).toHaveLength(6);
    expect(script.match(/^GO$/gm)!.length).toBeGreaterThanOrEqual(4);
  });
});
