// Where the T-SQL engine behind MSSQL_CONNECTION_STRING is not SQL Server. Babelfish for PostgreSQL speaks TDS
// and runs T-SQL, so the SQL Server contract suite executes on it (docs/tests.md), but a few behaviours
// differ. Each difference is one named entry with a probe that shows it; engine-gaps.contract.test.ts runs every
// probe on the connected engine, so an entry that stopped being true (or never was) fails there. A test that
// meets a gap still runs on SQL Server and is skipped only on that engine, printing the gap's reason.

import * as sql from 'mssql';

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
      'json input rules), so the computed dead-letter source over such headers fails where SQL Server reads the other keys',
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
} satisfies Record<string, EngineGap>;

export type EngineGapId = keyof typeof ENGINE_GAPS;

const GAPS_BY_ENGINE: Readonly<Record<TdsEngine, readonly EngineGapId[]>> = {
  sqlserver: [],
  babelfish: Object.keys(ENGINE_GAPS) as EngineGapId[],
};

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
  const reason = gapReason(await tdsEngine(), gap);
  if (!reason) return;
  console.warn(`[contract:sqlserver] skipped: ${reason}`);
  ctx.skip(reason);
}

export function gapsOf(engine: TdsEngine): readonly EngineGapId[] {
  return GAPS_BY_ENGINE[engine];
}
