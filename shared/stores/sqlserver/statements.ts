// Every T-SQL statement of the SQL Server transport store, as pure functions of the validated names.
// Only validated, bracket-quoted identifiers are ever spliced into the text; every value is a typed parameter.
// mssql runs request.query() through sp_executesql, so a SET inside a statement ends with it.
// PostgreSQL twins are noted beside each statement (stores/postgres).

import * as sql from 'mssql';
import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { DEAD_LETTER_REASON_HEADER, DEAD_LETTER_SOURCE_HEADER } from '../../transport/types';
import { BIN2, exactQueueMatch, exactTextMatch } from './queue-match';
import { cancelRequestedTest, pausedTest, qualifiedQueueStateTable, queueStateTableBody } from './queue-state-sql';
import { addLimitColumnsIfMissing, leaseRosterTableBody, qualifiedLeaseRoster } from './queue-state-sql';
import {
  DDL_SCHEMA_LOCK_TIMEOUT_MS,
  DDL_TABLE_LOCK_TIMEOUT_MS,
  DEAD_LETTER_PRUNE_BATCH,
} from '../options';
import { KEY_AND_INDEX_SNAPSHOT } from './catalog-queries';
import { dedupTableBody, qualifiedDedupTable } from './dedup-table-sql';
import { addOrderingKeyIfMissing } from './ordering-sql';
import { dbClockPlus } from './db-clock';
import {
  addReadySetColumnsIfMissing,
  claimLines,
  COUNTS_DECLARATION,
  countKeysLines,
  createFilteredIndexText,
  createKeysTableIfMissing,
  createSequenceIfMissing,
  disableLockEscalation,
  countOneIntoKeyLines,
  fileExistingRowsBatched,
  fileKeyedRows,
  FRESH_DECLARATION,
  GONE_DECLARATION,
  LEASED_FILTER,
  promoteLines,
  READY_SET_FILTER,
  readySetIndexes,
  readySetTables,
  releaseKeysLines,
  REMOVED_DECLARATION,
  SCHEDULED_FILTER,
  STATE_QUEUED,
  STATE_SCHEDULED,
  VACANT_KEYS_DECLARATION,
  type FilteredIndex,
} from './ready-set';

export interface Statement<P extends string = string> {
  readonly text: string;
  /** explicit mssql types, so the index seeks are not defeated by implicit conversions. */
  readonly params: Readonly<Record<P, sql.ISqlType>>;
}

export { BIN2, dbClockPlus, exactQueueMatch, exactTextMatch };

const types = {
  queue: () => sql.NVarChar(200),
  id: () => sql.UniqueIdentifier(),
  ms: () => sql.BigInt(),
  text: () => sql.NVarChar(sql.MAX),
  count: () => sql.Int(),
  sysname: () => sql.NVarChar(128),
};

const q = (name: string) => quoteIdentifier(name, 'sqlserver');

export function qualifiedTable(names: TransportNames): string {
  return `${q(names.schema)}.${q(names.table)}`;
}

/** Applock resources, byte-identical for every component sharing the schema (channel, transport, flows). */
export function schemaLockResource(schema: string): string {
  return `asyncresponse:ddl:${schema}`;
}

export function tableLockResource(schema: string, table: string): string {
  return `asyncresponse:ddl:${schema}.${table}`;
}

/** An N'…' literal of a DDL name built only from validated identifiers (no quote can reach it). */
export function nameLiteral(value: string): string {
  if (!/^[A-Za-z0-9_:.[\]]+$/.test(value)) throw new Error(`refusing to render '${value}' as a SQL literal`);
  return `N'${value}'`;
}

// ---- DDL building blocks (shared with channel-statements.ts) --------------------------------------------

/**
 * Takes the exclusive transaction-owned applock `resource`, waiting at most `timeoutMs`; on failure THROWs
 * 51000 with `failure` (built only from validated names and numbers) as its message.
 */
export function applockLines(resource: string, timeoutMs: number, failure: string): string[] {
  return [
    'DECLARE @lock_result int;',
    `EXEC @lock_result = sp_getapplock @Resource = ${nameLiteral(resource)}, @LockMode = 'Exclusive',`,
    `    @LockOwner = 'Transaction', @LockTimeout = ${timeoutMs};`,
    'IF @lock_result < 0',
    `    THROW 51000, N'${failure}', 1;`,
  ];
}

/** The schema applock every component sharing the schema takes around its DDL (`component`: transport, channel). */
export function schemaApplockLines(schema: string, component: string): string[] {
  const resource = schemaLockResource(schema);
  return applockLines(
    resource,
    DDL_SCHEMA_LOCK_TIMEOUT_MS,
    `AsyncResponse ${component} could not take the schema DDL lock ${resource} within ${DDL_SCHEMA_LOCK_TIMEOUT_MS} ms.`,
  );
}

export function createSchemaIfMissing(schema: string): string[] {
  return [`IF SCHEMA_ID(${nameLiteral(schema)}) IS NULL`, `    EXEC (N'CREATE SCHEMA ${q(schema)}');`];
}

/** CREATE TABLE `qualified` (`body`) behind an OBJECT_ID guard, wrapped in BEGIN … END. */
export function createTableIfMissing(qualified: string, body: string): string[] {
  return [`IF OBJECT_ID(${nameLiteral(qualified)}, N'U') IS NULL`, 'BEGIN', `CREATE TABLE ${qualified} (`, body, ');', 'END'];
}

/** CREATE INDEX `index` ON `qualifiedTable` (`keys`) [WHERE `where`] behind a sys.indexes guard. */
export function createIndexIfMissing(qualifiedTable: string, index: string, keys: readonly string[], where?: string): string[] {
  return [
    `IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(${nameLiteral(qualifiedTable)}, N'U') AND name = ${nameLiteral(index)})`,
    `    CREATE INDEX ${q(index)} ON ${qualifiedTable} (${keys.join(', ')})${where ? ` WHERE ${where}` : ''};`,
  ];
}

/**
 * Editions with online index builds: 3 Enterprise/Developer/Evaluation, 5 Azure SQL Database, 8 Managed Instance.
 * An online build keeps the table readable and writable except for two short locks at its start and end.
 */
export const ONLINE_INDEX_EDITIONS = '(3, 5, 8)';

/**
 * Editions without online schema changes (Standard, Web, Express: review M3) rewrite or scan a table while it is locked;
 * above this many rows the migrations refuse such a change and print the statement to run in a maintenance window.
 */
export const OFFLINE_CHANGE_ROW_LIMIT = 100_000;
/** THROWn by refuseOfflineAboveRowLimit: not transient, the deployer must act. */
export const OFFLINE_CHANGE_REFUSED = 51010;

/**
 * Lines that THROW OFFLINE_CHANGE_REFUSED on an edition without online index builds (EngineEdition NOT IN (3, 5, 8))
 * when `qualifiedTable` holds more than OFFLINE_CHANGE_ROW_LIMIT rows (sys.partitions of the heap or clustered index:
 * metadata, no scan), naming `what` and the statement to run in a maintenance window instead.
 */
export function refuseOfflineAboveRowLimit(qualifiedTable: string, what: string, statement: string): string[] {
  const message =
    `AsyncResponse schema: ${what} on ${qualifiedTable} reads or rewrites the whole table while it is locked on this edition ` +
    `(no online schema change), and the table holds more than ${OFFLINE_CHANGE_ROW_LIMIT} rows, so it is not done ` +
    `automatically. Run it in a maintenance window, then run npm run schema -- apply again: ${statement}`;
  return [
    `    IF CAST(SERVERPROPERTY('EngineEdition') AS int) NOT IN ${ONLINE_INDEX_EDITIONS}`,
    `        AND (SELECT SUM(p.rows) FROM sys.partitions AS p WHERE p.object_id = OBJECT_ID(${nameLiteral(qualifiedTable)}, N'U') AND p.index_id IN (0, 1)) > ${OFFLINE_CHANGE_ROW_LIMIT}`,
    `        THROW ${OFFLINE_CHANGE_REFUSED}, N'${message.replace(/'/g, "''")}', 1;`,
  ];
}

/**
 * Where CREATE INDEX … WITH (ONLINE = ON (WAIT_AT_LOW_PRIORITY …)) exists: Azure SQL Database and Managed Instance, and
 * SQL Server 2022 (16.x) and later (to verify per version: review M4). The build's short locks at its start and end
 * then wait at low priority for at most a minute and give up (ABORT_AFTER_WAIT = SELF) instead of queueing writers.
 */
export const LOW_PRIORITY_WAIT_TEST =
  "CAST(SERVERPROPERTY('EngineEdition') AS int) IN (5, 8) OR (CAST(SERVERPROPERTY('EngineEdition') AS int) = 3 AND CAST(SERVERPROPERTY('ProductMajorVersion') AS int) >= 16)";
export const LOW_PRIORITY_ONLINE = 'ONLINE = ON (WAIT_AT_LOW_PRIORITY (MAX_DURATION = 1 MINUTES, ABORT_AFTER_WAIT = SELF))';

/**
 * CREATE INDEX behind the same guard: online with a low-priority lock wait where the server has it, WITH (ONLINE = ON)
 * where the edition has online builds (both through EXEC, so other editions never compile the options), offline
 * elsewhere, and there only up to OFFLINE_CHANGE_ROW_LIMIT rows (review M3). For indexes added to tables that may be
 * large and busy. `where`: a filtered index's predicate; `include`: included columns (fixed texts).
 */
export function createIndexOnlineIfMissing(qualifiedTable: string, index: string, keys: readonly string[], where?: string, include?: readonly string[]): string[] {
  const create = `CREATE INDEX ${q(index)} ON ${qualifiedTable} (${keys.join(', ')})${include ? ` INCLUDE (${include.join(', ')})` : ''}${where ? ` WHERE ${where}` : ''}`;
  // built from validated identifiers and fixed keys; a quote would end the EXEC literal
  if (create.includes("'")) throw new Error(`refusing to render '${create}' inside an EXEC literal`);
  return [
    `IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(${nameLiteral(qualifiedTable)}, N'U') AND name = ${nameLiteral(index)})`,
    'BEGIN',
    `    IF ${LOW_PRIORITY_WAIT_TEST}`,
    `        EXEC (N'${create} WITH (${LOW_PRIORITY_ONLINE});');`,
    `    ELSE IF CAST(SERVERPROPERTY('EngineEdition') AS int) IN ${ONLINE_INDEX_EDITIONS}`,
    `        EXEC (N'${create} WITH (ONLINE = ON);');`,
    '    ELSE',
    '    BEGIN',
    ...refuseOfflineAboveRowLimit(qualifiedTable, `building the index ${q(index)}`, `${create};`).map((l) => `    ${l}`),
    `        ${create};`,
    '    END',
    'END',
  ];
}

/** A filtered index of the ready set (ready-set.ts) as createIndexOnlineIfMissing builds it. */
export function createFilteredIndexOnlineIfMissing(qualifiedTable: string, index: FilteredIndex): string[] {
  return createIndexOnlineIfMissing(qualifiedTable, index.name, index.keys, index.where, index.include);
}

/**
 * The dead-letter source queue, as a non-persisted computed column (migration 3) indexed with the queue:
 * Microsoft's documented way to index a JSON property, so a queue's dead-letter count, list, requeue and delete
 * seek (dlq, source) instead of parsing every dead letter's headers. Deterministic and precise (ISJSON,
 * JSON_VALUE, DATALENGTH, CAST), so indexable; NULL, never an error, for headers that are not JSON (a row a
 * .NET host wrote must still insert) and for a source longer than any queue name (nvarchar(200)) rather than a
 * truncated one that could equal another queue. BIN2, like the queue column: the seek is an exact match.
 * The index makes the session SET options of indexed computed columns mandatory for every write to the table
 * (ANSI_NULLS, ANSI_PADDING, ANSI_WARNINGS, ARITHABORT, CONCAT_NULL_YIELDS_NULL, QUOTED_IDENTIFIER ON;
 * NUMERIC_ROUNDABORT OFF): tedious's and SqlClient's defaults (ARITHABORT follows ANSI_WARNINGS at compatibility
 * level 90 and above). The spec's statements name their columns, so the extra column changes none of them.
 */
export const DEAD_LETTER_SOURCE_COLUMN = 'dead_letter_source';
const SOURCE_VALUE = `JSON_VALUE(headers_json, N'$."${DEAD_LETTER_SOURCE_HEADER}"')`;
export const DEAD_LETTER_SOURCE_DEFINITION =
  `CAST(CASE WHEN ISJSON(headers_json) = 1 THEN CASE WHEN DATALENGTH(${SOURCE_VALUE}) <= 400 THEN ${SOURCE_VALUE} END END ` +
  `AS nvarchar(200)) COLLATE ${BIN2}`;
export const DEAD_LETTER_INDEX_KEYS = ['queue', DEAD_LETTER_SOURCE_COLUMN] as const;

/** ALTER TABLE … ADD the computed source column behind a sys.columns guard (migration 3 and the store's phase 1). */
export function addDeadLetterSourceIfMissing(qualifiedTable: string): string[] {
  return [
    `IF NOT EXISTS (SELECT 1 FROM sys.columns WHERE object_id = OBJECT_ID(${nameLiteral(qualifiedTable)}, N'U') AND name = N'${DEAD_LETTER_SOURCE_COLUMN}')`,
    `    ALTER TABLE ${qualifiedTable} ADD ${DEAD_LETTER_SOURCE_COLUMN} AS ${DEAD_LETTER_SOURCE_DEFINITION};`,
  ];
}

/** The transport table's columns, exactly the spec's documented DDL (shared by phase 1 and the printed script). */
export function transportTableBody(): string {
  return [
    '    id uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED,',
    `    queue nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
    '    payload_json nvarchar(max) NOT NULL,',
    "    headers_json nvarchar(max) NOT NULL DEFAULT N'{}',",
    '    created_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(),',
    '    available_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(),',
    '    locked_until datetime2 NULL,',
    '    lock_id uniqueidentifier NULL,',
    '    attempts int NOT NULL DEFAULT 0,',
    '    dead_letter_reason nvarchar(max) NULL',
  ].join('\n');
}

/** The claim's index from schema version 14 to the ready set (dropped by version 27, superseded by ready-set.ts's indexes). */
export const READY_INDEX_KEYS = ['queue', 'priority DESC', 'available_at', 'created_at'] as const;
/** Version 1's ready index, dropped by version 14 once the claim's index is built. */
export const LEGACY_READY_INDEX_KEYS = ['queue', 'available_at', 'created_at'] as const;
export const PRIORITY_COLUMN = 'priority';

/**
 * ALTER TABLE … ADD priority behind a sys.columns guard (version 13 and the store's phase 1). Not in the spec's DDL;
 * a NOT NULL column with a constant default is a metadata-only add on editions with online schema change
 * (Enterprise/Developer, Azure SQL); elsewhere it rewrites every row under Sch-M, so above OFFLINE_CHANGE_ROW_LIMIT
 * rows it is refused with the statement to run in a maintenance window (review M3). .NET hosts that name their
 * columns insert the default 0.
 */
export function addPriorityIfMissing(qualifiedTable: string): string[] {
  const add = `ALTER TABLE ${qualifiedTable} ADD ${PRIORITY_COLUMN} smallint NOT NULL DEFAULT 0;`;
  return [
    `IF NOT EXISTS (SELECT 1 FROM sys.columns WHERE object_id = OBJECT_ID(${nameLiteral(qualifiedTable)}, N'U') AND name = N'${PRIORITY_COLUMN}')`,
    'BEGIN',
    ...refuseOfflineAboveRowLimit(qualifiedTable, 'adding the priority column', add),
    `    ${add}`,
    'END',
  ];
}
export const CREATED_INDEX_KEYS = ['created_at'] as const;

/** The OPENJSON columns of a publish batch (publishBatch, publishOrderedBatch). */
const PUBLISH_BATCH_COLUMNS = [
  "    id uniqueidentifier '$.id',",
  "    queue nvarchar(200) '$.queue',",
  "    payload_json nvarchar(max) '$.payload_json',",
  "    headers_json nvarchar(max) '$.headers_json',",
  "    delay_ms bigint '$.delay_ms',",
  "    priority smallint '$.priority',",
  "    ord int '$.ord',",
  "    ordering_key nvarchar(200) '$.ordering_key'",
];

/** The second result set of both publishes: the stored rows of the batch's ids, when some were not inserted. */
const STORED_DUPLICATES = [
  'IF @inserted < (SELECT COUNT(*) FROM OPENJSON(@batch))',
  '    SELECT existing.id, existing.available_at, existing.queue',
  '    FROM {t} AS existing',
  "    INNER JOIN OPENJSON(@batch) WITH (id uniqueidentifier '$.id') AS dup ON existing.id = dup.id;",
];

/**
 * Batch publish of unkeyed rows: insert-if-absent of every row of the JSON array @batch in ONE INSERT. The NOT EXISTS
 * probe takes no key-range lock (no HOLDLOCK): generated ids are time-ordered, so every new id would probe, and lock,
 * the primary key's last range, and concurrent publishes would run one at a time. Two publishers of one id may
 * therefore both find it absent; the second gets 2627, and the store re-runs the statement, which then reports the
 * duplicate. Rows of one batch share @now; seq, the claim's tie-breaker, is drawn from the sequence in `ord` order, so
 * a batch is claimed in array order (created_at steps 100 ns by ord for readers). A delayed row is scheduled (state 1,
 * ready-set.ts). Result set 1 = rows inserted; result set 2 (only when some were not) = the stored rows of the
 * batch's ids. Each element: { id, queue, payload_json, headers_json, delay_ms, priority, ord } (a keyed batch is
 * publishOrderedBatch's).
 * PostgreSQL: INSERT … SELECT FROM unnest(…) ON CONFLICT (id) DO NOTHING RETURNING id, available_at.
 */
export function publishBatch(names: TransportNames): Statement<'batch'> {
  const t = qualifiedTable(names);
  const { seq } = readySetTables(names);
  return {
    text: [
      'DECLARE @now datetime2 = SYSUTCDATETIME();',
      'DECLARE @inserted int;',
      `INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at, priority, state, seq)`,
      'OUTPUT inserted.id, inserted.available_at',
      'SELECT src.id, src.queue, src.payload_json, src.headers_json,',
      '       DATEADD(NANOSECOND, src.ord * 100, @now),',
      `       CASE WHEN src.delay_ms > 0 THEN ${dbClockPlus('src.delay_ms', '@now')} ELSE @now END,`,
      `       COALESCE(src.priority, 0), CASE WHEN src.delay_ms > 0 THEN ${STATE_SCHEDULED} END,`,
      `       NEXT VALUE FOR ${seq} OVER (ORDER BY src.ord)`,
      'FROM OPENJSON(@batch) WITH (',
      ...PUBLISH_BATCH_COLUMNS.slice(0, -1).map((c, i, all) => (i === all.length - 1 ? c.replace(/,$/, '') : c)),
      ') AS src',
      `WHERE NOT EXISTS (SELECT 1 FROM ${t} AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = src.id);`,
      'SET @inserted = @@ROWCOUNT;',
      ...STORED_DUPLICATES.map((l) => l.replace('{t}', t)),
    ].join('\n'),
    params: { batch: types.text() },
  };
}

/**
 * Batch publish with ordering keys, one batch and one transaction (XACT_ABORT ON): the rows not stored yet (the same
 * probe as publishBatch) go to @fresh; their keys are counted into the keys table under each key row's lock
 * (ready-set.ts countKeysLines), which marks every keyed row that is not its key's new head as queued (state 2); then
 * ONE INSERT writes them, seq drawn after the key locks in `ord` order (review H3). A concurrent insert of one of the
 * ids fails the INSERT with 2627: the transaction rolls back with its counts and the store runs the batch again.
 * Unkeyed rows of the batch are inserted as publishBatch would. The same two result sets as publishBatch; each element
 * as publishBatch's plus ordering_key (absent = NULL).
 * PostgreSQL: the publish statement's keyed_src, keyed and key_heads CTEs (ready-set.ts pgCountKeys).
 */
export function publishOrderedBatch(names: TransportNames): Statement<'batch'> {
  const t = qualifiedTable(names);
  const { seq } = readySetTables(names);
  return {
    text: [
      'SET XACT_ABORT ON;',
      'DECLARE @now datetime2 = SYSUTCDATETIME();',
      'DECLARE @inserted int;',
      FRESH_DECLARATION,
      COUNTS_DECLARATION,
      'BEGIN TRANSACTION;',
      'INSERT INTO @fresh (ord, queue, ordering_key)',
      'SELECT src.ord, src.queue, src.ordering_key',
      "FROM OPENJSON(@batch) WITH (id uniqueidentifier '$.id', queue nvarchar(200) '$.queue', ord int '$.ord', ordering_key nvarchar(200) '$.ordering_key') AS src",
      `WHERE NOT EXISTS (SELECT 1 FROM ${t} AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = src.id);`,
      ...countKeysLines(names),
      `INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at, priority, ordering_key, state, seq)`,
      'OUTPUT inserted.id, inserted.available_at',
      'SELECT src.id, src.queue, src.payload_json, src.headers_json,',
      '       DATEADD(NANOSECOND, src.ord * 100, @now),',
      `       CASE WHEN src.delay_ms > 0 THEN ${dbClockPlus('src.delay_ms', '@now')} ELSE @now END,`,
      `       COALESCE(src.priority, 0), src.ordering_key, COALESCE(f.state, CASE WHEN src.delay_ms > 0 THEN ${STATE_SCHEDULED} END),`,
      `       NEXT VALUE FOR ${seq} OVER (ORDER BY src.ord)`,
      'FROM OPENJSON(@batch) WITH (',
      ...PUBLISH_BATCH_COLUMNS,
      ') AS src',
      'INNER JOIN @fresh AS f ON f.ord = src.ord;',
      'SET @inserted = @@ROWCOUNT;',
      'COMMIT;',
      ...STORED_DUPLICATES.map((l) => l.replace('{t}', t)),
    ].join('\n'),
    params: { batch: types.text() },
  };
}

/**
 * Claim up to @n rows of exactly @queue, higher priority first and then in availability and publish order: one
 * batch, one short transaction (ready-set.ts: (a) vacant keys' successors, (b) due scheduled rows, (c) lapsed leases,
 * then (d) the claim, one ordered seek of the ready-set index under UPDLOCK, ROWLOCK, READPAST). A paused or backed-off
 * queue runs none of them. The rows come back as the claim's OUTPUT (the only result set).
 * PostgreSQL: one statement over the same four ranges, FOR UPDATE SKIP LOCKED in each (ready-set.ts pgClaimCandidates).
 */
export function claimBatch(names: TransportNames): Statement<'n' | 'queue' | 'lock_timeout_ms' | 'lock_id'> {
  return {
    text: [
      'SET XACT_ABORT ON;',
      VACANT_KEYS_DECLARATION,
      'BEGIN TRANSACTION;',
      `IF NOT ${pausedTest(names)}`,
      'BEGIN',
      ...promoteLines(names, '@n'),
      ...claimLines(names, '@n'),
      'END;',
      'COMMIT;',
    ].join('\n'),
    params: { n: types.count(), queue: types.queue(), lock_timeout_ms: types.ms(), lock_id: types.id() },
  };
}

export { claimLines, promoteLines };

/**
 * Hands back a claim whose answer was lost: the queue's rows still leased under @lock_id get their attempt back, as
 * releaseUnstartedBatch does. Served by the leased index (queue, locked_until) INCLUDE (lock_id) WHERE lock_id IS NOT
 * NULL: the queue's live leases, lock_id tested inside the seek (review L1). READPAST: rows a claim not yet committed
 * or rolled back holds are left to lapse rather than waited on.
 * PostgreSQL: the same UPDATE over a SKIP LOCKED subquery of the leased index.
 */
export function releaseLostClaim(names: TransportNames): Statement<'queue' | 'lock_id'> {
  return {
    text: [
      `UPDATE ${qualifiedTable(names)} WITH (ROWLOCK, READPAST)`,
      'SET attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, locked_until = NULL, lock_id = NULL',
      `WHERE ${exactQueueMatch('queue', 'queue')}`,
      `  AND ${LEASED_FILTER} AND locked_until > SYSUTCDATETIME() AND lock_id = @lock_id;`,
      'SELECT @@ROWCOUNT AS affected;',
    ].join('\n'),
    params: { queue: types.queue(), lock_id: types.id() },
  };
}

/**
 * Ack a batch: delete every row whose (id, lock_id) fence still matches, in ONE DELETE, and settle the keys of the
 * keyed rows among them in the same transaction (ready-set.ts releaseKeysLines: a head's key promotes its next row
 * when rows remain; an unkeyed batch reads the table variable once and stops). @settlements = JSON array of { id, lock_id }.
 * The count is read server-side (NOCOUNT-proof).
 * PostgreSQL: WITH removed AS (DELETE … USING unnest(…) RETURNING …) plus the keys CTEs (ready-set.ts pgReleaseKeys).
 */
export function ackBatch(names: TransportNames): Statement<'settlements'> {
  return {
    text: [
      'SET XACT_ABORT ON;',
      'DECLARE @affected int;',
      REMOVED_DECLARATION,
      GONE_DECLARATION,
      'BEGIN TRANSACTION;',
      'DELETE target',
      'OUTPUT deleted.queue, deleted.ordering_key, deleted.state, deleted.seq INTO @removed',
      ...settledRows(names),
      'SET @affected = @@ROWCOUNT;',
      ...releaseKeysLines(names),
      'COMMIT;',
      'SELECT @affected AS affected;',
    ].join('\n'),
    params: { settlements: types.text() },
  };
}

/** The rows of @settlements (JSON [{ id, lock_id }]) whose fence still matches, as `target` (the batched settlements). */
export function settledRows(names: TransportNames): string[] {
  return [
    `FROM ${qualifiedTable(names)} AS target`,
    "INNER JOIN OPENJSON(@settlements) WITH (id uniqueidentifier '$.id', lock_id uniqueidentifier '$.lock_id') AS settled",
    '    ON target.id = settled.id AND target.lock_id = settled.lock_id;',
  ];
}

/**
 * NAK: claimable again after @delay_ms (scheduled while it waits: state 1; a keyed head stays its key's head); attempts
 * is not decremented. PostgreSQL: same UPDATE.
 */
export function releaseMessage(names: TransportNames): Statement<'id' | 'lock_id' | 'delay_ms'> {
  return {
    text: [
      `UPDATE ${qualifiedTable(names)}`,
      `SET available_at = ${dbClockPlus('@delay_ms')}, locked_until = NULL, lock_id = NULL,`,
      `    state = CASE WHEN @delay_ms > 0 THEN ${STATE_SCHEDULED} END`,
      'WHERE id = @id AND lock_id = @lock_id;',
      'SELECT @@ROWCOUNT AS affected;',
    ].join('\n'),
    params: { id: types.id(), lock_id: types.id(), delay_ms: types.ms() },
  };
}

/** Hands back unstarted claims (fenced, one statement): attempts back down by one, available_at kept. */
export function releaseUnstartedBatch(names: TransportNames): Statement<'settlements'> {
  return {
    text: [
      'UPDATE target',
      'SET attempts = CASE WHEN target.attempts > 0 THEN target.attempts - 1 ELSE 0 END, locked_until = NULL, lock_id = NULL',
      ...settledRows(names),
      'SELECT @@ROWCOUNT AS affected;',
    ].join('\n'),
    params: { settlements: types.text() },
  };
}

/**
 * Lease renewal; 0 rows = the lease was lost; cancel_requested = an operator marked the running job cancelled
 * (job-control-statements.ts). Only a live lease is renewed (review M2): once it lapsed, a limited claim may have
 * pruned it from its roster and given the slot away, and a claim may hand the row back; the heartbeat then stops the
 * job. PostgreSQL: same UPDATE, RETURNING the marker test.
 */
export function renewLease(names: TransportNames): Statement<'id' | 'lock_id' | 'lock_timeout_ms'> {
  return {
    text: [
      // OUTPUT INTO a table variable, as the dead-letter move does (a bare OUTPUT is refused on tables with triggers)
      'DECLARE @renewed TABLE (cancel_requested bit NOT NULL);',
      `UPDATE ${qualifiedTable(names)}`,
      `SET locked_until = ${dbClockPlus('@lock_timeout_ms')}`,
      `OUTPUT CASE WHEN ${cancelRequestedTest('inserted.headers_json')} THEN 1 ELSE 0 END INTO @renewed`,
      'WHERE id = @id AND lock_id = @lock_id AND locked_until > SYSUTCDATETIME();',
      'SELECT COUNT(*) AS affected, CAST(COALESCE(MAX(CAST(cancel_requested AS int)), 0) AS bit) AS cancel_requested FROM @renewed;',
    ].join('\n'),
    params: { id: types.id(), lock_id: types.id(), lock_timeout_ms: types.ms() },
  };
}

/**
 * Dead-letter move in one transaction: delete the claimed row first (fenced), insert the dead letter only if that
 * delete matched, so a stale owner can never bury a message a peer re-claimed. A keyed head's move lets its key go on
 * (ready-set.ts releaseKeysLines); the dead letter itself is a row of the dead-letter queue, counted in no key.
 * PostgreSQL: WITH removed AS (DELETE … RETURNING …) INSERT … SELECT … FROM removed.
 */
export function deadLetterMove(
  names: TransportNames,
): Statement<'source_id' | 'lock_id' | 'new_id' | 'dlq' | 'payload_json' | 'headers_json' | 'reason'> {
  const t = qualifiedTable(names);
  return {
    text: [
      'SET XACT_ABORT ON;',
      // the dead-letter row keeps the deliveries the job had (the removed row's attempts; requeue resets them), its
      // priority and its ordering key (a requeue puts it back at that priority, on its key)
      `DECLARE @moved TABLE (attempts int NOT NULL, priority smallint NOT NULL, ordering_key nvarchar(200) COLLATE ${BIN2} NULL, queue nvarchar(200) COLLATE ${BIN2} NOT NULL, state tinyint NULL, seq bigint NULL);`,
      GONE_DECLARATION,
      'BEGIN TRAN;',
      `DELETE FROM ${t} OUTPUT deleted.attempts, deleted.priority, deleted.ordering_key, deleted.queue, deleted.state, deleted.seq INTO @moved WHERE id = @source_id AND lock_id = @lock_id;`,
      'IF @@ROWCOUNT = 1',
      'BEGIN',
      ...releaseKeysLines(names, '@moved').map((l) => `    ${l}`),
      `    INSERT INTO ${t} (id, queue, payload_json, headers_json, dead_letter_reason, attempts, priority, ordering_key)`,
      '    SELECT @new_id, @dlq, @payload_json, @headers_json, @reason, attempts, priority, ordering_key FROM @moved;',
      '    COMMIT;',
      '    SELECT 1 AS moved;',
      'END',
      'ELSE',
      'BEGIN',
      '    COMMIT;',
      '    SELECT 0 AS moved;',
      'END',
    ].join('\n'),
    params: {
      source_id: types.id(),
      lock_id: types.id(),
      new_id: types.id(),
      dlq: types.queue(),
      payload_json: types.text(),
      headers_json: types.text(),
      reason: types.text(),
    },
  };
}

/**
 * One bounded prune batch (below lock escalation). NOCOUNT is turned off for the batch so a server-wide
 * SET NOCOUNT ON cannot end the drain after one batch. @neg_retention_ms = -retention.
 * PostgreSQL: DELETE … WHERE ctid IN (SELECT ctid … LIMIT 1000).
 */
export function pruneDeadLetterBatch(names: TransportNames): Statement<'dlq' | 'neg_retention_ms'> {
  return { text: pruneBatchText(qualifiedTable(names), 'dlq', 'created_at'), params: { dlq: types.queue(), neg_retention_ms: types.ms() } };
}

/** DELETE TOP (1000) of the rows of exactly queue @`queueParam` whose `timeColumn` is older than -@neg_retention_ms (the job-history prune too). */
export function pruneBatchText(table: string, queueParam: string, timeColumn: string): string {
  return [
    'SET NOCOUNT OFF;',
    `DELETE TOP (${DEAD_LETTER_PRUNE_BATCH}) FROM ${table}`,
    `WHERE ${exactQueueMatch('queue', queueParam)}`,
    `  AND ${timeColumn} < ${dbClockPlus('@neg_retention_ms')};`,
    'SELECT @@ROWCOUNT AS deleted;',
  ].join('\n');
}

/**
 * Queue depth in one statement, from the ready set's parts (ready-set.ts), each read from its own filtered index from
 * the queue's prefix: the ready set, the scheduled rows, the rows queued behind their keys' heads (the key order
 * index), the lapsed leases (counted as ready: a claim takes them). ready / delayed / leased are disjoint: a live
 * lease counts as leased whatever its available_at. deadLettered = rows on @dlq whose source header is exactly
 * @queue: a seek on the dead-letter index (queue, dead_letter_source), no JSON parsed per row.
 * PostgreSQL: the same four parts, UNION ALL.
 */
export function queueStats(names: TransportNames): Statement<'queue' | 'dlq'> {
  const t = qualifiedTable(names);
  const match = exactQueueMatch('queue', 'queue');
  const due = 'CASE WHEN available_at <= SYSUTCDATETIME() THEN 1 ELSE 0 END';
  return {
    text: [
      'SELECT COALESCE(SUM(w.due), 0) AS ready, COALESCE(SUM(1 - w.due), 0) AS delayed,',
      `    (SELECT COUNT(*) FROM ${t} WHERE ${match} AND ${LEASED_FILTER} AND locked_until > SYSUTCDATETIME()) AS leased,`,
      `    DATEDIFF_BIG(MILLISECOND, MIN(CASE WHEN w.due = 1 THEN w.available_at END), SYSUTCDATETIME()) / 1000.0 AS oldest_ready_age_seconds,`,
      '    (SELECT COUNT(*)',
      `     FROM ${t}`,
      `     WHERE ${exactQueueMatch('queue', 'dlq')}`,
      `       AND ${exactQueueMatch(DEAD_LETTER_SOURCE_COLUMN, 'queue')}) AS dead_lettered`,
      'FROM (',
      `    SELECT available_at, ${due} AS due FROM ${t} WHERE ${match} AND ${READY_SET_FILTER}`,
      '    UNION ALL',
      `    SELECT available_at, ${due} FROM ${t} WHERE ${match} AND ${SCHEDULED_FILTER}`,
      '    UNION ALL',
      `    SELECT available_at, ${due} FROM ${t} WHERE ${match} AND ordering_key IS NOT NULL AND state = ${STATE_QUEUED}`,
      '    UNION ALL',
      `    SELECT available_at, 1 FROM ${t} WHERE ${match} AND ${LEASED_FILTER} AND locked_until <= SYSUTCDATETIME()`,
      ') AS w;',
    ].join('\n'),
    params: { queue: types.queue(), dlq: types.queue() },
  };
}

/**
 * The queue names with rows, in name order, at most @max: a seek per distinct queue on the dequeue index (leading
 * column queue), since a recursive CTE may not use TOP in its recursive part. PostgreSQL twin: a WITH RECURSIVE
 * loose index scan. Names equal under the column's comparison (trailing spaces) are listed once.
 */
export function queueNames(names: TransportNames): Statement<'max'> {
  const t = qualifiedTable(names);
  return {
    text: [
      'DECLARE @names TABLE (n int IDENTITY(1, 1) PRIMARY KEY, queue nvarchar(200) NOT NULL);',
      'DECLARE @q nvarchar(200);',
      'DECLARE @next nvarchar(200);',
      `SELECT TOP (1) @q = queue FROM ${t} ORDER BY queue;`,
      'WHILE @q IS NOT NULL AND (SELECT COUNT(*) FROM @names) < @max',
      'BEGIN',
      '    INSERT INTO @names (queue) VALUES (@q);',
      '    SET @next = NULL;',
      `    SELECT TOP (1) @next = queue FROM ${t} WHERE queue > @q ORDER BY queue;`,
      '    SET @q = @next;',
      'END;',
      'SELECT queue FROM @names ORDER BY n;',
    ].join('\n'),
    params: { max: types.count() },
  };
}

/** Newest dead letters of one source queue. */
export function listDeadLetters(names: TransportNames): Statement<'top' | 'dlq' | 'source'> {
  return {
    text: [
      'SELECT TOP (@top) id, payload_json, headers_json, dead_letter_reason, attempts, created_at',
      `FROM ${qualifiedTable(names)}`,
      `WHERE ${exactQueueMatch('queue', 'dlq')}`,
      `  AND ${exactQueueMatch(DEAD_LETTER_SOURCE_COLUMN, 'source')}`,
      'ORDER BY created_at DESC;',
    ].join('\n'),
    params: { top: types.count(), dlq: types.queue(), source: types.queue() },
  };
}

/**
 * Moves a dead letter back to its source queue like a new publish: attempts reset, claimable now, dead-letter headers
 * removed, a new seq (drawn after the key lock). A keyed job is counted back into its key under the key row's lock and
 * goes to the back of it: its key's head when the key has no row left, else queued behind the head (state 2). The
 * dead letter is read (and locked) first, so the key is counted only for a row this batch moves.
 * PostgreSQL: one statement (row, keyed_src and the keys CTEs, then the UPDATE).
 */
export function requeueDeadLetter(names: TransportNames): Statement<'id' | 'dlq' | 'source'> {
  const t = qualifiedTable(names);
  const { k, seq } = readySetTables(names);
  const row = `id = @id AND ${exactQueueMatch('queue', 'dlq')} AND ${exactQueueMatch(DEAD_LETTER_SOURCE_COLUMN, 'source')}`;
  const key = `${exactQueueMatch('queue', 'source')} AND ordering_key = @key`;
  return {
    text: [
      'SET XACT_ABORT ON;',
      `DECLARE @found int, @key nvarchar(200), @pending int, @seq bigint;`,
      'BEGIN TRANSACTION;',
      `SELECT @key = ordering_key FROM ${t} WITH (UPDLOCK, ROWLOCK) WHERE ${row};`,
      'SET @found = @@ROWCOUNT;',
      'IF @found = 1 AND @key IS NOT NULL',
      'BEGIN',
      ...countOneIntoKeyLines(k, key, '@source', 4),
      'END;',
      `IF @found = 1 SET @seq = NEXT VALUE FOR ${seq};`,
      `UPDATE ${t}`,
      'SET queue = @source, attempts = 0, available_at = SYSUTCDATETIME(), locked_until = NULL, lock_id = NULL,',
      '    created_at = CASE WHEN ordering_key IS NULL THEN created_at ELSE SYSUTCDATETIME() END,',
      `    seq = @seq, state = CASE WHEN @key IS NOT NULL AND @pending > 0 THEN ${STATE_QUEUED} END,`,
      '    dead_letter_reason = NULL,',
      `    headers_json = JSON_MODIFY(JSON_MODIFY(headers_json, N'$."${DEAD_LETTER_REASON_HEADER}"', NULL),`,
      `                               N'$."${DEAD_LETTER_SOURCE_HEADER}"', NULL)`,
      `WHERE ${row};`,
      'SET @found = @@ROWCOUNT;',
      'COMMIT;',
      'SELECT @found AS affected;',
    ].join('\n'),
    params: { id: types.id(), dlq: types.queue(), source: types.queue() },
  };
}

export function deleteDeadLetter(names: TransportNames): Statement<'id' | 'dlq' | 'source'> {
  return {
    text: [
      `DELETE FROM ${qualifiedTable(names)}`,
      `WHERE id = @id AND ${exactQueueMatch('queue', 'dlq')}`,
      `  AND ${exactQueueMatch(DEAD_LETTER_SOURCE_COLUMN, 'source')};`,
      'SELECT @@ROWCOUNT AS affected;',
    ].join('\n'),
    params: { id: types.id(), dlq: types.queue(), source: types.queue() },
  };
}

/** Whether the row is on exactly this queue (read committed: an uncommitted move waits rather than lies). */
export function hasMessage(names: TransportNames): Statement<'id' | 'queue'> {
  return {
    text: [
      'SELECT CAST(CASE WHEN EXISTS (',
      `    SELECT 1 FROM ${qualifiedTable(names)}`,
      `    WHERE id = @id AND ${exactQueueMatch('queue', 'queue')}`,
      ') THEN 1 ELSE 0 END AS bit) AS present;',
    ].join('\n'),
    params: { id: types.id(), queue: types.queue() },
  };
}

/** The database clock. PostgreSQL: SELECT clock_timestamp(). */
export function dbNow(): Statement<never> {
  return { text: 'SELECT SYSUTCDATETIME() AS now;', params: {} };
}

/**
 * DDL phase 1 (run inside a transaction): the schema applock, then schema and table behind IF-guards.
 * Indexes are not built here: their run time grows with the table and must not hold the schema lock.
 * PostgreSQL: SET LOCAL lock_timeout = '5s'; pg_advisory_xact_lock(fnv1a64('asyncresponse:ddl:{schema}')).
 */
export function ddlPhase1(names: TransportNames): Statement<never> {
  return {
    text: [
      ...schemaApplockLines(names.schema, 'transport'),
      ...createSchemaIfMissing(names.schema),
      ...createTableIfMissing(qualifiedTable(names), transportTableBody()),
      // the claim reads the queue-state table (pause); normally the job-control migration creates it first
      ...createTableIfMissing(qualifiedQueueStateTable(names), queueStateTableBody()),
      // a keyed publish writes the dedup table: normally the dedup migration creates it (and its prune index) first
      ...createTableIfMissing(qualifiedDedupTable(names), dedupTableBody()),
      // its limit and backoff columns (normally version 12 adds them first); a small table's Sch-M, briefly
      ...addLimitColumnsIfMissing(qualifiedQueueStateTable(names)),
      // a limited claim counts leases there (normally version 17 creates it first)
      ...createTableIfMissing(qualifiedLeaseRoster(names), leaseRosterTableBody()),
      // a table that lacks the column (normally version 4 adds it first): its Sch-M wait is bounded, so it cannot
      // queue all table traffic behind it for the request timeout; a 1222 fails this attempt and the next retries
      `SET LOCK_TIMEOUT ${DDL_TABLE_LOCK_TIMEOUT_MS};`,
      ...addDeadLetterSourceIfMissing(qualifiedTable(names)),
      // the priority column likewise (normally version 13 adds it first)
      ...addPriorityIfMissing(qualifiedTable(names)),
      // the claim reads it (normally version 15 adds it first), under the same bounded wait
      ...addOrderingKeyIfMissing(qualifiedTable(names)),
      // the ready set (normally versions 20 and 21): the sequence, the state and seq columns (no row touched), the
      // ordering keys table and no lock escalation; a table from before it gets its rows filed here, in this
      // transaction (under the schema applock, before any claim of this release reads them). EXEC: the filing refers
      // to the columns this batch adds, so it is compiled after them.
      ...createSequenceIfMissing(names),
      `DECLARE @file_rows bit = CASE WHEN COL_LENGTH(${nameLiteral(qualifiedTable(names))}, N'state') IS NULL THEN 1 ELSE 0 END;`,
      ...addReadySetColumnsIfMissing(names),
      ...createKeysTableIfMissing(names),
      ...disableLockEscalation(names),
      'IF @file_rows = 1',
      'BEGIN',
      `    ${execText([...fileExistingRowsBatched(names), ...fileKeyedRows(names).flatMap((b) => b.lines)])}`,
      'END;',
    ].join('\n'),
    params: {},
  };
}

/** `EXEC (N'…')` of `lines`, quotes doubled: dynamic SQL compiled when it runs (after the columns it reads exist). */
export function execText(lines: readonly string[]): string {
  return `EXEC (N'${lines.join('\n').replace(/'/g, "''")}');`;
}

/** DDL phase 2, step 1 (in its own transaction): the table-scoped applock, 5 s at most. */
export function ddlTableLock(names: TransportNames): Statement<never> {
  return {
    text: applockLines(
      tableLockResource(names.schema, names.table),
      DDL_TABLE_LOCK_TIMEOUT_MS,
      `AsyncResponse transport could not take its table lock within ${DDL_TABLE_LOCK_TIMEOUT_MS} ms.`,
    ).join('\n'),
    params: {},
  };
}

/**
 * The transport's indexes, each behind its guard (phase 2 and the printed script): the ready set's four filtered ones
 * (ready-set.ts), the created index, the dead-letter index; then the indexes they replaced go (the ready index of
 * version 1, the priority ready index of version 14, the ordering index of version 16).
 */
function transportIndexes(names: TransportNames): Array<string[]> {
  const t = qualifiedTable(names);
  return [
    ...readySetIndexes(names).map((index) => [
      `IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(${nameLiteral(t)}, N'U') AND name = ${nameLiteral(index.name)})`,
      `    ${createFilteredIndexText(t, index)};`,
    ]),
    createIndexIfMissing(t, names.createdIndex, CREATED_INDEX_KEYS),
    createIndexIfMissing(t, names.deadLetterIndex, DEAD_LETTER_INDEX_KEYS),
    dropIndexIfPresent(t, names.legacyReadyIndex),
    dropIndexIfPresent(t, names.readyIndex),
    dropIndexIfPresent(t, names.orderingIndex),
  ];
}

/** DROP INDEX `index` ON `qualifiedTable` behind a sys.indexes guard. */
export function dropIndexIfPresent(qualifiedTable: string, index: string): string[] {
  return [
    `IF EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(${nameLiteral(qualifiedTable)}, N'U') AND name = ${nameLiteral(index)})`,
    `    DROP INDEX ${q(index)} ON ${qualifiedTable};`,
  ];
}

/**
 * DDL phase 2, step 2 (same transaction, hour-long request timeout): the index builds, their lock wait bounded
 * by LOCK_TIMEOUT so a busy table fails fast (1222) instead of queueing every write behind the build.
 */
export function ddlBuildIndexes(names: TransportNames): Statement<never> {
  return {
    // XACT_ABORT: a lock wait that times out (1222) ends the batch and rolls back; without it only that
    // statement stops and the next CREATE INDEX would queue writers behind another 5 s wait (or build offline).
    text: [`SET LOCK_TIMEOUT ${DDL_TABLE_LOCK_TIMEOUT_MS};`, 'SET XACT_ABORT ON;', ...transportIndexes(names).flat(), 'SET LOCK_TIMEOUT -1;'].join('\n'),
    params: {},
  };
}

/**
 * Catalog snapshot for verification, six result sets keyed on the table's object id:
 * 0 objects whose name matches case-insensitively (kind check), 1 columns with their defaults,
 * 2 primary-key key columns, 3 index key/included columns with the index flags, 4 the database's compatibility
 * level (OPENJSON needs 130), 5 the table's enabled triggers (they break OUTPUT clauses).
 * (The current database's row of sys.databases is visible to every user of it.)
 */
export function catalogSnapshot(): Statement<'schema' | 'table'> {
  return {
    text: [
      "DECLARE @object_id int = OBJECT_ID(QUOTENAME(@schema) + N'.' + QUOTENAME(@table), N'U');",
      'SELECT o.name, o.type, o.type_desc, CAST(CASE WHEN o.object_id = @object_id THEN 1 ELSE 0 END AS bit) AS is_target',
      'FROM sys.objects AS o',
      'WHERE o.schema_id = SCHEMA_ID(@schema) AND LOWER(o.name) = LOWER(@table);',
      'SELECT c.column_id, c.name, TYPE_NAME(c.system_type_id) AS type_name, c.max_length, c.precision, c.scale,',
      '       c.is_nullable, c.collation_name, c.is_identity, c.is_computed, c.default_object_id,',
      '       dc.definition AS default_definition',
      'FROM sys.columns AS c',
      'LEFT JOIN sys.default_constraints AS dc ON dc.object_id = c.default_object_id',
      'WHERE c.object_id = @object_id',
      'ORDER BY c.column_id;',
      ...KEY_AND_INDEX_SNAPSHOT,
      'SELECT d.compatibility_level FROM sys.databases AS d WHERE d.database_id = DB_ID();',
      'SELECT tr.name AS trigger_name FROM sys.triggers AS tr WHERE tr.parent_id = @object_id AND tr.is_disabled = 0;',
    ].join('\n'),
    params: { schema: types.sysname(), table: types.sysname() },
  };
}

/** Every statement the store runs, built once from the validated names. */
export function transportStatements(names: TransportNames) {
  return {
    publishBatch: publishBatch(names),
    publishOrderedBatch: publishOrderedBatch(names),
    claimBatch: claimBatch(names),
    ackBatch: ackBatch(names),
    release: releaseMessage(names),
    releaseUnstarted: releaseUnstartedBatch(names),
    releaseLostClaim: releaseLostClaim(names),
    renew: renewLease(names),
    deadLetterMove: deadLetterMove(names),
    pruneDeadLetterBatch: pruneDeadLetterBatch(names),
    queueStats: queueStats(names),
    queueNames: queueNames(names),
    listDeadLetters: listDeadLetters(names),
    requeueDeadLetter: requeueDeadLetter(names),
    deleteDeadLetter: deleteDeadLetter(names),
    hasMessage: hasMessage(names),
    now: dbNow(),
    ddlPhase1: ddlPhase1(names),
    ddlTableLock: ddlTableLock(names),
    ddlBuildIndexes: ddlBuildIndexes(names),
    catalogSnapshot: catalogSnapshot(),
  };
}

export type TransportStatements = ReturnType<typeof transportStatements>;

/** A human-runnable, idempotent DDL script for `npm run schema -- print --dialect sqlserver`. */
export function printSqlServerSchema(names: TransportNames): string {
  const t = qualifiedTable(names);
  return [
    `-- AsyncResponse transport schema for SQL Server / Azure SQL: ${t}.`,
    '-- Idempotent: every object is guarded, so the script can run more than once. Run it as the deployer',
    '-- (DDL rights); the app then needs data rights only (AUTO_CREATE_SCHEMA=false).',
    ...createSchemaIfMissing(names.schema),
    'GO',
    `IF OBJECT_ID(${nameLiteral(t)}, N'U') IS NULL`,
    `CREATE TABLE ${t} (`,
    transportTableBody(),
    ');',
    'GO',
    '-- The dead-letter source queue as a computed column (not in the spec\'s DDL; inserts that name their columns are unaffected).',
    ...addDeadLetterSourceIfMissing(t),
    'GO',
    '-- Job priority (not in the spec\'s DDL; inserts that name their columns get the default 0).',
    ...addPriorityIfMissing(t),
    '-- The ordering key (not in the spec\'s DDL either; a .NET host\'s rows have none and are unordered).',
    ...addOrderingKeyIfMissing(t),
    'GO',
    '-- The ready set: the publish-order sequence, the state and seq columns (existing rows stay NULL), the ordering',
    '-- keys table, no lock escalation; a table from before it gets its keyed, delayed and dead-letter rows filed.',
    ...createSequenceIfMissing(names),
    `DECLARE @file_rows bit = CASE WHEN COL_LENGTH(${nameLiteral(t)}, N'state') IS NULL THEN 1 ELSE 0 END;`,
    ...addReadySetColumnsIfMissing(names),
    ...createKeysTableIfMissing(names),
    ...disableLockEscalation(names),
    'IF @file_rows = 1',
    `    ${execText([...fileExistingRowsBatched(names), ...fileKeyedRows(names).flatMap((b) => b.lines)])}`,
    'GO',
    '-- On a large existing table add WITH (ONLINE = ON) where the edition supports it (Enterprise, Developer,',
    '-- Azure SQL): a plain CREATE INDEX blocks every write to the table while it runs.',
    ...transportIndexes(names).flatMap((index) => [...index, 'GO']),
    '',
  ].join('\n');
}
