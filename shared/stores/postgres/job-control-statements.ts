// The PostgreSQL statements of job and queue control (issue 16 §4): cancel, reschedule, pause and resume. The SQL
// Server twins live in stores/sqlserver/job-control-statements.ts; the marker is explained in transport/job-control.ts.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { CANCEL_MARK_PREFIX } from '../../transport/job-control';
import { TRANSPORT_NOTIFY_CHANNEL } from './notify-channel';
import { pgReleaseKeys, STATE_QUEUED, STATE_SCHEDULED } from './ready-set';

export interface PgJobControlStatements {
  cancel: string;
  reschedule: string;
  setPaused: string;
  queueState: string;
  /** The claim's pause test: true while the queue ($1 of the claim) is paused. */
  pausedTest: string;
}

const UNLEASED = '(locked_until IS NULL OR locked_until <= now())';
/** The reschedule's new time: $3 an instant, else $4 ms from the database clock. */
const AT = `CASE WHEN $3::timestamptz IS NOT NULL THEN $3::timestamptz ELSE clock_timestamp() + $4::bigint * interval '1 millisecond' END`;
const MS = "* interval '1 millisecond'";

/** headers_json with the cancel marker first; a row already marked keeps its text (the first cancel's time). */
export function pgMarkedHeaders(column = 'headers_json'): string {
  const trimmed = `ltrim(${column})`;
  const mark = `'${CANCEL_MARK_PREFIX}"' || to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"'`;
  return `CASE WHEN ${column} LIKE '${CANCEL_MARK_PREFIX}%' THEN ${column}
     WHEN ${trimmed} ~ '^\\{\\s*\\}' THEN ${mark} || '}'
     WHEN ${trimmed} LIKE '{%' THEN ${mark} || ',' || substr(${trimmed}, 2)
     ELSE ${mark} || '}' END`;
}

/** The renewal's answer: the row is marked (RETURNING of the renew UPDATE). */
export const PG_CANCEL_REQUESTED = `headers_json LIKE '${CANCEL_MARK_PREFIX}%'`;

export function pgJobControlStatements(names: TransportNames, queueStateTable: string): PgJobControlStatements {
  const t = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(names.table, 'postgres')}`;
  const s = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(queueStateTable, 'postgres')}`;
  return {
    // One statement: a waiting row is deleted; a leased one is marked when $3 (running) is true. The two CTEs
    // test opposite lease states on one snapshot, so at most one touches the row; a claim racing the delete holds
    // the row lock, and the delete then re-checks the lease and leaves it (answer: running). `present` reads the
    // statement's snapshot, so it is true for a row the statement deleted or marked.
    // SQL Server: DELETE …; IF @@ROWCOUNT = 0 AND @running = 1 UPDATE …; SELECT ….
    // A cancelled head lets its key go on (ready-set.ts pgReleaseKeys).
    cancel: `WITH waiting AS (
  DELETE FROM ${t} WHERE id = $2 AND queue = $1 AND ${UNLEASED} RETURNING id, queue, ordering_key, key_no, state, seq),
${pgReleaseKeys(names, 'waiting')},
marked AS (
  UPDATE ${t} SET headers_json = ${pgMarkedHeaders()}
  WHERE $3::boolean AND id = $2 AND queue = $1 AND locked_until > now() RETURNING id)
SELECT (SELECT count(*) FROM waiting)::int AS deleted, (SELECT count(*) FROM marked)::int AS marked, 
       EXISTS (SELECT 1 FROM ${t} WHERE id = $2 AND queue = $1) AS present`,
    // A waiting row only: $3 an instant, else $4 ms from the database clock. The lease columns are cleared, so a
    // lapsed owner's late settlement no longer matches its fence. A row due now NOTIFYs the queue's drains.
    // A row queued behind its key's head stays queued (its new time applies once it is the head).
    reschedule: `WITH moved AS (
  UPDATE ${t} SET available_at = ${AT}, locked_until = NULL, lock_id = NULL,
         state = CASE WHEN state = ${STATE_QUEUED} THEN ${STATE_QUEUED} WHEN ${AT} > clock_timestamp() THEN ${STATE_SCHEDULED} END
  WHERE id = $2 AND queue = $1 AND ${UNLEASED}
  RETURNING available_at, state IS NULL AND available_at <= clock_timestamp() AS due),
woken AS (SELECT pg_notify('${TRANSPORT_NOTIFY_CHANNEL}', $5 || $1) FROM moved WHERE due)
SELECT (SELECT available_at FROM moved) AS available_at, (SELECT count(*) FROM woken)::int AS woken,
       EXISTS (SELECT 1 FROM ${t} WHERE id = $2 AND queue = $1) AS present`,
    // Upsert; a pause keeps the first pause's time. A resume NOTIFYs the queue, so drains in other processes
    // claim at once instead of at their next empty poll. SQL Server: MERGE … WITH (HOLDLOCK).
    setPaused: `WITH up AS (
  INSERT INTO ${s} AS q (queue, paused_at, updated_at)
  VALUES ($1, CASE WHEN $2::boolean THEN clock_timestamp() END, clock_timestamp())
  ON CONFLICT (queue) DO UPDATE SET
    paused_at = CASE WHEN $2::boolean THEN COALESCE(q.paused_at, clock_timestamp()) END,
    updated_at = clock_timestamp()
  RETURNING paused_at),
woken AS (SELECT pg_notify('${TRANSPORT_NOTIFY_CHANNEL}', $3 || $1) WHERE NOT $2::boolean)
SELECT (SELECT paused_at FROM up) AS paused_at, (SELECT count(*) FROM woken)::int AS woken`,
    queueState: `SELECT paused_at, CASE WHEN backoff_until > clock_timestamp() THEN backoff_until END AS backoff_until FROM ${s} WHERE queue = $1`,
    // Uncorrelated ($1 only): the planner runs it once per statement as an InitPlan (a primary-key probe of a
    // table with a row per paused or once-paused queue) and the ready-index seek stays as it was. A queue a forward
    // target asked to back off (429/503 Retry-After, limit-statements.ts) is held like a paused one until then.
    pausedTest: `EXISTS (SELECT 1 FROM ${s} AS paused WHERE paused.queue = $1 AND (paused.paused_at IS NOT NULL OR paused.backoff_until > now()))`,
  };
}

/** Migration: the queue-state table (one row per queue ever paused; paused_at NULL once resumed). */
export function pgQueueStateTableDdl(schema: string, queueStateTable: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quoteIdentifier(schema, 'postgres')}.${quoteIdentifier(queueStateTable, 'postgres')} (
    queue text COLLATE "C" NOT NULL PRIMARY KEY,
    paused_at timestamptz NULL,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp())`;
}
