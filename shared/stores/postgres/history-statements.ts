// The PostgreSQL statements of job lookup and history (issue 16 §2). The SQL Server twins live in
// stores/sqlserver/history-statements.ts; the model is transport/history.ts.
//
// The move to history is ONE statement: a data-modifying CTE deletes the fenced rows (the plain ack's DELETE) and
// feeds their columns to the INSERT, so a job is never in both tables nor in neither. History has no unique key on
// id: an id may be published again once its job completed, and each completion keeps its own row.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { CORRELATION_ID_HEADER } from '../../transport/types';
import { historyNames } from '../history-names';
import { SETTLEMENT_FENCE, UNSAFE_JSON_ESCAPE } from './statements';
import { pgReleaseKeys } from './ready-set';
import { whereAsyncCommit } from './async-commit';

export interface PgHistoryStatements {
  ackToHistory: string;
  findJob: string;
  searchByQueue: string;
  searchByCorrelation: string;
  prune: string;
}

const q = (n: string) => quoteIdentifier(n, 'postgres');

/** The correlation header of a row, NULL for headers that are not a JSON object jsonb can read (as SOURCE_QUEUE). */
const CORRELATION = `(CASE WHEN left(ltrim(m.headers_json), 1) = '{' AND m.headers_json !~* '${UNSAFE_JSON_ESCAPE}' THEN m.headers_json::jsonb ->> '${CORRELATION_ID_HEADER}' END)`;

/** completed_at as ISO text at the column's precision (µs), the cursor's key. */
const COMPLETED_KEY = `to_char(h.completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS completed_key`;
const ROW = `h.id, h.queue, h.state, h.attempts, h.correlation_id, h.created_at, h.available_at, h.completed_at, h.priority, h.ordering_key, ${COMPLETED_KEY}`;

/** `asyncCommit` (default true): the ack into history commits without waiting for the WAL flush (async-commit.ts). */
export function pgHistoryStatements(names: TransportNames, { asyncCommit: relaxed = true }: { asyncCommit?: boolean } = {}): PgHistoryStatements {
  const t = `${q(names.schema)}.${q(names.table)}`;
  const h = `${q(names.schema)}.${q(historyNames(names, 'postgres').table)}`;
  // $1 queue (or correlation id), $2 since, $3 until, $4 cursor completed_at, $5 cursor id, $6 state or NULL, $7 top.
  // Every bound is a value (no cursor = 'infinity'), so one index range serves every page.
  const search = (key: 'queue' | 'correlation_id') => `SELECT ${ROW} FROM ${h} AS h
WHERE h.${key} = $1 AND h.completed_at >= $2::timestamptz AND h.completed_at < $3::timestamptz
  AND (h.completed_at, h.id) < ($4::timestamptz, $5::uuid)
  AND ($6::text IS NULL OR h.state = $6::text)
ORDER BY h.completed_at DESC, h.id DESC
LIMIT $7`;
  return {
    // SQL Server: DELETE … OUTPUT deleted.… INTO history FROM … JOIN OPENJSON(@settlements).
    ackToHistory: `WITH done AS (
  DELETE FROM ${t} AS m USING unnest($1::uuid[], $2::uuid[]) AS s(id, lock_id)
  WHERE ${SETTLEMENT_FENCE}
  RETURNING m.id, m.queue, m.payload_json, m.headers_json, m.attempts, m.created_at, m.available_at, ${CORRELATION} AS correlation_id, m.priority, m.ordering_key, m.key_no, m.state, m.seq),
${pgReleaseKeys(names, 'done')},
kept AS (
  INSERT INTO ${h} (id, queue, state, correlation_id, payload_json, headers_json, attempts, created_at, available_at, completed_at, priority, ordering_key)
  SELECT id, queue, 'completed', correlation_id, payload_json, headers_json, attempts, created_at, available_at, clock_timestamp(), priority, ordering_key FROM done
  RETURNING 1)
SELECT count(*)::int AS n FROM kept${whereAsyncCommit(relaxed)}`,
    // The live row (primary key) and the history rows (id index) of one id, with the lease read on the database clock.
    findJob: `SELECT 'queue' AS source, id, queue, attempts, headers_json, created_at, available_at, NULL::timestamptz AS completed_at,
       COALESCE(locked_until > now(), false) AS leased, available_at > now() AS delayed, dead_letter_reason, priority, ordering_key
FROM ${t} WHERE id = $1
UNION ALL
SELECT 'history', id, queue, attempts, headers_json, created_at, available_at, completed_at, false, false, NULL, priority, ordering_key
FROM ${h} WHERE id = $1`,
    searchByQueue: search('queue'),
    searchByCorrelation: search('correlation_id'),
    // One bounded batch of a queue's rows older than its retention (queue index range), like the dead-letter prune.
    prune: `DELETE FROM ${h} WHERE ctid IN (
  SELECT ctid FROM ${h} WHERE queue = $1 AND completed_at < clock_timestamp() - $2::bigint * interval '1 millisecond' LIMIT 1000)`,
  };
}

/** The history table and its indexes (migration, and the store's own schema step under AUTO_CREATE_SCHEMA). */
export function pgHistoryDdl(names: TransportNames): Array<{ name: string; text: string }> {
  const n = historyNames(names, 'postgres');
  const h = `${q(names.schema)}.${q(n.table)}`;
  return [
    {
      name: 'create history table',
      // queue and correlation id compare byte-wise (COLLATE "C"), like the queue-state table; SQL Server: BIN2.
      text: `CREATE TABLE IF NOT EXISTS ${h} (
    id uuid NOT NULL,
    queue text COLLATE "C" NOT NULL,
    state text COLLATE "C" NOT NULL,
    correlation_id text COLLATE "C" NULL,
    payload_json text NOT NULL,
    headers_json text NOT NULL,
    attempts integer NOT NULL,
    created_at timestamptz NOT NULL,
    available_at timestamptz NOT NULL,
    completed_at timestamptz NOT NULL)`,
    },
    { name: 'create history id index', text: `CREATE INDEX IF NOT EXISTS ${q(n.idIndex)} ON ${h} (id)` },
    { name: 'create history queue index', text: `CREATE INDEX IF NOT EXISTS ${q(n.queueIndex)} ON ${h} (queue, completed_at, id)` },
    {
      name: 'create history correlation index',
      text: `CREATE INDEX IF NOT EXISTS ${q(n.correlationIndex)} ON ${h} (correlation_id, completed_at, id) WHERE correlation_id IS NOT NULL`,
    },
  ];
}

/**
 * Migration 17 (and the store's own schema step): the job's priority and ordering key kept in history, nullable (a
 * catalog-only change; rows moved before it show neither).
 */
export function pgHistoryJobFieldsDdl(names: TransportNames): string {
  const h = `${q(names.schema)}.${q(historyNames(names, 'postgres').table)}`;
  return `ALTER TABLE ${h} ADD COLUMN IF NOT EXISTS priority smallint NULL, ADD COLUMN IF NOT EXISTS ordering_key text NULL`;
}
