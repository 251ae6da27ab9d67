// The T-SQL statements of job lookup and history (issue 16 §2). PostgreSQL twins: stores/postgres/history-statements.ts;
// the model is transport/history.ts.
//
// The move to history is one transaction (XACT_ABORT ON): the plain ack's DELETE with OUTPUT deleted.… INTO a table
// variable, the history rows inserted from it, and the keys of the keyed rows among them settled (ready-set.ts), so a
// job is never in both tables nor in neither. OUTPUT INTO the history table itself would need a second OUTPUT target
// for the keys (T-SQL allows one), and breaks on a trigger or foreign key an operator adds there (review L4): a
// table variable has neither. History has no unique key on id (an id may be published again once its job
// completed); it is clustered on (queue, completed_at): a queue's search and its prune are range seeks.

import * as sql from 'mssql';
import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { CORRELATION_ID_HEADER } from '../../transport/types';
import { historyNames } from '../history-names';
import {
  BIN2,
  createIndexIfMissing,
  createTableIfMissing,
  exactQueueMatch,
  exactTextMatch,
  nameLiteral,
  pruneBatchText,
  qualifiedTable,
  schemaApplockLines,
  settledRows,
  type Statement,
} from './statements';
import { GONE_DECLARATION, releaseKeysLines } from './ready-set';

const q = (n: string) => quoteIdentifier(n, 'sqlserver');

const types = {
  queue: () => sql.NVarChar(200),
  correlation: () => sql.NVarChar(400),
  id: () => sql.UniqueIdentifier(),
  ms: () => sql.BigInt(),
  text: () => sql.NVarChar(sql.MAX),
  /** an ISO instant, cast to datetime2(7) in the statement (a JS Date would drop the 100 ns ticks of a cursor) */
  instant: () => sql.NVarChar(40),
  state: () => sql.NVarChar(20),
  count: () => sql.Int(),
};

export function qualifiedHistoryTable(names: TransportNames): string {
  return `${q(names.schema)}.${q(historyNames(names, 'sqlserver').table)}`;
}

/**
 * The correlation header of a moved row; NULL for headers that are not JSON and for a value longer than a correlation
 * id. DATALENGTH, not LEN: LEN ignores trailing spaces, and a value of 400 characters plus spaces would fail the whole
 * ack batch with 2628 (review L3).
 */
const CORRELATION_VALUE = `JSON_VALUE(headers_json, N'$."${CORRELATION_ID_HEADER}"')`;
const CORRELATION = `CASE WHEN ISJSON(headers_json) = 1 THEN CASE WHEN DATALENGTH(${CORRELATION_VALUE}) <= 800 THEN ${CORRELATION_VALUE} END END`;

/**
 * Ack a batch into history: the plain ack (statements.ts ackBatch) with OUTPUT deleted.… INTO @done, then the history
 * rows from it and the keys settled, in one transaction (see the header).
 * PostgreSQL: WITH done AS (DELETE … RETURNING …) INSERT INTO history SELECT … FROM done, plus the keys CTEs.
 */
export function ackToHistory(names: TransportNames): Statement<'settlements'> {
  return {
    text: [
      'SET XACT_ABORT ON;',
      'DECLARE @completed_at datetime2 = SYSUTCDATETIME(), @affected int;',
      `DECLARE @done TABLE (id uniqueidentifier NOT NULL, queue nvarchar(200) COLLATE ${BIN2} NOT NULL, payload_json nvarchar(max) NOT NULL,`,
      '    headers_json nvarchar(max) NOT NULL, attempts int NOT NULL, created_at datetime2 NOT NULL, available_at datetime2 NOT NULL,',
      `    priority smallint NOT NULL, ordering_key nvarchar(200) COLLATE ${BIN2} NULL, state tinyint NULL, seq bigint NULL);`,
      GONE_DECLARATION,
      'BEGIN TRANSACTION;',
      'DELETE target',
      'OUTPUT deleted.id, deleted.queue, deleted.payload_json, deleted.headers_json, deleted.attempts, deleted.created_at,',
      '       deleted.available_at, deleted.priority, deleted.ordering_key, deleted.state, deleted.seq INTO @done',
      ...settledRows(names),
      'SET @affected = @@ROWCOUNT;',
      `INSERT INTO ${qualifiedHistoryTable(names)} (id, queue, state, correlation_id, payload_json, headers_json, attempts, created_at, available_at, completed_at, priority, ordering_key)`,
      `SELECT id, queue, N'completed', ${CORRELATION},`,
      '       payload_json, headers_json, attempts, created_at, available_at, @completed_at, priority, ordering_key',
      'FROM @done;',
      ...releaseKeysLines(names, '@done'),
      'COMMIT;',
      'SELECT @affected AS affected;',
    ].join('\n'),
    params: { settlements: types.text() },
  };
}

/** The live row and the history rows of one id, the lease read on the database clock. PostgreSQL: UNION ALL. */
export function findJob(names: TransportNames): Statement<'id'> {
  return {
    text: [
      "SELECT N'queue' AS source, id, queue, attempts, headers_json, created_at, available_at, CAST(NULL AS datetime2) AS completed_at,",
      '       CAST(CASE WHEN locked_until > SYSUTCDATETIME() THEN 1 ELSE 0 END AS bit) AS leased,',
      '       CAST(CASE WHEN available_at > SYSUTCDATETIME() THEN 1 ELSE 0 END AS bit) AS delayed, dead_letter_reason, priority, ordering_key',
      `FROM ${qualifiedTable(names)} WHERE id = @id`,
      'UNION ALL',
      "SELECT N'history', id, queue, attempts, headers_json, created_at, available_at, completed_at, CAST(0 AS bit), CAST(0 AS bit), NULL, priority, ordering_key",
      `FROM ${qualifiedHistoryTable(names)} WHERE id = @id;`,
    ].join('\n'),
    params: { id: types.id() },
  };
}

type SearchParams = 'key' | 'since' | 'until' | 'after_at' | 'after_id' | 'state' | 'top';

/**
 * A page of history, newest completed first, seeking (queue | correlation_id, completed_at): every bound is a value
 * (no cursor = the largest instant), so one plan serves every page. PostgreSQL: the same with a row comparison.
 */
function search(names: TransportNames, key: 'queue' | 'correlation_id'): Statement<SearchParams> {
  const match = key === 'queue' ? exactQueueMatch('queue', 'key') : `correlation_id = @key AND ${exactTextMatch('correlation_id', 'key')}`;
  return {
    text: [
      "SELECT TOP (@top) id, queue, state, attempts, correlation_id, created_at, available_at, completed_at, priority, ordering_key,",
      '       CONVERT(nvarchar(33), completed_at, 126) AS completed_key',
      `FROM ${qualifiedHistoryTable(names)}`,
      `WHERE ${match}`,
      '  AND completed_at >= CAST(@since AS datetime2(7)) AND completed_at < CAST(@until AS datetime2(7))',
      // the first conjunct bounds the backward seek at the cursor; the OR alone would rescan every earlier page (review L6)
      '  AND completed_at <= CAST(@after_at AS datetime2(7))',
      '  AND (completed_at < CAST(@after_at AS datetime2(7)) OR (completed_at = CAST(@after_at AS datetime2(7)) AND id < @after_id))',
      '  AND (@state IS NULL OR state = @state)',
      'ORDER BY completed_at DESC, id DESC;',
    ].join('\n'),
    params: {
      key: key === 'queue' ? types.queue() : types.correlation(),
      since: types.instant(),
      until: types.instant(),
      after_at: types.instant(),
      after_id: types.id(),
      state: types.state(),
      top: types.count(),
    },
  };
}

/** One bounded prune batch of a queue's rows older than its retention (a clustered range). @neg_retention_ms = -retention. */
export function pruneHistoryBatch(names: TransportNames): Statement<'queue' | 'neg_retention_ms'> {
  return { text: pruneBatchText(qualifiedHistoryTable(names), 'queue', 'completed_at'), params: { queue: types.queue(), neg_retention_ms: types.ms() } };
}

export function historyStatements(names: TransportNames) {
  return {
    ackToHistory: ackToHistory(names),
    findJob: findJob(names),
    searchByQueue: search(names, 'queue'),
    searchByCorrelation: search(names, 'correlation_id'),
    pruneHistory: pruneHistoryBatch(names),
    ddl: historyDdlPhase(names),
  };
}

/**
 * AUTO_CREATE_SCHEMA: the history table, its indexes and its job-field columns in one transaction under the schema
 * applock, after the transport's phase 1 (migrated schemas get them from versions 11 and 19). Each step is guarded:
 * a no-op once they exist.
 */
export function historyDdlPhase(names: TransportNames): Statement<never> {
  const lines = [...historyDdl(names).flatMap((b) => b.lines), ...addHistoryJobFieldsIfMissing(qualifiedHistoryTable(names))];
  return { text: [...schemaApplockLines(names.schema, 'transport history'), ...lines].join('\n'), params: {} };
}

/**
 * Schema version 19 (and the store's phase): the job's priority and ordering key kept in history, nullable (a
 * metadata-only add; rows moved before it show neither), each behind its guard. PostgreSQL: ADD COLUMN IF NOT EXISTS.
 */
export function addHistoryJobFieldsIfMissing(qualifiedHistory: string): string[] {
  return (
    [
      ['priority', 'smallint NULL'],
      ['ordering_key', `nvarchar(200) COLLATE ${BIN2} NULL`],
    ] as const
  ).flatMap(([column, type]) => [`IF COL_LENGTH(N'${qualifiedHistory}', N'${column}') IS NULL`, `    ALTER TABLE ${qualifiedHistory} ADD ${column} ${type};`]);
}

/** The history table's columns (schema version 11 and the store's phase 1). */
export function historyTableBody(): string {
  return [
    '    id uniqueidentifier NOT NULL,',
    `    queue nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
    `    state nvarchar(20) COLLATE ${BIN2} NOT NULL,`,
    `    correlation_id nvarchar(400) COLLATE ${BIN2} NULL,`,
    '    payload_json nvarchar(max) NOT NULL,',
    '    headers_json nvarchar(max) NOT NULL,',
    '    attempts int NOT NULL,',
    '    created_at datetime2 NOT NULL,',
    '    available_at datetime2 NOT NULL,',
    '    completed_at datetime2 NOT NULL',
  ].join('\n');
}

/** The history table and its indexes, each batch behind its guard (built empty: no wait on live traffic). */
export function historyDdl(names: TransportNames): Array<{ name: string; lines: string[] }> {
  const n = historyNames(names, 'sqlserver');
  const h = qualifiedHistoryTable(names);
  return [
    { name: 'create history table', lines: createTableIfMissing(h, historyTableBody()) },
    {
      name: 'create history queue index',
      lines: [
        `IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(${nameLiteral(h)}, N'U') AND name = ${nameLiteral(n.queueIndex)})`,
        `    CREATE CLUSTERED INDEX ${q(n.queueIndex)} ON ${h} (queue, completed_at, id);`,
      ],
    },
    { name: 'create history id index', lines: createIndexIfMissing(h, n.idIndex, ['id']) },
    { name: 'create history correlation index', lines: createIndexIfMissing(h, n.correlationIndex, ['correlation_id', 'completed_at', 'id']) },
  ];
}
