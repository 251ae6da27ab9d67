// The contract harness's rewrites for the TDS engine's named gaps (test/contract/tds-shims.ts), applied to the
// product's own statements: each rewrite touches only its construct, and what it produces is the equivalent form the
// shim probes run on the engine (test/contract/engine-gaps.contract.test.ts).

import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import { claimLimited } from '../../shared/stores/sqlserver/limit-statements';
import { transportStatements } from '../../shared/stores/sqlserver/statements';
import { jobControlStatements } from '../../shared/stores/sqlserver/job-control-statements';
import { historyStatements } from '../../shared/stores/sqlserver/history-statements';
import { announceProcedure } from '../../shared/stores/sqlserver/announce';
import {
  decodeJsonString,
  rewriteConvertStyle127,
  rewriteCreateOrAlter,
  rewriteCteUpdates,
  rewriteCurrentTransactionId,
  rewriteExecuteAsOwner,
  rewriteNextValueForOver,
  rewriteNocountScope,
  rewriteOpenJsonStrings,
  rewriteOutputExpressionInto,
  rewriteRowcountAfterOutput,
  rewriteShimmedSequence,
} from '../contract/tds-shims';

const names = transportNames('dbo', 'jobs', 'sqlserver');
const s = transportStatements(names);
const EXACT = "queue = @queue AND queue + N'.' = @queue + N'.' COLLATE Latin1_General_100_BIN2";

describe('TDS engine shims', () => {
  it("updateThroughCte: the claim's three CTE updates become UPDATE … WHERE id IN (SELECT TOP …) with the same hints, filter and order", () => {
    const t = rewriteCteUpdates(s.claimBatch.text);
    expect(t).not.toMatch(/WITH (due|lapsed|next) AS/);
    expect(t).toContain(
      `    UPDATE [dbo].[jobs] SET state = NULL\n    WHERE id IN (SELECT TOP (@n) id FROM [dbo].[jobs] WITH (ROWLOCK, READPAST) WHERE ${EXACT} AND state = 1 AND available_at <= SYSUTCDATETIME() ORDER BY available_at);`,
    );
    expect(t).toContain(
      `    UPDATE [dbo].[jobs] SET lock_id = NULL, locked_until = NULL\n    WHERE id IN (SELECT TOP (@n) id FROM [dbo].[jobs] WITH (ROWLOCK, READPAST) WHERE ${EXACT} AND lock_id IS NOT NULL AND locked_until <= SYSUTCDATETIME() ORDER BY locked_until);`,
    );
    expect(t).toContain(
      '           inserted.lock_id, inserted.created_at, inserted.available_at, inserted.priority, inserted.ordering_key, inserted.seq\n' +
        `    WHERE id IN (SELECT TOP (@n) id FROM [dbo].[jobs] WITH (UPDLOCK, ROWLOCK, READPAST) WHERE ${EXACT} AND state IS NULL AND lock_id IS NULL AND available_at <= SYSUTCDATETIME() ORDER BY priority DESC, available_at, seq);`,
    );
    // everything else is the product's text
    const untouched = (text: string) => text.replace(/ {4}WITH (due|lapsed|next) AS \([\s\S]*?;\n/g, '');
    expect(untouched(s.claimBatch.text)).toBe(t.replace(/ {4}UPDATE \[dbo\]\.\[jobs\](?: SET state = NULL| SET lock_id = NULL, locked_until = NULL|\n {4}SET attempts)[\s\S]*?WHERE id IN \([^\n]*\);\n/g, ''));
  });

  it('nextValueForOver: a statement draws one base and numbers its rows in the OVER order; the sequence steps 1000 there', () => {
    expect(rewriteNextValueForOver(s.publishBatch.text)).toContain('((SELECT NEXT VALUE FOR [dbo].[jobs_seq]) + ROW_NUMBER() OVER (ORDER BY src.ord))');
    expect(rewriteNextValueForOver(s.requeueDeadLetter.text)).toBe(s.requeueDeadLetter.text); // no OVER: left alone
    expect(rewriteShimmedSequence(s.ddlPhase1.text)).toContain('CREATE SEQUENCE [dbo].[jobs_seq] AS bigint START WITH 1 INCREMENT BY 1000;');
  });

  it("openJsonStringValues: OPENJSON … WITH becomes a derived table decoding each string column, other columns as they are", () => {
    const t = rewriteOpenJsonStrings(s.publishBatch.text);
    expect(t).toContain(`FROM (SELECT shim_raw.id, ${decodeJsonString('shim_raw.queue')} AS queue, ${decodeJsonString('shim_raw.payload_json')} AS payload_json,`);
    expect(t).toContain(') AS shim_raw) AS src\nWHERE NOT EXISTS');
    // a list without string columns is left as written
    expect(t).toContain("INNER JOIN OPENJSON(@batch) WITH (id uniqueidentifier '$.id') AS dup ON existing.id = dup.id;");
    expect(rewriteOpenJsonStrings(s.ackBatch.text)).toBe(s.ackBatch.text);
    // the decoding: JSON's escapes, the backslash first through a stand-in
    expect(decodeJsonString('x')).toMatch(/^REPLACE\(REPLACE\(.*REPLACE\(x COLLATE Latin1_General_100_BIN2, N'\\\\', NCHAR\(57344\)\), N'\\"', N'"'\)/);
    expect(decodeJsonString('x')).toMatch(/, NCHAR\(57344\), N'\\'\)$/);
  });

  it("rowcountAfterOutput: the limited claim's count of what it claimed reads the rows under its lock id", () => {
    const t = rewriteRowcountAfterOutput(rewriteCteUpdates(claimLimited(names).text));
    expect(t).toContain('ORDER BY priority DESC, available_at, seq);\n    SET @claimed = (SELECT COUNT(*) FROM [dbo].[jobs] WHERE lock_id = @lock_id);');
    expect(t).not.toContain('SET @claimed = @@ROWCOUNT;');
    // other row counts (a DELETE's, an UPDATE's without OUTPUT) are read as written
    expect(rewriteRowcountAfterOutput(s.ackBatch.text)).toBe(s.ackBatch.text);
  });

  it("outputExpressionInto: the renewal's cancel-marker test is read back by id after the UPDATE, the UPDATE otherwise unchanged", () => {
    const t = rewriteOutputExpressionInto(s.renew.text);
    expect(t).toBe(
      [
        'DECLARE @renewed TABLE (cancel_requested bit NOT NULL);',
        'DECLARE @renewed_shim_ids TABLE (id uniqueidentifier NOT NULL);',
        'UPDATE [dbo].[jobs]',
        'SET locked_until = DATEADD(SECOND, CAST(@lock_timeout_ms / 1000 AS int), DATEADD(MILLISECOND, CAST(@lock_timeout_ms % 1000 AS int), SYSUTCDATETIME()))',
        'OUTPUT inserted.id INTO @renewed_shim_ids',
        'WHERE id = @id AND lock_id = @lock_id AND locked_until > SYSUTCDATETIME();',
        `INSERT INTO @renewed SELECT CASE WHEN shim_row.headers_json LIKE N'{"AR-Cancel-Requested":%' THEN 1 ELSE 0 END FROM @renewed_shim_ids AS shim_id INNER JOIN [dbo].[jobs] AS shim_row ON shim_row.id = shim_id.id;`,
        'SELECT COUNT(*) AS affected, CAST(COALESCE(MAX(CAST(cancel_requested AS int)), 0) AS bit) AS cancel_requested FROM @renewed;',
      ].join('\n'),
    );
    // plain columns are left alone (the engine runs them)
    expect(rewriteOutputExpressionInto(s.ackBatch.text)).toBe(s.ackBatch.text);
  });

  it("convertStyle127: the cancel marker's time gets ISO 8601's T back, nothing else changes", () => {
    const cancel = jobControlStatements(names).cancel.text;
    const t = rewriteConvertStyle127(cancel);
    expect(t).toContain("REPLACE(CONVERT(nvarchar(30), SYSUTCDATETIME(), 127), N' ', N'T')");
    expect(t.replaceAll("REPLACE(CONVERT(nvarchar(30), SYSUTCDATETIME(), 127), N' ', N'T')", 'CONVERT(nvarchar(30), SYSUTCDATETIME(), 127)')).toBe(cancel);
  });

  it("convertStyle127: the history search's cursor key (style 126) gets its T back too; other styles are left alone", () => {
    const search = historyStatements(names).searchByQueue.text;
    expect(search).toContain('CONVERT(nvarchar(33), completed_at, 126)');
    const t = rewriteConvertStyle127(search);
    expect(t).toContain("REPLACE(CONVERT(nvarchar(33), completed_at, 126), N' ', N'T')");
    expect(t.replace("REPLACE(CONVERT(nvarchar(33), completed_at, 126), N' ', N'T')", 'CONVERT(nvarchar(33), completed_at, 126)')).toBe(search);
    expect(rewriteConvertStyle127('SELECT CONVERT(nvarchar(30), x, 121)')).toBe('SELECT CONVERT(nvarchar(30), x, 121)');
  });

  it('nocountPersists: a batch that turns NOCOUNT on turns it off at its end; a procedure body is left alone', () => {
    expect(rewriteNocountScope(claimLimited(names).text).endsWith('\nSET NOCOUNT OFF;')).toBe(true);
    expect(rewriteNocountScope(s.claimBatch.text)).toBe(s.claimBatch.text);
    expect(rewriteNocountScope('CREATE OR ALTER PROCEDURE p AS BEGIN SET NOCOUNT ON; END')).toBe('CREATE OR ALTER PROCEDURE p AS BEGIN SET NOCOUNT ON; END');
  });

  it("executeAsOwner, createOrAlter, currentTransactionId: the announce procedure loses only its EXECUTE AS clause, the OR ALTER and the function", () => {
    const text = announceProcedure(names, { queueUrl: 'https://acct.queue.core.windows.net/drain-requests' });
    const rewritten = rewriteCurrentTransactionId(rewriteCreateOrAlter(rewriteExecuteAsOwner(text)));
    expect(rewritten).toBe(
      text
        .replace('WITH EXECUTE AS OWNER\n', '')
        .replace('CREATE OR ALTER PROCEDURE ', 'CREATE PROCEDURE ')
        .replace('CURRENT_TRANSACTION_ID()', "SESSION_CONTEXT(N'shim.transaction')"),
    );
    expect(rewritten).not.toMatch(/EXECUTE AS|OR ALTER|CURRENT_TRANSACTION_ID/);
    expect(rewriteCreateOrAlter('SELECT 1;')).toBe('SELECT 1;');
  });
});
