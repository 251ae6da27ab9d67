// Where the T-SQL engine behind MSSQL_CONNECTION_STRING is not SQL Server. Babelfish for PostgreSQL speaks TDS
// and runs T-SQL, so the SQL Server contract suite executes on it (docs/tests.md), but a few behaviours
// differ. Each difference is one named entry with a probe that shows it; engine-gaps.contract.test.ts runs every
// probe on the connected engine, so an entry that stopped being true (or never was) fails there. A test that
// meets a gap still runs on SQL Server and is skipped only on that engine, printing the gap's reason.

import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import * as sql from 'mssql';
import { expect } from 'vitest';
import {
  rewriteConvertStyle127,
  rewriteCreateOrAlter,
  rewriteCurrentTransactionId,
  rewriteExecuteAsOwner,
  shimTransactionStart,
  rewriteCteUpdates,
  rewriteNextValueForOver,
  rewriteNocountScope,
  rewriteOpenJsonStrings,
  rewriteOutputExpressionInto,
  rewriteRowcountAfterOutput,
  rewriteShimmedSequence,
} from './tds-shims';

export type TdsEngine = 'sqlserver' | 'babelfish';

export interface EngineGap {
  /** What differs, said so that a skipped test's printed reason explains itself. */
  what: string;
  /** Shows the difference on the connected engine: the outcome it reports. */
  probe: (connectionString: string) => Promise<string>;
  /** The probe's outcome on SQL Server and on the engine that has the gap. */
  sqlServer: string;
  babelfish: string;
}

async function withPool<T>(cs: string, f: (pool: sql.ConnectionPool) => Promise<T>): Promise<T> {
  const pool = new sql.ConnectionPool(cs);
  await pool.connect();
  try {
    return await f(pool);
  } finally {
    await pool.close();
  }
}

/** One batch whose last result set's first row has an `outcome` column; a batch the engine refuses gives 'fails'. */
const batchProbe = (text: string) => (cs: string) =>
  withPool(cs, async (pool) =>
    pool
      .request()
      .query<{ outcome: string }>(text)
      .then((r) => String((r.recordsets as Array<Array<{ outcome?: string }>>).at(-1)?.[0]?.outcome), () => 'fails'),
  );

/** The cancel marker's and the history cursor's forms of the conversion: what separates the date from the time. */
const CONVERT_127_PROBE =
  "SELECT CASE WHEN SUBSTRING(CONVERT(nvarchar(30), SYSUTCDATETIME(), 127), 11, 1) = N'T' AND SUBSTRING(CONVERT(nvarchar(33), SYSUTCDATETIME(), 126), 11, 1) = N'T' THEN N'ISO 8601' ELSE N'a space' END AS outcome;";

export const ENGINE_GAPS = {
  catalogViews: {
    what:
      "catalog views read back in other forms than SQL Server's: a BIN2 column's collation_name is bbf_unicode_bin2, " +
      "a default's definition is a CAST (and on some builds sys.columns joined to sys.default_constraints fails with " +
      "'unrecognized node type: 30'), so catalog verification cannot pass; the harness turns it off there (verifyCatalog: false)",
    probe: batchProbe(
      [
        'BEGIN TRY',
        "    IF OBJECT_ID(N'dbo.gap_catalog_bin2', N'U') IS NULL CREATE TABLE dbo.gap_catalog_bin2 (id int NOT NULL, h nvarchar(10) COLLATE Latin1_General_100_BIN2 NOT NULL DEFAULT N'{}');",
        // the catalog snapshot's form: the object id in a variable, the default joined
        "    DECLARE @object_id int = OBJECT_ID(N'dbo.gap_catalog_bin2', N'U');",
        '    SELECT c.collation_name AS outcome FROM sys.columns AS c',
        '    LEFT JOIN sys.default_constraints AS dc ON dc.object_id = c.default_object_id',
        "    WHERE c.object_id = @object_id AND c.name = N'h';",
        'END TRY',
        "BEGIN CATCH SELECT N'fails' AS outcome; END CATCH;",
      ].join('\n'),
    ),
    sqlServer: 'Latin1_General_100_BIN2',
    babelfish: 'bbf_unicode_bin2',
  },
  readPast: {
    what:
      'UPDLOCK, ROWLOCK and READPAST are accepted and ignored: a second claimer blocks on (or times out behind) rows ' +
      'another session holds instead of skipping them, so competing consumers cannot claim side by side',
    // two sessions: one holds row 1; the other claims the first row it may take, waiting at most 2 s
    probe: (cs) =>
      withPool(cs, async (pool) => {
        const table = `gap_readpast_${process.pid}`;
        await pool.request().query(`IF OBJECT_ID(N'dbo.${table}', N'U') IS NOT NULL DROP TABLE dbo.${table}; CREATE TABLE dbo.${table} (id int NOT NULL PRIMARY KEY); INSERT INTO dbo.${table} (id) VALUES (1), (2);`);
        const holder = new sql.Transaction(pool);
        await holder.begin();
        try {
          await holder.request().query(`UPDATE dbo.${table} SET id = id WHERE id = 1;`);
          const r = await pool
            .request()
            .query<{ id: number }>(`SET LOCK_TIMEOUT 2000; SELECT TOP (1) id FROM dbo.${table} WITH (UPDLOCK, ROWLOCK, READPAST) ORDER BY id;`)
            .then((x) => `claimed row ${x.recordset[0]?.id}`, () => 'blocked');
          return r === 'claimed row 2' ? 'skips the held row' : `does not skip (${r})`;
        } finally {
          await holder.rollback().catch(() => undefined);
          await pool.request().query(`DROP TABLE dbo.${table};`);
        }
      }),
    sqlServer: 'skips the held row',
    babelfish: 'does not skip (claimed row 1)',
  },
  updateThroughCte: {
    what:
      'UPDATE through a common table expression fails (relation "next" does not exist): the claim is such an UPDATE ' +
      "(TOP (@n) … ORDER BY in the CTE, Microsoft's documented form of an ordered UPDATE TOP), so nothing can be claimed",
    probe: batchProbe(
      [
        'BEGIN TRY',
        "    IF OBJECT_ID(N'dbo.gap_cte', N'U') IS NULL CREATE TABLE dbo.gap_cte (id int NOT NULL PRIMARY KEY, n int NOT NULL);",
        '    DELETE FROM dbo.gap_cte; INSERT INTO dbo.gap_cte (id, n) VALUES (1, 0), (2, 0);',
        '    WITH next AS (SELECT TOP (1) id, n FROM dbo.gap_cte ORDER BY id) UPDATE next SET n = n + 1;',
        "    SELECT CASE WHEN (SELECT n FROM dbo.gap_cte WHERE id = 1) = 1 THEN N'updates through the CTE' ELSE N'wrong row' END AS outcome;",
        'END TRY',
        "BEGIN CATCH SELECT N'fails' AS outcome; END CATCH;",
      ].join('\n'),
    ),
    sqlServer: 'updates through the CTE',
    babelfish: 'fails',
  },
  nextValueForOver: {
    what:
      'NEXT VALUE FOR … OVER (ORDER BY …) is a syntax error: the ready set draws a batch\'s seq values in its order that way ' +
      '(every publish, the keyed backfill)',
    probe: batchProbe(
      [
        'BEGIN TRY',
        "    IF OBJECT_ID(N'dbo.gap_nvf_seq', N'SO') IS NULL CREATE SEQUENCE dbo.gap_nvf_seq AS bigint START WITH 1 INCREMENT BY 1;",
        "    EXEC (N'SELECT NEXT VALUE FOR dbo.gap_nvf_seq OVER (ORDER BY v.x) AS s FROM (VALUES (2), (1)) AS v(x);');",
        "    SELECT N'numbers rows in order' AS outcome;",
        'END TRY',
        "BEGIN CATCH SELECT N'fails' AS outcome; END CATCH;",
      ].join('\n'),
    ),
    sqlServer: 'numbers rows in order',
    babelfish: 'fails',
  },
  outputIntoAndOutput: {
    what:
      'an UPDATE with OUTPUT … INTO @table followed by its own OUTPUT (the documented two-clause form) is a syntax error ' +
      '(the limited claim enrolled its rows in the lease roster that way until it counted the leased index instead)',
    probe: batchProbe(
      [
        'BEGIN TRY',
        "    IF OBJECT_ID(N'dbo.gap_oio', N'U') IS NULL CREATE TABLE dbo.gap_oio (id int NOT NULL PRIMARY KEY, n int NOT NULL);",
        '    DELETE FROM dbo.gap_oio; INSERT INTO dbo.gap_oio (id, n) VALUES (1, 0);',
        "    EXEC (N'DECLARE @v TABLE (id int); UPDATE dbo.gap_oio SET n = 1 OUTPUT inserted.id INTO @v (id) OUTPUT inserted.id WHERE id = 1;');",
        "    SELECT N'outputs into a table and to the client' AS outcome;",
        'END TRY',
        "BEGIN CATCH SELECT N'fails' AS outcome; END CATCH;",
      ].join('\n'),
    ),
    sqlServer: 'outputs into a table and to the client',
    babelfish: 'fails',
  },
  outputExpressionInto: {
    what:
      "an UPDATE's OUTPUT <an expression over inserted.…> INTO @table fails (WITH query \"internal_output_cte…\" does not have a " +
      'RETURNING clause; a plain inserted column works): the lease renewal answers whether the job was marked cancelled that way',
    probe: batchProbe(
      [
        'BEGIN TRY',
        "    IF OBJECT_ID(N'dbo.gap_oexp', N'U') IS NULL CREATE TABLE dbo.gap_oexp (id int NOT NULL PRIMARY KEY, h nvarchar(max) NOT NULL);",
        "    DELETE FROM dbo.gap_oexp; INSERT INTO dbo.gap_oexp (id, h) VALUES (1, N'{\"x\":1}');",
        '    DECLARE @v TABLE (c bit NOT NULL);',
        "    UPDATE dbo.gap_oexp SET h = h OUTPUT CASE WHEN inserted.h LIKE N'{\"x\":%' THEN 1 ELSE 0 END INTO @v WHERE id = 1;",
        "    SELECT CASE WHEN (SELECT c FROM @v) = 1 THEN N'outputs the expression' ELSE N'wrong value' END AS outcome;",
        'END TRY',
        "BEGIN CATCH SELECT N'fails' AS outcome; END CATCH;",
      ].join('\n'),
    ),
    sqlServer: 'outputs the expression',
    babelfish: 'fails',
  },
  convertStyle127: {
    what:
      "CONVERT(nvarchar, <datetime2>, 127) and style 126 give 'yyyy-mm-dd hh:mi:ss…' (a space, not ISO 8601's T): the " +
      "cancel marker's time and the history search's cursor key are written that way, so neither reads as an ISO instant",
    probe: batchProbe(CONVERT_127_PROBE),
    sqlServer: 'ISO 8601',
    babelfish: 'a space',
  },
  rowcountAfterOutput: {
    what:
      '@@ROWCOUNT after a statement whose OUTPUT goes to the client is 0 (the driver\'s rowsAffected too): the limited claim ' +
      'reads its claim\'s count that way to spend the rate tokens',
    probe: batchProbe(
      [
        "IF OBJECT_ID(N'dbo.gap_rc', N'U') IS NULL CREATE TABLE dbo.gap_rc (id int NOT NULL PRIMARY KEY, n int NOT NULL);",
        'DELETE FROM dbo.gap_rc; INSERT INTO dbo.gap_rc (id, n) VALUES (1, 0), (2, 0);',
        'DECLARE @c int;',
        'UPDATE dbo.gap_rc SET n = 1 OUTPUT inserted.id WHERE id > 0;',
        'SET @c = @@ROWCOUNT;',
        "SELECT CAST(@c AS nvarchar(10)) + N' counted' AS outcome;",
      ].join('\n'),
    ),
    sqlServer: '2 counted',
    babelfish: '0 counted',
  },
  nocountPersists: {
    what:
      "SET NOCOUNT ON made inside one request (sp_executesql) stays on for the session's later requests, and there an " +
      "UPDATE's OUTPUT rows are dropped: the limited claim sets it, so the next claim on that connection answered nothing",
    probe: (cs) => nocountProbe(cs, (text) => text),
    sqlServer: 'returns the rows',
    babelfish: 'drops the rows',
  },
  outputFunctionOfDeleted: {
    what:
      "in a DELETE joined to OPENJSON, a CASE over a deleted column in the OUTPUT clause (CASE WHEN ISJSON(deleted.headers_json) " +
      "= 1 THEN JSON_VALUE(…) END) fails (missing FROM-clause entry for table \"deleted\"; plain deleted.* columns and a bare " +
      'JSON_VALUE(deleted.…) work): the batched ack into job history reads the correlation id that way',
    probe: batchProbe(
      [
        'BEGIN TRY',
        "    IF OBJECT_ID(N'dbo.gap_output', N'U') IS NULL CREATE TABLE dbo.gap_output (id int NOT NULL PRIMARY KEY, h nvarchar(max) NOT NULL);",
        '    DELETE FROM dbo.gap_output; INSERT INTO dbo.gap_output (id, h) VALUES (1, N\'{"a":"x"}\');',
        '    DECLARE @out TABLE (a nvarchar(400) NULL);',
        // the ack's form: the target joined to OPENJSON (a plain DELETE … WHERE with the same OUTPUT works)
        "    DELETE target OUTPUT CASE WHEN ISJSON(deleted.h) = 1 THEN JSON_VALUE(deleted.h, N'$.a') END INTO @out FROM dbo.gap_output AS target",
        "    INNER JOIN OPENJSON(N'[{\"id\":1}]') WITH (id int '$.id') AS s ON target.id = s.id;",
        "    SELECT CASE WHEN (SELECT a FROM @out) = N'x' THEN N'outputs the value' ELSE N'wrong value' END AS outcome;",
        'END TRY',
        "BEGIN CATCH SELECT N'fails' AS outcome; END CATCH;",
      ].join('\n'),
    ),
    sqlServer: 'outputs the value',
    babelfish: 'fails',
  },
  utf8Collation: {
    what:
      'no UTF-8 collation (Latin1_General_100_BIN2_UTF8): the server check refuses the engine, as it refuses SQL Server ' +
      '2016/2017, so schema versions (the publish procedures), topic copies and everything opened through the version ' +
      'gate cannot run',
    probe: batchProbe(
      "SELECT CASE WHEN COLLATIONPROPERTY(N'Latin1_General_100_BIN2_UTF8', 'CodePage') = 65001 THEN N'has it' ELSE N'lacks it' END AS outcome;",
    ),
    sqlServer: 'has it',
    babelfish: 'lacks it',
  },
  indexNames: {
    what:
      'sys.indexes shows an index under another name (the name given, the table name and a hash), so the guards ' +
      "IF NOT EXISTS (… sys.indexes … name = N'…') never find an index: a second schema attempt on one table fails " +
      'with error 2714 (object exists)',
    probe: batchProbe(
      [
        "IF OBJECT_ID(N'dbo.gap_idx', N'U') IS NULL CREATE TABLE dbo.gap_idx (id int NOT NULL, q int NOT NULL);",
        "IF INDEXPROPERTY(OBJECT_ID(N'dbo.gap_idx'), N'gap_idx_q', 'IndexID') IS NULL",
        "    AND NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.gap_idx', N'U') AND name LIKE N'gap_idx_q%')",
        '    CREATE INDEX gap_idx_q ON dbo.gap_idx (q);',
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'dbo.gap_idx', N'U') AND name = N'gap_idx_q')",
        "    THEN N'found by name' ELSE N'not found by name' END AS outcome;",
      ].join('\n'),
    ),
    sqlServer: 'found by name',
    babelfish: 'not found by name',
  },
  merge: {
    what:
      "MERGE is not supported ('MERGE' is not currently supported in Babelfish): recovery registrations and the " +
      "channel's subscriber rows are upserted with the spec's MERGE … WITH (HOLDLOCK)",
    probe: batchProbe(
      [
        "IF OBJECT_ID(N'dbo.gap_merge', N'U') IS NULL CREATE TABLE dbo.gap_merge (id int NOT NULL PRIMARY KEY, n int NOT NULL);",
        'MERGE dbo.gap_merge WITH (HOLDLOCK) AS target USING (SELECT 1 AS id) AS src ON target.id = src.id',
        '    WHEN MATCHED THEN UPDATE SET n = target.n + 1 WHEN NOT MATCHED THEN INSERT (id, n) VALUES (src.id, 1);',
        "SELECT N'merges' AS outcome;",
      ].join('\n'),
    ),
    sqlServer: 'merges',
    babelfish: 'fails',
  },
  jsonEscapes: {
    what:
      "ISJSON accepts text with a \\ud800 or \\u0000 escape that JSON_VALUE then refuses with an error (PostgreSQL's " +
      'json input rules), so the computed dead-letter source over such headers fails where SQL Server reads the other keys ' +
      "(and a publish batch holding one fails in OPENJSON: 'unsupported Unicode escape sequence')",
    probe: batchProbe(
      [
        'BEGIN TRY',
        "    SELECT CASE WHEN ISJSON(N'{\"x\":\"\\ud800\",\"s\":\"q\"}') = 1",
        "        THEN JSON_VALUE(N'{\"x\":\"\\ud800\",\"s\":\"q\"}', N'$.s') END AS outcome;",
        'END TRY',
        "BEGIN CATCH SELECT N'fails' AS outcome; END CATCH;",
      ].join('\n'),
    ),
    sqlServer: 'q',
    babelfish: 'fails',
  },
  openJsonStringValues: {
    what:
      "OPENJSON … WITH (p nvarchar(max) '$.p') returns a string value with its JSON escapes kept (\\\" for \"), so the " +
      "publish (which reads its batch through OPENJSON) stores a payload or headers text escaped: it reads back as " +
      'other text than was sent (found by the waiting-jobs listing, the first read of a published row without a claim)',
    probe: batchProbe(`SELECT j.p AS outcome FROM OPENJSON(N'[{"p":"{\\"n\\":0}"}]') WITH (p nvarchar(max) '$.p') AS j;`),
    sqlServer: '{"n":0}',
    babelfish: '{\\"n\\":0}',
  },
  executeAsOwner: {
    what:
      "a procedure WITH EXECUTE AS OWNER is refused ('EXECUTE AS SELF|OWNER|<user>|<login>' is not currently supported): the " +
      'announce of T-SQL publishes runs as its owner so that its callers need EXECUTE on it only',
    probe: batchProbe(
      [
        'BEGIN TRY',
        "    IF OBJECT_ID(N'dbo.gap_exec_as', N'P') IS NOT NULL DROP PROCEDURE dbo.gap_exec_as;",
        "    EXEC (N'CREATE PROCEDURE dbo.gap_exec_as WITH EXECUTE AS OWNER AS BEGIN SELECT 1 AS one; END;');",
        "    SELECT N'creates it' AS outcome;",
        'END TRY',
        "BEGIN CATCH SELECT N'fails' AS outcome; END CATCH;",
      ].join('\n'),
    ),
    sqlServer: 'creates it',
    babelfish: 'fails',
  },
  createOrAlter: {
    what:
      "CREATE OR ALTER PROCEDURE is a syntax error (syntax error at or near \"ALTER\"): the publish procedures (versions 3, 6, 18, 22) " +
      'and the announce are created that way',
    probe: batchProbe(
      [
        'BEGIN TRY',
        "    EXEC (N'CREATE OR ALTER PROCEDURE dbo.gap_create_or_alter AS BEGIN SELECT 1 AS one; END;');",
        "    SELECT N'creates or alters' AS outcome;",
        'END TRY',
        "BEGIN CATCH SELECT N'fails' AS outcome; END CATCH;",
      ].join('\n'),
    ),
    sqlServer: 'creates or alters',
    babelfish: 'fails',
  },
  currentTransactionId: {
    what:
      'CURRENT_TRANSACTION_ID() does not exist (function current_transaction_id() does not exist), nor sys.dm_tran_current_transaction: ' +
      'the announce makes one call per queue per transaction by remembering the transaction id',
    probe: batchProbe(
      [
        'BEGIN TRY',
        "    EXEC (N'BEGIN TRAN; DECLARE @a bigint = CURRENT_TRANSACTION_ID(); COMMIT;');",
        "    SELECT N'has it' AS outcome;",
        'END TRY',
        "BEGIN CATCH SELECT N'fails' AS outcome; END CATCH;",
      ].join('\n'),
    ),
    sqlServer: 'has it',
    babelfish: 'fails',
  },
  foreignKeyBin2: {
    what:
      'a row written into a table whose FOREIGN KEY is over BIN2 nvarchar columns fails (could not determine which collation ' +
      'to use for string comparison), so the flow steps table is created there without its key to the runs (the harness ' +
      'builds it so); a run deleted or pruned then leaves its step rows behind on that engine only',
    probe: batchProbe(
      [
        'BEGIN TRY',
        "    IF OBJECT_ID(N'dbo.gap_fk_child', N'U') IS NOT NULL DROP TABLE dbo.gap_fk_child;",
        "    IF OBJECT_ID(N'dbo.gap_fk_parent', N'U') IS NOT NULL DROP TABLE dbo.gap_fk_parent;",
        '    CREATE TABLE dbo.gap_fk_parent (id nvarchar(40) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY);',
        '    CREATE TABLE dbo.gap_fk_child (id nvarchar(40) COLLATE Latin1_General_100_BIN2 NOT NULL REFERENCES dbo.gap_fk_parent (id) ON DELETE CASCADE);',
        "    INSERT INTO dbo.gap_fk_parent (id) VALUES (N'a');",
        "    INSERT INTO dbo.gap_fk_child (id) VALUES (N'a');",
        "    SELECT N'writes the row' AS outcome;",
        'END TRY',
        "BEGIN CATCH SELECT N'fails' AS outcome; END CATCH;",
      ].join('\n'),
    ),
    sqlServer: 'writes the row',
    babelfish: 'fails',
  },
} satisfies Record<string, EngineGap>;

export type EngineGapId = keyof typeof ENGINE_GAPS;

const GAPS_BY_ENGINE: Readonly<Record<TdsEngine, readonly EngineGapId[]>> = {
  sqlserver: [],
  babelfish: Object.keys(ENGINE_GAPS) as EngineGapId[],
};

/**
 * A gap the SQL Server harness works around on that engine by rewriting the statements it sends (tds-shims.ts): a test
 * that meets only shimmed gaps runs there, through the rewrite, instead of being skipped. The probe runs the rewritten
 * form of the construct on the connected engine and must give SQL Server's outcome for the original.
 */
export interface EngineShim {
  /** The rewrite, said so that a test's printed note explains itself. */
  what: string;
  rewrite: (text: string) => string;
  probe: (connectionString: string) => Promise<string>;
  sqlServer: string;
}

export const ENGINE_SHIMS: Partial<Record<EngineGapId, EngineShim>> = {
  updateThroughCte: {
    what: 'the ordered UPDATE through a CTE runs as UPDATE t … WHERE id IN (SELECT TOP (n) id FROM t WITH (…) WHERE … ORDER BY …)',
    rewrite: rewriteCteUpdates,
    probe: (cs) =>
      withPool(cs, async (pool) => {
        await pool.request().query(
          "IF OBJECT_ID(N'dbo.gap_cte_shim', N'U') IS NULL CREATE TABLE dbo.gap_cte_shim (id int NOT NULL PRIMARY KEY, n int NOT NULL); " +
            'DELETE FROM dbo.gap_cte_shim; INSERT INTO dbo.gap_cte_shim (id, n) VALUES (1, 0), (2, 0), (3, 0), (4, 1);',
        );
        const text = rewriteCteUpdates(
          [
            'WITH next AS (',
            '    SELECT TOP (@n) id, n FROM [dbo].[gap_cte_shim] WITH (UPDLOCK, ROWLOCK, READPAST)',
            '    WHERE n = 0',
            '    ORDER BY id DESC)',
            'UPDATE next',
            'SET n = n + 10',
            'OUTPUT inserted.id, inserted.n;',
          ].join('\n'),
        );
        const r = await pool.request().input('n', sql.Int(), 2).query<{ id: number; n: number }>(text);
        return r.recordset.map((x) => `${x.id}:${x.n}`).sort().join(',');
      }),
    sqlServer: '2:10,3:10',
  },
  nextValueForOver: {
    what:
      'NEXT VALUE FOR s OVER (ORDER BY e) runs as (SELECT NEXT VALUE FOR s) + ROW_NUMBER() OVER (ORDER BY e), the sequence ' +
      'created stepping 1000, so a statement\'s values stay ordered and unique against every other value drawn',
    rewrite: (text) => rewriteShimmedSequence(rewriteNextValueForOver(text)),
    probe: (cs) =>
      withPool(cs, async (pool) => {
        const setup = rewriteShimmedSequence(
          [
            "IF OBJECT_ID(N'[dbo].[gap_nvf_rows]', N'U') IS NOT NULL DROP TABLE [dbo].[gap_nvf_rows];",
            "IF OBJECT_ID(N'[dbo].[gap_nvf_shim]', N'SO') IS NOT NULL DROP SEQUENCE [dbo].[gap_nvf_shim];",
            'CREATE SEQUENCE [dbo].[gap_nvf_shim] AS bigint START WITH 1 INCREMENT BY 1;',
            'CREATE TABLE [dbo].[gap_nvf_rows] (o int NOT NULL, s bigint NOT NULL);',
          ].join('\n'),
        );
        await pool.request().query(setup);
        const insert = rewriteNextValueForOver(
          "INSERT INTO [dbo].[gap_nvf_rows] (o, s) SELECT src.o, NEXT VALUE FOR [dbo].[gap_nvf_shim] OVER (ORDER BY src.o) FROM OPENJSON(N'[{\"o\":2},{\"o\":0},{\"o\":1}]') WITH (o int '$.o') AS src;",
        );
        await pool.request().query(insert);
        await pool.request().query(insert); // a second statement: its values follow the first's
        const r = await pool.request().query<{ o: number; s: string }>('SELECT o, CAST(s AS nvarchar(30)) AS s FROM [dbo].[gap_nvf_rows] ORDER BY s;');
        const next = await pool.request().query<{ v: string }>('SELECT CAST(NEXT VALUE FOR [dbo].[gap_nvf_shim] AS nvarchar(30)) AS v;');
        const values = r.recordset.map((x) => BigInt(x.s));
        const unique = new Set(values.map(String)).size === values.length;
        const below = values.every((v) => v < BigInt(next.recordset[0]!.v));
        return `${r.recordset.map((x) => x.o).join(',')}${unique ? ', unique' : ', repeated'}${below ? ', below the next value' : ', not below the next value'}`;
      }),
    sqlServer: '0,1,2,0,1,2, unique, below the next value',
  },
  openJsonStringValues: {
    what: "OPENJSON(x) WITH (…) AS a runs as a derived table that decodes each string column's JSON escapes",
    rewrite: rewriteOpenJsonStrings,
    probe: (cs) =>
      withPool(cs, async (pool) => {
        const text = rewriteOpenJsonStrings(
          "SELECT j.p AS outcome FROM OPENJSON(@batch) WITH (p nvarchar(max) '$.p', q int '$.q') AS j ORDER BY j.q;",
        );
        const values = ['{"n":0}', 'a\\b\nc "d" \u0001 /é'];
        const batch = JSON.stringify(values.map((p, q) => ({ p, q })));
        const r = await pool.request().input('batch', sql.NVarChar(sql.MAX), batch).query<{ outcome: string }>(text);
        return r.recordset.every((row, i) => row.outcome === values[i]) ? 'reads the strings sent' : `reads ${JSON.stringify(r.recordset)}`;
      }),
    sqlServer: 'reads the strings sent',
  },
  rowcountAfterOutput: {
    what: 'reads as a claim\'s row count the rows leased under its lock id (SET @x = (SELECT COUNT(*) … WHERE lock_id = @lock_id))',
    rewrite: rewriteRowcountAfterOutput,
    probe: (cs) =>
      withPool(cs, async (pool) => {
        await pool.request().query(
          "IF OBJECT_ID(N'dbo.gap_rc_shim', N'U') IS NULL CREATE TABLE dbo.gap_rc_shim (id int NOT NULL PRIMARY KEY, lock_id uniqueidentifier NULL); " +
            'DELETE FROM dbo.gap_rc_shim; INSERT INTO dbo.gap_rc_shim (id) VALUES (1), (2), (3);',
        );
        const text = rewriteRowcountAfterOutput(
          ['DECLARE @claimed int;', 'UPDATE [dbo].[gap_rc_shim]', 'SET lock_id = @lock_id', 'OUTPUT inserted.id', 'WHERE id < 3;', 'SET @claimed = @@ROWCOUNT;', 'SELECT @claimed AS claimed;'].join('\n'),
        );
        const r = await pool.request().input('lock_id', sql.UniqueIdentifier(), randomUUID()).query(text);
        const sets = r.recordsets as unknown as Array<Array<Record<string, unknown>>>;
        return `${sets[0]!.length} rows out, ${String(sets.at(-1)![0]!.claimed)} counted`;
      }),
    sqlServer: '2 rows out, 2 counted',
  },
};

ENGINE_SHIMS.outputExpressionInto = {
  what: 'OUTPUT <expression> INTO @v runs as OUTPUT inserted.id INTO a table of ids, then INSERT INTO @v the expression read from those rows',
  rewrite: rewriteOutputExpressionInto,
  probe: (cs) =>
    withPool(cs, async (pool) => {
      await pool.request().query(
        "IF OBJECT_ID(N'dbo.gap_oexp_shim', N'U') IS NULL CREATE TABLE dbo.gap_oexp_shim (id uniqueidentifier NOT NULL PRIMARY KEY, h nvarchar(max) NOT NULL, n int NOT NULL); " +
          "DELETE FROM dbo.gap_oexp_shim; INSERT INTO dbo.gap_oexp_shim (id, h, n) VALUES (NEWID(), N'{\"x\":1}', 0), (NEWID(), N'{}', 0), (NEWID(), N'{\"x\":2}', 5);",
      );
      const text = rewriteOutputExpressionInto(
        [
          'DECLARE @v TABLE (c bit NOT NULL);',
          'UPDATE [dbo].[gap_oexp_shim]',
          'SET n = n + 1',
          "OUTPUT CASE WHEN inserted.h LIKE N'{\"x\":%' THEN 1 ELSE 0 END INTO @v",
          'WHERE n = 0;',
          'SELECT COUNT(*) AS rows_out, SUM(CAST(c AS int)) AS marked FROM @v;',
        ].join('\n'),
      );
      const r = await pool.request().query(text);
      const row = (r.recordsets as unknown as Array<Array<{ rows_out: number; marked: number }>>).at(-1)![0]!;
      return `${row.rows_out} rows, ${row.marked} marked`;
    }),
  sqlServer: '2 rows, 1 marked',
};

ENGINE_SHIMS.convertStyle127 = {
  what: "CONVERT(nvarchar(n), x, 127) (and 126) runs as REPLACE(CONVERT(nvarchar(n), x, 127), N' ', N'T')",
  rewrite: rewriteConvertStyle127,
  probe: batchProbe(rewriteConvertStyle127(CONVERT_127_PROBE)),
  sqlServer: 'ISO 8601',
};

ENGINE_SHIMS.nocountPersists = {
  what: 'a batch that turns NOCOUNT on gets SET NOCOUNT OFF at its end (the scope SQL Server gives it)',
  rewrite: rewriteNocountScope,
  probe: (cs) => nocountProbe(cs, rewriteNocountScope),
  sqlServer: 'returns the rows',
};

/** One connection: a request that turns NOCOUNT on (as `rewrite` sends it), then an UPDATE … OUTPUT in the next one. */
async function nocountProbe(cs: string, rewrite: (text: string) => string): Promise<string> {
  const pool = new sql.ConnectionPool({ ...(sql.ConnectionPool as unknown as { parseConnectionString(s: string): sql.config }).parseConnectionString(cs), pool: { max: 1, min: 0 } });
  await pool.connect();
  try {
    await pool.request().query("IF OBJECT_ID(N'dbo.gap_nocount', N'U') IS NULL CREATE TABLE dbo.gap_nocount (id int NOT NULL PRIMARY KEY, n int NOT NULL); DELETE FROM dbo.gap_nocount; INSERT INTO dbo.gap_nocount (id, n) VALUES (1, 0);");
    await pool.request().input('x', sql.Int(), 1).query(rewrite('SET NOCOUNT ON;\nSELECT @x AS x;'));
    const r = await pool.request().input('x', sql.Int(), 1).query('UPDATE dbo.gap_nocount SET n = n + @x OUTPUT inserted.id WHERE id = 1;');
    await pool.request().query('SET NOCOUNT OFF;');
    return (r.recordset?.length ?? 0) === 1 ? 'returns the rows' : 'drops the rows';
  } finally {
    await pool.close();
  }
}

ENGINE_SHIMS.executeAsOwner = {
  what: 'a procedure WITH EXECUTE AS OWNER is created without the clause (the test runs as the owner: the same rights)',
  rewrite: rewriteExecuteAsOwner,
  probe: (cs) =>
    withPool(cs, async (pool) => {
      await pool.request().query("IF OBJECT_ID(N'dbo.gap_exec_as_shim', N'P') IS NOT NULL DROP PROCEDURE dbo.gap_exec_as_shim;");
      await pool.request().query(rewriteExecuteAsOwner(['CREATE PROCEDURE dbo.gap_exec_as_shim', 'WITH EXECUTE AS OWNER', 'AS', 'BEGIN', '    SELECT 1 AS one;', 'END;'].join('\n')));
      const r = await pool.request().query<{ one: number }>('EXEC dbo.gap_exec_as_shim;');
      return r.recordset[0]?.one === 1 ? 'runs the procedure' : 'does not run it';
    }),
  sqlServer: 'runs the procedure',
};

ENGINE_SHIMS.createOrAlter = {
  what: 'CREATE OR ALTER PROCEDURE runs as CREATE PROCEDURE (the harness creates each procedure once, in a fresh schema)',
  rewrite: rewriteCreateOrAlter,
  probe: (cs) =>
    withPool(cs, async (pool) => {
      await pool.request().query("IF OBJECT_ID(N'dbo.gap_coa_shim', N'P') IS NOT NULL DROP PROCEDURE dbo.gap_coa_shim;");
      await pool.request().query(rewriteCreateOrAlter('CREATE OR ALTER PROCEDURE dbo.gap_coa_shim\nAS\nBEGIN\n    SELECT 2 AS two;\nEND;'));
      const r = await pool.request().query<{ two: number }>('EXEC dbo.gap_coa_shim;');
      return r.recordset[0]?.two === 2 ? 'runs the procedure' : 'does not run it';
    }),
  sqlServer: 'runs the procedure',
};

ENGINE_SHIMS.currentTransactionId = {
  what: "CURRENT_TRANSACTION_ID() reads SESSION_CONTEXT(N'shim.transaction'), which the harness sets afresh after each BEGIN TRANSACTION",
  rewrite: rewriteCurrentTransactionId,
  probe: (cs) =>
    withPool(cs, async (pool) => {
      const read = rewriteCurrentTransactionId('SELECT CONVERT(nvarchar(20), CURRENT_TRANSACTION_ID()) AS id;');
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) {
        const tx = new sql.Transaction(pool);
        await tx.begin();
        await tx.request().query(shimTransactionStart());
        const a = await tx.request().query<{ id: string }>(read);
        const b = await tx.request().query<{ id: string }>(read);
        await tx.commit();
        ids.push(a.recordset[0]!.id === b.recordset[0]!.id ? a.recordset[0]!.id : 'changed within the transaction');
      }
      return ids[0] !== ids[1] && !ids.includes('changed within the transaction') ? 'one id per transaction' : `ids ${ids.join(', ')}`;
    }),
  sqlServer: 'one id per transaction',
};

const SHIM_ORDER: readonly EngineGapId[] = [
  'updateThroughCte',
  'nextValueForOver',
  'openJsonStringValues',
  'rowcountAfterOutput',
  'outputExpressionInto',
  'convertStyle127',
  'nocountPersists',
  'executeAsOwner',
  'createOrAlter',
  'currentTransactionId',
];

const SHIMMED_BY_ENGINE: Readonly<Record<TdsEngine, readonly EngineGapId[]>> = {
  sqlserver: [],
  babelfish: SHIM_ORDER,
};

/** The harness's rewrite for `engine` (identity where nothing is shimmed), in tds-shims.ts's order. */
export function shimsFor(engine: TdsEngine | undefined): ((text: string) => string) | undefined {
  const ids = engine ? SHIMMED_BY_ENGINE[engine] : [];
  if (ids.length === 0) return undefined;
  const rewrites = SHIM_ORDER.filter((id) => ids.includes(id)).map((id) => ENGINE_SHIMS[id]!.rewrite);
  return (text) => rewrites.reduce((t, f) => f(t), text);
}

export function shimmedGapsOf(engine: TdsEngine): readonly EngineGapId[] {
  return SHIMMED_BY_ENGINE[engine];
}

let detected: Promise<TdsEngine | undefined> | undefined;

/** Which engine MSSQL_CONNECTION_STRING reaches (undefined when it is not set); asked once per test file. */
export function tdsEngine(): Promise<TdsEngine | undefined> {
  const cs = process.env.MSSQL_CONNECTION_STRING;
  if (!cs) return Promise.resolve(undefined);
  detected ??= (async () => {
    const pool = new sql.ConnectionPool(cs);
    await pool.connect();
    try {
      const r = await pool.request().query<{ v: string }>('SELECT @@VERSION AS v;');
      return /Babelfish/i.test(r.recordset[0]?.v ?? '') ? 'babelfish' : 'sqlserver';
    } finally {
      await pool.close();
    }
  })();
  return detected;
}

/** The reason a test meeting `gap` is skipped on `engine`, or undefined when the engine has no such gap. */
export function gapReason(engine: TdsEngine | undefined, gap: EngineGapId): string | undefined {
  if (!engine || !GAPS_BY_ENGINE[engine].includes(gap)) return undefined;
  return `engine gap '${gap}' on ${engine}: ${ENGINE_GAPS[gap].what}`;
}

export function hasGap(engine: TdsEngine | undefined, gap: EngineGapId): boolean {
  return gapReason(engine, gap) !== undefined;
}

/**
 * Inside a SQL Server test: skips it (printing why) when the connected engine has `gap`. Tests of the other
 * stores pass their store's name and are never skipped.
 */
export async function skipOnGap(store: string, ctx: { skip: (note?: string) => void }, gap: EngineGapId): Promise<void> {
  if (store !== 'sqlserver') return;
  const engine = await tdsEngine();
  const reason = gapReason(engine, gap);
  if (!reason) return;
  if (engine && SHIMMED_BY_ENGINE[engine].includes(gap)) {
    // the harness rewrites the construct on this engine (tds-shims.ts): the test runs through the rewrite
    console.warn(`[contract:sqlserver] shimmed: engine gap '${gap}' on ${engine}: ${ENGINE_SHIMS[gap]!.what}`);
    logGap(gap, 'shimmed');
    return;
  }
  console.warn(`[contract:sqlserver] skipped: ${reason}`);
  logGap(gap, 'skipped');
  ctx.skip(reason);
}

/** ENGINE_GAP_LOG=<file>: one JSON line per gap a test meets (test, gap, shimmed or skipped), for the per-gap tally. */
function logGap(gap: EngineGapId, outcome: 'shimmed' | 'skipped'): void {
  const file = process.env.ENGINE_GAP_LOG;
  if (file) appendFileSync(file, `${JSON.stringify({ test: expect.getState().currentTestName, gap, outcome })}\n`);
}

export function gapsOf(engine: TdsEngine): readonly EngineGapId[] {
  return GAPS_BY_ENGINE[engine];
}
