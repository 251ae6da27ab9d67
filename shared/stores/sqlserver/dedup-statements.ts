// The T-SQL of dedup keys and debounce (issue 16 §3; the rules are in transport/dedup.ts): the dedup table, the
// keyed publish (one batch, one transaction) and the prune; the table's name and columns are in dedup-table-sql.ts. PostgreSQL twins: stores/postgres/dedup-statements.ts.

import * as sql from 'mssql';
import type { TransportNames } from '../../sql/identifiers';
import { dedupWindowIndexName } from '../queue-state-names';
import { DEAD_LETTER_PRUNE_BATCH } from '../options';
import { BIN2 } from './queue-match';
import { dedupTableBody, qualifiedDedupTable } from './dedup-table-sql';
import { createIndexIfMissing, createTableIfMissing, dbClockPlus, qualifiedTable, type Statement } from './statements';
import { COUNTS_DECLARATION, countKeysLines, FRESH_DECLARATION, readySetTables, STATE_QUEUED, STATE_SCHEDULED } from './ready-set';

/** Version 10's batches, also run by the store's phase 1: the table, then its window index (for the prune). */
export { dedupTableBody, qualifiedDedupTable };

export function dedupDdl(names: TransportNames): Array<{ name: string; lines: string[] }> {
  const d = qualifiedDedupTable(names);
  return [
    { name: 'create dedup table', lines: createTableIfMissing(d, dedupTableBody()) },
    { name: 'create dedup window index', lines: createIndexIfMissing(d, dedupWindowIndexName(names, 'sqlserver'), ['window_ends_at']) },
  ];
}

/** Exact equality of two BIN2 columns: `=` pads trailing spaces, the appended '.' makes them count (spec §1.3). */
const same = (a: string, b: string) => `${a} = ${b} AND ${a} + N'.' = ${b} + N'.' COLLATE ${BIN2}`;

/**
 * A keyed publish in ONE batch and transaction. @batch = JSON array of { queue, dedup_key (storedDedupKey), id, window_ms, debounce,
 * payload_json, headers_json, delay_ms, priority, ord, ordering_key (absent = NULL) }, no (queue, dedup_key) twice (dedupRounds).
 * 1. Hold: the UPDATE locks every existing key row of the batch (X, to the commit) and takes those whose window
 *    ended; the INSERT adds the new keys. Two publishers of a new key meet on the primary key: the second waits on
 *    the first's key-range lock, or (where the lock hints are ignored) fails with 2627 and the store re-runs the
 *    batch, which then finds the key held. Race-free either way: nothing here is check-then-insert without the key.
 * 2. Debounce: a held key's job that still waits (not leased) takes the new payload, headers and due time (and its
 *    state by that time, unless it waits behind its ordering key's head); a claim
 *    holding the row makes the UPDATE wait and re-check the lease. Those keys' windows restart; a holder that was
 *    claimed or is gone hands its key to the new job.
 * 3. The jobs that hold their key are inserted if absent (by id, as publishBatch), their ordering keys counted first
 *    (ready-set.ts countKeysLines); a key taken for an id that is another queue's job is given up again (that publish
 *    enqueued nothing).
 * One result set, by ord: id (the job answered), inserted, debounced, available_at, existing_queue.
 * PostgreSQL: holdKeys (INSERT … ON CONFLICT DO UPDATE … RETURNING), replaceWaiting, retake, publish in one transaction.
 */
export function publishKeyedBatch(names: TransportNames): Statement<'batch'> {
  const t = qualifiedTable(names);
  const d = qualifiedDedupTable(names);
  const keyMatch = `${same('d.queue', 'k.queue')} AND ${same('d.dedup_key', 'k.dedup_key')}`;
  const newWindow = dbClockPlus('k.window_ms', '@now');
  return {
    text: [
      'SET XACT_ABORT ON;',
      'DECLARE @now datetime2 = SYSUTCDATETIME();',
      'DECLARE @keys TABLE (',
      `    queue nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
      `    dedup_key nvarchar(201) COLLATE ${BIN2} NOT NULL,`,
      '    id uniqueidentifier NOT NULL,',
      '    window_ms bigint NOT NULL,',
      '    debounce bit NOT NULL,',
      '    payload_json nvarchar(max) NOT NULL,',
      '    headers_json nvarchar(max) NOT NULL,',
      '    delay_ms bigint NOT NULL,',
      '    priority smallint NOT NULL,',
      // clustered on the key (review L2): the joins below visit, and lock, the dedup rows in key order, so two keyed
      // batches sharing keys lock them in one order and cannot deadlock; ord stays unique for the answer's order
      '    ord int NOT NULL UNIQUE,',
      `    ordering_key nvarchar(200) COLLATE ${BIN2} NULL,`,
      '    holder uniqueidentifier NULL,',
      '    PRIMARY KEY (queue, dedup_key));',
      'DECLARE @replaced TABLE (id uniqueidentifier NOT NULL PRIMARY KEY, available_at datetime2 NOT NULL);',
      'DECLARE @inserted TABLE (id uniqueidentifier NOT NULL PRIMARY KEY, available_at datetime2 NOT NULL);',
      FRESH_DECLARATION,
      COUNTS_DECLARATION,
      'INSERT INTO @keys (queue, dedup_key, id, window_ms, debounce, payload_json, headers_json, delay_ms, priority, ord, ordering_key)',
      'SELECT src.queue, src.dedup_key, src.id, src.window_ms, src.debounce, src.payload_json, src.headers_json, src.delay_ms,',
      '       COALESCE(src.priority, 0), src.ord, src.ordering_key',
      'FROM OPENJSON(@batch) WITH (',
      "    queue nvarchar(200) '$.queue',",
      "    dedup_key nvarchar(201) '$.dedup_key',",
      "    id uniqueidentifier '$.id',",
      "    window_ms bigint '$.window_ms',",
      "    debounce bit '$.debounce',",
      "    payload_json nvarchar(max) '$.payload_json',",
      "    headers_json nvarchar(max) '$.headers_json',",
      "    delay_ms bigint '$.delay_ms',",
      "    priority smallint '$.priority',",
      "    ord int '$.ord',",
      "    ordering_key nvarchar(200) '$.ordering_key'",
      ') AS src;',
      'BEGIN TRAN;',
      // 1. hold
      'UPDATE d',
      'SET job_id = CASE WHEN d.window_ends_at <= @now THEN k.id ELSE d.job_id END,',
      `    window_ends_at = CASE WHEN d.window_ends_at <= @now THEN ${newWindow} ELSE d.window_ends_at END`,
      `FROM ${d} AS d`,
      `INNER JOIN @keys AS k ON ${keyMatch};`,
      `INSERT INTO ${d} (queue, dedup_key, job_id, window_ends_at)`,
      `SELECT k.queue, k.dedup_key, k.id, ${newWindow}`,
      'FROM @keys AS k',
      `WHERE NOT EXISTS (SELECT 1 FROM ${d} AS d WITH (UPDLOCK, HOLDLOCK) WHERE ${keyMatch});`,
      'UPDATE k SET holder = d.job_id',
      'FROM @keys AS k',
      `INNER JOIN ${d} AS d ON ${keyMatch};`,
      // 2. debounce: the waiting holders are picked under UPDLOCK (held to the commit, so no claim takes them
      // between the two statements: claims skip locked rows), then replaced by id. Two statements, not
      // UPDATE … OUTPUT … FROM … JOIN, which Babelfish cannot run.
      'INSERT INTO @replaced (id, available_at)',
      `SELECT m.id, CASE WHEN k.delay_ms > 0 THEN ${dbClockPlus('k.delay_ms', '@now')} ELSE @now END`,
      `FROM ${t} AS m WITH (UPDLOCK, ROWLOCK)`,
      `INNER JOIN @keys AS k ON m.id = k.holder AND ${same('m.queue', 'k.queue')}`,
      'WHERE k.debounce = 1 AND k.holder <> k.id',
      '  AND (m.locked_until IS NULL OR m.locked_until <= SYSUTCDATETIME());',
      // a replaced row queued behind its key's head stays queued; else it is scheduled or ready by its new time
      'UPDATE m',
      'SET payload_json = k.payload_json, headers_json = k.headers_json, available_at = r.available_at, locked_until = NULL, lock_id = NULL,',
      `    state = CASE WHEN m.state = ${STATE_QUEUED} THEN ${STATE_QUEUED} WHEN k.delay_ms > 0 THEN ${STATE_SCHEDULED} END`,
      `FROM ${t} AS m`,
      'INNER JOIN @replaced AS r ON r.id = m.id',
      'INNER JOIN @keys AS k ON k.holder = r.id AND k.debounce = 1;',
      'UPDATE d',
      'SET job_id = CASE WHEN EXISTS (SELECT 1 FROM @replaced AS r WHERE r.id = k.holder) THEN d.job_id ELSE k.id END,',
      `    window_ends_at = ${newWindow}`,
      `FROM ${d} AS d`,
      `INNER JOIN @keys AS k ON ${keyMatch}`,
      'WHERE k.debounce = 1 AND k.holder <> k.id;',
      'UPDATE k SET holder = k.id',
      'FROM @keys AS k',
      'WHERE k.debounce = 1 AND k.holder <> k.id AND NOT EXISTS (SELECT 1 FROM @replaced AS r WHERE r.id = k.holder);',
      // 3. insert: the rows not stored yet, their ordering keys counted first (ready-set.ts), seq drawn after that
      'INSERT INTO @fresh (ord, queue, ordering_key)',
      'SELECT k.ord, k.queue, k.ordering_key',
      'FROM @keys AS k',
      `WHERE k.holder = k.id AND NOT EXISTS (SELECT 1 FROM ${t} AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = k.id);`,
      ...countKeysLines(names),
      `INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at, priority, ordering_key, state, seq)`,
      'OUTPUT inserted.id, inserted.available_at INTO @inserted',
      'SELECT k.id, k.queue, k.payload_json, k.headers_json, DATEADD(NANOSECOND, k.ord * 100, @now),',
      `       CASE WHEN k.delay_ms > 0 THEN ${dbClockPlus('k.delay_ms', '@now')} ELSE @now END, k.priority, k.ordering_key,`,
      `       COALESCE(f.state, CASE WHEN k.delay_ms > 0 THEN ${STATE_SCHEDULED} END), NEXT VALUE FOR ${readySetTables(names).seq} OVER (ORDER BY k.ord)`,
      'FROM @keys AS k',
      'INNER JOIN @fresh AS f ON f.ord = k.ord;',
      // an id that is another queue's job (ids are unique across queues) enqueued nothing: it must not hold the key
      'DELETE d',
      `FROM ${d} AS d`,
      `INNER JOIN @keys AS k ON ${keyMatch}`,
      `WHERE k.holder = k.id AND d.job_id = k.id AND NOT EXISTS (SELECT 1 FROM @inserted AS i WHERE i.id = k.id)`,
      `  AND EXISTS (SELECT 1 FROM ${t} AS other WHERE other.id = k.id AND NOT (${same('other.queue', 'k.queue')}));`,
      'COMMIT;',
      'SELECT k.ord, k.holder AS id,',
      '       CAST(CASE WHEN i.id IS NULL THEN 0 ELSE 1 END AS bit) AS inserted,',
      '       CAST(CASE WHEN r.id IS NULL THEN 0 ELSE 1 END AS bit) AS debounced,',
      '       COALESCE(i.available_at, r.available_at, m.available_at) AS available_at,',
      '       m.queue AS existing_queue',
      'FROM @keys AS k',
      'LEFT JOIN @inserted AS i ON i.id = k.holder',
      'LEFT JOIN @replaced AS r ON r.id = k.holder',
      `LEFT JOIN ${t} AS m ON m.id = k.holder`,
      'ORDER BY k.ord;',
    ].join('\n'),
    params: { batch: sql.NVarChar(sql.MAX) },
  };
}

/** Keys whose window ended, one bounded batch (NOCOUNT-proof count). PostgreSQL: DELETE … WHERE ctid IN (… LIMIT 1000). */
export function pruneDedupKeys(names: TransportNames): Statement<never> {
  return {
    text: [
      'SET NOCOUNT OFF;',
      `DELETE TOP (${DEAD_LETTER_PRUNE_BATCH}) FROM ${qualifiedDedupTable(names)}`,
      'WHERE window_ends_at <= SYSUTCDATETIME();',
      'SELECT @@ROWCOUNT AS deleted;',
    ].join('\n'),
    params: {},
  };
}
