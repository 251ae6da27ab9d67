// Every T-SQL statement of the SQL Server channel store (spec §2.2–2.3), as pure functions of the validated
// channel names. Only validated, bracket-quoted identifiers are spliced into the text; every value is a typed
// parameter. Same conventions as the transport's statements.ts, whose helpers (the schema applock and the other
// guarded DDL building blocks, the ms-split DATEADD) are reused so both stores serialise their DDL on one resource.
//
// NEXT VALUE FOR is not allowed inside CASE/COALESCE, in an OUTPUT clause, with TOP, in a MERGE or in a WHERE
// clause, so the delivery claim draws its sequence value into a variable first and the UPDATE only reads it.

import * as sql from 'mssql';
import type { CallbackJobTarget, ChannelNames, ChannelTable } from '../../channel/types';
import { quoteIdentifier, transportNames, validateIdentifier } from '../../sql/identifiers';
import {
  BIN2,
  createIndexIfMissing,
  createSchemaIfMissing,
  createTableIfMissing,
  dbClockPlus,
  nameLiteral,
  schemaApplockLines,
  type Statement,
} from './statements';

export const CHANNEL_PRUNE_BATCH = 1000;
/** SQL Server's 2,100-parameter cap is why the spec hydrates in statements of at most 1,000 ids. */
export const HYDRATE_CHUNK = 1000;
export const HEARTBEAT_CHUNK = 1000;
export const BIGINT_MAX = '9223372036854775807';

const types = {
  correlation: () => sql.NVarChar(400),
  id: () => sql.UniqueIdentifier(),
  ms: () => sql.BigInt(),
  text: () => sql.NVarChar(sql.MAX),
  instance: () => sql.NVarChar(200),
  count: () => sql.Int(),
  /** a DbTimestamp: 'yyyy-mm-dd hh:mi:ss.fffffff' */
  exact: () => sql.VarChar(27),
  sysname: () => sql.NVarChar(128),
  queue: () => sql.NVarChar(200),
  flag: () => sql.Bit(),
};

const q = (name: string) => quoteIdentifier(name, 'sqlserver');

/** Re-validates every name that reaches statement text (the names normally come from channelNames()). */
function checked(names: ChannelNames): ChannelNames {
  const entries: Array<[string, string]> = [
    ['Schema name', names.schema],
    ['Recovery state table name', names.recoveryTable],
    ['Channel message table name', names.messageTable],
    ['Channel subscriber table name', names.subscriberTable],
    ['Ack sequence name', names.ackSequence],
    ['Recovery expiry index name', names.recoveryExpiresIndex],
    ['Message correlation index name', names.messageCorrelationCreatedIndex],
    ['Message expiry index name', names.messageExpiresIndex],
    ['Subscriber expiry index name', names.subscriberExpiresIndex],
  ];
  for (const [what, value] of entries) validateIdentifier(value, what, 'sqlserver');
  return names;
}

export interface QualifiedChannelNames {
  recovery: string;
  messages: string;
  subscribers: string;
  sequence: string;
}

export function qualifiedChannelNames(names: ChannelNames): QualifiedChannelNames {
  const n = checked(names);
  const s = q(n.schema);
  return {
    recovery: `${s}.${q(n.recoveryTable)}`,
    messages: `${s}.${q(n.messageTable)}`,
    subscribers: `${s}.${q(n.subscriberTable)}`,
    sequence: `${s}.${q(n.ackSequence)}`,
  };
}

// ---- DDL ------------------------------------------------------------------------------------------------

/** Column lists exactly as spec §2.2 documents them (shared by the DDL batch and the printed script). */
export function recoveryTableBody(): string {
  return [
    `    correlation_id nvarchar(400) COLLATE ${BIN2} NOT NULL,`,
    '    registration_id uniqueidentifier NOT NULL,',
    '    state_json nvarchar(max) NOT NULL,',
    '    expires_at datetime2 NOT NULL,',
    '    registered_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(),',
    '    PRIMARY KEY (correlation_id, registration_id)',
  ].join('\n');
}

export function messageTableBody(): string {
  return [
    '    id uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED,',
    `    correlation_id nvarchar(400) COLLATE ${BIN2} NOT NULL,`,
    '    envelope_json nvarchar(max) NOT NULL,',
    '    created_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(),',
    '    expires_at datetime2 NOT NULL,',
    '    acked_at datetime2 NULL,',
    '    acked_seq bigint NULL,',
    '    recovery_claimed bit NOT NULL DEFAULT 0',
  ].join('\n');
}

export function subscriberTableBody(): string {
  return [
    `    correlation_id nvarchar(400) COLLATE ${BIN2} NOT NULL,`,
    '    registration_id uniqueidentifier NOT NULL,',
    '    instance_id nvarchar(200) NOT NULL,',
    '    expires_at datetime2 NOT NULL,',
    '    PRIMARY KEY (correlation_id, registration_id)',
  ].join('\n');
}

export const RECOVERY_EXPIRES_KEYS = ['expires_at'] as const;
export const MESSAGE_CORRELATION_CREATED_KEYS = ['correlation_id', 'created_at'] as const;
export const MESSAGE_EXPIRES_KEYS = ['expires_at'] as const;
export const SUBSCRIBER_EXPIRES_KEYS = ['expires_at'] as const;

/** The declared indexes: (owning table, index name, key columns). */
export function channelIndexes(names: ChannelNames): Array<{ table: string; index: string; keys: readonly string[] }> {
  return [
    { table: names.recoveryTable, index: names.recoveryExpiresIndex, keys: RECOVERY_EXPIRES_KEYS },
    { table: names.messageTable, index: names.messageCorrelationCreatedIndex, keys: MESSAGE_CORRELATION_CREATED_KEYS },
    { table: names.messageTable, index: names.messageExpiresIndex, keys: MESSAGE_EXPIRES_KEYS },
    { table: names.subscriberTable, index: names.subscriberExpiresIndex, keys: SUBSCRIBER_EXPIRES_KEYS },
  ];
}

/** Each declared index behind its guard (the DDL batch and the printed script). */
function channelIndexDdl(names: ChannelNames): Array<string[]> {
  return channelIndexes(names).map((i) => createIndexIfMissing(`${q(names.schema)}.${q(i.table)}`, i.index, i.keys));
}

/**
 * The upgrade of a message table created before acked_seq existed (spec "Upgrading a manually managed
 * schema"): the column, then its sequence. Idempotent; safe while older hosts still run. The column guard reads
 * sys.columns and the sequence guard OBJECT_ID(…, N'SO') (the spec writes COL_LENGTH and sys.sequences, which
 * SQL Server answers the same): the idioms of the other guards here (version 4's column, the tables'
 * OBJECT_ID), and ones a T-SQL engine without sys.sequences whose COL_LENGTH reads committed metadata only
 * (Babelfish) still runs, so the whole DDL is executed there.
 */
export function channelAckSequenceMigration(names: ChannelNames): string {
  const t = qualifiedChannelNames(names);
  return [
    `IF NOT EXISTS (SELECT 1 FROM sys.columns WHERE object_id = OBJECT_ID(${nameLiteral(t.messages)}, N'U') AND name = N'acked_seq')`,
    `    ALTER TABLE ${t.messages} ADD acked_seq bigint NULL;`,
    // OBJECT_ID with type SO, like the table guards' OBJECT_ID(…, N'U'): the qualified name the CREATE uses
    `IF OBJECT_ID(${nameLiteral(t.sequence)}, N'SO') IS NULL`,
    `    CREATE SEQUENCE ${t.sequence} AS bigint START WITH 1;`,
  ].join('\n');
}

/**
 * The whole channel DDL in ONE batch, run inside a transaction under the schema applock the transport and
 * the durable-flow store also take (spec §3.1): schema, three tables, the acked_seq upgrade, the sequence and
 * the four indexes, each behind its own guard. The channel's tables are small, so the indexes stay under the
 * schema lock. PostgreSQL: pg_advisory_xact_lock on the same resource, CREATE … IF NOT EXISTS.
 */
export function channelDdl(names: ChannelNames): Statement<never> {
  const t = qualifiedChannelNames(names);
  return {
    text: [
      ...schemaApplockLines(names.schema, 'channel'),
      ...createSchemaIfMissing(names.schema),
      ...createTableIfMissing(t.recovery, recoveryTableBody()),
      ...createTableIfMissing(t.messages, messageTableBody()),
      channelAckSequenceMigration(names),
      ...createTableIfMissing(t.subscribers, subscriberTableBody()),
      ...channelIndexDdl(names).flat(),
    ].join('\n'),
    params: {},
  };
}

/** A human-runnable, idempotent DDL script for `npm run schema -- print --dialect sqlserver`. */
export function printSqlServerChannelSchema(names: ChannelNames): string {
  const t = qualifiedChannelNames(names);
  return [
    `-- AsyncResponse channel schema for SQL Server / Azure SQL: ${t.recovery}, ${t.messages}, ${t.subscribers}`,
    `-- and the sequence ${t.sequence}.`,
    '-- Idempotent: every object is guarded, so the script can run more than once (it also upgrades a message',
    '-- table created before acked_seq existed). Every correlation_id column must keep a _BIN2 collation.',
    `-- The app's identity needs UPDATE on the sequence (db_datawriter does not cover it): GRANT UPDATE ON SCHEMA::${quoteIdentifier(names.schema, 'sqlserver')} TO <app user>;`,
    ...createSchemaIfMissing(names.schema),
    'GO',
    ...createTableIfMissing(t.recovery, recoveryTableBody()),
    'GO',
    ...createTableIfMissing(t.messages, messageTableBody()),
    'GO',
    channelAckSequenceMigration(names),
    'GO',
    ...createTableIfMissing(t.subscribers, subscriberTableBody()),
    'GO',
    ...channelIndexDdl(names).flatMap((index) => [...index, 'GO']),
    '',
  ].join('\n');
}

// ---- recovery registrations -----------------------------------------------------------------------------

/**
 * Upsert keyed by (correlation_id, registration_id), refused (no row comes back) while the correlation id
 * already has @max_registrations OTHER unexpired registrations. The count reads the id's key range under
 * UPDLOCK, HOLDLOCK inside the transaction, so concurrent saves of one correlation id serialise and the cap
 * holds under races; HOLDLOCK on the MERGE makes its existence check a key-range lock too. The ON clause
 * compares the parameters directly (a parameter takes the column's collation, so the PK is seeked).
 * Returns expires_at.
 * PostgreSQL: pg_advisory_xact_lock on the correlation id, then INSERT … SELECT … WHERE (count) < $5
 * ON CONFLICT (correlation_id, registration_id) DO UPDATE … RETURNING expires_at.
 */
export function saveRegistration(
  names: ChannelNames,
): Statement<'correlation_id' | 'registration_id' | 'state_json' | 'ttl_ms' | 'max_registrations'> {
  const t = qualifiedChannelNames(names);
  const expires = dbClockPlus('@ttl_ms');
  return {
    text: [
      'SET XACT_ABORT ON;',
      'BEGIN TRAN;',
      'DECLARE @others int = (',
      `    SELECT COUNT(*) FROM ${t.recovery} WITH (UPDLOCK, HOLDLOCK)`,
      '    WHERE correlation_id = @correlation_id AND registration_id <> @registration_id AND expires_at > SYSUTCDATETIME());',
      'IF @others < @max_registrations',
      `    MERGE ${t.recovery} WITH (HOLDLOCK) AS target`,
      '    USING (SELECT 1 AS one) AS src',
      '    ON target.correlation_id = @correlation_id AND target.registration_id = @registration_id',
      '    WHEN MATCHED THEN',
      `        UPDATE SET state_json = @state_json, expires_at = ${expires}, registered_at = SYSUTCDATETIME()`,
      '    WHEN NOT MATCHED THEN',
      '        INSERT (correlation_id, registration_id, state_json, expires_at, registered_at)',
      `        VALUES (@correlation_id, @registration_id, @state_json, ${expires}, SYSUTCDATETIME())`,
      '    OUTPUT inserted.expires_at;',
      'COMMIT;',
    ].join('\n'),
    params: {
      correlation_id: types.correlation(),
      registration_id: types.id(),
      state_json: types.text(),
      ttl_ms: types.ms(),
      max_registrations: types.count(),
    },
  };
}

/**
 * Unexpired registrations of one correlation id, oldest first. No prune here: expired rows are invisible to
 * this read and the channel's bounded prune (pruneExpiredBatch('recovery')) removes them table-wide.
 */
export function loadRegistrations(names: ChannelNames): Statement<'correlation_id'> {
  return {
    text: [
      'SELECT correlation_id, registration_id, state_json, registered_at, expires_at',
      `FROM ${qualifiedChannelNames(names).recovery}`,
      'WHERE correlation_id = @correlation_id AND expires_at > SYSUTCDATETIME()',
      'ORDER BY registered_at, registration_id;',
    ].join('\n'),
    params: { correlation_id: types.correlation() },
  };
}

export function deleteRegistration(names: ChannelNames): Statement<'correlation_id' | 'registration_id'> {
  return {
    text: [
      `DELETE FROM ${qualifiedChannelNames(names).recovery}`,
      'WHERE correlation_id = @correlation_id AND registration_id = @registration_id;',
      'SELECT @@ROWCOUNT AS affected;',
    ].join('\n'),
    params: { correlation_id: types.correlation(), registration_id: types.id() },
  };
}

// ---- messages -------------------------------------------------------------------------------------------

/**
 * Insert-if-absent: the NOT EXISTS probe holds UPDLOCK, HOLDLOCK (a key-range lock), so two publishers of one
 * id serialise instead of racing to 2627. Exactly one row comes back, tagged `inserted`: the new row's
 * columns, or (nothing inserted) the STORED row's created_at and settlement columns. No row at all = the
 * duplicate's row is gone (expired and pruned).
 * PostgreSQL: INSERT … ON CONFLICT (id) DO NOTHING RETURNING …, then SELECT … WHERE id = $1.
 */
export function insertMessage(names: ChannelNames): Statement<'id' | 'correlation_id' | 'envelope_json' | 'retention_ms'> {
  const t = qualifiedChannelNames(names);
  return {
    text: [
      `INSERT INTO ${t.messages} (id, correlation_id, envelope_json, expires_at)`,
      'OUTPUT inserted.created_at, inserted.acked_at, inserted.acked_seq, inserted.correlation_id, CAST(1 AS bit) AS inserted',
      `SELECT @id, @correlation_id, @envelope_json, ${dbClockPlus('@retention_ms')}`,
      `WHERE NOT EXISTS (SELECT 1 FROM ${t.messages} WITH (UPDLOCK, HOLDLOCK) WHERE id = @id);`,
      'IF @@ROWCOUNT = 0',
      `    SELECT created_at, acked_at, acked_seq, correlation_id, CAST(0 AS bit) AS inserted FROM ${t.messages} WHERE id = @id;`,
    ].join('\n'),
    params: { id: types.id(), correlation_id: types.correlation(), envelope_json: types.text(), retention_ms: types.ms() },
  };
}

/**
 * A datetime2(7) rendered as the port's DbTimestamp: 'yyyy-mm-dd hh:mi:ss.fffffff', style 121, always 27
 * characters (every datetime2(7) digit), so the text is exact and orders like the instant it names.
 */
export function exactText(expression: string): string {
  return `CONVERT(varchar(27), ${expression}, 121)`;
}

/** A DbTimestamp parameter back to the exact instant (style 121 accepts 1–7 fraction digits, or none). */
export function exactInstant(param: string): string {
  return `CONVERT(datetime2(7), @${param}, 121)`;
}

const MESSAGE_HEADER_COLUMNS = `id, correlation_id, created_at, ${exactText('created_at')} AS created_at_exact, acked_at, acked_seq, recovery_claimed`;

/**
 * One keyset page (created_at, id) of a correlation id's unexpired, not recovery-claimed messages a waiter
 * with the watermark (@started_at, @started_seq) may receive: unacknowledged ones, and ones acknowledged after
 * it registered — a later tick, or the same tick with a later sequence draw (spec §2.6; a legacy row acked
 * without a sequence never wins a tie). Acknowledged rows come back header-only. The watermark and the cursor
 * arrive as exact text (DbTimestamp) and are converted once into datetime2(7) locals: a JS Date would cut
 * them to the millisecond. The cursor predicate is the keyset condition with a sargable lower bound
 * (`created_at >= @after AND (created_at > @after OR id > @after_id)`), so the (correlation_id, created_at)
 * index is seeked from the cursor on; `id > @after_id` compares uniqueidentifiers in SQL Server's own GUID
 * order, the order of the ORDER BY.
 * PostgreSQL: … AND (created_at, id) > ($5, $6) ORDER BY created_at, id LIMIT $4.
 */
export function loadPending(
  names: ChannelNames,
  withCursor: true,
): Statement<'limit' | 'correlation_id' | 'started_at' | 'started_seq' | 'after_created_at' | 'after_id'>;
export function loadPending(names: ChannelNames, withCursor: false): Statement<'limit' | 'correlation_id' | 'started_at' | 'started_seq'>;
export function loadPending(names: ChannelNames, withCursor: boolean): Statement {
  const params: Record<string, sql.ISqlType> = {
    limit: types.count(),
    correlation_id: types.correlation(),
    started_at: types.exact(),
    started_seq: types.ms(),
  };
  if (withCursor) Object.assign(params, { after_created_at: types.exact(), after_id: types.id() });
  return {
    text: [
      `DECLARE @started datetime2(7) = ${exactInstant('started_at')};`,
      ...(withCursor ? [`DECLARE @after datetime2(7) = ${exactInstant('after_created_at')};`] : []),
      `SELECT TOP (@limit) ${MESSAGE_HEADER_COLUMNS},`,
      '       CASE WHEN acked_at IS NULL THEN envelope_json END AS envelope_json',
      `FROM ${qualifiedChannelNames(names).messages}`,
      'WHERE correlation_id = @correlation_id',
      '  AND expires_at > SYSUTCDATETIME()',
      '  AND recovery_claimed = 0',
      '  AND (acked_at IS NULL OR acked_at > @started OR (acked_at = @started AND acked_seq > @started_seq))',
      ...(withCursor ? ['  AND created_at >= @after AND (created_at > @after OR id > @after_id)'] : []),
      'ORDER BY created_at, id;',
    ].join('\n'),
    params,
  };
}

/**
 * Hydrates up to HYDRATE_CHUNK rows by id from one JSON array parameter (no 2,100-parameter limit, one plan
 * for every chunk size). TRY_CONVERT turns a malformed id into NULL, which matches nothing.
 */
export function loadMessagesById(names: ChannelNames): Statement<'correlation_id' | 'ids'> {
  return {
    text: [
      `SELECT ${MESSAGE_HEADER_COLUMNS}, envelope_json`,
      `FROM ${qualifiedChannelNames(names).messages}`,
      'WHERE correlation_id = @correlation_id',
      '  AND id IN (SELECT TRY_CONVERT(uniqueidentifier, j.value) FROM OPENJSON(@ids) AS j)',
      '  AND expires_at > SYSUTCDATETIME()',
      'ORDER BY created_at, id;',
    ].join('\n'),
    params: { correlation_id: types.correlation(), ids: types.text() },
  };
}

/**
 * Stamps acked_at/acked_seq on the first delivery only; an already-acked row still answers (fan-out). The
 * sequence value is drawn into a variable first (NEXT VALUE FOR is illegal inside CASE and beside OUTPUT);
 * a value is consumed on every call, gaps are harmless. Right-hand column references read the pre-update
 * row, so both CASE and COALESCE see the old acked_at.
 * PostgreSQL: UPDATE … SET acked_at = COALESCE(acked_at, clock_timestamp()), acked_seq = CASE … nextval … END.
 */
export function claimForDelivery(names: ChannelNames): Statement<'id' | 'started_at' | 'started_seq'> {
  const t = qualifiedChannelNames(names);
  return {
    text: [
      `DECLARE @started datetime2(7) = ${exactInstant('started_at')};`,
      `DECLARE @seq bigint = NEXT VALUE FOR ${t.sequence};`,
      `UPDATE ${t.messages}`,
      'SET acked_at = COALESCE(acked_at, SYSUTCDATETIME()),',
      '    acked_seq = CASE WHEN acked_at IS NULL THEN @seq ELSE acked_seq END',
      'OUTPUT inserted.id',
      'WHERE id = @id AND recovery_claimed = 0 AND expires_at > SYSUTCDATETIME()',
      // the waiter's watermark again: a first claim that was uncommitted when this waiter read the row as
      // unacked may commit before this UPDATE gets its lock; its acked_at is then history for this waiter
      '  AND (acked_at IS NULL OR acked_at > @started OR (acked_at = @started AND acked_seq > @started_seq));',
    ].join('\n'),
    params: { id: types.id(), started_at: types.exact(), started_seq: types.ms() },
  };
}

/** The recovery claim (spec exactly): a row comes back while nobody acknowledged the message. */
export function claimForRecovery(names: ChannelNames): Statement<'id'> {
  return {
    text: [
      `UPDATE ${qualifiedChannelNames(names).messages}`,
      'SET recovery_claimed = 1',
      'OUTPUT inserted.id',
      'WHERE id = @id AND acked_at IS NULL;',
    ].join('\n'),
    params: { id: types.id() },
  };
}

/**
 * The recovery route in one transaction, claim first: the claim (the spec's guard, plus NOT recovery_claimed
 * so a second router claims nothing, and only while an unexpired registration exists) decides everything;
 * only a successful claim picks the registrations (under UPDLOCK, HOLDLOCK, so a concurrent save or delete
 * of one waits), enqueues one reference job per registration on the transport table's callbacks queue
 * (INSERT … SELECT: ids and the registration's state as a JSON string, never the payload), and for a final
 * response deletes exactly the picked registrations. One row: claimed (0/1) and jobs (how many enqueued).
 * seq (the transport's sequence) is drawn in registration order, so the jobs are claimed in that order, as a batch
 * publish's are (created_at steps 100 ns per job for readers); they are ready (state NULL) at once.
 * PostgreSQL: one statement of data-modifying CTEs (claimed → picked → jobs, consumed), plus a NOTIFY.
 */
export function routeToCallbacks(
  names: ChannelNames,
  callbacks: CallbackJobTarget,
): Statement<'id' | 'correlation_id' | 'queue' | 'final'> {
  const t = qualifiedChannelNames(names);
  const jobs = `${q(validateIdentifier(callbacks.schema, 'Schema name', 'sqlserver'))}.${q(validateIdentifier(callbacks.table, 'Transport table name', 'sqlserver'))}`;
  // the transport's publish-order sequence (its ready set): the jobs are claimed in registration order
  const seq = `${q(callbacks.schema)}.${q(transportNames(callbacks.schema, callbacks.table, 'sqlserver').sequence)}`;
  const guid = (column: string) => `LOWER(CONVERT(nchar(36), ${column}))`;
  return {
    text: [
      'SET XACT_ABORT ON;',
      'DECLARE @now datetime2 = SYSUTCDATETIME();',
      'DECLARE @claimed int;',
      'DECLARE @picked TABLE (registration_id uniqueidentifier NOT NULL PRIMARY KEY, state_json nvarchar(max) NOT NULL, ord int NOT NULL);',
      'BEGIN TRAN;',
      `UPDATE ${t.messages}`,
      'SET recovery_claimed = 1',
      'WHERE id = @id AND correlation_id = @correlation_id AND acked_at IS NULL AND recovery_claimed = 0 AND expires_at > @now',
      `  AND EXISTS (SELECT 1 FROM ${t.recovery} WITH (UPDLOCK, HOLDLOCK) WHERE correlation_id = @correlation_id AND expires_at > @now);`,
      'SET @claimed = @@ROWCOUNT;',
      'IF @claimed = 1',
      'BEGIN',
      '    INSERT INTO @picked (registration_id, state_json, ord)',
      '    SELECT registration_id, state_json, ROW_NUMBER() OVER (ORDER BY registered_at, registration_id)',
      `    FROM ${t.recovery} WITH (UPDLOCK, HOLDLOCK)`,
      '    WHERE correlation_id = @correlation_id AND expires_at > @now;',
      `    INSERT INTO ${jobs} (id, queue, payload_json, headers_json, created_at, available_at, seq)`,
      '    SELECT NEWID(), @queue,',
      `           CONCAT(N'{"messageId":"', ${guid('@id')}, N'","correlationId":"', STRING_ESCAPE(@correlation_id, 'json'),`,
      `                  N'","registrationId":"', ${guid('p.registration_id')}, N'","registration":"', STRING_ESCAPE(p.state_json, 'json'), N'"}'),`,
      `           CONCAT(N'{"AR-Correlation-Id":"', STRING_ESCAPE(@correlation_id, 'json'), N'"}'),`,
      `           DATEADD(NANOSECOND, p.ord * 100, @now), @now, NEXT VALUE FOR ${seq} OVER (ORDER BY p.ord)`,
      '    FROM @picked AS p;',
      '    IF @final = 1',
      `        DELETE r FROM ${t.recovery} AS r INNER JOIN @picked AS p ON r.registration_id = p.registration_id`,
      '        WHERE r.correlation_id = @correlation_id;',
      'END',
      'COMMIT;',
      'SELECT @claimed AS claimed, (SELECT COUNT(*) FROM @picked) AS jobs;',
    ].join('\n'),
    params: { id: types.id(), correlation_id: types.correlation(), queue: types.queue(), final: types.flag() },
  };
}

/**
 * The callback sender's read: the recovery claim (as claimForRecovery) that also keeps the row at least
 * @hold_ms more (expires_at only ever moves later), returning the stored envelope. No expiry filter: a row
 * prune has not removed is still sent. PostgreSQL: UPDATE … SET expires_at = GREATEST(…) RETURNING envelope_json.
 */
export function holdForCallback(names: ChannelNames): Statement<'id' | 'hold_ms'> {
  const held = dbClockPlus('@hold_ms');
  return {
    text: [
      `UPDATE ${qualifiedChannelNames(names).messages}`,
      `SET recovery_claimed = 1, expires_at = CASE WHEN expires_at < ${held} THEN ${held} ELSE expires_at END`,
      'OUTPUT inserted.envelope_json',
      'WHERE id = @id AND acked_at IS NULL;',
    ].join('\n'),
    params: { id: types.id(), hold_ms: types.ms() },
  };
}

export function isAcknowledged(names: ChannelNames): Statement<'id'> {
  return {
    text: [
      'SELECT CAST(CASE WHEN EXISTS (',
      `    SELECT 1 FROM ${qualifiedChannelNames(names).messages}`,
      '    WHERE id = @id AND acked_at IS NOT NULL AND expires_at > SYSUTCDATETIME()',
      ') THEN 1 ELSE 0 END AS bit) AS acknowledged;',
    ].join('\n'),
    params: { id: types.id() },
  };
}

/**
 * A waiter's watermark: the database clock (exact text) and one draw of the ack sequence, in one statement
 * (no FROM, no TOP, nothing around NEXT VALUE FOR). bigint arrives from tedious as a decimal string.
 */
export function subscriptionStart(names: ChannelNames): Statement<never> {
  return {
    text:
      `SELECT ${exactText('SYSUTCDATETIME()')} AS started_at, ` +
      `NEXT VALUE FOR ${qualifiedChannelNames(names).sequence} AS started_seq;`,
    params: {},
  };
}

/**
 * Lost-subscriber candidates: unacked, unclaimed, unexpired messages older than the confirmation budget whose
 * correlation id still has an unexpired registration. The correlation comparison names BIN2 explicitly: two
 * operator tables may carry different binary collations (_BIN vs _BIN2), which would otherwise conflict (468).
 * @neg_older_than_ms = -olderThanMs.
 */
export function findOverdueWithRegistrations(names: ChannelNames): Statement<'limit' | 'neg_older_than_ms'> {
  const t = qualifiedChannelNames(names);
  return {
    text: [
      'SELECT TOP (@limit) m.id, m.correlation_id, m.envelope_json',
      `FROM ${t.messages} AS m`,
      'WHERE m.acked_at IS NULL',
      '  AND m.recovery_claimed = 0',
      '  AND m.expires_at > SYSUTCDATETIME()',
      `  AND m.created_at < ${dbClockPlus('@neg_older_than_ms')}`,
      `  AND EXISTS (SELECT 1 FROM ${t.recovery} AS r`,
      `              WHERE r.correlation_id = m.correlation_id COLLATE ${BIN2} AND r.expires_at > SYSUTCDATETIME())`,
      'ORDER BY m.created_at, m.id;',
    ].join('\n'),
    params: { limit: types.count(), neg_older_than_ms: types.ms() },
  };
}

// ---- subscribers ----------------------------------------------------------------------------------------

export function upsertSubscriber(names: ChannelNames): Statement<'correlation_id' | 'registration_id' | 'instance_id' | 'ttl_ms'> {
  const expires = dbClockPlus('@ttl_ms');
  return {
    text: [
      `MERGE ${qualifiedChannelNames(names).subscribers} WITH (HOLDLOCK) AS target`,
      'USING (SELECT 1 AS one) AS src',
      'ON target.correlation_id = @correlation_id AND target.registration_id = @registration_id',
      'WHEN MATCHED THEN',
      `    UPDATE SET instance_id = @instance_id, expires_at = ${expires}`,
      'WHEN NOT MATCHED THEN',
      '    INSERT (correlation_id, registration_id, instance_id, expires_at)',
      `    VALUES (@correlation_id, @registration_id, @instance_id, ${expires});`,
    ].join('\n'),
    params: { correlation_id: types.correlation(), registration_id: types.id(), instance_id: types.instance(), ttl_ms: types.ms() },
  };
}

/**
 * One heartbeat batch: @rows = JSON array of { c, r } (≤ HEARTBEAT_CHUNK). A MERGE upsert, so a row deleted or
 * pruned meanwhile is re-created. OPENJSON's text columns carry the database's default collation, so the
 * source is de-duplicated and matched under BIN2 explicitly: a case-insensitive default must neither fold two
 * ids into one (DISTINCT) nor conflict with the column's collation (468).
 * PostgreSQL: INSERT … SELECT FROM unnest($1::text[], $2::uuid[]) ON CONFLICT … DO UPDATE.
 */
export function heartbeatSubscribers(names: ChannelNames): Statement<'rows' | 'instance_id' | 'ttl_ms'> {
  const expires = dbClockPlus('@ttl_ms');
  return {
    text: [
      `MERGE ${qualifiedChannelNames(names).subscribers} WITH (HOLDLOCK) AS target`,
      'USING (',
      `    SELECT DISTINCT j.correlation_id COLLATE ${BIN2} AS correlation_id, j.registration_id`,
      "    FROM OPENJSON(@rows) WITH (correlation_id nvarchar(400) '$.c', registration_id uniqueidentifier '$.r') AS j",
      ') AS src',
      `ON target.correlation_id = src.correlation_id COLLATE ${BIN2} AND target.registration_id = src.registration_id`,
      'WHEN MATCHED THEN',
      `    UPDATE SET instance_id = @instance_id, expires_at = ${expires}`,
      'WHEN NOT MATCHED THEN',
      '    INSERT (correlation_id, registration_id, instance_id, expires_at)',
      `    VALUES (src.correlation_id, src.registration_id, @instance_id, ${expires});`,
    ].join('\n'),
    params: { rows: types.text(), instance_id: types.instance(), ttl_ms: types.ms() },
  };
}

export function deleteSubscriber(names: ChannelNames): Statement<'correlation_id' | 'registration_id'> {
  return {
    text: [
      `DELETE FROM ${qualifiedChannelNames(names).subscribers}`,
      'WHERE correlation_id = @correlation_id AND registration_id = @registration_id;',
    ].join('\n'),
    params: { correlation_id: types.correlation(), registration_id: types.id() },
  };
}

export function countActiveSubscribers(names: ChannelNames): Statement<'correlation_id'> {
  return {
    text: [
      'SELECT COUNT_BIG(*) AS active',
      `FROM ${qualifiedChannelNames(names).subscribers}`,
      'WHERE correlation_id = @correlation_id AND expires_at > SYSUTCDATETIME();',
    ].join('\n'),
    params: { correlation_id: types.correlation() },
  };
}

// ---- prune ----------------------------------------------------------------------------------------------

/**
 * One bounded prune batch of one table (below lock escalation). NOCOUNT is turned off for the batch so a
 * server-wide SET NOCOUNT ON cannot end a drain after one batch; the count is read server-side.
 * PostgreSQL: DELETE … WHERE ctid IN (SELECT ctid … WHERE expires_at <= now() LIMIT 1000).
 */
export function pruneExpiredBatch(names: ChannelNames, table: ChannelTable): Statement<never> {
  const t = qualifiedChannelNames(names);
  const target = table === 'messages' ? t.messages : table === 'subscribers' ? t.subscribers : t.recovery;
  return {
    text: [
      'SET NOCOUNT OFF;',
      `DELETE TOP (${CHANNEL_PRUNE_BATCH}) FROM ${target}`,
      'WHERE expires_at <= SYSUTCDATETIME();',
      'SELECT @@ROWCOUNT AS deleted;',
    ].join('\n'),
    params: {},
  };
}

// ---- catalog --------------------------------------------------------------------------------------------

/**
 * Catalog snapshot of the channel's objects, seven result sets: 0 objects of the schema whose name matches
 * one of the four configured names case-insensitively (kind check), 1 columns with their defaults, 2 primary-
 * key columns, 3 index columns with the index flags — each of 1–3 tagged with the configured table name —
 * and 4 the sequence (sql_variant properties rendered as text: bigint bounds do not fit a JS number), 5 the
 * tables' enabled triggers (they break OUTPUT clauses), tagged with the configured table name, 6 the database's
 * compatibility level (the channel's statements use OPENJSON, which needs 130; checked also when only the channel
 * is used).
 */
export function channelCatalogSnapshot(): Statement<'schema' | 'recovery_table' | 'message_table' | 'subscriber_table' | 'sequence'> {
  return {
    text: [
      'DECLARE @schema_id int = SCHEMA_ID(@schema);',
      'DECLARE @tables TABLE (table_name nvarchar(128) NOT NULL, object_id int NULL);',
      'INSERT INTO @tables (table_name, object_id) VALUES',
      "    (@recovery_table, OBJECT_ID(QUOTENAME(@schema) + N'.' + QUOTENAME(@recovery_table), N'U')),",
      "    (@message_table, OBJECT_ID(QUOTENAME(@schema) + N'.' + QUOTENAME(@message_table), N'U')),",
      "    (@subscriber_table, OBJECT_ID(QUOTENAME(@schema) + N'.' + QUOTENAME(@subscriber_table), N'U'));",
      'SELECT o.name, o.type, o.type_desc,',
      '       CAST(CASE WHEN o.object_id IN (SELECT t.object_id FROM @tables AS t WHERE t.object_id IS NOT NULL) THEN 1 ELSE 0 END AS bit) AS is_target',
      'FROM sys.objects AS o',
      'WHERE o.schema_id = @schema_id',
      '  AND LOWER(o.name) IN (LOWER(@recovery_table), LOWER(@message_table), LOWER(@subscriber_table), LOWER(@sequence));',
      'SELECT t.table_name, c.column_id, c.name, TYPE_NAME(c.system_type_id) AS type_name, c.max_length, c.precision, c.scale,',
      '       c.is_nullable, c.collation_name, c.is_identity, c.is_computed, c.default_object_id,',
      '       dc.definition AS default_definition',
      'FROM @tables AS t',
      'INNER JOIN sys.columns AS c ON c.object_id = t.object_id',
      'LEFT JOIN sys.default_constraints AS dc ON dc.object_id = c.default_object_id',
      'ORDER BY t.table_name, c.column_id;',
      'SELECT t.table_name, kc.name AS constraint_name, col.name AS column_name, ic.key_ordinal',
      'FROM @tables AS t',
      "INNER JOIN sys.key_constraints AS kc ON kc.parent_object_id = t.object_id AND kc.type = 'PK'",
      'INNER JOIN sys.index_columns AS ic ON ic.object_id = kc.parent_object_id AND ic.index_id = kc.unique_index_id',
      'INNER JOIN sys.columns AS col ON col.object_id = ic.object_id AND col.column_id = ic.column_id',
      'WHERE ic.key_ordinal > 0',
      'ORDER BY t.table_name, ic.key_ordinal;',
      'SELECT t.table_name, i.name AS index_name, i.index_id, i.type_desc, i.is_unique, i.is_primary_key, i.is_disabled,',
      '       i.is_hypothetical, i.has_filter, col.name AS column_name, ic.key_ordinal, ic.is_descending_key,',
      '       ic.is_included_column',
      'FROM @tables AS t',
      'INNER JOIN sys.indexes AS i ON i.object_id = t.object_id',
      'LEFT JOIN sys.index_columns AS ic ON ic.object_id = i.object_id AND ic.index_id = i.index_id',
      'LEFT JOIN sys.columns AS col ON col.object_id = ic.object_id AND col.column_id = ic.column_id',
      'WHERE i.index_id > 0',
      'ORDER BY t.table_name, i.index_id, ic.key_ordinal;',
      'SELECT s.name, TYPE_NAME(s.system_type_id) AS type_name,',
      '       CONVERT(varchar(40), s.increment) AS increment,',
      '       CONVERT(varchar(40), s.minimum_value) AS minimum_value,',
      '       CONVERT(varchar(40), s.maximum_value) AS maximum_value,',
      '       s.is_cycling',
      'FROM sys.sequences AS s',
      'WHERE s.schema_id = @schema_id AND LOWER(s.name) = LOWER(@sequence);',
      'SELECT t.table_name, tr.name AS trigger_name',
      'FROM @tables AS t',
      'INNER JOIN sys.triggers AS tr ON tr.parent_id = t.object_id',
      'WHERE tr.is_disabled = 0',
      'ORDER BY t.table_name, tr.name;',
      'SELECT d.compatibility_level FROM sys.databases AS d WHERE d.database_id = DB_ID();',
    ].join('\n'),
    params: {
      schema: types.sysname(),
      recovery_table: types.sysname(),
      message_table: types.sysname(),
      subscriber_table: types.sysname(),
      sequence: types.sysname(),
    },
  };
}

/** Every statement the channel store runs, built once from the validated names. */
export function channelStatements(names: ChannelNames, callbacks: CallbackJobTarget) {
  checked(names);
  return {
    ddl: channelDdl(names),
    saveRegistration: saveRegistration(names),
    loadRegistrations: loadRegistrations(names),
    deleteRegistration: deleteRegistration(names),
    insertMessage: insertMessage(names),
    loadPendingFirst: loadPending(names, false),
    loadPendingAfter: loadPending(names, true),
    loadMessagesById: loadMessagesById(names),
    claimForDelivery: claimForDelivery(names),
    claimForRecovery: claimForRecovery(names),
    routeToCallbacks: routeToCallbacks(names, callbacks),
    holdForCallback: holdForCallback(names),
    isAcknowledged: isAcknowledged(names),
    subscriptionStart: subscriptionStart(names),
    findOverdueWithRegistrations: findOverdueWithRegistrations(names),
    upsertSubscriber: upsertSubscriber(names),
    heartbeatSubscribers: heartbeatSubscribers(names),
    deleteSubscriber: deleteSubscriber(names),
    countActiveSubscribers: countActiveSubscribers(names),
    pruneMessages: pruneExpiredBatch(names, 'messages'),
    pruneSubscribers: pruneExpiredBatch(names, 'subscribers'),
    pruneRecovery: pruneExpiredBatch(names, 'recovery'),
    catalogSnapshot: channelCatalogSnapshot(),
  };
}

export type ChannelStatements = ReturnType<typeof channelStatements>;
