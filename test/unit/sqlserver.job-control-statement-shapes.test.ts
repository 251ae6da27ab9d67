// Pins the shapes of the T-SQL job and queue control statements (cancel, reschedule, pause and resume) and what
// they add to the claim, the renewal and the outlook. No SQL Server here; the grammar check parses them too.

import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import { jobControlStatements, markedHeaders, pausedTest } from '../../shared/stores/sqlserver/job-control-statements';
import { transportStatements } from '../../shared/stores/sqlserver/statements';
import { length, SPLIT, typeName } from '../support/sqlserver-statements';

const BIN2 = 'Latin1_General_100_BIN2';
const names = transportNames('dbo', 'jobs', 'sqlserver');
const c = jobControlStatements(names);
const t = transportStatements(names);
const EXACT = `queue = @queue AND queue + N'.' = @queue + N'.' COLLATE ${BIN2}`;

describe('SQL Server job-control statement shapes', () => {
  it('cancel deletes only a waiting row of exactly the queue, then marks a leased one only when asked', () => {
    const text = c.cancel.text;
    const del = text.indexOf(
      `DELETE FROM [dbo].[jobs] OUTPUT deleted.queue, deleted.ordering_key, deleted.state, deleted.seq INTO @removed WHERE id = @id AND ${EXACT} AND (locked_until IS NULL OR locked_until <= SYSUTCDATETIME());`,
    );
    // one transaction; a keyed row's key locked first, the removal settled on it (a cancelled head lets its key go on)
    expect(text.startsWith('SET XACT_ABORT ON;')).toBe(true);
    expect(text).toContain(`IF @key IS NOT NULL\n    SELECT @pending = pending FROM [dbo].[jobs_keys] WITH (UPDLOCK, HOLDLOCK) WHERE ${EXACT} AND ordering_key = @key;`);
    expect(text.indexOf('INSERT INTO @gone')).toBeGreaterThan(del);
    const guard = text.indexOf('IF @deleted = 0 AND @running = 1');
    const mark = text.indexOf('UPDATE [dbo].[jobs] SET headers_json = CASE');
    expect(del).toBeGreaterThan(0);
    expect(guard).toBeGreaterThan(del);
    expect(mark).toBeGreaterThan(guard);
    expect(text).toContain(`WHERE id = @id AND ${EXACT} AND locked_until > SYSUTCDATETIME();`);
    // the marked row keeps its lock_id: the owner's settlement stays fenced
    expect(text).not.toMatch(/lock_id\s*=/);
    expect(text.indexOf('COMMIT;')).toBeGreaterThan(mark);
    expect(text).toMatch(/SELECT @deleted AS deleted, @marked AS marked, CAST\(CASE WHEN EXISTS \(SELECT 1 FROM \[dbo\]\.\[jobs\] WHERE id = @id AND .*\) THEN 1 ELSE 0 END AS bit\) AS present;$/);
    expect([typeName(c.cancel, 'queue'), length(c.cancel, 'queue')]).toEqual(['NVarChar', 200]);
    expect(typeName(c.cancel, 'id')).toBe('UniqueIdentifier');
    expect(typeName(c.cancel, 'running')).toBe('Bit');
  });

  it('the marker goes first in headers_json, on the database clock, and an already marked row keeps its text', () => {
    const m = markedHeaders();
    expect(m.startsWith(`CASE WHEN headers_json LIKE N'{"AR-Cancel-Requested":%' THEN headers_json`)).toBe(true);
    expect(m).toContain(`N'{"AR-Cancel-Requested":"' + CONVERT(nvarchar(30), SYSUTCDATETIME(), 127) + N'Z"'`);
    expect(m).toContain("+ N',' + SUBSTRING(LTRIM(headers_json), 2, 2147483647)"); // an object: the rest kept verbatim
    expect(m).toMatch(/ELSE .* \+ N'}' END$/); // not an object: the marker alone
  });

  it('reschedule moves only a waiting row, clears its fence, and takes an instant or a ms delay', () => {
    const text = c.reschedule.text;
    expect(text).toContain(`SET available_at = COALESCE(@available_at, ${SPLIT('@delay_ms')}), locked_until = NULL, lock_id = NULL,`);
    // scheduled when the new time is ahead, ready when not; a row queued behind its key's head stays queued
    expect(text).toContain(`    state = CASE WHEN state = 2 THEN 2 WHEN COALESCE(@available_at, ${SPLIT('@delay_ms')}) > SYSUTCDATETIME() THEN 1 END`);
    expect(text).toContain('OUTPUT inserted.available_at INTO @moved');
    expect(text).toContain(`WHERE id = @id AND ${EXACT} AND (locked_until IS NULL OR locked_until <= SYSUTCDATETIME());`);
    expect(typeName(c.reschedule, 'available_at')).toBe('DateTime2');
    expect(typeName(c.reschedule, 'delay_ms')).toBe('BigInt');
  });

  it('pause and resume are one MERGE under HOLDLOCK on the queue-state table; the first pause time is kept', () => {
    const text = c.setQueuePaused.text;
    expect(text.startsWith('DECLARE @state TABLE (paused_at datetime2 NULL);\nMERGE [dbo].[jobs_queue_state] WITH (HOLDLOCK) AS target')).toBe(true);
    expect(text).toContain('paused_at = CASE WHEN @paused = 1 THEN COALESCE(target.paused_at, SYSUTCDATETIME()) END');
    // OUTPUT INTO a table variable, then SELECT: a trigger on the table cannot break it (review L4)
    expect(text.endsWith('OUTPUT inserted.paused_at INTO @state;\nSELECT paused_at FROM @state;')).toBe(true);
    // the backoff shows only while it holds the queue (database clock)
    expect(c.queueState.text).toBe(
      `SELECT paused_at, CASE WHEN backoff_until > SYSUTCDATETIME() THEN backoff_until END AS backoff_until FROM [dbo].[jobs_queue_state] WHERE ${EXACT};`,
    );
  });

  it('the claim tests the pause once (uncorrelated) before anything it reads or writes, and the renewal reads the marker', () => {
    expect(pausedTest(names)).toBe(
      `EXISTS (SELECT 1 FROM [dbo].[jobs_queue_state] AS paused WHERE paused.queue = @queue AND paused.queue + N'.' = @queue + N'.' COLLATE ${BIN2} AND (paused.paused_at IS NOT NULL OR paused.backoff_until > SYSUTCDATETIME()))`,
    );
    const claim = t.claimBatch.text;
    expect(claim).toContain(`BEGIN TRANSACTION;\nIF NOT ${pausedTest(names)}\nBEGIN\n    UPDATE TOP (@n) [dbo].[jobs_keys]`);
    expect(claim.indexOf('IF NOT EXISTS')).toBeLessThan(claim.indexOf('WITH (UPDLOCK, ROWLOCK, READPAST)'));
    expect(t.renew.text).toContain(`OUTPUT CASE WHEN inserted.headers_json LIKE N'{"AR-Cancel-Requested":%' THEN 1 ELSE 0 END INTO @renewed`);
    expect(t.ddlPhase1.text).toContain("IF OBJECT_ID(N'[dbo].[jobs_queue_state]', N'U') IS NULL");
    expect(t.ddlPhase1.text).toContain("IF COL_LENGTH(N'[dbo].[jobs_queue_state]', N'backoff_until') IS NULL\n    ALTER TABLE [dbo].[jobs_queue_state] ADD backoff_until datetime2 NULL;");
  });
});
