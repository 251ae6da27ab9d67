// Pins the T-SQL of ordering keys (issue 17 §1; no SQL Server here, the grammar check parses these texts too): both
// claims take a keyed row only as the head of its key through a probe that carries no lock hint (READPAST there
// would skip a locked older row of the key), publishes write the key, the dead-letter move keeps it, a requeue
// puts a keyed job at the back of its key, and the column and its filtered index come in versions 15 and 16.

import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import { schemaNames } from '../../shared/stores/schema-names';
import { channelNames, transportNames } from '../../shared/sql/identifiers';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { claimLimited, limitedOutlook } from '../../shared/stores/sqlserver/limit-statements';
import { sqlServerMigrations } from '../../shared/stores/sqlserver/migrations';
import { headOfKeyLines } from '../../shared/stores/sqlserver/ordering-sql';
import { SqlServerTransportStore } from '../../shared/stores/sqlserver/store';
import { transportStatements } from '../../shared/stores/sqlserver/statements';
import { catalogRecordsets, FakePool, isCatalogQuery, isHistoryDdl, isPhase1, specCatalog } from './sqlserver.fakes';

const BIN2 = 'Latin1_General_100_BIN2';
const names = transportNames('dbo', 'jobs', 'sqlserver');
const s = transportStatements(names);

/** The text of the NOT EXISTS probe of a claim (from the predicate to the claim's ORDER BY). */
const probeOf = (text: string) => text.slice(text.indexOf('AND (candidate.ordering_key IS NULL OR NOT EXISTS ('), text.indexOf('    ORDER BY priority DESC, available_at, created_at'));

describe('SQL Server ordering-key statement shapes', () => {
  it('the claim takes a keyed row only while no older row of its (queue, key) is in the table, in any state', () => {
    const probe = probeOf(s.claimBatch.text);
    expect(probe).toBe(headOfKeyLines('[dbo].[jobs]').join('\n').trimStart() + '\n');
    expect(probe).toContain('SELECT 1 FROM [dbo].[jobs] AS older\n');
    // the seekable comparisons first (ordering index: queue, ordering_key, created_at, id), the sentinels after them
    expect(probe).toContain(`WHERE older.queue = @queue AND older.queue + N'.' = @queue + N'.' COLLATE ${BIN2}`);
    expect(probe).toContain("AND older.ordering_key IS NOT NULL AND older.ordering_key = candidate.ordering_key AND older.ordering_key + N'.' = candidate.ordering_key + N'.'");
    expect(probe).toContain('AND (older.created_at < candidate.created_at OR (older.created_at = candidate.created_at AND older.id < candidate.id))');
    // no state predicate: a leased or delayed (NAK'd) head blocks as much as a ready one
    expect(probe).not.toMatch(/locked_until|available_at/);
    // and no hint: READPAST would skip a head another session is acking, inserting or burying
    expect(probe).not.toMatch(/WITH \(|READPAST|NOLOCK|UPDLOCK/);
    // the outer scan keeps its hints, one statement
    expect(s.claimBatch.text).toContain('FROM [dbo].[jobs] AS candidate WITH (UPDLOCK, ROWLOCK, READPAST)');
    expect(s.claimBatch.text.match(/;/g)).toHaveLength(1);
  });

  it('the limited claim uses the same probe, and the limited outlook counts a keyed row as ready only as a head', () => {
    expect(probeOf(claimLimited(names).text)).toBe(probeOf(s.claimBatch.text));
    expect(limitedOutlook(names).text).toContain(`FROM [dbo].[jobs] AS candidate WHERE queue = @queue`);
    expect(limitedOutlook(names).text).toContain(`${headOfKeyLines('[dbo].[jobs]').join('\n')}\n    ) THEN 1 ELSE 0 END AS bit) AS ready,`);
  });

  it('publish writes the key from the batch; the dead-letter move keeps it; a requeue sends a keyed job to the back of its key', () => {
    expect(s.publishBatch.text).toContain('INSERT INTO [dbo].[jobs] (id, queue, payload_json, headers_json, created_at, available_at, priority, ordering_key)');
    expect(s.publishBatch.text).toContain("    ordering_key nvarchar(200) '$.ordering_key'\n) AS src");
    // rows of one batch keep its order: created_at steps 100 ns by ord
    expect(s.publishBatch.text).toContain('DATEADD(NANOSECOND, src.ord * 100, @now)');
    expect(s.deadLetterMove.text).toContain('SELECT @new_id, @dlq, @payload_json, @headers_json, @reason, attempts, priority, ordering_key FROM @removed;');
    expect(s.requeueDeadLetter.text).toContain('    created_at = CASE WHEN ordering_key IS NULL THEN created_at ELSE SYSUTCDATETIME() END,');
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
    expect(index).toContain("EXEC (N'CREATE INDEX [jobs_ordering_idx] ON [dbo].[jobs] (queue, ordering_key, created_at, id) WHERE ordering_key IS NOT NULL WITH (ONLINE = ON);');");
    expect(index).toContain('        CREATE INDEX [jobs_ordering_idx] ON [dbo].[jobs] (queue, ordering_key, created_at, id) WHERE ordering_key IS NOT NULL;');
  });

  it('the store sends ordering_key only for keyed messages, in the plain and the dedup-keyed batch', async () => {
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
    const plain = JSON.parse(pool.calls[0]!.inputs.batch!.value as string) as Array<Record<string, unknown>>;
    expect(plain.map((r) => r.ordering_key)).toEqual(['order-7', undefined]);
    pool.calls.length = 0;
    await store.publish([{ ...base, id: '00000000-0000-4000-8000-000000000003', orderingKey: 'order-8', dedup: { key: 'd', windowMs: 1000, mode: 'drop' } }]);
    const keyed = JSON.parse(pool.calls[0]!.inputs.batch!.value as string) as Array<Record<string, unknown>>;
    expect(keyed[0]!.ordering_key).toBe('order-8');
  });
});
