// The T-SQL statements of recurring schedules (shared/schedules): the table (version 7), the upsert, reads, the due
// seek and the firing (compare-and-set advance plus the slot jobs, one transaction). PostgreSQL twins:
// stores/postgres/schedule-statements.ts.

import * as sql from 'mssql';
import { quoteIdentifier } from '../../sql/identifiers';
import type { SchemaNames } from '../schema-names';
import { BIN2, createIndexIfMissing, createTableIfMissing, exactQueueMatch, publishBatch, type Statement } from './statements';
import { publishToTopic } from './topic-statements';

const q = (n: string) => quoteIdentifier(n, 'sqlserver');

export const schedulesTable = (n: SchemaNames) => `${q(n.schema)}.${q(n.schedulesTable)}`;

const COLUMNS = 'name, target_kind, target, cron, time_zone, payload_json, headers_json, paused, misfire, catch_up_max, last_slot, next_slot, created_at, updated_at';
const DUE_INDEX_KEYS = ['paused', 'next_slot'] as const;

export function scheduleTableBody(): string {
  return [
    `    name nvarchar(200) COLLATE ${BIN2} NOT NULL PRIMARY KEY,`,
    "    target_kind varchar(10) NOT NULL CHECK (target_kind IN ('queue', 'topic')),",
    `    target nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
    '    cron nvarchar(200) NOT NULL,',
    '    time_zone nvarchar(100) NOT NULL,',
    '    payload_json nvarchar(max) NOT NULL,',
    '    headers_json nvarchar(max) NOT NULL,',
    '    paused bit NOT NULL DEFAULT 0,',
    "    misfire varchar(10) NOT NULL CHECK (misfire IN ('skip', 'catchUp')),",
    '    catch_up_max int NOT NULL DEFAULT 0,',
    '    last_slot datetime2 NULL,',
    '    next_slot datetime2 NULL,',
    '    created_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(),',
    '    updated_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME()',
  ].join('\n');
}

/** Version 7's batches: the table, then its due index (unpaused schedules by next slot). */
export function scheduleDdl(n: SchemaNames): Array<{ name: string; lines: string[] }> {
  return [
    { name: 'create schedules table', lines: createTableIfMissing(schedulesTable(n), scheduleTableBody()) },
    { name: 'create schedules due index', lines: createIndexIfMissing(schedulesTable(n), n.schedulesDueIndex, DUE_INDEX_KEYS) },
  ];
}

/** Text equality that neither case, accents nor trailing spaces fool (a replaced payload must count as changed). */
const sameText = (column: string, param: string) => `s.${column} + N'.' = @${param} + N'.' COLLATE ${BIN2}`;

const definitionParams = {
  name: sql.NVarChar(200),
  target_kind: sql.VarChar(10),
  target: sql.NVarChar(200),
  cron: sql.NVarChar(200),
  time_zone: sql.NVarChar(100),
  payload_json: sql.NVarChar(sql.MAX),
  headers_json: sql.NVarChar(sql.MAX),
  paused: sql.Bit(),
  misfire: sql.VarChar(10),
  catch_up_max: sql.Int(),
  next_slot: sql.DateTime2(3),
};
type DefinitionParam = keyof typeof definitionParams;

/**
 * Insert, or replace only when the definition differs (@changed); the next slot is kept while cron, zone and the
 * (unpaused) state are the same. The row is locked (UPDLOCK, HOLDLOCK) first, so two writers of one new name
 * serialise instead of racing to a duplicate key. Result set: created, changed and the row.
 */
export function upsertSchedule(n: SchemaNames): Statement<DefinitionParam> {
  const t = schedulesTable(n);
  const unchanged = [
    "s.target_kind = @target_kind",
    sameText('target', 'target'),
    sameText('cron', 'cron'),
    sameText('time_zone', 'time_zone'),
    sameText('payload_json', 'payload_json'),
    sameText('headers_json', 'headers_json'),
    's.paused = @paused',
    's.misfire = @misfire',
    's.catch_up_max = @catch_up_max',
  ].join(' AND ');
  return {
    text: [
      'SET XACT_ABORT ON;',
      'DECLARE @created bit = 0, @changed bit = 0;',
      'BEGIN TRANSACTION;',
      `IF EXISTS (SELECT 1 FROM ${t} AS s WITH (UPDLOCK, HOLDLOCK) WHERE ${exactQueueMatch('s.name', 'name')})`,
      'BEGIN',
      '    UPDATE s SET target_kind = @target_kind, target = @target, cron = @cron, time_zone = @time_zone,',
      '        payload_json = @payload_json, headers_json = @headers_json, paused = @paused, misfire = @misfire,',
      '        catch_up_max = @catch_up_max,',
      `        next_slot = CASE WHEN ${sameText('cron', 'cron')} AND ${sameText('time_zone', 'time_zone')} AND s.paused = 0 AND @paused = 0`,
      '                          AND s.next_slot IS NOT NULL THEN s.next_slot ELSE @next_slot END,',
      '        updated_at = SYSUTCDATETIME()',
      `    FROM ${t} AS s`,
      `    WHERE ${exactQueueMatch('s.name', 'name')} AND NOT (${unchanged});`,
      '    IF @@ROWCOUNT = 1 SET @changed = 1;',
      'END',
      'ELSE',
      'BEGIN',
      `    INSERT INTO ${t} (name, target_kind, target, cron, time_zone, payload_json, headers_json, paused, misfire, catch_up_max, next_slot)`,
      '    VALUES (@name, @target_kind, @target, @cron, @time_zone, @payload_json, @headers_json, @paused, @misfire, @catch_up_max, @next_slot);',
      '    SET @created = 1;',
      '    SET @changed = 1;',
      'END',
      'COMMIT TRANSACTION;',
      `SELECT @created AS created, @changed AS changed, ${COLUMNS} FROM ${t} AS s WHERE ${exactQueueMatch('s.name', 'name')};`,
    ].join('\n'),
    params: definitionParams,
  };
}

export function getSchedule(n: SchemaNames): Statement<'name'> {
  return {
    text: `SELECT ${COLUMNS} FROM ${schedulesTable(n)} AS s WHERE ${exactQueueMatch('s.name', 'name')};`,
    params: { name: sql.NVarChar(200) },
  };
}

export function listSchedules(n: SchemaNames): Statement<'limit'> {
  return { text: `SELECT TOP (@limit) ${COLUMNS} FROM ${schedulesTable(n)} ORDER BY name;`, params: { limit: sql.Int() } };
}

/** The count read server-side (review L5): under a server-wide SET NOCOUNT ON the driver's row count is missing. */
export function deleteSchedule(n: SchemaNames): Statement<'name'> {
  return {
    text: [`DELETE s FROM ${schedulesTable(n)} AS s WHERE ${exactQueueMatch('s.name', 'name')};`, 'SELECT @@ROWCOUNT AS deleted;'].join('\n'),
    params: { name: sql.NVarChar(200) },
  };
}

/**
 * Pause keeps the next slot (shown as where it would run); resume sets a fresh one from now. OUTPUT INTO a table
 * variable, then SELECT: a bare OUTPUT fails on a table an operator gave a trigger (review L4).
 */
export function setSchedulePaused(n: SchemaNames): Statement<'name' | 'paused' | 'next_slot'> {
  const output = COLUMNS.split(', ').map((c) => `inserted.${c}`).join(', ');
  // the table's columns without their constraints and defaults
  const columns = scheduleTableBody()
    .split('\n')
    .map((line) => line.trim().replace(/,$/, '').replace(/ PRIMARY KEY| CHECK \(.*\)| DEFAULT \S+/g, ''))
    .join(', ');
  return {
    text: [
      `DECLARE @changed TABLE (${columns});`,
      `UPDATE s SET paused = @paused, next_slot = CASE WHEN @paused = 1 THEN s.next_slot ELSE @next_slot END, updated_at = SYSUTCDATETIME()`,
      `OUTPUT ${output} INTO @changed`,
      `FROM ${schedulesTable(n)} AS s`,
      `WHERE ${exactQueueMatch('s.name', 'name')};`,
      `SELECT ${COLUMNS} FROM @changed;`,
    ].join('\n'),
    params: { name: sql.NVarChar(200), paused: sql.Bit(), next_slot: sql.DateTime2(3) },
  };
}

/** Result set 1: the clock; result set 2: unpaused schedules due by it, soonest first (a seek on the due index). */
export function dueSchedules(n: SchemaNames): Statement<'limit'> {
  return {
    text: [
      'DECLARE @now datetime2 = SYSUTCDATETIME();',
      'SELECT @now AS now;',
      `SELECT TOP (@limit) ${COLUMNS} FROM ${schedulesTable(n)}`,
      'WHERE paused = 0 AND next_slot <= @now',
      'ORDER BY next_slot;',
    ].join('\n'),
    params: { limit: sql.Int() },
  };
}

export function soonestSchedule(n: SchemaNames): Statement<never> {
  return {
    text: `SELECT (SELECT MIN(next_slot) FROM ${schedulesTable(n)} WHERE paused = 0) AS next_slot, SYSUTCDATETIME() AS now;`,
    params: {},
  };
}

type FiringParam = 'name' | 'expected_next' | 'last_slot' | 'next_slot';
const firingParams = { name: sql.NVarChar(200), expected_next: sql.DateTime2(3), last_slot: sql.DateTime2(3), next_slot: sql.DateTime2(3) };

/**
 * A firing in one transaction: the compare-and-set advance (it matches only while the row still holds the next
 * slot the evaluation read, and holds the row's lock to the commit, so a concurrent evaluator's advance waits and
 * then matches nothing); then, only if it matched, `publish` (the transport's own insert-if-absent batch or topic
 * fan-out). Result set 1: advanced (bit); then the publish's result sets (the first: the rows it inserted).
 */
function firing(n: SchemaNames, publish: readonly string[]): string {
  return [
    'SET XACT_ABORT ON;',
    'DECLARE @advanced bit = 0;',
    'BEGIN TRANSACTION;',
    'UPDATE s SET last_slot = COALESCE(@last_slot, s.last_slot), next_slot = @next_slot, updated_at = SYSUTCDATETIME()',
    `FROM ${schedulesTable(n)} AS s WITH (ROWLOCK)`,
    `WHERE ${exactQueueMatch('s.name', 'name')} AND s.next_slot = @expected_next AND s.paused = 0;`,
    'IF @@ROWCOUNT = 1 SET @advanced = 1;',
    'SELECT @advanced AS advanced;',
    ...(publish.length > 0 ? ['IF @advanced = 1', 'BEGIN', ...publish.map((l) => `    ${l}`), 'END'] : []),
    'COMMIT TRANSACTION;',
  ].join('\n');
}

export function advanceSchedule(n: SchemaNames): Statement<FiringParam> {
  return { text: firing(n, []), params: firingParams };
}

export function fireScheduleToQueue(n: SchemaNames): Statement<FiringParam | 'batch'> {
  return { text: firing(n, publishBatch(n.transport).text.split('\n')), params: { ...firingParams, batch: sql.NVarChar(sql.MAX) } };
}

export function fireScheduleToTopic(n: SchemaNames): Statement<FiringParam | 'batch' | 'topic'> {
  return {
    text: firing(n, publishToTopic(n.transport, n.subscriptionsTable).text.split('\n')),
    params: { ...firingParams, batch: sql.NVarChar(sql.MAX), topic: sql.NVarChar(200) },
  };
}

/** Every schedule statement the store runs, built once from the validated names. */
export function scheduleStatements(n: SchemaNames) {
  return {
    upsert: upsertSchedule(n),
    get: getSchedule(n),
    list: listSchedules(n),
    delete: deleteSchedule(n),
    setPaused: setSchedulePaused(n),
    due: dueSchedules(n),
    soonest: soonestSchedule(n),
    advance: advanceSchedule(n),
    fireToQueue: fireScheduleToQueue(n),
    fireToTopic: fireScheduleToTopic(n),
    now: { text: 'SELECT SYSUTCDATETIME() AS now;', params: {} } as Statement<never>,
  };
}
