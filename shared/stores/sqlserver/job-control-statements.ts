// The T-SQL statements of job and queue control (issue 16 §4): cancel, reschedule, pause and resume, and the
// queue-state table they and the claim read. PostgreSQL twins: stores/postgres/job-control-statements.ts; the
// cancel marker is explained in transport/job-control.ts.

import * as sql from 'mssql';
import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { CANCEL_MARK_PREFIX } from '../../transport/job-control';
import { cancelRequestedTest, pausedTest, qualifiedQueueStateTable, queueStateTableBody } from './queue-state-sql';
import { BIN2, dbClockPlus, exactQueueMatch, qualifiedTable, type Statement } from './statements';
import { GONE_DECLARATION, readySetTables, releaseKeysLines, REMOVED_DECLARATION, STATE_QUEUED, STATE_SCHEDULED } from './ready-set';

export { cancelRequestedTest, pausedTest, qualifiedQueueStateTable, queueStateTableBody };

const types = {
  queue: () => sql.NVarChar(200),
  id: () => sql.UniqueIdentifier(),
  ms: () => sql.BigInt(),
  at: () => sql.DateTime2(7),
  flag: () => sql.Bit(),
};

const UNLEASED = '(locked_until IS NULL OR locked_until <= SYSUTCDATETIME())';

const CANCEL_REQUESTED_TEST = cancelRequestedTest();

/** headers_json with the cancel marker first; a row already marked keeps its text. PostgreSQL: pgMarkedHeaders. */
export function markedHeaders(): string {
  const trimmed = 'LTRIM(headers_json)';
  const mark = `N'${CANCEL_MARK_PREFIX}"' + CONVERT(nvarchar(30), SYSUTCDATETIME(), 127) + N'Z"'`;
  return [
    `CASE WHEN ${CANCEL_REQUESTED_TEST} THEN headers_json`,
    `         WHEN ${trimmed} LIKE N'{%' AND LTRIM(SUBSTRING(${trimmed}, 2, 4000)) LIKE N'}%' THEN ${mark} + N'}'`,
    `         WHEN ${trimmed} LIKE N'{%' THEN ${mark} + N',' + SUBSTRING(${trimmed}, 2, 2147483647)`,
    `         ELSE ${mark} + N'}' END`,
  ].join('\n');
}

/**
 * Cancel in one batch and transaction: delete the row when it is waiting; else, when @running, mark it when it is
 * leased. The DELETE takes the row's lock: a claim holding it (UPDLOCK) makes it wait and re-check, so a row claimed
 * meanwhile is left to its claimer (answer: running). A keyed row's key row is locked first (UPDLOCK, HOLDLOCK), as a
 * claim promoting the key's successor locks it before the row, and the removal is settled on the key (ready-set.ts
 * releaseKeysLines: a cancelled head lets its key go on). PostgreSQL: one statement of CTEs.
 */
export function cancelJob(names: TransportNames): Statement<'queue' | 'id' | 'running'> {
  const t = qualifiedTable(names);
  const { k } = readySetTables(names);
  const row = `id = @id AND ${exactQueueMatch('queue', 'queue')}`;
  return {
    text: [
      'SET XACT_ABORT ON;',
      'DECLARE @deleted int = 0, @marked int = 0, @key nvarchar(200), @pending int;',
      REMOVED_DECLARATION,
      GONE_DECLARATION,
      'BEGIN TRANSACTION;',
      `SELECT @key = ordering_key FROM ${t} WHERE ${row};`,
      'IF @key IS NOT NULL',
      `    SELECT @pending = pending FROM ${k} WITH (UPDLOCK, HOLDLOCK) WHERE ${exactQueueMatch('queue', 'queue')} AND ordering_key = @key;`,
      `DELETE FROM ${t} OUTPUT deleted.queue, deleted.ordering_key, deleted.state, deleted.seq INTO @removed WHERE ${row} AND ${UNLEASED};`,
      'SET @deleted = @@ROWCOUNT;',
      ...releaseKeysLines(names),
      'IF @deleted = 0 AND @running = 1',
      'BEGIN',
      `    UPDATE ${t} SET headers_json = ${markedHeaders()}`,
      `    WHERE ${row} AND locked_until > SYSUTCDATETIME();`,
      '    SET @marked = @@ROWCOUNT;',
      'END',
      'COMMIT;',
      `SELECT @deleted AS deleted, @marked AS marked, CAST(CASE WHEN EXISTS (SELECT 1 FROM ${t} WHERE ${row}) THEN 1 ELSE 0 END AS bit) AS present;`,
    ].join('\n'),
    params: { queue: types.queue(), id: types.id(), running: types.flag() },
  };
}

/**
 * Reschedule a waiting row: @available_at when given, else the database clock + @delay_ms. The lease columns are
 * cleared so a lapsed owner's late settlement no longer matches its fence. A row queued behind its key's head stays
 * queued (its new time applies once it is the head); any other row is scheduled when its new time is ahead, else
 * ready. PostgreSQL: UPDATE … RETURNING.
 */
export function rescheduleJob(names: TransportNames): Statement<'queue' | 'id' | 'available_at' | 'delay_ms'> {
  const t = qualifiedTable(names);
  const row = `id = @id AND ${exactQueueMatch('queue', 'queue')}`;
  const at = `COALESCE(@available_at, ${dbClockPlus('@delay_ms')})`;
  return {
    text: [
      'DECLARE @moved TABLE (available_at datetime2 NOT NULL);',
      `UPDATE ${t}`,
      `SET available_at = ${at}, locked_until = NULL, lock_id = NULL,`,
      `    state = CASE WHEN state = ${STATE_QUEUED} THEN ${STATE_QUEUED} WHEN ${at} > SYSUTCDATETIME() THEN ${STATE_SCHEDULED} END`,
      'OUTPUT inserted.available_at INTO @moved',
      `WHERE ${row} AND ${UNLEASED};`,
      `SELECT (SELECT TOP (1) available_at FROM @moved) AS available_at,`,
      `       CAST(CASE WHEN EXISTS (SELECT 1 FROM ${t} WHERE ${row}) THEN 1 ELSE 0 END AS bit) AS present;`,
    ].join('\n'),
    params: { queue: types.queue(), id: types.id(), available_at: types.at(), delay_ms: types.ms() },
  };
}

/** Pause (@paused = 1; the first pause's time is kept) or resume, as an upsert. PostgreSQL: ON CONFLICT. */
export function setQueuePaused(names: TransportNames): Statement<'queue' | 'paused'> {
  const s = qualifiedQueueStateTable(names);
  return {
    text: [
      'DECLARE @state TABLE (paused_at datetime2 NULL);',
      `MERGE ${s} WITH (HOLDLOCK) AS target`,
      'USING (SELECT @queue AS queue) AS src',
      `    ON target.queue = src.queue AND ${exactQueueMatch('target.queue', 'queue')}`,
      'WHEN MATCHED THEN UPDATE SET',
      '    paused_at = CASE WHEN @paused = 1 THEN COALESCE(target.paused_at, SYSUTCDATETIME()) END,',
      '    updated_at = SYSUTCDATETIME()',
      'WHEN NOT MATCHED THEN INSERT (queue, paused_at, updated_at)',
      '    VALUES (@queue, CASE WHEN @paused = 1 THEN SYSUTCDATETIME() END, SYSUTCDATETIME())',
      // INTO a table variable, then SELECT: a bare OUTPUT fails on a table an operator gave a trigger (review L4)
      'OUTPUT inserted.paused_at INTO @state;',
      'SELECT paused_at FROM @state;',
    ].join('\n'),
    params: { queue: types.queue(), paused: types.flag() },
  };
}

export function queueState(names: TransportNames): Statement<'queue'> {
  return {
    text: `SELECT paused_at, CASE WHEN backoff_until > SYSUTCDATETIME() THEN backoff_until END AS backoff_until FROM ${qualifiedQueueStateTable(names)} WHERE ${exactQueueMatch('queue', 'queue')};`,
    params: { queue: types.queue() },
  };
}

export function jobControlStatements(names: TransportNames) {
  return {
    cancel: cancelJob(names),
    reschedule: rescheduleJob(names),
    setQueuePaused: setQueuePaused(names),
    queueState: queueState(names),
  };
}
