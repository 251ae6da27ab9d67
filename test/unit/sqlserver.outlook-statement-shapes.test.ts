// Pins the shape of the T-SQL claim-outlook probe (no SQL Server here; the T-SQL grammar check parses it too) and
// how its row becomes the port's answer.

import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import { claimOutlook, claimOutlookOf } from '../../shared/stores/sqlserver/outlook-statements';
import { claimableExists, leaseLapsesInMs } from '../../shared/stores/sqlserver/ready-set';
import { length, typeName } from '../support/sqlserver-statements';

const BIN2 = 'Latin1_General_100_BIN2';
const names = transportNames('dbo', 'jobs', 'sqlserver');
const s = claimOutlook(names);

describe('SQL Server claim-outlook statement shape', () => {
  it("due: the claim's own ranges, one EXISTS per filtered index (each stops at its first row), and a vacant key", () => {
    const [first] = s.text.split('\n');
    expect(first).toBe(
      `IF NOT EXISTS (SELECT 1 FROM [dbo].[jobs_queue_state] AS paused WHERE paused.queue = @queue AND paused.queue + N'.' = @queue + N'.' COLLATE ${BIN2} AND (paused.paused_at IS NOT NULL OR paused.backoff_until > SYSUTCDATETIME())) AND ${claimableExists(names).split('\n')[0]}`,
    );
    // a keyed row behind its head is state 2, in none of the ranges: no drain that claims nothing, no loop
    expect(s.text).toContain(`${claimableExists(names)}\n    SELECT CAST(1 AS bit) AS due, CAST(NULL AS bigint) AS lease_lapses_in_ms;`);
  });

  it('otherwise the earliest live lease (the leased index\'s first entry), in ms on the database clock, and the backoff\'s end', () => {
    const elseBranch = s.text.slice(s.text.indexOf('\nELSE\n'));
    expect(elseBranch).toContain(`SELECT CAST(0 AS bit) AS due, ${leaseLapsesInMs(names)} AS lease_lapses_in_ms,`);
    expect(leaseLapsesInMs(names)).toBe(
      `(SELECT TOP (1) DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), locked_until) FROM [dbo].[jobs] WHERE queue = @queue AND queue + N'.' = @queue + N'.' COLLATE ${BIN2} AND lock_id IS NOT NULL AND locked_until > SYSUTCDATETIME() ORDER BY locked_until)`,
    );
    // and when a forward backoff ends (the drain request goes out then)
    expect(elseBranch).toContain(
      `(SELECT DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), backoff_until) FROM [dbo].[jobs_queue_state] WHERE queue = @queue AND queue + N'.' = @queue + N'.' COLLATE ${BIN2} AND backoff_until > SYSUTCDATETIME()) AS resumes_in_ms;`,
    );
    // one probe, no writes, no hints that could take locks a claim waits for
    expect(s.text).not.toMatch(/UPDATE|DELETE|INSERT|UPDLOCK|HOLDLOCK/);
  });

  it('takes the queue as NVarChar(200), like every queue parameter', () => {
    expect(Object.keys(s.params)).toEqual(['queue']);
    expect(typeName(s, 'queue')).toBe('NVarChar');
    expect(length(s, 'queue')).toBe(200);
  });

  it('reads the row: bit as boolean or 1, bigint as the driver gives it (a string), nothing read when due', () => {
    expect(claimOutlookOf({ due: true, lease_lapses_in_ms: null })).toEqual({ due: true, leaseLapsesInMs: null });
    expect(claimOutlookOf({ due: 1, lease_lapses_in_ms: '5' })).toEqual({ due: true, leaseLapsesInMs: null });
    expect(claimOutlookOf({ due: false, lease_lapses_in_ms: '12345' })).toEqual({ due: false, leaseLapsesInMs: 12345 });
    expect(claimOutlookOf({ due: false, lease_lapses_in_ms: null })).toEqual({ due: false, leaseLapsesInMs: null });
    expect(claimOutlookOf(undefined)).toEqual({ due: false, leaseLapsesInMs: null });
    expect(claimOutlookOf({ due: false, lease_lapses_in_ms: null, resumes_in_ms: '1500' })).toEqual({ due: false, leaseLapsesInMs: null, resumesInMs: 1500 });
  });
});
