// Pins the shape of the T-SQL waiting-jobs listing (no SQL Server here; the T-SQL grammar check parses it too):
// the claim's exact queue match, the database clock, a TOP (@top) bound and the ready index's order.

import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import { waitingStatements } from '../../shared/stores/sqlserver/waiting-statements';
import { length, typeName } from '../support/sqlserver-statements';

const BIN2 = 'Latin1_General_100_BIN2';
const s = waitingStatements(transportNames('dbo', 'jobs', 'sqlserver'));
const WHERE = `WHERE queue = @queue AND queue + N'.' = @queue + N'.' COLLATE ${BIN2}`;
const UNLEASED = '  AND (locked_until IS NULL OR locked_until <= SYSUTCDATETIME())';

describe('SQL Server waiting-jobs statement shapes', () => {
  it('one statement per state and order', () => {
    expect(Object.keys(s).sort()).toEqual(['delayed:newest', 'delayed:oldest', 'ready:newest', 'ready:oldest']);
  });

  it('ready: available now and unleased (or lapsed), TOP (@top) in the ready index order (the claim order), either way', () => {
    const head = ['SELECT TOP (@top) id, payload_json, headers_json, attempts, available_at, created_at, priority, ordering_key', 'FROM [dbo].[jobs]', `${WHERE} AND available_at <= SYSUTCDATETIME()`, UNLEASED];
    expect(s['ready:oldest'].text.split('\n')).toEqual([...head, 'ORDER BY priority DESC, available_at, created_at;']);
    expect(s['ready:newest'].text.split('\n')).toEqual([...head, 'ORDER BY priority, available_at DESC, created_at DESC;']);
  });

  it('delayed: available later, unleased', () => {
    const head = ['SELECT TOP (@top) id, payload_json, headers_json, attempts, available_at, created_at, priority, ordering_key', 'FROM [dbo].[jobs]', `${WHERE} AND available_at > SYSUTCDATETIME()`, UNLEASED];
    expect(s['delayed:oldest'].text.split('\n')).toEqual([...head, 'ORDER BY priority DESC, available_at, created_at;']);
    expect(s['delayed:newest'].text.split('\n')).toEqual([...head, 'ORDER BY priority, available_at DESC, created_at DESC;']);
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
