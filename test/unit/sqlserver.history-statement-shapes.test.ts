// Pins the shape of the T-SQL job-history statements (issue 16 §2; the T-SQL grammar check parses them too): the
// ack into history is the plain ack's DELETE with OUTPUT … INTO the history table (one statement); the lookup reads
// the live row and the history rows of one id; the searches seek (queue | correlation id, completed_at) with value
// bounds only; the prune is a bounded DELETE TOP of one queue's expired rows.

import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import { historyStatements } from '../../shared/stores/sqlserver/history-statements';
import { ackBatch } from '../../shared/stores/sqlserver/statements';
import { length, SPLIT, typeName } from '../support/sqlserver-statements';

const BIN2 = 'Latin1_General_100_BIN2';
const names = transportNames('dbo', 'jobs', 'sqlserver');
const s = historyStatements(names);
const SETTLED = [
  'FROM [dbo].[jobs] AS target',
  "INNER JOIN OPENJSON(@settlements) WITH (id uniqueidentifier '$.id', lock_id uniqueidentifier '$.lock_id') AS settled",
  '    ON target.id = settled.id AND target.lock_id = settled.lock_id;',
];
const CORRELATION = `JSON_VALUE(headers_json, N'$."AR-Correlation-Id"')`;

describe('SQL Server job-history statement shapes', () => {
  it('the ack into history: the plain ack with OUTPUT deleted.… INTO a table variable, the history rows from it and the keys settled, in one transaction', () => {
    const t = s.ackToHistory.text;
    expect(t.startsWith('SET XACT_ABORT ON;\nDECLARE @completed_at datetime2 = SYSUTCDATETIME(), @affected int;\nDECLARE @done TABLE (')).toBe(true);
    expect(t).toContain(
      [
        'BEGIN TRANSACTION;',
        'DELETE target',
        'OUTPUT deleted.id, deleted.queue, deleted.payload_json, deleted.headers_json, deleted.attempts, deleted.created_at,',
        '       deleted.available_at, deleted.priority, deleted.ordering_key, deleted.state, deleted.seq INTO @done',
        ...SETTLED,
        'SET @affected = @@ROWCOUNT;',
        'INSERT INTO [dbo].[jobs_history] (id, queue, state, correlation_id, payload_json, headers_json, attempts, created_at, available_at, completed_at, priority, ordering_key)',
        // DATALENGTH, not LEN: a value of 400 characters plus trailing spaces must not fail the batch (review L3)
        `SELECT id, queue, N'completed', CASE WHEN ISJSON(headers_json) = 1 THEN CASE WHEN DATALENGTH(${CORRELATION}) <= 800 THEN ${CORRELATION} END END,`,
        '       payload_json, headers_json, attempts, created_at, available_at, @completed_at, priority, ordering_key',
        'FROM @done;',
        'INSERT INTO @gone (queue, ordering_key, n, head, head_seq)',
      ].join('\n'),
    );
    expect(t).not.toMatch(/\bLEN\(/);
    // no OUTPUT straight into the history table: a trigger or foreign key there would break every ack (review L4)
    expect(t).not.toMatch(/INTO \[dbo\]\.\[jobs_history\] \(id[^\n]*\)\nFROM/);
    expect(t.endsWith('COMMIT;\nSELECT @affected AS affected;')).toBe(true);
    // with history off the ack is the plain one
    expect(ackBatch(names).text).toContain(['DELETE target', 'OUTPUT deleted.queue, deleted.ordering_key, deleted.state, deleted.seq INTO @removed', ...SETTLED].join('\n'));
    expect(Object.keys(s.ackToHistory.params)).toEqual(['settlements']);
    expect(typeName(s.ackToHistory, 'settlements')).toBe('NVarChar');
  });

  it('the lookup: the live row (its lease and delay on the database clock) and the history rows of one id', () => {
    expect(s.findJob.text.split('\n')).toEqual([
      "SELECT N'queue' AS source, id, queue, attempts, headers_json, created_at, available_at, CAST(NULL AS datetime2) AS completed_at,",
      '       CAST(CASE WHEN locked_until > SYSUTCDATETIME() THEN 1 ELSE 0 END AS bit) AS leased,',
      '       CAST(CASE WHEN available_at > SYSUTCDATETIME() THEN 1 ELSE 0 END AS bit) AS delayed, dead_letter_reason, priority, ordering_key',
      'FROM [dbo].[jobs] WHERE id = @id',
      'UNION ALL',
      "SELECT N'history', id, queue, attempts, headers_json, created_at, available_at, completed_at, CAST(0 AS bit), CAST(0 AS bit), NULL, priority, ordering_key",
      'FROM [dbo].[jobs_history] WHERE id = @id;',
    ]);
    expect(typeName(s.findJob, 'id')).toBe('UniqueIdentifier');
  });

  it('the searches: an exact key match, value bounds on completed_at and the cursor, newest first, TOP (@top)', () => {
    const tail = [
      '  AND completed_at >= CAST(@since AS datetime2(7)) AND completed_at < CAST(@until AS datetime2(7))',
      // a seek bound at the cursor, so page k does not rescan the earlier pages (review L6)
      '  AND completed_at <= CAST(@after_at AS datetime2(7))',
      '  AND (completed_at < CAST(@after_at AS datetime2(7)) OR (completed_at = CAST(@after_at AS datetime2(7)) AND id < @after_id))',
      '  AND (@state IS NULL OR state = @state)',
      'ORDER BY completed_at DESC, id DESC;',
    ];
    const head = [
      'SELECT TOP (@top) id, queue, state, attempts, correlation_id, created_at, available_at, completed_at, priority, ordering_key,',
      '       CONVERT(nvarchar(33), completed_at, 126) AS completed_key',
      'FROM [dbo].[jobs_history]',
    ];
    expect(s.searchByQueue.text.split('\n')).toEqual([...head, `WHERE queue = @key AND queue + N'.' = @key + N'.' COLLATE ${BIN2}`, ...tail]);
    expect(s.searchByCorrelation.text.split('\n')).toEqual([
      ...head,
      `WHERE correlation_id = @key AND correlation_id + N'.' = @key + N'.' COLLATE ${BIN2}`,
      ...tail,
    ]);
    expect(length(s.searchByQueue, 'key')).toBe(200);
    expect(length(s.searchByCorrelation, 'key')).toBe(400);
    for (const st of [s.searchByQueue, s.searchByCorrelation]) {
      expect(Object.keys(st.params).sort()).toEqual(['after_at', 'after_id', 'key', 'since', 'state', 'top', 'until']);
      for (const p of ['since', 'until', 'after_at']) expect(typeName(st, p)).toBe('NVarChar');
      expect(typeName(st, 'after_id')).toBe('UniqueIdentifier');
      expect(typeName(st, 'top')).toBe('Int');
      expect(st.text).not.toMatch(/UPDLOCK|HOLDLOCK|NOLOCK/);
    }
  });

  it('the prune: one bounded batch of one queue, NOCOUNT-proof, the retention on the database clock', () => {
    expect(s.pruneHistory.text.split('\n')).toEqual([
      'SET NOCOUNT OFF;',
      'DELETE TOP (1000) FROM [dbo].[jobs_history]',
      `WHERE queue = @queue AND queue + N'.' = @queue + N'.' COLLATE ${BIN2}`,
      `  AND completed_at < ${SPLIT('@neg_retention_ms')};`,
      'SELECT @@ROWCOUNT AS deleted;',
    ]);
    expect(typeName(s.pruneHistory, 'neg_retention_ms')).toBe('BigInt');
  });

  it('the auto-create DDL: under the schema applock, the table then its indexes, each guarded', () => {
    const lines = s.ddl.text.split('\n');
    expect(lines[1]).toBe("EXEC @lock_result = sp_getapplock @Resource = N'asyncresponse:ddl:dbo', @LockMode = 'Exclusive',");
    expect(lines.filter((l) => /^\s*CREATE /.test(l))).toEqual([
      'CREATE TABLE [dbo].[jobs_history] (',
      '    CREATE CLUSTERED INDEX [jobs_history_queue_idx] ON [dbo].[jobs_history] (queue, completed_at, id);',
      '    CREATE INDEX [jobs_history_id_idx] ON [dbo].[jobs_history] (id);',
      '    CREATE INDEX [jobs_history_corr_idx] ON [dbo].[jobs_history] (correlation_id, completed_at, id);',
    ]);
    // then version 19's columns, behind their guards, as a table made before them gets them
    expect(s.ddl.text.endsWith(
      [
        "IF COL_LENGTH(N'[dbo].[jobs_history]', N'priority') IS NULL",
        '    ALTER TABLE [dbo].[jobs_history] ADD priority smallint NULL;',
        "IF COL_LENGTH(N'[dbo].[jobs_history]', N'ordering_key') IS NULL",
        '    ALTER TABLE [dbo].[jobs_history] ADD ordering_key nvarchar(200) COLLATE Latin1_General_100_BIN2 NULL;',
      ].join('\n'),
    )).toBe(true);
  });
});
