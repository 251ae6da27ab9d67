// Pins the T-SQL of the ready set and ordering keys (issue 25; issue 17 §1; no SQL Server here, the grammar check
// parses these texts too, and the contract suite runs them on the TDS engine through the harness's shims): the claim,
// read in full; publishes count keyed rows into their keys under the key row's lock and draw seq after it; every
// remover settles the keys of what it removed; the state a row gets when it moves; versions 15 and 16.

import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import { schemaNames } from '../../shared/stores/schema-names';
import { channelNames, transportNames } from '../../shared/sql/identifiers';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { claimLimited, limitedOutlook } from '../../shared/stores/sqlserver/limit-statements';
import { sqlServerMigrations } from '../../shared/stores/sqlserver/migrations';
import { claimLines, countKeysLines, promoteLines, releaseKeysLines } from '../../shared/stores/sqlserver/ready-set';
import { SqlServerTransportStore } from '../../shared/stores/sqlserver/store';
import { transportStatements } from '../../shared/stores/sqlserver/statements';
import { publishKeyedBatch } from '../../shared/stores/sqlserver/dedup-statements';
import { historyStatements } from '../../shared/stores/sqlserver/history-statements';
import { jobControlStatements } from '../../shared/stores/sqlserver/job-control-statements';
import { claimOutlook } from '../../shared/stores/sqlserver/outlook-statements';
import { catalogRecordsets, FakePool, isCatalogQuery, isHistoryDdl, isPhase1, specCatalog } from './sqlserver.fakes';

const BIN2 = 'Latin1_General_100_BIN2';
const names = transportNames('dbo', 'jobs', 'sqlserver');
const s = transportStatements(names);
const EXACT = `queue = @queue AND queue + N'.' = @queue + N'.' COLLATE ${BIN2}`;

describe('SQL Server ready-set statement shapes', () => {
  it('the claim, in full: paused test, then (a) vacant keys, (b) due rows, (c) lapsed leases, (d) one ordered seek of the ready set', () => {
    expect(s.claimBatch.text).toBe(
      [
        'SET XACT_ABORT ON;',
        `DECLARE @vacant TABLE (ordering_key nvarchar(200) COLLATE ${BIN2} NOT NULL);`,
        'BEGIN TRANSACTION;',
        `IF NOT EXISTS (SELECT 1 FROM [dbo].[jobs_queue_state] AS paused WHERE paused.queue = @queue AND paused.queue + N'.' = @queue + N'.' COLLATE ${BIN2} AND (paused.paused_at IS NOT NULL OR paused.backoff_until > SYSUTCDATETIME()))`,
        'BEGIN',
        '    UPDATE TOP (@n) [dbo].[jobs_keys] WITH (ROWLOCK, READPAST)',
        '    SET vacant = 0',
        '    OUTPUT inserted.ordering_key INTO @vacant (ordering_key)',
        `    WHERE ${EXACT} AND vacant = 1;`,
        '    IF @@ROWCOUNT > 0',
        '    BEGIN',
        '        UPDATE m SET state = CASE WHEN m.available_at <= SYSUTCDATETIME() THEN NULL ELSE 1 END',
        '        FROM @vacant AS v',
        '        CROSS APPLY (SELECT TOP (1) f.id FROM [dbo].[jobs] AS f WHERE f.queue = @queue AND f.ordering_key IS NOT NULL AND f.ordering_key = v.ordering_key ORDER BY f.seq) AS nx',
        '        INNER JOIN [dbo].[jobs] AS m ON m.id = nx.id',
        '        WHERE m.state = 2;',
        '        UPDATE kk SET pending = 0',
        '        FROM @vacant AS v INNER JOIN [dbo].[jobs_keys] AS kk ON kk.queue = @queue AND kk.ordering_key = v.ordering_key',
        '        WHERE NOT EXISTS (SELECT 1 FROM [dbo].[jobs] AS f WHERE f.queue = @queue AND f.ordering_key IS NOT NULL AND f.ordering_key = v.ordering_key);',
        '    END;',
        '    WITH due AS (',
        '        SELECT TOP (@n) state FROM [dbo].[jobs] WITH (ROWLOCK, READPAST)',
        `        WHERE ${EXACT} AND state = 1 AND available_at <= SYSUTCDATETIME()`,
        '        ORDER BY available_at)',
        '    UPDATE due SET state = NULL;',
        '    WITH lapsed AS (',
        '        SELECT TOP (@n) lock_id, locked_until FROM [dbo].[jobs] WITH (ROWLOCK, READPAST)',
        `        WHERE ${EXACT} AND lock_id IS NOT NULL AND locked_until <= SYSUTCDATETIME()`,
        '        ORDER BY locked_until)',
        '    UPDATE lapsed SET lock_id = NULL, locked_until = NULL;',
        '    WITH next AS (',
        '        SELECT TOP (@n) id, queue, payload_json, headers_json, attempts, locked_until, lock_id, created_at, available_at, priority, ordering_key, seq',
        '        FROM [dbo].[jobs] WITH (UPDLOCK, ROWLOCK, READPAST)',
        `        WHERE ${EXACT} AND state IS NULL AND lock_id IS NULL AND available_at <= SYSUTCDATETIME()`,
        '        ORDER BY priority DESC, available_at, seq)',
        '    UPDATE next',
        '    SET attempts = attempts + 1, locked_until = DATEADD(SECOND, CAST(@lock_timeout_ms / 1000 AS int), DATEADD(MILLISECOND, CAST(@lock_timeout_ms % 1000 AS int), SYSUTCDATETIME())), lock_id = @lock_id',
        '    OUTPUT inserted.id, inserted.queue, inserted.payload_json, inserted.headers_json, inserted.attempts,',
        '           inserted.lock_id, inserted.created_at, inserted.available_at, inserted.priority, inserted.ordering_key, inserted.seq;',
        'END;',
        'COMMIT;',
      ].join('\n'),
    );
  });

  it('only the claim holds UPDLOCK: the promotions lock only rows they modify, and none reads a keyed row behind its head or a leased row', () => {
    const promote = promoteLines(names, '@n').join('\n');
    expect(promote).not.toContain('UPDLOCK');
    expect(promote).not.toContain('HOLDLOCK');
    expect(claimLines(names, '@n').join('\n').match(/UPDLOCK/g)).toHaveLength(1);
    // the claim's seek: the ready set's filter, nothing a row must be looked up for before it is taken
    expect(claimLines(names, '@n').join('\n')).not.toMatch(/ordering_key IS NULL|locked_until <=|state = 2|EXISTS/);
  });

  it('the limited claim runs the same statements for its room', () => {
    const t = claimLimited(names).text;
    expect(t).toContain(['IF @room > 0', 'BEGIN', ...promoteLines(names, '@room'), ...claimLines(names, '@room'), '    SET @claimed = @@ROWCOUNT;', 'END;'].join('\n'));
    expect(t).toContain(`DECLARE @vacant TABLE (ordering_key nvarchar(200) COLLATE ${BIN2} NOT NULL);`);
  });

  it('the outlooks read the claim\'s own ranges (one seek each) and the leased index\'s first live entry', () => {
    for (const text of [claimOutlook(names).text, limitedOutlook(names).text]) {
      expect(text).toContain(`(EXISTS (SELECT 1 FROM [dbo].[jobs] WHERE ${EXACT} AND state IS NULL AND lock_id IS NULL AND available_at <= SYSUTCDATETIME())`);
      expect(text).toContain(`    OR EXISTS (SELECT 1 FROM [dbo].[jobs] WHERE ${EXACT} AND state = 1 AND available_at <= SYSUTCDATETIME())`);
      expect(text).toContain(`    OR EXISTS (SELECT 1 FROM [dbo].[jobs] WHERE ${EXACT} AND lock_id IS NOT NULL AND locked_until <= SYSUTCDATETIME())`);
      expect(text).toContain(`    OR EXISTS (SELECT 1 FROM [dbo].[jobs_keys] WHERE ${EXACT} AND vacant = 1))`);
      expect(text).toContain(
        `(SELECT TOP (1) DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), locked_until) FROM [dbo].[jobs] WHERE ${EXACT} AND lock_id IS NOT NULL AND locked_until > SYSUTCDATETIME() ORDER BY locked_until)`,
      );
      expect(text).not.toMatch(/older|MIN\(locked_until\)/);
    }
  });

  it('a keyed publish counts its rows into their keys under the key rows\' lock, in key order, and draws seq after it (H3)', () => {
    const t = s.publishOrderedBatch.text;
    expect(t.startsWith('SET XACT_ABORT ON;')).toBe(true);
    const probe = t.indexOf('INSERT INTO @fresh (ord, queue, ordering_key)');
    const lock = t.indexOf('UPDATE c SET pending = k.pending FROM @counts AS c INNER JOIN [dbo].[jobs_keys] AS k WITH (UPDLOCK, HOLDLOCK) ON k.queue = c.queue AND k.ordering_key = c.ordering_key;');
    const insert = t.indexOf('INSERT INTO [dbo].[jobs] (id, queue, payload_json, headers_json, created_at, available_at, priority, ordering_key, state, seq)');
    const seq = t.indexOf('NEXT VALUE FOR [dbo].[jobs_seq] OVER (ORDER BY src.ord)');
    expect([t.indexOf('BEGIN TRANSACTION;') < probe, probe < lock, lock < insert, insert < seq, seq < t.indexOf('COMMIT;')]).toEqual([true, true, true, true, true]);
    // @counts is clustered on (queue, key): its join visits the key rows in that order
    expect(t).toContain('n int NOT NULL, first_ord int NOT NULL, pending int NULL, PRIMARY KEY (queue, ordering_key));');
    expect(t).toContain(countKeysLines(names).join('\n'));
    // a key's first new row is its head when the key had no row left; the others queue behind it
    expect(t).toContain('    UPDATE f SET state = 2 FROM @fresh AS f INNER JOIN @counts AS c ON c.queue = f.queue AND c.ordering_key = f.ordering_key\n    WHERE c.pending > 0 OR f.ord <> c.first_ord;');
    expect(t).toContain('COALESCE(f.state, CASE WHEN src.delay_ms > 0 THEN 1 END)');
    expect(t).toContain("    ordering_key nvarchar(200) '$.ordering_key'\n) AS src\nINNER JOIN @fresh AS f ON f.ord = src.ord;");
    // the dedup publish counts its keyed rows the same way
    expect(publishKeyedBatch(names).text).toContain(countKeysLines(names).join('\n'));
    expect(publishKeyedBatch(names).text).toContain('NEXT VALUE FOR [dbo].[jobs_seq] OVER (ORDER BY k.ord)');
  });

  it('every remover outputs (queue, ordering_key, state, seq) of what it removed, settles those keys and promotes a removed head\'s next row in its transaction', () => {
    const release = releaseKeysLines(names).join('\n');
    const gk = 'kk.queue = g.queue AND kk.ordering_key = g.ordering_key';
    expect(release).toBe(
      [
        'INSERT INTO @gone (queue, ordering_key, n, head, head_seq)',
        'SELECT queue, ordering_key, COUNT(*), MAX(CASE WHEN state = 2 THEN 0 ELSE 1 END), MAX(CASE WHEN state = 2 THEN NULL ELSE seq END)',
        'FROM @removed WHERE ordering_key IS NOT NULL GROUP BY queue, ordering_key;',
        'IF @@ROWCOUNT > 0',
        'BEGIN',
        // the count first: it X-locks the key rows (in @gone's (queue, key) order), waiting for their publishers' commits
        '    UPDATE kk SET pending = CASE WHEN kk.pending > g.n THEN kk.pending - g.n ELSE 0 END',
        `    FROM @gone AS g INNER JOIN [dbo].[jobs_keys] AS kk ON ${gk};`,
        // then, a statement of its own (it sees every counted row), a removed head's next row by seq after the head's
        '    UPDATE m SET state = CASE WHEN m.available_at <= SYSUTCDATETIME() THEN NULL ELSE 1 END',
        '    OUTPUT inserted.queue, inserted.ordering_key INTO @promoted (queue, ordering_key)',
        `    FROM @gone AS g INNER JOIN [dbo].[jobs_keys] AS kk ON ${gk}`,
        '    CROSS APPLY (SELECT TOP (1) f.id FROM [dbo].[jobs] AS f',
        '        WHERE f.queue = g.queue AND f.ordering_key IS NOT NULL AND f.ordering_key = g.ordering_key AND f.seq > COALESCE(g.head_seq, -1)',
        '        ORDER BY f.seq) AS nx',
        '    INNER JOIN [dbo].[jobs] AS m ON m.id = nx.id',
        '    WHERE g.head = 1 AND kk.pending > 0 AND m.state = 2;',
        // a key whose count says rows remain but whose next row was not found: vacant, for the claim to repair
        '    UPDATE kk SET vacant = 1',
        `    FROM @gone AS g INNER JOIN [dbo].[jobs_keys] AS kk ON ${gk}`,
        '    WHERE g.head = 1 AND kk.pending > 0 AND kk.vacant = 0',
        '      AND NOT EXISTS (SELECT 1 FROM @promoted AS p WHERE p.queue = g.queue AND p.ordering_key = g.ordering_key);',
        'END;',
      ].join('\n'),
    );
    const removers = {
      ack: s.ackBatch.text,
      ackToHistory: historyStatements(names).ackToHistory.text,
      cancel: jobControlStatements(names).cancel.text,
      deadLetterMove: s.deadLetterMove.text,
    };
    for (const [name, text] of Object.entries(removers)) {
      expect(text.startsWith('SET XACT_ABORT ON;'), name).toBe(true);
      expect(text, name).toMatch(/deleted\.ordering_key, (deleted\.queue, )?deleted\.state, deleted\.seq INTO @(removed|done|moved)/);
      expect(text, name).toMatch(/DECLARE @(removed|done|moved) TABLE \([^;]*state tinyint NULL, seq bigint NULL\);/);
      expect(text, name).toContain('INSERT INTO @gone (queue, ordering_key, n, head, head_seq)');
      expect(text, name).toContain('n int NOT NULL, head bit NOT NULL, head_seq bigint NULL, PRIMARY KEY (queue, ordering_key));\nDECLARE @promoted TABLE');
      expect(text.indexOf('INSERT INTO @gone'), name).toBeGreaterThan(text.search(/DELETE (target|FROM)/));
      expect(text.indexOf('INSERT INTO @gone'), name).toBeLessThan(text.lastIndexOf('COMMIT;'));
    }
    // a cancel locks the key row before the job row, as a claim promoting the key's successor does
    const cancel = removers.cancel;
    expect(cancel.indexOf('FROM [dbo].[jobs_keys] WITH (UPDLOCK, HOLDLOCK)')).toBeLessThan(cancel.indexOf('DELETE FROM [dbo].[jobs]'));
  });

  it('a row that moves keeps its place in the model: NAK and reschedule schedule when delayed, a queued row stays queued', () => {
    expect(s.release.text).toContain('    state = CASE WHEN @delay_ms > 0 THEN 1 END');
    const reschedule = jobControlStatements(names).reschedule.text;
    expect(reschedule).toContain(
      "    state = CASE WHEN state = 2 THEN 2 WHEN COALESCE(@available_at, DATEADD(SECOND, CAST(@delay_ms / 1000 AS int), DATEADD(MILLISECOND, CAST(@delay_ms % 1000 AS int), SYSUTCDATETIME()))) > SYSUTCDATETIME() THEN 1 END",
    );
    const debounce = publishKeyedBatch(names).text;
    expect(debounce).toContain('locked_until = NULL, lock_id = NULL,\n    state = CASE WHEN m.state = 2 THEN 2 WHEN k.delay_ms > 0 THEN 1 END');
  });

  it('version 15 adds the BIN2 column alone (bounded Sch-M wait); version 16 builds the filtered index online where it can', () => {
    const all = sqlServerMigrations(schemaNames(names, channelNames('dbo', DEFAULT_CHANNEL_TABLES, 'sqlserver'), 'sqlserver'));
    const v15 = all.find((m) => m.version === 15)!;
    const v16 = all.find((m) => m.version === 16)!;
    expect(v15.statements.map((x) => x.text)).toEqual([
      [
        'SET LOCK_TIMEOUT 5000;',
        "IF COL_LENGTH(N'[dbo].[jobs]', N'ordering_key') IS NULL",
        `    ALTER TABLE [dbo].[jobs] ADD ordering_key nvarchar(200) COLLATE ${BIN2} NULL;`,
      ].join('\n'),
    ]);
    const index = v16.statements[0]!.text;
    expect(index).not.toMatch(/ALTER TABLE/);
    expect(index).toContain(
      "EXEC (N'CREATE INDEX [jobs_ordering_idx] ON [dbo].[jobs] (queue, ordering_key, created_at, id) WHERE ordering_key IS NOT NULL WITH (ONLINE = ON (WAIT_AT_LOW_PRIORITY (MAX_DURATION = 1 MINUTES, ABORT_AFTER_WAIT = SELF)));');",
    );
    expect(index).toContain("EXEC (N'CREATE INDEX [jobs_ordering_idx] ON [dbo].[jobs] (queue, ordering_key, created_at, id) WHERE ordering_key IS NOT NULL WITH (ONLINE = ON);');");
    expect(index).toContain('        CREATE INDEX [jobs_ordering_idx] ON [dbo].[jobs] (queue, ordering_key, created_at, id) WHERE ordering_key IS NOT NULL;');
  });

  it('the store sends a batch with an ordering key to the keyed publish, and ordering_key only for keyed messages', async () => {
    const pool = new FakePool((call) => {
      if (isCatalogQuery(call)) return catalogRecordsets(specCatalog(names));
      if (isPhase1(call) || isHistoryDdl(call)) return [];
      if (call.text.includes('@keys')) return [[{ ord: 0, id: '00000000-0000-4000-8000-000000000003', inserted: true, debounced: false, available_at: new Date() }]];
      return [[]];
    });
    const store = new SqlServerTransportStore(pool.asPool(), { schema: 'dbo', table: 'jobs', autoCreateSchema: true, logger: silentLogger });
    await store.ensureSchema();
    pool.calls.length = 0;
    const base = { queue: 'q', payloadJson: '{}', headers: {}, delayMs: 0 };
    await store.publish([
      { ...base, id: '00000000-0000-4000-8000-000000000001', orderingKey: 'order-7' },
      { ...base, id: '00000000-0000-4000-8000-000000000002' },
    ]);
    expect(pool.calls[0]!.text).toBe(s.publishOrderedBatch.text);
    const ordered = JSON.parse(pool.calls[0]!.inputs.batch!.value as string) as Array<Record<string, unknown>>;
    expect(ordered.map((r) => r.ordering_key).sort()).toEqual(['order-7', undefined].sort());
    pool.calls.length = 0;
    await store.publish([{ ...base, id: '00000000-0000-4000-8000-000000000004' }]);
    expect(pool.calls[0]!.text).toBe(s.publishBatch.text);
    pool.calls.length = 0;
    await store.publish([{ ...base, id: '00000000-0000-4000-8000-000000000003', orderingKey: 'order-8', dedup: { key: 'd', windowMs: 1000, mode: 'drop' } }]);
    const keyed = JSON.parse(pool.calls[0]!.inputs.batch!.value as string) as Array<Record<string, unknown>>;
    expect(keyed[0]!.ordering_key).toBe('order-8');
  });
});
