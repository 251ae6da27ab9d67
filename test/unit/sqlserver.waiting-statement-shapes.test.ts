// Pins the shape of the T-SQL waiting-jobs listing (no SQL Server here; the T-SQL grammar check parses it too):
// the claim's exact queue match, the database clock, a TOP (@top) bound and the ready index's order.

import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import { waitingStatements } from '../../shared/stores/sqlserver/waiting-statements';
import { length, typeName } from '../support/sqlserver-statements';

const BIN2 = 'Latin1_General_100_BIN2';
const s = waitingStatements(transportNames('dbo', 'jobs', 'sqlserver'));
const WHERE = `WHERE queue = @queue AND queue + N'.' = @queue + N'.' COLLATE ${BIN2}`;

describe('SQL Server waiting-jobs statement shapes', () => {
  it('one statement per state and order', () => {
    expect(Object.keys(s).sort()).toEqual(['delayed:newest', 'delayed:oldest', 'ready:newest', 'ready:oldest']);
  });

  const COLUMNS = 'id, payload_json, headers_json, attempts, available_at, created_at, priority, ordering_key, seq';
  const part = (alias: string, where: string, by: string) => `    SELECT * FROM (SELECT TOP (@top) ${COLUMNS} FROM [dbo].[jobs] ${WHERE} AND ${where} ORDER BY ${by}) AS ${alias}`;

  it('ready: the ready set, the due scheduled rows, the due rows queued behind their heads and the lapsed leases, each TOP (@top) from its index, merged in claim order', () => {
    const oldest = ['priority DESC, available_at, seq', 'available_at', 'locked_until'] as const;
    const newest = ['priority, available_at DESC, seq DESC', 'available_at DESC', 'locked_until DESC'] as const;
    for (const [key, [claim, scheduled, lapsed]] of [['ready:oldest', oldest], ['ready:newest', newest]] as const) {
      expect(s[key].text.split('\n')).toEqual([
        `SELECT TOP (@top) ${COLUMNS} FROM (`,
        part('r', 'state IS NULL AND lock_id IS NULL AND available_at <= SYSUTCDATETIME()', claim),
        '    UNION ALL',
        part('s', 'state = 1 AND available_at <= SYSUTCDATETIME()', scheduled),
        '    UNION ALL',
        part('k', 'ordering_key IS NOT NULL AND state = 2 AND available_at <= SYSUTCDATETIME()', claim),
        '    UNION ALL',
        part('l', 'lock_id IS NOT NULL AND locked_until <= SYSUTCDATETIME()', lapsed),
        ') AS w',
        `ORDER BY ${claim};`,
      ]);
    }
  });

  it('delayed: the ready set\'s not-yet-due rows (a .NET host\'s), the scheduled rows and the queued rows not due, merged in claim order', () => {
    expect(s['delayed:oldest'].text.split('\n')).toEqual([
      `SELECT TOP (@top) ${COLUMNS} FROM (`,
      part('r', 'state IS NULL AND lock_id IS NULL AND available_at > SYSUTCDATETIME()', 'priority DESC, available_at, seq'),
      '    UNION ALL',
      part('s', 'state = 1 AND available_at > SYSUTCDATETIME()', 'available_at'),
      '    UNION ALL',
      part('k', 'ordering_key IS NOT NULL AND state = 2 AND available_at > SYSUTCDATETIME()', 'priority DESC, available_at, seq'),
      ') AS w',
      'ORDER BY priority DESC, available_at, seq;',
    ]);
    expect(s['delayed:newest'].text).toContain('ORDER BY available_at DESC) AS s');
  });

  it('reads only, with no lock hints a claim would wait for; the queue NVarChar(200), top an Int', () => {
    for (const statement of Object.values(s)) {
      expect(statement.text).not.toMatch(/UPDATE|DELETE|INSERT|UPDLOCK|HOLDLOCK|NOLOCK/);
      expect(Object.keys(statement.params).sort()).toEqual(['queue', 'top']);
      expect(typeName(statement, 'queue')).toBe('NVarChar');
      expect(length(statement, 'queue')).toBe(200);
      expect(typeName(statement, 'top')).toBe('Int');
    }
  });
});
