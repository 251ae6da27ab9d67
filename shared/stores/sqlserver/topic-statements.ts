// The T-SQL statements of topics (spec 003): the fan-out publish, the durable subscriptions' upsert and list.
// PostgreSQL twins: stores/postgres/topic-statements.ts.

import * as sql from 'mssql';
import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { SUBSCRIPTION_SEPARATOR } from '../../transport/topic-names';
import { MAX_QUEUE_NAME_LENGTH } from '../../transport/topics';
import { BIN2, dbClockPlus, exactQueueMatch, qualifiedTable, type Statement } from './statements';
import { readySetTables, STATE_SCHEDULED } from './ready-set';

/** A UTF-8 collation: casting nvarchar under it to varchar yields the text's UTF-8 bytes (SQL Server 2019+, Azure SQL). */
export const UTF8_COLLATION = 'Latin1_General_100_BIN2_UTF8';

/**
 * topic-names.ts topicCopyId in T-SQL, as two CROSS APPLY steps naming `hash.h` and then `v.copy_id`: UUID
 * version 8 from the first 16 bytes of SHA-256 over `{message id lower-cased}\n{queue}` (UTF-8). The text form is
 * built from the hex digits and cast, so the value reads the same as in JS (uniqueidentifier's binary layout
 * swaps the first three groups' bytes).
 */
export function tsqlTopicCopyIdApply(messageId: string, queue: string): string[] {
  const byte = (n: number) => `SUBSTRING(hash.h, ${n}, 1)`;
  return [
    `CROSS APPLY (SELECT HASHBYTES('SHA2_256', CAST((LOWER(CONVERT(nvarchar(36), ${messageId})) + NCHAR(10) + ${queue}) COLLATE ${UTF8_COLLATION} AS varchar(max))) AS h) AS hash`,
    'CROSS APPLY (SELECT CAST(STUFF(STUFF(STUFF(STUFF(CONVERT(char(32),',
    `    SUBSTRING(hash.h, 1, 6) + CAST((CAST(${byte(7)} AS int) & 15) | 128 AS binary(1)) + ${byte(8)}`,
    `    + CAST((CAST(${byte(9)} AS int) & 63) | 128 AS binary(1)) + SUBSTRING(hash.h, 10, 7), 2),`,
    "    21, 0, '-'), 17, 0, '-'), 13, 0, '-'), 9, 0, '-') AS uniqueidentifier) AS copy_id) AS v",
  ];
}

/**
 * Every copy of the @batch messages on the topic's subscription queues, read from the subscriptions table: the
 * derived table both statements of publishToTopic use. A recorded subscription whose queue name would exceed
 * the queue column is skipped (configured ones are validated at start-up).
 */
function copiesOf(subs: string): string[] {
  return [
    '    SELECT v.copy_id AS id, sub.queue, src.payload_json, src.headers_json, src.delay_ms, src.priority, src.ord',
    '    FROM OPENJSON(@batch) WITH (',
    "        id uniqueidentifier '$.id',",
    "        payload_json nvarchar(max) '$.payload_json',",
    "        headers_json nvarchar(max) '$.headers_json',",
    "        delay_ms bigint '$.delay_ms',",
    "        priority smallint '$.priority',",
    "        ord int '$.ord'",
    '    ) AS src',
    `    CROSS JOIN (SELECT @topic + N'${SUBSCRIPTION_SEPARATOR}' + s.subscription AS queue FROM ${subs} AS s`,
    `        WHERE ${exactQueueMatch('s.topic', 'topic')}`,
    `          AND DATALENGTH(@topic) + DATALENGTH(s.subscription) <= ${2 * (MAX_QUEUE_NAME_LENGTH - 1)}) AS sub`,
    ...tsqlTopicCopyIdApply('src.id', 'sub.queue').map((line) => `    ${line}`),
  ];
}

/**
 * Topic publish: ONE INSERT … SELECT reads the subscriptions table and inserts one copy per message and
 * subscription, insert-if-absent by the copy's deterministic id with the queue publish's probe (no key-range lock;
 * two publishers of one copy may race to 2627, and the store re-runs the statement, which then finds it). Rows of one batch share @now; seq is drawn
 * in `ord` order, so a subscription claims a batch in array order; a delayed copy is scheduled (ready-set.ts). Result set 1 = copies inserted; result set 2 =
 * every stored copy of the batch on the topic's subscriptions (the inserted ones and those a republish found).
 * Each @batch element: { id, payload_json, headers_json, delay_ms, priority, ord }.
 * PostgreSQL: one WITH … INSERT … SELECT … ON CONFLICT (id) DO NOTHING that also NOTIFYs the queues.
 */
export function publishToTopic(names: TransportNames, subscriptionsTable: string): Statement<'batch' | 'topic'> {
  const t = qualifiedTable(names);
  const subs = `${quoteIdentifier(names.schema, 'sqlserver')}.${quoteIdentifier(subscriptionsTable, 'sqlserver')}`;
  return {
    text: [
      'DECLARE @now datetime2 = SYSUTCDATETIME();',
      `INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at, priority, state, seq)`,
      'OUTPUT inserted.id, inserted.queue, inserted.available_at',
      'SELECT c.id, c.queue, c.payload_json, c.headers_json,',
      '       DATEADD(NANOSECOND, c.ord * 100, @now),',
      `       CASE WHEN c.delay_ms > 0 THEN ${dbClockPlus('c.delay_ms', '@now')} ELSE @now END,`,
      `       COALESCE(c.priority, 0), CASE WHEN c.delay_ms > 0 THEN ${STATE_SCHEDULED} END,`,
      `       NEXT VALUE FOR ${readySetTables(names).seq} OVER (ORDER BY c.ord, c.queue)`,
      'FROM (',
      ...copiesOf(subs),
      ') AS c',
      `WHERE NOT EXISTS (SELECT 1 FROM ${t} AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = c.id);`,
      'SELECT existing.id, existing.queue, existing.available_at',
      `FROM ${t} AS existing`,
      'INNER JOIN (',
      ...copiesOf(subs),
      `) AS c ON existing.id = c.id AND existing.queue = c.queue COLLATE ${BIN2};`,
    ].join('\n'),
    params: { batch: sql.NVarChar(sql.MAX), topic: sql.NVarChar(200) },
  };
}

/** Insert-if-absent of (topic, subscription) pairs; never deletes. Each @subscriptions element: { topic, subscription }. */
export function recordSubscriptions(names: TransportNames, subscriptionsTable: string): Statement<'subscriptions'> {
  const subs = `${quoteIdentifier(names.schema, 'sqlserver')}.${quoteIdentifier(subscriptionsTable, 'sqlserver')}`;
  const exact = (column: string) => `existing.${column} = src.${column} COLLATE ${BIN2} AND existing.${column} + N'.' = src.${column} + N'.' COLLATE ${BIN2}`;
  return {
    text: [
      `INSERT INTO ${subs} (topic, subscription)`,
      'SELECT src.topic, src.subscription',
      "FROM OPENJSON(@subscriptions) WITH (topic nvarchar(200) '$.topic', subscription nvarchar(200) '$.subscription') AS src",
      `WHERE NOT EXISTS (SELECT 1 FROM ${subs} AS existing WITH (UPDLOCK, HOLDLOCK)`,
      `    WHERE ${exact('topic')} AND ${exact('subscription')});`,
    ].join('\n'),
    params: { subscriptions: sql.NVarChar(sql.MAX) },
  };
}

/** The subscriptions recorded for exactly @topic, by name. */
export function topicSubscriptions(names: TransportNames, subscriptionsTable: string): Statement<'topic'> {
  const subs = `${quoteIdentifier(names.schema, 'sqlserver')}.${quoteIdentifier(subscriptionsTable, 'sqlserver')}`;
  return {
    text: [`SELECT topic, subscription FROM ${subs}`, `WHERE ${exactQueueMatch('topic', 'topic')}`, 'ORDER BY subscription;'].join('\n'),
    params: { topic: sql.NVarChar(200) },
  };
}

/** Every topic statement the store runs, built once from the validated names. */
export function topicStatements(names: TransportNames, subscriptionsTable: string) {
  return {
    publishToTopic: publishToTopic(names, subscriptionsTable),
    recordSubscriptions: recordSubscriptions(names, subscriptionsTable),
    topicSubscriptions: topicSubscriptions(names, subscriptionsTable),
  };
}
