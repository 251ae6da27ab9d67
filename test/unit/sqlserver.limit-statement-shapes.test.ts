// Pins the T-SQL of queue limits (issue 17 §2; no SQL Server here, the T-SQL grammar check parses them too): the
// limited claim is one batch and one transaction that takes the queue's state row first, prunes and counts the
// queue's lease roster, refills and spends the bucket, claims with today's claim hints and enrols what it claimed;
// the backoff keeps the later end.

import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import { backOffQueue, claimLimited, limitedOutlook } from '../../shared/stores/sqlserver/limit-statements';
import { claimBatch } from '../../shared/stores/sqlserver/statements';
import { length, typeName } from '../support/sqlserver-statements';

const BIN2 = 'Latin1_General_100_BIN2';
const names = transportNames('dbo', 'jobs', 'sqlserver');
const EXACT = `queue = @queue AND queue + N'.' = @queue + N'.' COLLATE ${BIN2}`;
const LEASED = `FROM [dbo].[jobs] WHERE ${EXACT} AND available_at <= SYSUTCDATETIME() AND locked_until > SYSUTCDATETIME()`;
const LEASE_EXACT = EXACT.replaceAll('queue', 'lease.queue').replace('@lease.queue', '@queue').replace('@lease.queue', '@queue');
const LIVE = `FROM [dbo].[jobs_leases] AS lease INNER JOIN [dbo].[jobs] AS m ON m.id = lease.id AND m.lock_id = lease.lock_id AND m.locked_until > SYSUTCDATETIME() WHERE ${LEASE_EXACT}`;

describe('SQL Server limit statement shapes', () => {
  const c = claimLimited(names);
  const lines = c.text.split('\n');
  const at = (fragment: string) => lines.findIndex((l) => l.includes(fragment));

  it('the limited claim: XACT_ABORT, one transaction, the state row under UPDLOCK + HOLDLOCK before anything is counted', () => {
    expect(lines[0]).toBe('SET XACT_ABORT ON;');
    expect(at('BEGIN TRANSACTION;')).toBeLessThan(at('WITH (UPDLOCK, HOLDLOCK)'));
    expect(c.text).toContain(`FROM [dbo].[jobs_queue_state] WITH (UPDLOCK, HOLDLOCK) WHERE ${EXACT};`);
    expect(c.text).toContain('IF @@ROWCOUNT = 0\n    INSERT INTO [dbo].[jobs_queue_state] (queue) VALUES (@queue);');
    expect(at('WITH (UPDLOCK, HOLDLOCK)')).toBeLessThan(at('SELECT @leased = COUNT(*)'));
    expect(at('SELECT @leased = COUNT(*)')).toBeLessThan(at('WITH next AS ('));
    expect(at('WITH next AS (')).toBeLessThan(at('COMMIT;'));
    expect(lines.filter((l) => l === 'COMMIT;')).toHaveLength(1);
  });

  it('counts the live leases of its roster (entries whose row no longer holds the lease deleted first); a pause or backoff leaves no room', () => {
    expect(LEASE_EXACT).toBe(`lease.queue = @queue AND lease.queue + N'.' = @queue + N'.' COLLATE ${BIN2}`);
    expect(c.text).toContain(
      [
        'IF @concurrency IS NOT NULL',
        'BEGIN',
        `    DELETE lease FROM [dbo].[jobs_leases] AS lease WHERE ${LEASE_EXACT}`,
        '        AND NOT EXISTS (SELECT 1 FROM [dbo].[jobs] AS m WHERE m.id = lease.id AND m.lock_id = lease.lock_id AND m.locked_until > SYSUTCDATETIME());',
        `    SELECT @leased = COUNT(*) FROM [dbo].[jobs_leases] AS lease WHERE ${LEASE_EXACT};`,
        'END',
      ].join('\n'),
    );
    expect(c.text).not.toContain(LEASED); // the transport table's backlog is never read to count
    expect(c.text).toContain('SELECT @held = CASE WHEN paused_at IS NOT NULL OR backoff_until > SYSUTCDATETIME() THEN 1 ELSE 0 END,');
    expect(c.text).toContain('SET @room = CASE WHEN @held = 1 THEN 0 ELSE @n END;');
    expect(c.text).toContain('IF @concurrency IS NOT NULL AND @concurrency - @leased < @room SET @room = @concurrency - @leased;');
    expect(c.text).toContain('IF @rate IS NOT NULL AND FLOOR(@tokens) < @room SET @room = FLOOR(@tokens);');
  });

  it('enrols the rows it claimed: their ids OUTPUT INTO a table variable beside the rows, then one roster insert under the lock id', () => {
    expect(c.text).toContain('DECLARE @enrolled TABLE (id uniqueidentifier NOT NULL PRIMARY KEY);');
    expect(c.text).toContain('OUTPUT inserted.id INTO @enrolled (id)\nOUTPUT inserted.id, inserted.queue,');
    expect(c.text).toContain('SET @claimed = @@ROWCOUNT;\nIF @concurrency IS NOT NULL\n    INSERT INTO [dbo].[jobs_leases] (queue, id, lock_id) SELECT @queue, id, @lock_id FROM @enrolled;');
    expect(at('INSERT INTO [dbo].[jobs_leases]')).toBeLessThan(at('COMMIT;'));
  });

  it("claims with today's claim (hints, order, lease, the caller's lock id) and TOP (@room)", () => {
    const today = claimBatch(names).text;
    const body = today.slice(today.indexOf('    FROM '), today.indexOf('    ORDER BY'));
    const pauseLine = body.split('\n').find((l) => l.includes('AND NOT EXISTS'))!;
    // the pause test is the state row read above (held): the rest of the claim is today's, line for line
    expect(c.text).toContain(body.replace(`${pauseLine}\n`, ''));
    expect(c.text).toContain('    SELECT TOP (@room) id, queue, payload_json, headers_json, attempts, locked_until, lock_id, created_at, available_at');
    const update = today.slice(today.indexOf('UPDATE next'), today.indexOf('inserted.priority;') + 'inserted.priority;'.length);
    expect(c.text).toContain(update.replace('OUTPUT inserted.id, inserted.queue', 'OUTPUT inserted.id INTO @enrolled (id)\nOUTPUT inserted.id, inserted.queue'));
  });

  it('refills the bucket on the database clock (a bucket never used is full), spends what was claimed, and answers a summary', () => {
    expect(c.text).toContain(
      'IF @rate IS NOT NULL SET @tokens = CASE WHEN @tokens IS NULL OR @refilled_at IS NULL THEN @burst WHEN @tokens + DATEDIFF_BIG(MICROSECOND, @refilled_at, SYSUTCDATETIME()) * @rate / 1000000.0 > @burst THEN @burst ELSE @tokens + DATEDIFF_BIG(MICROSECOND, @refilled_at, SYSUTCDATETIME()) * @rate / 1000000.0 END;',
    );
    expect(c.text).toContain(`    UPDATE [dbo].[jobs_queue_state] SET rate_tokens = @tokens - @claimed, rate_refilled_at = SYSUTCDATETIME() WHERE ${EXACT};`);
    expect(lines.at(-2)).toBe('SELECT @held AS held, @backoff_ms AS backoff_ms, CASE WHEN @rate IS NULL THEN NULL ELSE @tokens - @claimed END AS tokens_left,');
    expect(c.text).toContain(`    SELECT @lapse_ms = DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), MIN(m.locked_until)) ${LIVE};`);
  });

  it('typed parameters: queue NVarChar(200), counts Int, lease BigInt ms, lock id UniqueIdentifier, rate and burst Float', () => {
    expect(Object.keys(c.params).sort()).toEqual(['burst', 'concurrency', 'lock_id', 'lock_timeout_ms', 'n', 'queue', 'rate']);
    expect([typeName(c, 'queue'), length(c, 'queue')]).toEqual(['NVarChar', 200]);
    expect(['n', 'concurrency'].map((p) => typeName(c, p))).toEqual(['Int', 'Int']);
    expect([typeName(c, 'lock_timeout_ms'), typeName(c, 'lock_id'), typeName(c, 'rate'), typeName(c, 'burst')]).toEqual(['BigInt', 'UniqueIdentifier', 'Float', 'Float']);
  });

  it('the backoff is a MERGE under HOLDLOCK that keeps the later end, on the database clock', () => {
    const b = backOffQueue(names);
    expect(b.text.startsWith('MERGE [dbo].[jobs_queue_state] WITH (HOLDLOCK) AS target')).toBe(true);
    expect(b.text).toContain('backoff_until = CASE WHEN target.backoff_until > DATEADD(SECOND, CAST(@ms / 1000 AS int), DATEADD(MILLISECOND, CAST(@ms % 1000 AS int), SYSUTCDATETIME()))');
    expect(b.text).toContain('OUTPUT inserted.backoff_until;');
    expect([typeName(b, 'ms'), typeName(b, 'queue')]).toEqual(['BigInt', 'NVarChar']);
  });

  it('the limited outlook reads without locks: ready, pause, backoff, tokens, the live leases, the earliest lapse', () => {
    const o = limitedOutlook(names).text;
    expect(o).not.toMatch(/UPDATE|DELETE|INSERT|UPDLOCK|HOLDLOCK/);
    expect(o).toContain(`    CASE WHEN @concurrency IS NULL THEN 0 ELSE (SELECT COUNT(*) ${LIVE}) END AS leased,`);
    expect(o).toContain(`    CASE WHEN @concurrency IS NOT NULL THEN (SELECT DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), MIN(m.locked_until)) ${LIVE})`);
    expect(o).toContain(`         ELSE (SELECT DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), MIN(locked_until)) ${LEASED}) END AS lease_lapses_in_ms;`);
  });
});
