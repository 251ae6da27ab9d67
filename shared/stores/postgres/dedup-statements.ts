// The PostgreSQL statements of dedup keys and debounce (issue 16 §3; the rules are in transport/dedup.ts). A keyed
// publish runs holdKeys, then (debounce) replaceWaiting, then retake, then the ordinary publish statement, all in
// one transaction: holdKeys' upsert locks every key row of the batch until the commit, so concurrent publishers of
// one key run one after the other, and the primary key (queue, dedup_key) is what they meet on.
// SQL Server twin: stores/sqlserver/dedup-statements.ts (one batch).

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { dedupTableName, dedupWindowIndexName } from '../queue-state-names';
import { TRANSPORT_NOTIFY_CHANNEL } from './notify-channel';
import { STATE_QUEUED, STATE_SCHEDULED } from './ready-set';

export interface PgDedupStatements {
  holdKeys: string;
  replaceWaiting: string;
  retake: string;
  releaseKeys: string;
  prune: string;
}

const MS = "* interval '1 millisecond'";

export function pgDedupStatements(names: TransportNames): PgDedupStatements {
  const s = quoteIdentifier(names.schema, 'postgres');
  const t = `${s}.${quoteIdentifier(names.table, 'postgres')}`;
  const d = `${s}.${quoteIdentifier(dedupTableName(names, 'postgres'), 'postgres')}`;
  return {
    // Takes each key that is new or whose window ended (job_id := the publish's id, a new window); a key still held
    // keeps its row. ON CONFLICT DO UPDATE locks the existing row either way (a concurrent publisher of the key
    // waits here for this transaction), and RETURNING answers the holder: the publish's own id = taken.
    // Keys go in (queue, key) order, so two batches lock their common keys in one order and cannot deadlock.
    // SQL Server: UPDATE … OUTPUT, then INSERT … WHERE NOT EXISTS (a lost race is a 2627, re-run).
    holdKeys: `INSERT INTO ${d} AS d (queue, dedup_key, job_id, window_ends_at)
SELECT k.queue, k.dedup_key, k.job_id, clock_timestamp() + k.window_ms ${MS}
FROM unnest($1::text[], $2::text[], $3::uuid[], $4::bigint[]) AS k(queue, dedup_key, job_id, window_ms)
ORDER BY k.queue COLLATE "C", k.dedup_key COLLATE "C"
ON CONFLICT (queue, dedup_key) DO UPDATE SET
  job_id = CASE WHEN d.window_ends_at <= clock_timestamp() THEN EXCLUDED.job_id ELSE d.job_id END,
  window_ends_at = CASE WHEN d.window_ends_at <= clock_timestamp() THEN EXCLUDED.window_ends_at ELSE d.window_ends_at END
RETURNING d.queue, d.dedup_key, d.job_id`,
    // Debounce: the holder's job, while it waits (not leased), takes the new payload and headers and is due after
    // the new delay. A claim holding the row makes this wait and re-check the lease: a row claimed meanwhile is
    // left alone (not returned), and the publish enqueues a new job instead. Due rows wake the queue's drains.
    replaceWaiting: `WITH moved AS (
  UPDATE ${t} AS m SET payload_json = r.payload_json, headers_json = r.headers_json,
         available_at = CASE WHEN r.delay_ms > 0 THEN clock_timestamp() + r.delay_ms ${MS} ELSE clock_timestamp() END,
         state = CASE WHEN m.state = ${STATE_QUEUED} THEN ${STATE_QUEUED} WHEN r.delay_ms > 0 THEN ${STATE_SCHEDULED} END,
         locked_until = NULL, lock_id = NULL
  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS r(id, queue, payload_json, headers_json, delay_ms)
  WHERE m.id = r.id AND m.queue = r.queue AND (m.locked_until IS NULL OR m.locked_until <= now())
  RETURNING m.id, m.queue, m.available_at, m.state IS NULL AND m.available_at <= clock_timestamp() AS due),
woken AS (SELECT pg_notify('${TRANSPORT_NOTIFY_CHANNEL}', $6 || w.queue) FROM (SELECT DISTINCT queue FROM moved WHERE due) AS w)
SELECT id, available_at FROM moved, (SELECT count(*) FROM woken) AS n`,
    // Points held keys (locked by holdKeys) at a job with a new window: a debounced job's window restarts; a
    // debounce whose holder was claimed or gone hands the key to the new job.
    retake: `UPDATE ${d} AS d SET job_id = k.job_id, window_ends_at = clock_timestamp() + k.window_ms ${MS}
FROM unnest($1::text[], $2::text[], $3::uuid[], $4::bigint[]) AS k(queue, dedup_key, job_id, window_ms)
WHERE d.queue = k.queue AND d.dedup_key = k.dedup_key`,
    // Keys a publish took for an id that turned out to be another queue's job (ids are unique across queues): that
    // publish enqueued nothing, so it must not hold the key.
    releaseKeys: `DELETE FROM ${d} AS d USING unnest($1::text[], $2::text[], $3::uuid[]) AS k(queue, dedup_key, job_id)
WHERE d.queue = k.queue AND d.dedup_key = k.dedup_key AND d.job_id = k.job_id`,
    // Keys whose window ended, a bounded batch through the window index. A key a publisher re-took meanwhile has a
    // new row version (a new ctid, a new window) and is not deleted.
    prune: `DELETE FROM ${d} WHERE window_ends_at <= clock_timestamp() AND ctid IN (
  SELECT ctid FROM ${d} WHERE window_ends_at <= clock_timestamp() ORDER BY window_ends_at LIMIT 1000)`,
  };
}

/** Migration and store DDL: the dedup table and its window index (for the prune). */
export function pgDedupDdl(names: TransportNames): Array<{ name: string; text: string }> {
  const s = quoteIdentifier(names.schema, 'postgres');
  const d = `${s}.${quoteIdentifier(dedupTableName(names, 'postgres'), 'postgres')}`;
  return [
    {
      name: 'create dedup table',
      // queue and key compare byte-wise (COLLATE "C"), like queue names; SQL Server: BIN2.
      text: `CREATE TABLE IF NOT EXISTS ${d} (
    queue text COLLATE "C" NOT NULL,
    dedup_key text COLLATE "C" NOT NULL,
    job_id uuid NOT NULL,
    window_ends_at timestamptz NOT NULL,
    PRIMARY KEY (queue, dedup_key))`,
    },
    {
      name: 'create dedup window index',
      text: `CREATE INDEX IF NOT EXISTS ${quoteIdentifier(dedupWindowIndexName(names, 'postgres'), 'postgres')} ON ${d} (window_ends_at)`,
    },
  ];
}
