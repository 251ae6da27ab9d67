// Pins the shape of every T-SQL statement the SQL Server channel store runs (there is no server on this
// machine; the channel contract suite runs them for real when MSSQL_CONNECTION_STRING is set).

import { describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES, type ChannelNames } from '../../shared/channel/types';
import { channelNames } from '../../shared/sql/identifiers';
import {
  channelAckSequenceMigration,
  channelStatements,
  printSqlServerChannelSchema,
  qualifiedChannelNames,
} from '../../shared/stores/sqlserver/channel-statements';
import { schemaLockResource, transportStatements, type Statement } from '../../shared/stores/sqlserver/statements';
import { transportNames } from '../../shared/sql/identifiers';
import { length, scale, SPLIT, typeName } from '../support/sqlserver-statements';

const names = channelNames('dbo', { recoveryTable: 'rec', messageTable: 'msg', subscriberTable: 'sub' }, 'sqlserver');
const CALLBACKS = { schema: 'dbo', table: 'jobs', queue: 'callbacks' };
const s = channelStatements(names, CALLBACKS);
const all = Object.entries(s) as Array<[string, Statement]>;
const BIN2 = 'COLLATE Latin1_General_100_BIN2';

describe('SQL Server channel statement shapes', () => {
  it('DDL: one batch under the transport’s own schema applock (exclusive, transaction-owned, 60 s, THROW 51000)', () => {
    const t = s.ddl.text;
    const transportDdl = transportStatements(transportNames('dbo', 'jobs', 'sqlserver')).ddlPhase1.text;
    const resource = (text: string) => /sp_getapplock @Resource = N'([^']+)'/.exec(text)?.[1];
    expect(resource(t)).toBe(schemaLockResource('dbo'));
    expect(resource(t)).toBe(resource(transportDdl)); // byte-identical: channel and transport serialise
    expect(t).toContain("@LockMode = 'Exclusive'");
    expect(t).toContain("@LockOwner = 'Transaction', @LockTimeout = 60000;");
    expect(t).toMatch(/IF @lock_result < 0\s+THROW 51000, N'[^']+', 1;/);
    expect(t.indexOf('sp_getapplock')).toBeLessThan(t.indexOf('CREATE'));
    expect(t).toContain("IF SCHEMA_ID(N'dbo') IS NULL\n    EXEC (N'CREATE SCHEMA [dbo]');");
    expect(t.match(/CREATE TABLE/g)).toHaveLength(3);
    expect(t.match(/CREATE INDEX/g)).toHaveLength(4);
    expect(t.match(/CREATE SEQUENCE/g)).toHaveLength(1);
    expect(s.ddl.params).toEqual({});
  });

  it('DDL: the three tables exactly as documented, BIN2 on every correlation_id', () => {
    const t = s.ddl.text;
    expect(t).toContain(
      [
        "IF OBJECT_ID(N'[dbo].[rec]', N'U') IS NULL",
        'BEGIN',
        'CREATE TABLE [dbo].[rec] (',
        '    correlation_id nvarchar(400) COLLATE Latin1_General_100_BIN2 NOT NULL,',
        '    registration_id uniqueidentifier NOT NULL,',
        '    state_json nvarchar(max) NOT NULL,',
        '    expires_at datetime2 NOT NULL,',
        '    registered_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(),',
        '    PRIMARY KEY (correlation_id, registration_id)',
        ');',
        'END',
      ].join('\n'),
    );
    expect(t).toContain(
      [
        'CREATE TABLE [dbo].[msg] (',
        '    id uniqueidentifier NOT NULL PRIMARY KEY NONCLUSTERED,',
        '    correlation_id nvarchar(400) COLLATE Latin1_General_100_BIN2 NOT NULL,',
        '    envelope_json nvarchar(max) NOT NULL,',
        '    created_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(),',
        '    expires_at datetime2 NOT NULL,',
        '    acked_at datetime2 NULL,',
        '    acked_seq bigint NULL,',
        '    recovery_claimed bit NOT NULL DEFAULT 0',
        ');',
      ].join('\n'),
    );
    expect(t).toContain(
      [
        'CREATE TABLE [dbo].[sub] (',
        '    correlation_id nvarchar(400) COLLATE Latin1_General_100_BIN2 NOT NULL,',
        '    registration_id uniqueidentifier NOT NULL,',
        '    instance_id nvarchar(200) NOT NULL,',
        '    expires_at datetime2 NOT NULL,',
        '    PRIMARY KEY (correlation_id, registration_id)',
        ');',
      ].join('\n'),
    );
    const correlationColumns = t.match(/correlation_id nvarchar\(400\)[^,\n]*/g)!;
    expect(correlationColumns).toHaveLength(3);
    for (const c of correlationColumns) expect(c).toBe(`correlation_id nvarchar(400) ${BIN2} NOT NULL`);
    // datetime2 without a scale is datetime2(7); no reduced scale anywhere
    expect(t).not.toMatch(/datetime2\(\d\)/);
  });

  it('DDL: the acked_seq upgrade and the sequence AS bigint START WITH 1, both guarded', () => {
    const t = s.ddl.text;
    expect(t).toContain("IF NOT EXISTS (SELECT 1 FROM sys.columns WHERE object_id = OBJECT_ID(N'[dbo].[msg]', N'U') AND name = N'acked_seq')\n    ALTER TABLE [dbo].[msg] ADD acked_seq bigint NULL;");
    expect(t).toContain(
      "IF OBJECT_ID(N'[dbo].[msg_ack_seq]', N'SO') IS NULL\n" +
        '    CREATE SEQUENCE [dbo].[msg_ack_seq] AS bigint START WITH 1;',
    );
    expect(t).not.toMatch(/INCREMENT|MAXVALUE|CYCLE/); // the defaults: BY 1, bigint maximum, NO CYCLE
    expect(t).toContain(channelAckSequenceMigration(names));
    // the upgrade runs after the message table's guard (which already has the column on a fresh schema)
    expect(t.indexOf("name = N'acked_seq'")).toBeGreaterThan(t.indexOf('CREATE TABLE [dbo].[msg]'));
  });

  it('DDL: the four indexes, each guarded by name on its own table', () => {
    const t = s.ddl.text;
    const guarded = (table: string, index: string, keys: string) =>
      `IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[dbo].[${table}]', N'U') AND name = N'${index}')\n` +
      `    CREATE INDEX [${index}] ON [dbo].[${table}] (${keys});`;
    expect(t).toContain(guarded('rec', 'rec_expires_idx', 'expires_at'));
    expect(t).toContain(guarded('msg', 'msg_correlation_created_idx', 'correlation_id, created_at'));
    expect(t).toContain(guarded('msg', 'msg_expires_idx', 'expires_at'));
    expect(t).toContain(guarded('sub', 'sub_expires_idx', 'expires_at'));
    expect(t).not.toMatch(/UNIQUE|INCLUDE|WHERE expires/);
  });

  it('registrations: MERGE WITH (HOLDLOCK) upsert that renews expiry and registered_at and returns expires_at', () => {
    const t = s.saveRegistration.text;
    expect(t).toMatch(/^SET XACT_ABORT ON;\nBEGIN TRAN;\n/);
    // the cap: other unexpired registrations of the id counted under UPDLOCK, HOLDLOCK (saves of one id serialise)
    expect(t).toContain('SELECT COUNT(*) FROM [dbo].[rec] WITH (UPDLOCK, HOLDLOCK)');
    expect(t).toContain('WHERE correlation_id = @correlation_id AND registration_id <> @registration_id AND expires_at > SYSUTCDATETIME());');
    expect(t).toContain('IF @others < @max_registrations\n    MERGE [dbo].[rec] WITH (HOLDLOCK) AS target');
    expect(t).toMatch(/COMMIT;$/);
    expect(typeName(s.saveRegistration, 'max_registrations')).toBe('Int');
    expect(t).toContain('ON target.correlation_id = @correlation_id AND target.registration_id = @registration_id');
    expect(t).toContain(`UPDATE SET state_json = @state_json, expires_at = ${SPLIT('@ttl_ms')}, registered_at = SYSUTCDATETIME()`);
    expect(t).toContain(`VALUES (@correlation_id, @registration_id, @state_json, ${SPLIT('@ttl_ms')}, SYSUTCDATETIME())`);
    expect(t).toContain('OUTPUT inserted.expires_at;\nCOMMIT;');
    expect(s.loadRegistrations.text).toContain('WHERE correlation_id = @correlation_id AND expires_at > SYSUTCDATETIME()');
    expect(s.loadRegistrations.text).toMatch(/ORDER BY registered_at, registration_id;$/);
    expect(s.loadRegistrations.text).toMatch(/^SELECT correlation_id, registration_id, state_json, registered_at, expires_at/);
    expect(s.deleteRegistration.text).toContain('WHERE correlation_id = @correlation_id AND registration_id = @registration_id;');
    expect(s.deleteRegistration.text).toMatch(/SELECT @@ROWCOUNT AS affected;$/);
  });

  it('insert: insert-if-absent under UPDLOCK, HOLDLOCK; a duplicate reads the stored row in the same batch', () => {
    const t = s.insertMessage.text;
    expect(t).toContain('INSERT INTO [dbo].[msg] (id, correlation_id, envelope_json, expires_at)');
    expect(t).toContain('OUTPUT inserted.created_at, inserted.acked_at, inserted.acked_seq, inserted.correlation_id, CAST(1 AS bit) AS inserted');
    expect(t).toContain(`SELECT @id, @correlation_id, @envelope_json, ${SPLIT('@retention_ms')}`);
    expect(t).toContain('WHERE NOT EXISTS (SELECT 1 FROM [dbo].[msg] WITH (UPDLOCK, HOLDLOCK) WHERE id = @id);');
    expect(t).toMatch(/IF @@ROWCOUNT = 0\s+SELECT created_at, acked_at, acked_seq, correlation_id, CAST\(0 AS bit\) AS inserted FROM \[dbo\]\.\[msg\] WHERE id = @id;$/);
    expect(t).not.toMatch(/created_at,\s*expires_at\)/); // created_at comes from the column default (DB clock)
  });

  it('loadPending: header-only CASE, unexpired + unclaimed, the watermark rule, keyset predicate, (created_at, id) order', () => {
    for (const st of [s.loadPendingFirst, s.loadPendingAfter]) {
      const t = st.text;
      expect(t).toContain('SELECT TOP (@limit) id, correlation_id, created_at, CONVERT(varchar(27), created_at, 121) AS created_at_exact');
      expect(t).toContain('CASE WHEN acked_at IS NULL THEN envelope_json END AS envelope_json');
      expect(t).not.toMatch(/,\s*envelope_json\s*,|SELECT[^;]*\benvelope_json,/); // never the raw body
      expect(t).toContain('WHERE correlation_id = @correlation_id');
      expect(t).toContain('AND expires_at > SYSUTCDATETIME()');
      expect(t).toContain('AND recovery_claimed = 0');
      expect(t).toContain('DECLARE @started datetime2(7) = CONVERT(datetime2(7), @started_at, 121);');
      expect(t).toContain('AND (acked_at IS NULL OR acked_at > @started OR (acked_at = @started AND acked_seq > @started_seq))');
      expect(t).toMatch(/ORDER BY created_at, id;$/);
      expect(typeName(st, 'started_at')).toBe('VarChar');
      expect(length(st, 'started_at')).toBe(27);
      expect(typeName(st, 'started_seq')).toBe('BigInt');
      expect(typeName(st, 'limit')).toBe('Int');
    }
    expect(s.loadPendingFirst.text).not.toMatch(/@after/);
    const t = s.loadPendingAfter.text;
    expect(t).toContain('DECLARE @after datetime2(7) = CONVERT(datetime2(7), @after_created_at, 121);');
    expect(t).toContain('AND created_at >= @after AND (created_at > @after OR id > @after_id)');
    expect(typeName(s.loadPendingAfter, 'after_id')).toBe('UniqueIdentifier');
    expect(typeName(s.loadPendingAfter, 'after_created_at')).toBe('VarChar');
    expect(Object.keys(s.loadPendingAfter.params).sort()).toEqual(
      ['after_created_at', 'after_id', 'correlation_id', 'limit', 'started_at', 'started_seq'].sort(),
    );
  });

  it('hydration: one JSON array of ids, scoped to the correlation id and unexpired, in (created_at, id) order', () => {
    const t = s.loadMessagesById.text;
    expect(t).toContain('CONVERT(varchar(27), created_at, 121) AS created_at_exact');
    expect(t).toMatch(/recovery_claimed, envelope_json\nFROM/);
    expect(t).toContain('WHERE correlation_id = @correlation_id');
    expect(t).toContain('AND id IN (SELECT TRY_CONVERT(uniqueidentifier, j.value) FROM OPENJSON(@ids) AS j)');
    expect(t).toContain('AND expires_at > SYSUTCDATETIME()');
    expect(t).toMatch(/ORDER BY created_at, id;$/);
    expect(length(s.loadMessagesById, 'ids')).toBe(65535);
  });

  it('delivery claim: sequence drawn into a variable first, then COALESCE/CASE stamp only the first ack', () => {
    const t = s.claimForDelivery.text;
    expect(t).toMatch(/^DECLARE @started datetime2\(7\) = [^;]*@started_at[^;]*;\nDECLARE @seq bigint = NEXT VALUE FOR \[dbo\]\.\[msg_ack_seq\];\n/);
    expect(t).toContain('SET acked_at = COALESCE(acked_at, SYSUTCDATETIME()),');
    expect(t).toContain('acked_seq = CASE WHEN acked_at IS NULL THEN @seq ELSE acked_seq END');
    expect(t).toContain('OUTPUT inserted.id');
    expect(t).toContain('WHERE id = @id AND recovery_claimed = 0 AND expires_at > SYSUTCDATETIME()');
    // an already-acked row still answers when acked after the waiter registered (fan-out), never history
    expect(t).toMatch(/AND \(acked_at IS NULL OR acked_at > @started OR \(acked_at = @started AND acked_seq > @started_seq\)\);$/);
    expect(Object.keys(s.claimForDelivery.params).sort()).toEqual(['id', 'started_at', 'started_seq']);
  });

  it('NEXT VALUE FOR appears only where SQL Server allows it (no CASE, COALESCE, OUTPUT, TOP, MERGE or WHERE)', () => {
    for (const [name, st] of all) {
      for (const statement of st.text.split(';')) {
        if (!statement.includes('NEXT VALUE FOR')) continue;
        // its own OVER (ORDER BY …), which numbers the rows in that order, is the one ORDER BY allowed
        const rest = statement.replace(/NEXT VALUE FOR \S+ OVER \(ORDER BY [^)]*\)/g, 'NEXT VALUE FOR s');
        expect(rest, name).not.toMatch(/\bCASE\b|COALESCE|ISNULL|IIF|\bOUTPUT\b|\bTOP\b|\bMERGE\b|\bWHERE\b|ORDER BY|DISTINCT|UNION/);
      }
    }
    const users = all.filter(([, st]) => st.text.includes('NEXT VALUE FOR')).map(([name]) => name);
    // routeToCallbacks draws the transport's seq for the callback jobs it enqueues (the ready set's publish order)
    expect(users.sort()).toEqual(['claimForDelivery', 'routeToCallbacks', 'subscriptionStart']);
  });

  it('recovery claim: exactly the spec’s race guard on acked_at IS NULL', () => {
    expect(s.claimForRecovery.text).toBe(
      'UPDATE [dbo].[msg]\nSET recovery_claimed = 1\nOUTPUT inserted.id\nWHERE id = @id AND acked_at IS NULL;',
    );
  });

  it('recovery route: claim first, then reference jobs by INSERT … SELECT and the final consumption, in one transaction', () => {
    const t = s.routeToCallbacks.text;
    expect(t).toMatch(/^SET XACT_ABORT ON;\nDECLARE @now datetime2 = SYSUTCDATETIME\(\);/);
    const claim = t.indexOf('SET recovery_claimed = 1');
    const pick = t.indexOf('INSERT INTO @picked');
    const enqueue = t.indexOf('INSERT INTO [dbo].[jobs] (id, queue, payload_json, headers_json, created_at, available_at, seq)');
    const consume = t.indexOf('DELETE r FROM [dbo].[rec] AS r INNER JOIN @picked AS p');
    expect(t.indexOf('BEGIN TRAN;')).toBeLessThan(claim);
    expect(claim).toBeGreaterThan(0);
    expect(pick).toBeGreaterThan(claim);
    expect(enqueue).toBeGreaterThan(pick);
    expect(consume).toBeGreaterThan(enqueue);
    expect(t.indexOf('COMMIT;')).toBeGreaterThan(consume);
    // the guard: unacked AND not yet claimed (a second router claims nothing), unexpired, a registration exists
    expect(t).toContain('WHERE id = @id AND correlation_id = @correlation_id AND acked_at IS NULL AND recovery_claimed = 0 AND expires_at > @now');
    expect(t).toContain('AND EXISTS (SELECT 1 FROM [dbo].[rec] WITH (UPDLOCK, HOLDLOCK) WHERE correlation_id = @correlation_id AND expires_at > @now);');
    expect(t).toContain('SET @claimed = @@ROWCOUNT;\nIF @claimed = 1\nBEGIN');
    expect(t).toContain('ROW_NUMBER() OVER (ORDER BY registered_at, registration_id)');
    // each job is a reference: ids and the registration's state, JSON-escaped; never envelope_json
    expect(t).not.toContain('envelope_json');
    expect(t).toContain(`CONCAT(N'{"messageId":"', LOWER(CONVERT(nchar(36), @id)), N'","correlationId":"', STRING_ESCAPE(@correlation_id, 'json'),`);
    expect(t).toContain(`N'","registrationId":"', LOWER(CONVERT(nchar(36), p.registration_id)), N'","registration":"', STRING_ESCAPE(p.state_json, 'json'), N'"}'),`);
    expect(t).toContain(`CONCAT(N'{"AR-Correlation-Id":"', STRING_ESCAPE(@correlation_id, 'json'), N'"}'),`);
    expect(t).toContain('SELECT NEWID(), @queue,');
    // claimed in registration order: seq from the transport's sequence in that order (the ready set's tie-breaker)
    expect(t).toContain('DATEADD(NANOSECOND, p.ord * 100, @now), @now, NEXT VALUE FOR [dbo].[jobs_seq] OVER (ORDER BY p.ord)');
    expect(t).toContain('IF @final = 1');
    expect(t).toMatch(/SELECT @claimed AS claimed, \(SELECT COUNT\(\*\) FROM @picked\) AS jobs;$/);
    expect(typeName(s.routeToCallbacks, 'queue')).toBe('NVarChar');
    expect(length(s.routeToCallbacks, 'queue')).toBe(200);
    expect(typeName(s.routeToCallbacks, 'final')).toBe('Bit');
    expect(() => channelStatements(names, { ...CALLBACKS, table: 'jobs]; DROP TABLE x; --' })).toThrow(/not a simple identifier/);
  });

  it('callback hold: the recovery claim that only ever moves expires_at later and returns the envelope, whatever the expiry', () => {
    expect(s.holdForCallback.text).toBe(
      [
        'UPDATE [dbo].[msg]',
        `SET recovery_claimed = 1, expires_at = CASE WHEN expires_at < ${SPLIT('@hold_ms')} THEN ${SPLIT('@hold_ms')} ELSE expires_at END`,
        'OUTPUT inserted.envelope_json',
        'WHERE id = @id AND acked_at IS NULL;',
      ].join('\n'),
    );
    expect(typeName(s.holdForCallback, 'hold_ms')).toBe('BigInt');
    expect(typeName(s.holdForCallback, 'id')).toBe('UniqueIdentifier');
  });

  it('acknowledged probe, subscription watermark and the overdue scan', () => {
    expect(s.isAcknowledged.text).toContain('WHERE id = @id AND acked_at IS NOT NULL AND expires_at > SYSUTCDATETIME()');
    expect(s.isAcknowledged.text).toContain('AS bit) AS acknowledged;');
    expect(s.subscriptionStart.text).toBe(
      'SELECT CONVERT(varchar(27), SYSUTCDATETIME(), 121) AS started_at, NEXT VALUE FOR [dbo].[msg_ack_seq] AS started_seq;',
    );
    const t = s.findOverdueWithRegistrations.text;
    expect(t).toMatch(/^SELECT TOP \(@limit\) m\.id, m\.correlation_id, m\.envelope_json\nFROM \[dbo\]\.\[msg\] AS m/);
    expect(t).toContain('WHERE m.acked_at IS NULL');
    expect(t).toContain('AND m.recovery_claimed = 0');
    expect(t).toContain('AND m.expires_at > SYSUTCDATETIME()');
    expect(t).toContain(`AND m.created_at < ${SPLIT('@neg_older_than_ms')}`);
    expect(t).toContain('AND EXISTS (SELECT 1 FROM [dbo].[rec] AS r');
    expect(t).toContain(`WHERE r.correlation_id = m.correlation_id ${BIN2} AND r.expires_at > SYSUTCDATETIME())`);
    expect(t).toMatch(/ORDER BY m\.created_at, m\.id;$/);
  });

  it('subscribers: MERGE WITH (HOLDLOCK) upserts; the heartbeat batch de-duplicates and matches under BIN2', () => {
    const up = s.upsertSubscriber.text;
    expect(up).toMatch(/^MERGE \[dbo\]\.\[sub\] WITH \(HOLDLOCK\) AS target/);
    expect(up).toContain('ON target.correlation_id = @correlation_id AND target.registration_id = @registration_id');
    expect(up).toContain(`UPDATE SET instance_id = @instance_id, expires_at = ${SPLIT('@ttl_ms')}`);
    expect(up).toContain(`VALUES (@correlation_id, @registration_id, @instance_id, ${SPLIT('@ttl_ms')});`);
    const hb = s.heartbeatSubscribers.text;
    expect(hb).toMatch(/^MERGE \[dbo\]\.\[sub\] WITH \(HOLDLOCK\) AS target/);
    expect(hb).toContain(`SELECT DISTINCT j.correlation_id ${BIN2} AS correlation_id, j.registration_id`);
    expect(hb).toContain("FROM OPENJSON(@rows) WITH (correlation_id nvarchar(400) '$.c', registration_id uniqueidentifier '$.r') AS j");
    expect(hb).toContain(`ON target.correlation_id = src.correlation_id ${BIN2} AND target.registration_id = src.registration_id`);
    expect(hb).toContain('WHEN NOT MATCHED THEN'); // re-creates rows deleted or pruned meanwhile
    expect(hb).toContain(`VALUES (src.correlation_id, src.registration_id, @instance_id, ${SPLIT('@ttl_ms')});`);
    expect(s.deleteSubscriber.text).toBe('DELETE FROM [dbo].[sub]\nWHERE correlation_id = @correlation_id AND registration_id = @registration_id;');
    expect(s.countActiveSubscribers.text).toBe(
      'SELECT COUNT_BIG(*) AS active\nFROM [dbo].[sub]\nWHERE correlation_id = @correlation_id AND expires_at > SYSUTCDATETIME();',
    );
  });

  it('prunes: NOCOUNT off, one bounded DELETE TOP (1000) of expired rows per table, count from @@ROWCOUNT', () => {
    for (const [st, table] of [[s.pruneMessages, 'msg'], [s.pruneSubscribers, 'sub'], [s.pruneRecovery, 'rec']] as const) {
      expect(st.text).toBe(
        `SET NOCOUNT OFF;\nDELETE TOP (1000) FROM [dbo].[${table}]\nWHERE expires_at <= SYSUTCDATETIME();\nSELECT @@ROWCOUNT AS deleted;`,
      );
    }
  });

  it('catalog query: parameterised by names only, seven result sets incl. the sequence as text, enabled triggers and the compatibility level', () => {
    const t = s.catalogSnapshot.text;
    expect(t).not.toMatch(/\b(rec|msg|sub)\b/);
    expect(Object.keys(s.catalogSnapshot.params).sort()).toEqual(['message_table', 'recovery_table', 'schema', 'sequence', 'subscriber_table']);
    for (const p of Object.keys(s.catalogSnapshot.params)) expect(length(s.catalogSnapshot, p)).toBe(128);
    expect(t.match(/^SELECT /gm)).toHaveLength(7);
    expect(t.endsWith('\nSELECT d.compatibility_level FROM sys.databases AS d WHERE d.database_id = DB_ID();')).toBe(true);
    expect(t).toContain('INNER JOIN sys.triggers AS tr ON tr.parent_id = t.object_id\nWHERE tr.is_disabled = 0');
    expect(t).toContain('CONVERT(varchar(40), s.maximum_value) AS maximum_value');
    expect(t).toContain('CONVERT(varchar(40), s.increment) AS increment');
    expect(t).toContain('s.is_cycling');
    expect(t).toContain('TYPE_NAME(s.system_type_id) AS type_name');
    for (const column of ['collation_name', 'scale', 'default_definition', 'is_disabled', 'has_filter', 'key_ordinal', 'table_name']) {
      expect(t).toContain(column);
    }
  });

  it('parameters carry explicit types: NVarChar(400) correlation ids, UniqueIdentifier ids, BigInt ms, NVarChar(MAX) JSON', () => {
    const correlation: Array<[Statement, string]> = [
      [s.saveRegistration, 'correlation_id'],
      [s.loadRegistrations, 'correlation_id'],
      [s.deleteRegistration, 'correlation_id'],
      [s.insertMessage, 'correlation_id'],
      [s.loadPendingFirst, 'correlation_id'],
      [s.loadMessagesById, 'correlation_id'],
      [s.upsertSubscriber, 'correlation_id'],
      [s.deleteSubscriber, 'correlation_id'],
      [s.countActiveSubscribers, 'correlation_id'],
    ];
    for (const [st, p] of correlation) {
      expect(typeName(st, p)).toBe('NVarChar');
      expect(length(st, p)).toBe(400);
    }
    for (const [st, p] of [[s.saveRegistration, 'registration_id'], [s.insertMessage, 'id'], [s.claimForDelivery, 'id'], [s.claimForRecovery, 'id'], [s.isAcknowledged, 'id'], [s.upsertSubscriber, 'registration_id'], [s.deleteSubscriber, 'registration_id']] as const) {
      expect(typeName(st, p)).toBe('UniqueIdentifier');
    }
    for (const [st, p] of [[s.saveRegistration, 'ttl_ms'], [s.insertMessage, 'retention_ms'], [s.upsertSubscriber, 'ttl_ms'], [s.heartbeatSubscribers, 'ttl_ms'], [s.findOverdueWithRegistrations, 'neg_older_than_ms']] as const) {
      expect(typeName(st, p)).toBe('BigInt');
    }
    for (const [st, p] of [[s.saveRegistration, 'state_json'], [s.insertMessage, 'envelope_json'], [s.heartbeatSubscribers, 'rows'], [s.loadMessagesById, 'ids']] as const) {
      expect(typeName(st, p)).toBe('NVarChar');
      expect(length(st, p)).toBe(65535);
    }
    for (const [st, p] of [[s.upsertSubscriber, 'instance_id'], [s.heartbeatSubscribers, 'instance_id']] as const) {
      expect(typeName(st, p)).toBe('NVarChar');
      expect(length(st, p)).toBe(200);
    }
    expect(scale(s.loadPendingFirst, 'started_at')).toBeUndefined();
  });

  it('every @parameter used is declared, and every declared one is used', () => {
    const procedural = ['ROWCOUNT', 'Resource', 'LockMode', 'LockOwner', 'LockTimeout'];
    for (const [name, st] of all) {
      const locals = new Set([...st.text.matchAll(/DECLARE @(\w+)/g)].map((m) => m[1]!));
      const used = new Set([...st.text.matchAll(/@(\w+)/g)].map((m) => m[1]!).filter((p) => !p.startsWith('@')));
      const params = Object.keys(st.params);
      for (const p of params) expect(used.has(p), `${name}: @${p} declared but unused`).toBe(true);
      for (const p of used) {
        expect(params.includes(p) || locals.has(p) || procedural.includes(p), `${name}: @${p} is neither a parameter nor a local`).toBe(true);
      }
    }
  });

  it('no value is ever interpolated: only bracket-quoted validated names; literals are fixed text', () => {
    const q = qualifiedChannelNames(names);
    for (const [name, st] of all) {
      if (name === 'catalogSnapshot') continue;
      const rest = st.text
        .replace(/N'(\[dbo\]\.\[(rec|msg|sub|msg_ack_seq)\]|(rec|msg|sub)_[a-z_]+|dbo|msg_ack_seq|acked_seq|asyncresponse:ddl:dbo)'/g, '')
        .replace(/N'CREATE SCHEMA \[dbo\]'/g, '')
        .replace(/N'AsyncResponse channel could not take[^']*'/g, '')
        .replace(/N'(U|SO)'/g, '')
        .replace(/\[dbo\]\.\[(rec|msg|sub|msg_ack_seq)\]/g, '')
        .replace(/\[(rec|msg|sub)_[a-z_]+_idx\]/g, '');
      expect(rest, name).not.toMatch(/\b(rec|msg|sub)\b/);
      // the only quoted literals left are JSON paths and 'Exclusive'/'Transaction'
      for (const literal of rest.match(/'[^']*'/g) ?? []) {
        const jobJson = ['\'{"messageId":"\'', '\'","correlationId":"\'', '\'","registrationId":"\'', '\'","registration":"\'', '\'"}\'', '\'{"AR-Correlation-Id":"\'', "'json'"];
        expect(["'$.c'", "'$.r'", "'Exclusive'", "'Transaction'", ...jobJson], `${name}: ${literal}`).toContain(literal);
      }
    }
    expect(q.sequence).toBe('[dbo].[msg_ack_seq]');
  });

  it('refuses names that are not validated identifiers before building any text', () => {
    const bad: ChannelNames = { ...names, messageTable: "msg]; DROP TABLE x; --" };
    expect(() => channelStatements(bad, CALLBACKS)).toThrow(/not a simple identifier/);
    expect(() => printSqlServerChannelSchema({ ...names, schema: "dbo'" })).toThrow(/not a simple identifier/);
  });

  it('a 128-character message table name yields derived names within 128, distinct, suffixes kept', () => {
    const long = 'm'.repeat(128);
    const n = channelNames('dbo', { recoveryTable: 'r'.repeat(128), messageTable: long, subscriberTable: 's'.repeat(128) }, 'sqlserver');
    expect(n.ackSequence).toBe('m'.repeat(120) + '_ack_seq');
    expect(n.messageExpiresIndex).toBe('m'.repeat(116) + '_expires_idx');
    expect(n.messageCorrelationCreatedIndex).toBe('m'.repeat(104) + '_correlation_created_idx');
    const derived = [n.ackSequence, n.recoveryExpiresIndex, n.messageCorrelationCreatedIndex, n.messageExpiresIndex, n.subscriberExpiresIndex];
    for (const d of derived) expect(d.length).toBeLessThanOrEqual(128);
    expect(new Set([...derived, n.recoveryTable, n.messageTable, n.subscriberTable].map((x) => x.toLowerCase())).size).toBe(8);
    const built = channelStatements(n, CALLBACKS);
    expect(built.ddl.text).toContain(`CREATE SEQUENCE [dbo].[${n.ackSequence}] AS bigint START WITH 1;`);
    expect(built.claimForDelivery.text).toContain(`NEXT VALUE FOR [dbo].[${n.ackSequence}];`);
    for (const [, index] of [...built.ddl.text.matchAll(/CREATE INDEX \[(\w+)\]/g)]) expect(index!.length).toBeLessThanOrEqual(128);
  });

  it('the default names render the documented objects', () => {
    const d = channelNames('dbo', DEFAULT_CHANNEL_TABLES, 'sqlserver');
    const text = channelStatements(d, CALLBACKS).ddl.text;
    expect(text).toContain('CREATE TABLE [dbo].[asyncresponse_recovery_state] (');
    expect(text).toContain('CREATE TABLE [dbo].[asyncresponse_channel_messages] (');
    expect(text).toContain('CREATE TABLE [dbo].[asyncresponse_channel_subscribers] (');
    expect(text).toContain('CREATE SEQUENCE [dbo].[asyncresponse_channel_messages_ack_seq] AS bigint START WITH 1;');
    expect(text).toContain('CREATE INDEX [asyncresponse_channel_messages_correlation_created_idx] ON [dbo].[asyncresponse_channel_messages] (correlation_id, created_at);');
  });

  it('the printed script is idempotent DDL for the same objects, split by GO', () => {
    const script = printSqlServerChannelSchema(names);
    expect(script).toContain("IF SCHEMA_ID(N'dbo') IS NULL");
    for (const table of ['rec', 'msg', 'sub']) expect(script).toContain(`IF OBJECT_ID(N'[dbo].[${table}]', N'U') IS NULL\nBEGIN\nCREATE TABLE [dbo].[${table}] (`);
    expect(script).toContain(channelAckSequenceMigration(names));
    expect(script.match(/IF NOT EXISTS \(SELECT 1 FROM sys\.indexes/g)).toHaveLength(4);
    expect(script.match(/^GO$/gm)!.length).toBeGreaterThanOrEqual(9);
    expect(script).not.toContain('sp_getapplock');
    expect(script.match(/COLLATE Latin1_General_100_BIN2 NOT NULL/g)).toHaveLength(3);
  });
});
