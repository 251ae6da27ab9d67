// Pins the shapes of the T-SQL of dedup keys and debounce (issue 16 §3): the keyed publish batch, the key prune and
// what phase 1 adds. No SQL Server here; the grammar check parses them too.

import * as sql from 'mssql';
import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import { publishKeyedBatch, pruneDedupKeys } from '../../shared/stores/sqlserver/dedup-statements';
import { transportStatements } from '../../shared/stores/sqlserver/statements';
import { length, typeName } from '../support/sqlserver-statements';

const BIN2 = 'Latin1_General_100_BIN2';
const names = transportNames('dbo', 'jobs', 'sqlserver');
const keyed = publishKeyedBatch(names).text;
const KEY = `d.queue = k.queue AND d.queue + N'.' = k.queue + N'.' COLLATE ${BIN2} AND d.dedup_key = k.dedup_key AND d.dedup_key + N'.' = k.dedup_key + N'.' COLLATE ${BIN2}`;
const at = (fragment: string) => {
  const i = keyed.indexOf(fragment);
  expect(i, fragment).toBeGreaterThan(-1);
  return i;
};

describe('SQL Server dedup statement shapes', () => {
  it('the keyed publish is one batch: XACT_ABORT, the rows into a BIN2 table variable, then ONE transaction', () => {
    expect(keyed.startsWith('SET XACT_ABORT ON;\nDECLARE @now datetime2 = SYSUTCDATETIME();\n')).toBe(true);
    expect(keyed).toContain(`    queue nvarchar(200) COLLATE ${BIN2} NOT NULL,\n    dedup_key nvarchar(201) COLLATE ${BIN2} NOT NULL,`);
    expect(keyed).toContain("FROM OPENJSON(@batch) WITH (\n    queue nvarchar(200) '$.queue',\n    dedup_key nvarchar(201) '$.dedup_key',\n    id uniqueidentifier '$.id',");
    expect(keyed.match(/BEGIN TRAN;/g)).toHaveLength(1);
    expect(keyed.match(/COMMIT;/g)).toHaveLength(1);
    expect(at('BEGIN TRAN;')).toBeGreaterThan(at(') AS src;'));
    expect([typeName(publishKeyedBatch(names), 'batch'), length(publishKeyedBatch(names), 'batch')]).toEqual(['NVarChar', sql.MAX]);
  });

  it('@keys is clustered on the key, not on ord (review L2): its joins lock the dedup rows in key order, so two batches sharing keys cannot deadlock', () => {
    expect(keyed).toContain('    ord int NOT NULL UNIQUE,');
    expect(keyed).toContain('    holder uniqueidentifier NULL,\n    PRIMARY KEY (queue, dedup_key));');
    expect(keyed).not.toContain('    ord int NOT NULL PRIMARY KEY,');
    // the answer keeps the publish's order by ord
    expect(keyed.endsWith('ORDER BY k.ord;')).toBe(true);
  });

  it('holding: every existing key row is updated (locked to the commit), and taken only when its window ended', () => {
    const hold = at('UPDATE d\nSET job_id = CASE WHEN d.window_ends_at <= @now THEN k.id ELSE d.job_id END,');
    expect(keyed).toContain(
      'window_ends_at = CASE WHEN d.window_ends_at <= @now THEN DATEADD(SECOND, CAST(k.window_ms / 1000 AS int), DATEADD(MILLISECOND, CAST(k.window_ms % 1000 AS int), @now)) ELSE d.window_ends_at END',
    );
    expect(keyed).toContain(`FROM [dbo].[jobs_dedup] AS d\nINNER JOIN @keys AS k ON ${KEY};`);
    // new keys: the primary key decides a race (2627, re-run by the store), the hints make SQL Server wait instead
    const insert = at('INSERT INTO [dbo].[jobs_dedup] (queue, dedup_key, job_id, window_ends_at)');
    expect(keyed).toContain(`WHERE NOT EXISTS (SELECT 1 FROM [dbo].[jobs_dedup] AS d WITH (UPDLOCK, HOLDLOCK) WHERE ${KEY});`);
    const holder = at(`UPDATE k SET holder = d.job_id\nFROM @keys AS k\nINNER JOIN [dbo].[jobs_dedup] AS d ON ${KEY};`);
    expect(hold).toBeGreaterThan(at('BEGIN TRAN;'));
    expect(insert).toBeGreaterThan(hold);
    expect(holder).toBeGreaterThan(insert);
  });

  it('debounce: only a waiting (unleased) holder of exactly the queue is replaced; the key restarts or moves to the new job', () => {
    // picked under UPDLOCK (held to the commit: claims skip locked rows), then replaced by id
    const pick = at('INSERT INTO @replaced (id, available_at)\nSELECT m.id, CASE WHEN k.delay_ms > 0 THEN');
    expect(keyed).toContain('FROM [dbo].[jobs] AS m WITH (UPDLOCK, ROWLOCK)\n');
    expect(keyed).toContain(`INNER JOIN @keys AS k ON m.id = k.holder AND m.queue = k.queue AND m.queue + N'.' = k.queue + N'.' COLLATE ${BIN2}`);
    expect(keyed).toContain('WHERE k.debounce = 1 AND k.holder <> k.id\n  AND (m.locked_until IS NULL OR m.locked_until <= SYSUTCDATETIME());');
    // the replaced row keeps its place in the ready set: queued behind its key's head it stays queued, else its
    // new time decides (scheduled when delayed); a lapsed lease it had is cleared
    const replace = at(
      'UPDATE m\nSET payload_json = k.payload_json, headers_json = k.headers_json, available_at = r.available_at, locked_until = NULL, lock_id = NULL,\n' +
        '    state = CASE WHEN m.state = 2 THEN 2 WHEN k.delay_ms > 0 THEN 1 END\nFROM [dbo].[jobs] AS m\nINNER JOIN @replaced AS r ON r.id = m.id\nINNER JOIN @keys AS k ON k.holder = r.id AND k.debounce = 1;',
    );
    expect(replace).toBeGreaterThan(pick);
    expect(keyed).not.toMatch(/OUTPUT inserted\.id, inserted\.available_at INTO @replaced/);
    const retake = at('SET job_id = CASE WHEN EXISTS (SELECT 1 FROM @replaced AS r WHERE r.id = k.holder) THEN d.job_id ELSE k.id END,');
    const moved = at('WHERE k.debounce = 1 AND k.holder <> k.id AND NOT EXISTS (SELECT 1 FROM @replaced AS r WHERE r.id = k.holder);');
    expect(retake).toBeGreaterThan(replace);
    expect(moved).toBeGreaterThan(retake);
  });

  it('the jobs holding their key are inserted if absent (by id, as publishBatch); a key taken for another queue\'s id is given up', () => {
    const insert = at('INSERT INTO [dbo].[jobs] (id, queue, payload_json, headers_json, created_at, available_at, priority, ordering_key, state, seq)\nOUTPUT inserted.id, inserted.available_at INTO @inserted');
    // the rows to insert are probed first, their ordering keys counted (ready-set.ts), then seq drawn in ord order
    const fresh = at('INSERT INTO @fresh (ord, queue, ordering_key)\nSELECT k.ord, k.queue, k.ordering_key\nFROM @keys AS k\nWHERE k.holder = k.id AND NOT EXISTS (SELECT 1 FROM [dbo].[jobs] AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = k.id);');
    const counted = at('    UPDATE c SET pending = k.pending FROM @counts AS c INNER JOIN [dbo].[jobs_keys] AS k WITH (UPDLOCK, HOLDLOCK)');
    expect([fresh < counted, counted < insert]).toEqual([true, true]);
    expect(keyed).toContain('       COALESCE(f.state, CASE WHEN k.delay_ms > 0 THEN 1 END), NEXT VALUE FOR [dbo].[jobs_seq] OVER (ORDER BY k.ord)\nFROM @keys AS k\nINNER JOIN @fresh AS f ON f.ord = k.ord;');
    // a keyed job may carry an ordering key too: it travels through @keys into the row
    expect(keyed).toContain("    ordering_key nvarchar(200) '$.ordering_key'\n) AS src;");
    expect(keyed).toContain(`    ordering_key nvarchar(200) COLLATE ${BIN2} NULL,`);
    expect(keyed).toContain("CASE WHEN k.delay_ms > 0 THEN DATEADD(SECOND, CAST(k.delay_ms / 1000 AS int), DATEADD(MILLISECOND, CAST(k.delay_ms % 1000 AS int), @now)) ELSE @now END, k.priority, k.ordering_key,");
    expect(keyed).toContain('SELECT k.id, k.queue, k.payload_json, k.headers_json, DATEADD(NANOSECOND, k.ord * 100, @now),');
    // the job's priority from the batch element (0 when absent)
    expect(keyed).toContain("    priority smallint '$.priority',");
    expect(keyed).toContain('       COALESCE(src.priority, 0), src.ord');
    const release = at(`DELETE d\nFROM [dbo].[jobs_dedup] AS d\nINNER JOIN @keys AS k ON ${KEY}\nWHERE k.holder = k.id AND d.job_id = k.id AND NOT EXISTS (SELECT 1 FROM @inserted AS i WHERE i.id = k.id)`);
    expect(keyed).toContain(
      `  AND EXISTS (SELECT 1 FROM [dbo].[jobs] AS other WHERE other.id = k.id AND NOT (other.queue = k.queue AND other.queue + N'.' = k.queue + N'.' COLLATE ${BIN2}));`,
    );
    expect(release).toBeGreaterThan(insert);
    expect(at('COMMIT;')).toBeGreaterThan(release);
  });

  it('answers one row per message, by ord, after the commit', () => {
    expect(keyed.endsWith([
      'SELECT k.ord, k.holder AS id,',
      '       CAST(CASE WHEN i.id IS NULL THEN 0 ELSE 1 END AS bit) AS inserted,',
      '       CAST(CASE WHEN r.id IS NULL THEN 0 ELSE 1 END AS bit) AS debounced,',
      '       COALESCE(i.available_at, r.available_at, m.available_at) AS available_at,',
      '       m.queue AS existing_queue',
      'FROM @keys AS k',
      'LEFT JOIN @inserted AS i ON i.id = k.holder',
      'LEFT JOIN @replaced AS r ON r.id = k.holder',
      'LEFT JOIN [dbo].[jobs] AS m ON m.id = k.holder',
      'ORDER BY k.ord;',
    ].join('\n'))).toBe(true);
    expect(at('SELECT k.ord, k.holder AS id,')).toBeGreaterThan(at('COMMIT;'));
  });

  it('the prune deletes one bounded batch of keys whose window ended, NOCOUNT-proof', () => {
    expect(pruneDedupKeys(names).text).toBe(
      ['SET NOCOUNT OFF;', 'DELETE TOP (1000) FROM [dbo].[jobs_dedup]', 'WHERE window_ends_at <= SYSUTCDATETIME();', 'SELECT @@ROWCOUNT AS deleted;'].join('\n'),
    );
  });

  it('phase 1 creates the dedup table (after the transport table) and not its index (the migration builds that)', () => {
    const t = transportStatements(names).ddlPhase1.text;
    expect(t).toContain("IF OBJECT_ID(N'[dbo].[jobs_dedup]', N'U') IS NULL\nBEGIN\nCREATE TABLE [dbo].[jobs_dedup] (");
    expect(t.indexOf('CREATE TABLE [dbo].[jobs_dedup]')).toBeGreaterThan(t.indexOf('CREATE TABLE [dbo].[jobs] ('));
    expect(t).not.toContain('jobs_dedup_window_idx');
  });

  it('phase 1 creates the lease roster of limited claims (version 17 for migrated schemas) after the queue-state table', () => {
    const t = transportStatements(names).ddlPhase1.text;
    expect(t).toContain(
      "IF OBJECT_ID(N'[dbo].[jobs_leases]', N'U') IS NULL\nBEGIN\nCREATE TABLE [dbo].[jobs_leases] (\n    queue nvarchar(200) COLLATE Latin1_General_100_BIN2 NOT NULL,",
    );
    expect(t.indexOf('CREATE TABLE [dbo].[jobs_leases]')).toBeGreaterThan(t.indexOf('CREATE TABLE [dbo].[jobs_queue_state]'));
  });
});
