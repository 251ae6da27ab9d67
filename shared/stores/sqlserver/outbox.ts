// Schema version 3 on SQL Server / Azure SQL: publishing from the caller's own transaction (the outbox pattern).
//
//   EXEC {table}_publish @queue, @payload, @id, @correlation_id, @headers, @delay_seconds,
//        @message_id OUTPUT, @inserted OUTPUT
//   EXEC {table}_publish_topic @topic, @payload, @id, @correlation_id, @headers, @delay_seconds,
//        @message_id OUTPUT, @copies OUTPUT
//
// Both call {table}_enqueue, which applies the HTTP publish's rules (shared/transport/publish-request.ts), THROWs
// 50400 (invalid, HTTP 400's twin) or 50413 (too large) before writing anything, and then inserts in ONE
// statement (insert-if-absent), so the rows exist exactly when the caller's transaction commits. Publishers of one
// message id serialise on an applock named after it, held to the caller's commit; a key-range probe (HOLDLOCK)
// would lock the primary key's last range, which every new time-ordered id probes, and so block every other
// publisher until the caller's business transaction commits (and invite deadlocks with its other locks). Ownership chaining (same schema owner, no dynamic SQL) lets a caller holding
// EXECUTE on the wrapper write the table. Needs SQL Server 2019+ / Azure SQL: the UTF-8 collation measures
// payload bytes and hashes topic copy ids over UTF-8 like topicCopyId(). PostgreSQL twins: stores/postgres/outbox.ts.
// No SQL Server runs here: these batches are pinned by shape tests and parsed by the T-SQL grammar check.

import type { MigrationStatement } from '../migration-plan';
import type { SchemaNames } from '../schema-names';
import { quoteIdentifier } from '../../sql/identifiers';
import { MAX_DELAY_SECONDS, MAX_HEADERS_BYTES, MAX_ORDERING_KEY_CHARS, MAX_PRIORITY, MIN_PRIORITY } from '../../transport/publish-request';
import { CORRELATION_ID_HEADER } from '../../transport/types';
import { BIN2, dbClockPlus, exactQueueMatch } from './statements';
import { countOneIntoKeyLines, readySetTables, STATE_QUEUED, STATE_SCHEDULED } from './ready-set';

export const SQL_PUBLISH_MAX_PAYLOAD_BYTES = 262_144;
export const SQLSERVER_PUBLISH_INVALID = 50400;
export const SQLSERVER_PUBLISH_TOO_LARGE = 50413;
/** The per-id publish lock was not granted (the session's LOCK_TIMEOUT, or a deadlock): retry. */
export const SQLSERVER_PUBLISH_LOCK_FAILED = 50409;

const UTF8 = 'Latin1_General_100_BIN2_UTF8';
const q = (n: string) => quoteIdentifier(n, 'sqlserver');
// Code points JavaScript's String.prototype.trim removes (the HTTP rules use trim()).
const JS_WHITESPACE = [9, 10, 11, 12, 13, 32, 160, 5760, 8192, 8193, 8194, 8195, 8196, 8197, 8198, 8199, 8200, 8201, 8202, 8232, 8233, 8239, 8287, 12288, 65279];

export function sqlServerOutboxNames(n: SchemaNames) {
  return {
    publish: `${q(n.schema)}.${q(n.publishRoutine)}`,
    publishTopic: `${q(n.schema)}.${q(n.publishTopicRoutine)}`,
    enqueue: `${q(n.schema)}.${q(n.enqueueRoutine)}`,
  };
}

/** UTF-8 byte length of an nvarchar expression. */
const utf8Bytes = (e: string) => `DATALENGTH(CAST(${e} COLLATE ${UTF8} AS varchar(max)))`;
/** The text has a leading or trailing whitespace character (DATALENGTH, not LEN: LEN ignores trailing spaces). */
const edgeWhitespace = (e: string) =>
  `UNICODE(LEFT(${e}, 1)) IN (${JS_WHITESPACE.join(', ')}) OR UNICODE(RIGHT(${e}, 1)) IN (${JS_WHITESPACE.join(', ')})`;
/** Any code point of `ranges` (inclusive pairs) in the text, compared by code point (BIN2); U+0000 by CHARINDEX. */
const hasCodePoints = (e: string, ranges: Array<[number, number]>) => {
  const cls = ranges.map(([a, b]) => (a === b ? `NCHAR(${a})` : `NCHAR(${a}) + N'-' + NCHAR(${b})`)).join(' + ');
  return `(${e} COLLATE ${BIN2} LIKE N'%[' + ${cls} + N']%' OR CHARINDEX(NCHAR(0) COLLATE ${BIN2}, ${e}) > 0)`;
};
const throwInvalid = (message: string) => `THROW ${SQLSERVER_PUBLISH_INVALID}, ${message}, 1;`;
const throwTooLarge = (message: string) => `THROW ${SQLSERVER_PUBLISH_TOO_LARGE}, ${message}, 1;`;
const UUID_LIKE = `REPLICATE(N'[0-9a-fA-F]', 8) + N'-' + REPLICATE(N'[0-9a-fA-F]', 4) + N'-' + REPLICATE(N'[0-9a-fA-F]', 4) + N'-' + REPLICATE(N'[0-9a-fA-F]', 4) + N'-' + REPLICATE(N'[0-9a-fA-F]', 12)`;

/**
 * topicCopyId() in T-SQL: the first 16 bytes of SHA-256 over the UTF-8 text `{message id lower-cased}\n{queue}` as
 * hex, version nibble 8, variant 10, converted from TEXT (a binary(16) → uniqueidentifier conversion would swap
 * the byte order of the first three groups).
 */
export function copyIdExpression(messageId: string, queue: string): { apply: string; id: string } {
  return {
    apply: `CROSS APPLY (SELECT CONVERT(char(32), CAST(HASHBYTES('SHA2_256', CAST((LOWER(CONVERT(nvarchar(36), ${messageId})) + NCHAR(10) + ${queue}) COLLATE ${UTF8} AS varchar(max))) AS binary(16)), 2) AS h) AS d`,
    id:
      "CONVERT(uniqueidentifier, LEFT(d.h, 8) + '-' + SUBSTRING(d.h, 9, 4) + '-8' + SUBSTRING(d.h, 14, 3) + '-'" +
      " + SUBSTRING('89AB89AB89AB89AB', CHARINDEX(SUBSTRING(d.h, 17, 1), '0123456789ABCDEF'), 1) + SUBSTRING(d.h, 18, 3) + '-' + SUBSTRING(d.h, 21, 12))",
  };
}

/**
 * The shared body: version 3's (and 6's), version 18's with @priority and @ordering_key (HTTP's rules for both), or
 * version 22's, which also files the row in the ready set (ready-set.ts): a delayed row is scheduled, a keyed row is
 * counted into its key under the key row's lock and queued behind the key's head when the key has one, and its seq is
 * drawn after that lock (review H3); an ordering key with a lone surrogate is refused as HTTP refuses it (review L7).
 */
function enqueueProcedure(n: SchemaNames, jobFields = false, readySet = false): string {
  const f = sqlServerOutboxNames(n);
  const t = `${q(n.schema)}.${q(n.transport.table)}`;
  const subs = `${q(n.schema)}.${q(n.subscriptionsTable)}`;
  const copy = copyIdExpression('@message_id', 's.topic + N\':\' + s.subscription');
  const msg = (text: string) => `N'AsyncResponse publish: ${text}'`;
  return [
    `CREATE OR ALTER PROCEDURE ${f.enqueue}`,
    '    @kind nvarchar(5),',
    '    @name nvarchar(max),',
    '    @payload nvarchar(max),',
    '    @id nvarchar(100),',
    '    @correlation_id nvarchar(max),',
    '    @headers nvarchar(max),',
    '    @delay_seconds float,',
    '    @message_id uniqueidentifier OUTPUT,',
    jobFields ? '    @copies int OUTPUT,' : '    @copies int OUTPUT',
    // version 18: after the OUTPUT parameters, defaulted, so a positional call of version 3's shape still binds
    ...(jobFields ? ['    @priority int = 0,', '    @ordering_key nvarchar(max) = NULL'] : []),
    'AS',
    'BEGIN',
    '    SET NOCOUNT ON;',
    '    DECLARE @error nvarchar(2048);',
    '    DECLARE @stored_headers nvarchar(max) = ISNULL(@headers, N\'{}\');',
    '    DECLARE @delay_ms bigint;',
    '    DECLARE @random char(36);',
    '    DECLARE @now datetime2;',
    '    DECLARE @outer_tran int = @@TRANCOUNT;',
    '    DECLARE @lock_result int;',
    '    DECLARE @lock_resource nvarchar(255);',
    ...(readySet ? ['    DECLARE @queue nvarchar(200), @key nvarchar(200), @pending int, @seq bigint, @i int, @unit int;'] : []),
    "    -- the queue or topic name: validateQueueName's rules (length in UTF-16 units, as JavaScript counts)",
    '    IF @name IS NULL OR DATALENGTH(@name) = 0 OR DATALENGTH(@name) / 2 > 200',
    '    BEGIN',
    `        SET @error = ${msg("the ' + @kind + N' name must be 1 to 200 characters")};`,
    `        ${throwInvalid('@error')}`,
    '    END;',
    `    IF ${edgeWhitespace('@name')}`,
    '    BEGIN',
    `        SET @error = ${msg("the ' + @kind + N' name must not begin or end with whitespace")};`,
    `        ${throwInvalid('@error')}`,
    '    END;',
    `    IF ${hasCodePoints('@name', [[1, 31], [127, 127]])}`,
    '    BEGIN',
    `        SET @error = ${msg("the ' + @kind + N' name must not contain control characters")};`,
    `        ${throwInvalid('@error')}`,
    '    END;',
    `    -- payload: required, ONE JSON value (scalars too: wrapped in [ ] it is an array of exactly one element),`,
    `    -- at most ${SQL_PUBLISH_MAX_PAYLOAD_BYTES} UTF-8 bytes, stored as given`,
    '    IF @payload IS NULL',
    `        ${throwInvalid(msg('payload is required'))}`,
    // two IFs: T-SQL does not promise to evaluate OR left to right, and OPENJSON over invalid text raises 13609
    "    IF ISJSON(N'[' + @payload + N']') = 0",
    `        ${throwInvalid(msg('payload is not valid JSON'))}`,
    "    IF (SELECT COUNT(*) FROM OPENJSON(N'[' + @payload + N']')) <> 1",
    `        ${throwInvalid(msg('payload is not valid JSON'))}`,
    `    IF ${utf8Bytes('@payload')} > ${SQL_PUBLISH_MAX_PAYLOAD_BYTES}`,
    '    BEGIN',
    `        SET @error = ${msg(`payload is ' + CONVERT(nvarchar(20), ${utf8Bytes('@payload')}) + N' bytes; the limit is ${SQL_PUBLISH_MAX_PAYLOAD_BYTES}`)};`,
    `        ${throwTooLarge('@error')}`,
    '    END;',
    '    -- id: a UUID in its 8-4-4-4-12 text form; else the time-ordered SQL Server layout of transport/ids.ts',
    '    -- (millisecond timestamp in the last group, version 8; random bits from NEWID() where ids.ts keeps a counter)',
    '    IF @id IS NOT NULL',
    '    BEGIN',
    `        IF DATALENGTH(@id) <> 72 OR NOT (@id COLLATE ${BIN2} LIKE ${UUID_LIKE})`,
    `            ${throwInvalid(msg('id must be a UUID'))}`,
    '        SET @message_id = CONVERT(uniqueidentifier, @id);',
    '    END',
    '    ELSE',
    '    BEGIN',
    '        SET @random = CONVERT(char(36), NEWID());',
    "        SET @message_id = CONVERT(uniqueidentifier, LEFT(@random, 14) + '8' + SUBSTRING(@random, 16, 9)",
    "            + RIGHT(CONVERT(char(16), CAST(DATEDIFF_BIG(MILLISECOND, '19700101', SYSUTCDATETIME()) AS binary(8)), 2), 12));",
    '    END;',
    `    -- headers: a JSON object of at most 64 string values, ${MAX_HEADERS_BYTES} UTF-8 bytes as given; AR-* names are the transport's`,
    '    IF @headers IS NOT NULL',
    '    BEGIN',
    "        IF ISJSON(@headers) = 0",
    `            ${throwInvalid(msg('headers are not valid JSON'))}`,
    "        IF LEFT(LTRIM(REPLACE(REPLACE(REPLACE(@headers, NCHAR(9), N''), NCHAR(10), N''), NCHAR(13), N'')), 1) <> N'{'",
    `            ${throwInvalid(msg('headers must be a JSON object of string values'))}`,
    `        IF ${utf8Bytes('@headers')} > ${MAX_HEADERS_BYTES}`,
    '        BEGIN',
    `            SET @error = ${msg(`headers are ' + CONVERT(nvarchar(20), ${utf8Bytes('@headers')}) + N' bytes as JSON; the limit is ${MAX_HEADERS_BYTES}`)};`,
    `            ${throwTooLarge('@error')}`,
    '        END;',
    '        IF (SELECT COUNT(*) FROM OPENJSON(@headers)) > 64',
    `            ${throwInvalid(msg('headers have more than 64 entries'))}`,
    "        SELECT TOP (1) @error = N'AsyncResponse publish: header ' + LEFT(h.[key], 64) + N' ' + h.problem",
    '        FROM (',
    '            SELECT j.[key], CASE',
    "                WHEN j.[type] <> 1 THEN N'must be a string'",
    "                WHEN DATALENGTH(j.[key]) = 0 OR DATALENGTH(j.[key]) / 2 > 256 THEN N'name must be 1 to 256 characters'",
    `                WHEN j.[key] COLLATE ${BIN2} = N'__proto__' THEN N'is not a usable header name'`,
    `                WHEN ${hasCodePoints('j.[key]', [[1, 31], [127, 127]])} THEN N'name must not contain control characters'`,
    `                WHEN ${hasCodePoints('j.[value]', [[1, 8], [10, 31], [127, 127]])} THEN N'must not contain control characters (tab is allowed)'`,
    `                WHEN LOWER(LEFT(j.[key], 3)) = N'ar-' THEN N'is reserved: AR-* headers are set by the transport (use @correlation_id for ${CORRELATION_ID_HEADER})'`,
    '            END AS problem',
    '            FROM OPENJSON(@headers) AS j',
    '        ) AS h',
    '        WHERE h.problem IS NOT NULL;',
    '        IF @error IS NOT NULL',
    `            ${throwInvalid('@error')}`,
    '    END;',
    `    -- correlation id: shared/correlation-id.ts's rules; stored as the ${CORRELATION_ID_HEADER} header`,
    '    IF @correlation_id IS NOT NULL',
    '    BEGIN',
    '        IF DATALENGTH(@correlation_id) = 0 OR DATALENGTH(@correlation_id) / 2 > 400',
    `            ${throwInvalid(msg('@correlation_id must be 1 to 400 characters'))}`,
    `        IF ${edgeWhitespace('@correlation_id')}`,
    `            ${throwInvalid(msg('@correlation_id must not begin or end with whitespace'))}`,
    `        IF ${hasCodePoints('@correlation_id', [[1, 31], [127, 159]])}`,
    `            ${throwInvalid(msg('@correlation_id must not contain control characters'))}`,
    `        SET @stored_headers = JSON_MODIFY(@stored_headers, N'$."${CORRELATION_ID_HEADER}"', @correlation_id);`,
    '    END;',
    `    -- delay: 0 to ${MAX_DELAY_SECONDS} seconds (NULL = 0), rounded to milliseconds like Math.round`,
    `    IF @delay_seconds IS NOT NULL AND NOT (@delay_seconds >= 0 AND @delay_seconds <= ${MAX_DELAY_SECONDS})`,
    `        ${throwInvalid(msg(`@delay_seconds must be a number from 0 to ${MAX_DELAY_SECONDS} (3650 days)`))}`,
    '    SET @delay_ms = CAST(FLOOR(ISNULL(@delay_seconds, 0) * 1000 + 0.5) AS bigint);',
    ...(jobFields ? jobFieldRules(msg, readySet) : []),
    `    IF @kind = N'topic' AND EXISTS (SELECT 1 FROM ${subs} AS s WHERE ${exactQueueMatch('s.topic', 'name')} AND DATALENGTH(s.topic + N':' + s.subscription) / 2 > 200)`,
    `        ${throwInvalid(msg('a subscription queue name of this topic is longer than 200 characters'))}`,
    '    -- one publisher of this message id (and so of its copies) at a time, until the outermost transaction',
    "    -- ends: the lock is the transaction's, so inside the caller's it lasts to the caller's commit",
    '    IF @outer_tran = 0 BEGIN TRANSACTION;',
    "    SET @lock_resource = N'asyncresponse:publish:' + LOWER(CONVERT(nvarchar(36), @message_id));",
    "    EXEC @lock_result = sp_getapplock @Resource = @lock_resource, @LockMode = 'Exclusive', @LockOwner = 'Transaction';",
    '    IF @lock_result < 0',
    '    BEGIN',
    '        IF @outer_tran = 0 ROLLBACK TRANSACTION;',
    `        THROW ${SQLSERVER_PUBLISH_LOCK_FAILED}, N'AsyncResponse publish: the lock on this message id was not granted (lock timeout or deadlock); retry the publish.', 1;`,
    '    END;',
    ...(readySet ? readySetInsert(n) : plainInsert(n, jobFields)),
    '    IF @outer_tran = 0 COMMIT TRANSACTION;',
    'END',
  ].join('\n');
}

/** Versions 3, 6 and 18: one INSERT of the message or of its topic copies. */
function plainInsert(n: SchemaNames, jobFields: boolean): string[] {
  const t = `${q(n.schema)}.${q(n.transport.table)}`;
  const subs = `${q(n.schema)}.${q(n.subscriptionsTable)}`;
  const copy = copyIdExpression('@message_id', 's.topic + N\':\' + s.subscription');
  return [
    '    -- one statement: the message on its queue, or one copy per subscription with the id topicCopyId() derives;',
    '    -- ids already stored are skipped',
    '    SET @now = SYSUTCDATETIME();',
    `    INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at${jobFields ? ', priority, ordering_key' : ''})`,
    '    SELECT target.id, target.queue, @payload, @stored_headers, @now,',
    `           CASE WHEN @delay_ms > 0 THEN ${dbClockPlus('@delay_ms', '@now')} ELSE @now END${jobFields ? ',' : ''}`,
    ...(jobFields ? ['           CAST(ISNULL(@priority, 0) AS smallint), CAST(@ordering_key AS nvarchar(200))'] : []),
    '    FROM (',
    "        SELECT @message_id AS id, CAST(@name AS nvarchar(200)) AS queue WHERE @kind = N'queue'",
    '        UNION ALL',
    `        SELECT ${copy.id}, s.topic + N':' + s.subscription`,
    `        FROM ${subs} AS s`,
    `        ${copy.apply}`,
    `        WHERE @kind = N'topic' AND ${exactQueueMatch('s.topic', 'name')}`,
    '    ) AS target',
    `    WHERE NOT EXISTS (SELECT 1 FROM ${t} AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = target.id);`,
    '    SET @copies = @@ROWCOUNT;',
  ];
}

/**
 * Version 22: the queue message (its key counted under the key row's lock first, UPDLOCK and HOLDLOCK held to the
 * outermost transaction's end, so publishers of one key line up; then its seq drawn) or the topic copies (seq from the
 * column's default), each filed in the ready set. Two statements instead of one INSERT over a UNION ALL: NEXT VALUE FOR
 * is not allowed in a statement with UNION ALL.
 */
function readySetInsert(n: SchemaNames): string[] {
  const t = `${q(n.schema)}.${q(n.transport.table)}`;
  const subs = `${q(n.schema)}.${q(n.subscriptionsTable)}`;
  const { k, seq } = readySetTables(n.transport);
  const copy = copyIdExpression('@message_id', 's.topic + N\':\' + s.subscription');
  const key = 'queue = @queue AND ordering_key = @key';
  const availableAt = `CASE WHEN @delay_ms > 0 THEN ${dbClockPlus('@delay_ms', '@now')} ELSE @now END`;
  return [
    '    SET @now = SYSUTCDATETIME();',
    "    IF @kind = N'queue'",
    '    BEGIN',
    '        SET @queue = CAST(@name AS nvarchar(200));',
    '        SET @key = CAST(@ordering_key AS nvarchar(200));',
    '        SET @copies = 0;',
    `        IF NOT EXISTS (SELECT 1 FROM ${t} AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = @message_id)`,
    '        BEGIN',
    '            IF @key IS NOT NULL',
    '            BEGIN',
    ...countOneIntoKeyLines(k, key, '@queue', 16),
    '            END;',
    `            SET @seq = NEXT VALUE FOR ${seq};`,
    `            INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at, priority, ordering_key, state, seq)`,
    `            VALUES (@message_id, @queue, @payload, @stored_headers, @now, ${availableAt},`,
    `                    CAST(ISNULL(@priority, 0) AS smallint), @key, CASE WHEN @pending > 0 THEN ${STATE_QUEUED} WHEN @delay_ms > 0 THEN ${STATE_SCHEDULED} END, @seq);`,
    '            SET @copies = 1;',
    '        END;',
    '    END',
    '    ELSE',
    '    BEGIN',
    `        INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at, priority, state)`,
    `        SELECT ${copy.id}, s.topic + N':' + s.subscription, @payload, @stored_headers, @now, ${availableAt},`,
    `               CAST(ISNULL(@priority, 0) AS smallint), CASE WHEN @delay_ms > 0 THEN ${STATE_SCHEDULED} END`,
    `        FROM ${subs} AS s`,
    `        ${copy.apply}`,
    `        WHERE ${exactQueueMatch('s.topic', 'name')}`,
    `          AND NOT EXISTS (SELECT 1 FROM ${t} AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = ${copy.id});`,
    '        SET @copies = @@ROWCOUNT;',
    '    END;',
  ];
}

/** Version 18's checks of @priority and @ordering_key: publish-request.ts's rules, THROW 50400 like the others. */
function jobFieldRules(msg: (text: string) => string, wellFormed = false): string[] {
  return [
    '    -- priority: a smallint (NULL = 0), higher is claimed first',
    `    IF @priority IS NOT NULL AND (@priority < ${MIN_PRIORITY} OR @priority > ${MAX_PRIORITY})`,
    `        ${throwInvalid(msg(`@priority must be an integer from ${MIN_PRIORITY} to ${MAX_PRIORITY} (higher is claimed first)`))}`,
    `    -- ordering key: a queue publish's only; 1 to ${MAX_ORDERING_KEY_CHARS} characters (UTF-16 units), no control characters`,
    '    IF @ordering_key IS NOT NULL',
    '    BEGIN',
    "        IF @kind <> N'queue'",
    `            ${throwInvalid(msg('ordering keys belong to a queue publish'))}`,
    `        IF DATALENGTH(@ordering_key) = 0 OR DATALENGTH(@ordering_key) / 2 > ${MAX_ORDERING_KEY_CHARS}`,
    `            ${throwInvalid(msg(`@ordering_key must be 1 to ${MAX_ORDERING_KEY_CHARS} characters`))}`,
    `        IF ${hasCodePoints('@ordering_key', [[1, 31], [127, 127]])}`,
    `            ${throwInvalid(msg('@ordering_key must not contain control characters'))}`,
    ...(wellFormed ? loneSurrogateRule(msg) : []),
    '    END;',
  ];
}

/**
 * Version 22: an ordering key must be well-formed UTF-16, as orderingKeyOf (publish-request.ts) requires: a high
 * surrogate followed by a low one, no low one alone. Compared by UTF-16 code unit (BIN2, not a supplementary-character
 * collation); the walk runs only for a key that holds a surrogate at all.
 */
function loneSurrogateRule(msg: (text: string) => string): string[] {
  const unit = (at: string) => `UNICODE(SUBSTRING(@ordering_key COLLATE ${BIN2}, ${at}, 1))`;
  const invalid = throwInvalid(msg('@ordering_key must not contain lone surrogates'));
  return [
    `        IF @ordering_key COLLATE ${BIN2} LIKE N'%[' + NCHAR(55296) + N'-' + NCHAR(57343) + N']%'`,
    '        BEGIN',
    '            SET @i = 1;',
    '            WHILE @i <= DATALENGTH(@ordering_key) / 2',
    '            BEGIN',
    `                SET @unit = ${unit('@i')};`,
    '                IF @unit BETWEEN 56320 AND 57343',
    `                    ${invalid}`,
    '                IF @unit BETWEEN 55296 AND 56319',
    '                BEGIN',
    `                    IF @i = DATALENGTH(@ordering_key) / 2 OR ${unit('@i + 1')} NOT BETWEEN 56320 AND 57343`,
    `                        ${invalid}`,
    '                    SET @i += 1;',
    '                END;',
    '                SET @i += 1;',
    '            END;',
    '        END;',
  ];
}

function wrapper(n: SchemaNames, kind: 'queue' | 'topic', jobFields = false): string {
  const f = sqlServerOutboxNames(n);
  const output = kind === 'queue' ? '    @inserted bit = NULL OUTPUT' : '    @copies int = NULL OUTPUT';
  // version 18's parameters come last, defaulted: callers of version 3's shape (positional or named) are unchanged
  const added = kind === 'queue' ? ['    @priority int = 0,', '    @ordering_key nvarchar(max) = NULL'] : ['    @priority int = 0'];
  const passed = kind === 'queue' ? ', @priority, @ordering_key' : ', @priority, NULL';
  return [
    `CREATE OR ALTER PROCEDURE ${kind === 'queue' ? f.publish : f.publishTopic}`,
    `    @${kind} nvarchar(max),`,
    '    @payload nvarchar(max),',
    '    @id nvarchar(100) = NULL,',
    '    @correlation_id nvarchar(max) = NULL,',
    '    @headers nvarchar(max) = NULL,',
    '    @delay_seconds float = 0,',
    '    @message_id uniqueidentifier = NULL OUTPUT,',
    ...(jobFields ? [`${output},`, ...added] : [output]),
    'AS',
    'BEGIN',
    '    SET NOCOUNT ON;',
    ...(kind === 'queue' ? ['    DECLARE @copies int;'] : []),
    `    EXEC ${f.enqueue} N'${kind}', @${kind}, @payload, @id, @correlation_id, @headers, @delay_seconds, @message_id OUTPUT, @copies OUTPUT${jobFields ? passed : ''};`,
    ...(kind === 'queue' ? ['    SET @inserted = CASE WHEN @copies > 0 THEN 1 ELSE 0 END;'] : []),
    'END',
  ].join('\n');
}

/** Version 3's batches (each CREATE OR ALTER PROCEDURE must be alone in its batch). */
export function sqlServerOutboxStatements(n: SchemaNames): MigrationStatement[] {
  return [
    { name: 'create enqueue procedure', text: enqueueProcedure(n) },
    { name: 'create publish procedure', text: wrapper(n, 'queue') },
    { name: 'create publish topic procedure', text: wrapper(n, 'topic') },
  ];
}

/**
 * Version 18: priority and ordering keys from SQL (issue 17 §1). CREATE OR ALTER keeps each procedure's grants; the
 * new parameters come last with defaults, so existing calls bind as before.
 */
export function sqlServerOutboxJobFieldsStatements(n: SchemaNames): MigrationStatement[] {
  return [
    { name: 'alter enqueue procedure: job fields', text: enqueueProcedure(n, true) },
    { name: 'alter publish procedure: job fields', text: wrapper(n, 'queue', true) },
    { name: 'alter publish topic procedure: job fields', text: wrapper(n, 'topic', true) },
  ];
}

/**
 * Version 22: the ready set (issue 25). The enqueue body files each row in it (see enqueueProcedure); the wrappers are
 * unchanged (same parameters), so only the body is altered and every grant stays. PostgreSQL's twin is its version 18.
 */
export function sqlServerOutboxReadySetStatements(n: SchemaNames): MigrationStatement[] {
  return [{ name: 'alter enqueue procedure: ready set', text: enqueueProcedure(n, true, true) }];
}
