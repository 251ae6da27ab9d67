// Pins the shape of the T-SQL topic statements (no SQL Server here; the T-SQL grammar check parses them too).

import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import { subscriptionsTableName } from '../../shared/stores/schema-names';
import { topicStatements, UTF8_COLLATION } from '../../shared/stores/sqlserver/topic-statements';
import { length, SPLIT, typeName } from '../support/sqlserver-statements';

const names = transportNames('dbo', 'jobs', 'sqlserver');
const s = topicStatements(names, subscriptionsTableName(names, 'sqlserver'));
const BIN2 = 'Latin1_General_100_BIN2';

describe('SQL Server topic statement shapes', () => {
  it('the subscriptions table is the transport table with a _subscriptions suffix', () => {
    expect(subscriptionsTableName(names, 'sqlserver')).toBe('jobs_subscriptions');
  });

  it('publish: ONE INSERT … SELECT reads the subscriptions table of exactly @topic and inserts copies insert-if-absent', () => {
    const t = s.publishToTopic.text;
    const statements = t.split(';').filter((x) => x.trim() !== '');
    expect(statements.filter((x) => /INSERT INTO/.test(x))).toHaveLength(1);
    const insert = statements.find((x) => /INSERT INTO/.test(x))!;
    expect(insert).toContain('INSERT INTO [dbo].[jobs] (id, queue, payload_json, headers_json, created_at, available_at, priority, state, seq)');
    // a delayed copy is scheduled; seq in the batch's order on each queue (ready-set.ts)
    expect(insert).toContain(' ELSE @now END,\n       COALESCE(c.priority, 0), CASE WHEN c.delay_ms > 0 THEN 1 END,\n       NEXT VALUE FOR [dbo].[jobs_seq] OVER (ORDER BY c.ord, c.queue)\nFROM (');
    // every copy takes the message's priority (0 when the element has none)
    expect(insert).toContain("        priority smallint '$.priority',");
    expect(insert).toContain('    SELECT v.copy_id AS id, sub.queue, src.payload_json, src.headers_json, src.delay_ms, src.priority, src.ord');
    expect(insert).toContain('OUTPUT inserted.id, inserted.queue, inserted.available_at');
    expect(insert).toContain("CROSS JOIN (SELECT @topic + N':' + s.subscription AS queue FROM [dbo].[jobs_subscriptions] AS s");
    expect(insert).toContain(`s.topic = @topic AND s.topic + N'.' = @topic + N'.' COLLATE ${BIN2}`);
    expect(insert).toContain('DATALENGTH(@topic) + DATALENGTH(s.subscription) <= 398');
    expect(insert).toContain('WHERE NOT EXISTS (SELECT 1 FROM [dbo].[jobs] AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = c.id)');
    expect(insert).not.toContain('HOLDLOCK'); // no key-range locks (H2)
    expect(insert).toContain('DATEADD(NANOSECOND, c.ord * 100, @now)');
    expect(insert).toContain(`CASE WHEN c.delay_ms > 0 THEN ${SPLIT('c.delay_ms').replace('SYSUTCDATETIME()', '@now')} ELSE @now END`);
    // the second result set: every stored copy of the batch on the topic's subscriptions
    expect(t).toMatch(/SELECT existing\.id, existing\.queue, existing\.available_at\s+FROM \[dbo\]\.\[jobs\] AS existing\s+INNER JOIN \(/);
    expect(t).toContain(`) AS c ON existing.id = c.id AND existing.queue = c.queue COLLATE ${BIN2};`);
    expect(typeName(s.publishToTopic, 'batch')).toBe('NVarChar');
    expect(typeName(s.publishToTopic, 'topic')).toBe('NVarChar');
    expect(length(s.publishToTopic, 'topic')).toBe(200);
  });

  it('publish: the copy id is topicCopyId in T-SQL (SHA-256 over the UTF-8 of "{id lower-cased}\\n{queue}", version 8, text form)', () => {
    const t = s.publishToTopic.text;
    expect(t).toContain(`HASHBYTES('SHA2_256', CAST((LOWER(CONVERT(nvarchar(36), src.id)) + NCHAR(10) + sub.queue) COLLATE ${UTF8_COLLATION} AS varchar(max)))`);
    expect(UTF8_COLLATION).toMatch(/_UTF8$/);
    expect(t).toContain('CAST((CAST(SUBSTRING(hash.h, 7, 1) AS int) & 15) | 128 AS binary(1))');
    expect(t).toContain('CAST((CAST(SUBSTRING(hash.h, 9, 1) AS int) & 63) | 128 AS binary(1))');
    expect(t).toContain("21, 0, '-'), 17, 0, '-'), 13, 0, '-'), 9, 0, '-') AS uniqueidentifier) AS copy_id");
  });

  it('record: insert-if-absent under a key-range lock, exact names, never a DELETE', () => {
    const t = s.recordSubscriptions.text;
    expect(t).toContain('INSERT INTO [dbo].[jobs_subscriptions] (topic, subscription)');
    expect(t).toContain('WHERE NOT EXISTS (SELECT 1 FROM [dbo].[jobs_subscriptions] AS existing WITH (UPDLOCK, HOLDLOCK)');
    expect(t).toContain(`existing.topic = src.topic COLLATE ${BIN2} AND existing.topic + N'.' = src.topic + N'.' COLLATE ${BIN2}`);
    expect(t).toContain(`existing.subscription = src.subscription COLLATE ${BIN2}`);
    expect(t).not.toMatch(/DELETE/i);
    expect(typeName(s.recordSubscriptions, 'subscriptions')).toBe('NVarChar');
  });

  it('list: exactly @topic, by name', () => {
    expect(s.topicSubscriptions.text).toBe(
      `SELECT topic, subscription FROM [dbo].[jobs_subscriptions]\nWHERE topic = @topic AND topic + N'.' = @topic + N'.' COLLATE ${BIN2}\nORDER BY subscription;`,
    );
  });
});
