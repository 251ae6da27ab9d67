// Pins the T-SQL of queue limits (issue 17 §2; no SQL Server here, the T-SQL grammar check parses them too): the
// limited claim is one batch and one transaction that takes the queue's state row first, prunes and counts the
// queue's lease roster, refills and spends the bucket, claims with today's claim hints and enrols what it claimed;
// the backoff keeps the later end.

import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import { backOffQueue, claimLimited, limitedOutlook } from '../../shared/stores/sqlserver/limit-statements';
import { claimLines, leaseLapsesInMs, promoteLines } from '../../shared/stores/sqlserver/ready-set';
import { length, typeName } from '../support/sqlserver-statements';

const BIN2 = 'Latin1_General_100_BIN2';
const names = transportNames('dbo', 'jobs', 'sqlserver');
const EXACT = `queue = @queue AND queue + N'.' = @queue + N'.' COLLATE ${BIN2}`;
const LEASED = `FROM [dbo].[jobs] WHERE ${EXACT} AND available_at <= SYSUTCDATETIME() AND locked_until > SYSUTCDATETIME()`; // before the ready set
// the live leases: a range of the leased index (queue, locked_until) WHERE lock_id IS NOT NULL
const LIVE = `FROM [dbo].[jobs] WHERE ${EXACT} AND lock_id IS NOT NULL AND locked_until > SYSUTCDATETIME()`;

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
    expect(at('SELECT @leased = COUNT(*)')).toBeLessThan(at('    WITH next AS ('));
    expect(at('    WITH next AS (')).toBeLessThan(at('COMMIT;'));
    expect(lines.filter((l) => l === 'COMMIT;')).toHaveLength(1);
  });

  it('counts the live leases in the leased index (the roster is no longer written); a pause or backoff leaves no room', () => {
    expect(c.text).toContain(
      ['IF @concurrency IS NOT NULL', `    SELECT @leased = COUNT(*), @lapse_ms = DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), MIN(locked_until)) ${LIVE};`].join('\n'),
    );
    expect(c.text).not.toContain('jobs_leases');
    expect(c.text).not.toContain(LEASED); // the transport table's backlog is never read to count
    // a lapsed lease does not count (locked_until ahead only): its slot may go to another job, and it cannot be renewed (M2)
    expect(c.text).toContain('SELECT @held = CASE WHEN paused_at IS NOT NULL OR backoff_until > SYSUTCDATETIME() THEN 1 ELSE 0 END,');
    expect(c.text).toContain('SET @room = CASE WHEN @held = 1 THEN 0 ELSE @n END;');
    expect(c.text).toContain('IF @concurrency IS NOT NULL AND @concurrency - @leased < @room SET @room = @concurrency - @leased;');
    expect(c.text).toContain('IF @rate IS NOT NULL AND FLOOR(@tokens) < @room SET @room = FLOOR(@tokens);');
    // the earliest lapse is answered only when the leases fill the limit
    expect(c.text).toContain('IF @concurrency IS NULL OR @leased < @concurrency SET @lapse_ms = NULL;\nCOMMIT;');
  });

  it("claims with the unlimited claim's statements (the ready set's promotions, then its seek, the caller's lock id) for TOP (@room), when there is room", () => {
    // the pause test is the state row read above (held): the rest is the unlimited claim's, line for line
    expect(c.text).toContain(['IF @room > 0', 'BEGIN', ...promoteLines(names, '@room'), ...claimLines(names, '@room'), '    SET @claimed = @@ROWCOUNT;', 'END;'].join('\n'));
    expect(c.text).not.toContain('@enrolled');
    expect(c.text).toContain('        SELECT TOP (@room) id, queue, payload_json, headers_json, attempts, locked_until, lock_id, created_at, available_at, priority, ordering_key, seq');
    expect(c.text).toContain('    UPDATE TOP (@room) [dbo].[jobs_keys] WITH (ROWLOCK, READPAST)');
    expect(c.text).toContain('DECLARE @held bit = 0');
    expect(c.text).toContain('@claimed int = 0'); // no room: nothing claimed, nothing spent
  });

  it('refills the bucket on the database clock (a bucket never used is full), spends what was claimed, and answers a summary', () => {
    expect(c.text).toContain(
      'IF @rate IS NOT NULL SET @tokens = CASE WHEN @tokens IS NULL OR @refilled_at IS NULL THEN @burst WHEN @tokens + DATEDIFF_BIG(MICROSECOND, @refilled_at, SYSUTCDATETIME()) * @rate / 1000000.0 > @burst THEN @burst ELSE @tokens + DATEDIFF_BIG(MICROSECOND, @refilled_at, SYSUTCDATETIME()) * @rate / 1000000.0 END;',
    );
    expect(c.text).toContain(`    UPDATE [dbo].[jobs_queue_state] SET rate_tokens = @tokens - @claimed, rate_refilled_at = SYSUTCDATETIME() WHERE ${EXACT};`);
    expect(lines.at(-2)).toBe('SELECT @held AS held, @backoff_ms AS backoff_ms, CASE WHEN @rate IS NULL THEN NULL ELSE @tokens - @claimed END AS tokens_left,');
  });

  it('typed parameters: queue NVarChar(200), counts Int, lease BigInt ms, lock id UniqueIdentifier, rate and burst Float', () => {
    expect(Object.keys(c.params).sort()).toEqual(['burst', 'concurrency', 'lock_id', 'lock_timeout_ms', 'n', 'queue', 'rate']);
    expect([typeName(c, 'queue'), length(c, 'queue')]).toEqual(['NVarChar', 200]);
    expect(['n', 'concurrency'].map((p) => typeName(c, p))).toEqual(['Int', 'Int']);
    expect([typeName(c, 'lock_timeout_ms'), typeName(c, 'lock_id'), typeName(c, 'rate'), typeName(c, 'burst')]).toEqual(['BigInt', 'UniqueIdentifier', 'Float', 'Float']);
  });

  it('the backoff is a MERGE under HOLDLOCK that keeps the later end, on the database clock', () => {
    const b = backOffQueue(names);
    expect(b.text.startsWith('DECLARE @state TABLE (backoff_until datetime2 NOT NULL);\nMERGE [dbo].[jobs_queue_state] WITH (HOLDLOCK) AS target')).toBe(true);
    expect(b.text).toContain('backoff_until = CASE WHEN target.backoff_until > DATEADD(SECOND, CAST(@ms / 1000 AS int), DATEADD(MILLISECOND, CAST(@ms % 1000 AS int), SYSUTCDATETIME()))');
    expect(b.text.endsWith('OUTPUT inserted.backoff_until INTO @state;\nSELECT backoff_until FROM @state;')).toBe(true); // L4
    expect([typeName(b, 'ms'), typeName(b, 'queue')]).toEqual(['BigInt', 'NVarChar']);
  });

  it('the limited outlook reads without locks: ready, pause, backoff, tokens, the live leases, the earliest lapse', () => {
    const o = limitedOutlook(names).text;
    expect(o).not.toMatch(/UPDATE|DELETE|INSERT|UPDLOCK|HOLDLOCK/);
    expect(o).toContain(`    CASE WHEN @concurrency IS NULL THEN 0 ELSE (SELECT COUNT(*) ${LIVE}) END AS leased,`);
    // the leased index's first live entry (a lapse makes room, and makes that row claimable again)
    expect(o).toContain(`    ${leaseLapsesInMs(names)} AS lease_lapses_in_ms;`);
    expect(o).not.toContain(LEASED);
  });
});
