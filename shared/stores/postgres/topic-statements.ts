// The PostgreSQL statements of topics (spec 003): the fan-out publish, the durable subscriptions' upsert and
// list. The SQL Server twins live in stores/sqlserver/topic-statements.ts.

import { stateFor } from './ready-set';
import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { SUBSCRIPTION_SEPARATOR } from '../../transport/topic-names';
import { MAX_QUEUE_NAME_LENGTH } from '../../transport/topics';
import { TRANSPORT_NOTIFY_CHANNEL } from './statements';

export interface PgTopicStatements {
  publishToTopic: string;
  recordSubscriptions: string;
  topicSubscriptions: string;
}

/**
 * topic-names.ts topicCopyId in SQL: UUID version 8 from the first 16 bytes of SHA-256 over
 * `{message id lower-cased}\n{queue}` (UTF-8). `messageId` is a uuid expression, `queue` a text expression.
 */
export function pgTopicCopyId(messageId: string, queue: string): string {
  const d = `sha256(convert_to(lower(${messageId}::text) || chr(10) || ${queue}, 'UTF8'))`;
  return `encode(set_byte(set_byte(substring(${d} from 1 for 16), 6, (get_byte(${d}, 6) & 15) | 128), 8, (get_byte(${d}, 8) & 63) | 128), 'hex')::uuid`;
}

export function pgTopicStatements(names: TransportNames, subscriptionsTable: string): PgTopicStatements {
  const t = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(names.table, 'postgres')}`;
  const subs = `${quoteIdentifier(names.schema, 'postgres')}.${quoteIdentifier(subscriptionsTable, 'postgres')}`;
  const MS = "* interval '1 millisecond'";
  return {
    // One statement: the subscriptions are read inside the INSERT … SELECT that writes the copies, so every
    // instance fans out by the table and a subscription recorded before the statement gets its copy. Copies are
    // insert-if-absent by their deterministic id (a republish adds none); each queue that got a claimable copy
    // is NOTIFYed at commit, as the queue publish does. A recorded subscription whose queue name would exceed
    // the queue limit is skipped (configured ones are validated at start-up).
    publishToTopic: `WITH src AS (
  SELECT s.id, s.payload_json, s.headers_json, s.delay_ms, s.priority, s.ord
  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[], $7::smallint[]) WITH ORDINALITY AS s(id, payload_json, headers_json, delay_ms, priority, ord)),
subs AS (
  SELECT $5::text || '${SUBSCRIPTION_SEPARATOR}' || sub.subscription AS queue FROM ${subs} AS sub
  WHERE sub.topic = $5 AND length($5::text) + 1 + length(sub.subscription) <= ${MAX_QUEUE_NAME_LENGTH}),
copies AS (
  SELECT ${pgTopicCopyId('src.id', 'subs.queue')} AS id, subs.queue, src.payload_json, src.headers_json, src.delay_ms, src.priority, src.ord
  FROM src CROSS JOIN subs),
ins AS (
  INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at, priority, state)
  SELECT c.id, c.queue, c.payload_json, c.headers_json, clock_timestamp(),
         CASE WHEN c.delay_ms > 0 THEN clock_timestamp() + c.delay_ms ${MS} ELSE clock_timestamp() END, c.priority, ${stateFor('c.delay_ms > 0')}
  FROM copies AS c
  ORDER BY c.ord, c.queue
  ON CONFLICT (id) DO NOTHING
  RETURNING id, queue, available_at, state IS NULL AS due),
woken AS (SELECT pg_notify('${TRANSPORT_NOTIFY_CHANNEL}', $6 || q.queue) FROM (SELECT DISTINCT queue FROM ins WHERE due) AS q)
SELECT c.id, c.queue, ins.id IS NOT NULL AS inserted, COALESCE(ins.available_at, e.available_at) AS available_at
FROM copies AS c
LEFT JOIN ins ON ins.id = c.id
LEFT JOIN ${t} AS e ON e.id = c.id
CROSS JOIN (SELECT count(*) FROM woken) AS n
ORDER BY c.ord, c.queue`,
    // Insert-if-absent: never deletes, so a row another instance (a newer configuration) or an operator added stays.
    recordSubscriptions: `INSERT INTO ${subs} (topic, subscription)
SELECT s.topic, s.subscription FROM unnest($1::text[], $2::text[]) AS s(topic, subscription)
ON CONFLICT (topic, subscription) DO NOTHING`,
    topicSubscriptions: `SELECT topic, subscription FROM ${subs} WHERE topic = $1 ORDER BY subscription`,
  };
}
