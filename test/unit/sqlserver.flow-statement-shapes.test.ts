// Pins the shape of every T-SQL statement of the SQL Server durable-flow state store (no T-SQL engine listens on
// this machine; the flow contract suite runs them for real when MSSQL_CONNECTION_STRING is set).
import { describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { channelNames, transportNames } from '../../shared/sql/identifiers';
import { schemaNames } from '../../shared/stores/schema-names';
import { flowList, flowStatements } from '../../shared/stores/sqlserver/flow-statements';
import type { Statement } from '../../shared/stores/sqlserver/statements';
import { length, SPLIT, typeName } from '../support/sqlserver-statements';

const names = schemaNames(transportNames('jobs', 'q', 'sqlserver'), channelNames('jobs', DEFAULT_CHANNEL_TABLES, 'sqlserver'), 'sqlserver', 'flows');
const s = flowStatements(names);
const all = Object.entries(s) as Array<[string, Statement]>;
const T = '[jobs].[flows]';
const STEPS = '[jobs].[flows_steps]';
const NOW = 'SYSUTCDATETIME()';
const READ_STEPS = `SELECT seq, step_name, step_json, revision FROM ${STEPS} WHERE flow_id = @flow_id ORDER BY seq;`;

/** The step rows written after a run's row update took, in the same transaction (flows/step-rows.ts). */
const withStepWrites = (update: string[]) => [
  'SET NOCOUNT OFF;',
  'SET XACT_ABORT ON;',
  'DECLARE @updated int;',
  'BEGIN TRANSACTION;',
  ...update,
  'SET @updated = @@ROWCOUNT;',
  'IF @updated = 1',
  'BEGIN',
  `    DELETE FROM ${STEPS} WHERE flow_id = @flow_id AND seq > @kept_rows;`,
  `    INSERT INTO ${STEPS} (flow_id, seq, step_name, step_json, revision)`,
  '    SELECT @flow_id, j.seq, j.step_name, j.step_json, @revision',
  "    FROM OPENJSON(@step_rows) WITH (seq int '$.s', step_name nvarchar(200) '$.n', step_json nvarchar(max) '$.j') AS j;",
  'END',
  'COMMIT TRANSACTION;',
  'SELECT @updated AS updated;',
];

describe('SQL Server flow statement shapes', () => {
  it('create: no MERGE; replace an expired row (lease cleared), else insert if absent, both probes UPDLOCK+HOLDLOCK, one transaction', () => {
    expect(s.create.text).toBe(
      [
        'SET NOCOUNT OFF;',
        'SET XACT_ABORT ON;',
        'DECLARE @created int;',
        'BEGIN TRANSACTION;',
        `UPDATE ${T} WITH (UPDLOCK, HOLDLOCK)`,
        'SET flow_name = @flow_name, status = @status, last_message = @last_message, state_json = @state_json,',
        `    created_at_utc = ${NOW}, updated_at_utc = ${NOW}, expires_at_utc = ${SPLIT('@ttl_ms')},`,
        '    revision = 0, lease_id = NULL, lease_expires_at_utc = NULL',
        `WHERE flow_id = @flow_id AND expires_at_utc <= ${NOW};`,
        'SET @created = @@ROWCOUNT;',
        'IF @created = 0',
        'BEGIN',
        `    INSERT INTO ${T} (flow_id, flow_name, status, last_message, state_json, created_at_utc, updated_at_utc, expires_at_utc, revision)`,
        `    SELECT @flow_id, @flow_name, @status, @last_message, @state_json, ${NOW}, ${NOW}, ${SPLIT('@ttl_ms')}, 0`,
        `    WHERE NOT EXISTS (SELECT 1 FROM ${T} WITH (UPDLOCK, HOLDLOCK) WHERE flow_id = @flow_id);`,
        '    SET @created = @@ROWCOUNT;',
        'END',
        'COMMIT TRANSACTION;',
        'SELECT @created AS created;',
      ].join('\n'),
    );
    expect(all.some(([, st]) => /\bMERGE\b/i.test(st.text))).toBe(false);
  });

  it('load reads live rows only, then the run\'s step rows by a seek on their key; observe reads the lease as stored, with no clock predicate', () => {
    expect(s.load.text).toBe([`SELECT state_json, revision, created_at_utc, updated_at_utc FROM ${T} WHERE flow_id = @flow_id AND expires_at_utc > ${NOW};`, READ_STEPS].join('\n'));
    expect(s.observeLease.text).toBe(`SELECT lease_id, lease_expires_at_utc FROM ${T} WHERE flow_id = @flow_id;`);
  });

  it('acquire: takes the lease as acquireLease does and returns the state and the database time (OUTPUT)', () => {
    expect(s.acquire.text).toBe(
      [
        'SET NOCOUNT OFF;',
        `UPDATE ${T} SET lease_id = @lease_id, lease_expires_at_utc = ${SPLIT('@duration_ms')}`,
        `OUTPUT inserted.state_json, inserted.revision, inserted.created_at_utc, inserted.updated_at_utc, ${NOW} AS db_now`,
        `WHERE flow_id = @flow_id AND expires_at_utc > ${NOW}`,
        `  AND (lease_id IS NULL OR lease_expires_at_utc <= ${NOW} OR lease_id = @lease_id);`,
        READ_STEPS,
      ].join('\n'),
    );
    expect(length(s.acquire, 'lease_id')).toBe(64);
    expect(typeName(s.acquire, 'duration_ms')).toBe('BigInt');
  });

  it("createAndAcquire: create's insert-if-absent transaction, then acquire's lease and result sets, in one batch", () => {
    expect(s.createAndAcquire.text).toBe([s.create.text.replace(/\nSELECT @created AS created;$/, ''), s.acquire.text.replace(/^SET NOCOUNT OFF;\n/, '')].join('\n'));
    expect(s.createAndAcquire.text.match(/BEGIN TRANSACTION;/g)).toHaveLength(1);
    expect(s.createAndAcquire.text).toContain('COMMIT TRANSACTION;\nUPDATE [jobs].[flows] SET lease_id = @lease_id');
    expect(Object.keys(s.createAndAcquire.params).sort()).toEqual(['duration_ms', 'flow_id', 'flow_name', 'last_message', 'lease_id', 'state_json', 'status', 'ttl_ms']);
  });

  it('checkpoint: the CAS fenced on a held lease, which it extends or releases, with the new step rows, in one transaction', () => {
    expect(s.checkpoint.text).toBe(
      withStepWrites([
        `UPDATE ${T}`,
        'SET flow_name = @flow_name, status = @status, last_message = @last_message, state_json = @state_json, revision = @revision,',
        `    expires_at_utc = ${SPLIT('@ttl_ms')}, updated_at_utc = ${NOW},`,
        '    lease_id = CASE WHEN @release = 1 THEN NULL ELSE lease_id END,',
        `    lease_expires_at_utc = CASE WHEN @release = 1 THEN NULL WHEN @extend_ms IS NULL THEN lease_expires_at_utc ELSE ${SPLIT('@extend_ms')} END`,
        `WHERE flow_id = @flow_id AND revision = @expected_revision AND expires_at_utc > ${NOW}`,
        `  AND lease_id = @lease_id AND lease_expires_at_utc > ${NOW};`,
      ]).join('\n'),
    );
    expect(typeName(s.checkpoint, 'kept_rows')).toBe('Int');
    expect(typeName(s.checkpoint, 'step_rows')).toBe('NVarChar');
    expect(typeName(s.checkpoint, 'release')).toBe('Bit');
    expect(typeName(s.checkpoint, 'extend_ms')).toBe('BigInt');
    expect(length(s.checkpoint, 'lease_id')).toBe(64);
  });

  /** The carried jobs' insert (flow-statements.ts carriedJobLines): publishBatch's plain rows, when the write took. */
  const carried = (gate: string) => [
    `IF ${gate} = 1`,
    'BEGIN',
    '    INSERT INTO [jobs].[q] (id, queue, payload_json, headers_json, created_at, available_at, priority, state, seq)',
    '    OUTPUT inserted.id INTO @carried (id)',
    '    SELECT src.id, src.queue, src.payload_json, src.headers_json, DATEADD(NANOSECOND, src.ord * 100, @carried_at),',
    `           CASE WHEN src.delay_ms > 0 THEN ${SPLIT('src.delay_ms', '@carried_at')} ELSE @carried_at END,`,
    '           COALESCE(src.priority, 0), CASE WHEN src.delay_ms > 0 THEN 1 END, NEXT VALUE FOR [jobs].[q_seq] OVER (ORDER BY src.ord)',
    "    FROM OPENJSON(@jobs) WITH (id uniqueidentifier '$.id', queue nvarchar(200) '$.queue', payload_json nvarchar(max) '$.payload_json',",
    "        headers_json nvarchar(max) '$.headers_json', delay_ms bigint '$.delay_ms', priority smallint '$.priority', ord int '$.ord') AS src",
    '    WHERE NOT EXISTS (SELECT 1 FROM [jobs].[q] AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = src.id);',
    'END',
  ];
  const CARRIED_DECLARES = ['DECLARE @carried TABLE (id uniqueidentifier NOT NULL);', `DECLARE @carried_at datetime2 = ${NOW};`];

  it("createCarrying: create's transaction, then the carried jobs when the run was written, in it; results: created, then the ids inserted", () => {
    const create = s.create.text.split('\n');
    const commit = create.indexOf('COMMIT TRANSACTION;');
    expect(s.createCarrying.text).toBe(
      [...create.slice(0, 3), ...CARRIED_DECLARES, ...create.slice(3, commit), ...carried('@created'), 'COMMIT TRANSACTION;', 'SELECT @created AS created;', 'SELECT id FROM @carried;'].join('\n'),
    );
    expect(typeName(s.createCarrying, 'jobs')).toBe('NVarChar');
    expect(Object.keys(s.createCarrying.params).sort()).toEqual(['flow_id', 'flow_name', 'jobs', 'last_message', 'state_json', 'status', 'ttl_ms']);
  });

  it('checkpointCarrying: the checkpoint, then the carried jobs when it took, in its transaction; results: updated, then the ids inserted', () => {
    const checkpoint = s.checkpoint.text.split('\n');
    const commit = checkpoint.indexOf('COMMIT TRANSACTION;');
    expect(s.checkpointCarrying.text).toBe(
      [...checkpoint.slice(0, 3), ...CARRIED_DECLARES, ...checkpoint.slice(3, commit), ...carried('@updated'), 'COMMIT TRANSACTION;', 'SELECT @updated AS updated;', 'SELECT id FROM @carried;'].join('\n'),
    );
    expect(Object.keys(s.checkpointCarrying.params).sort()).toEqual([...Object.keys(s.checkpoint.params), 'jobs'].sort());
    expect(typeName(s.checkpointCarrying, 'jobs')).toBe('NVarChar');
  });

  it('update: CAS on revision and liveness, the lease only when given, the TTL from the database clock, with the new step rows', () => {
    expect(s.update.text).toBe(
      withStepWrites([
        `UPDATE ${T}`,
        'SET flow_name = @flow_name, status = @status, last_message = @last_message, state_json = @state_json, revision = @revision,',
        `    expires_at_utc = ${SPLIT('@ttl_ms')}, updated_at_utc = ${NOW}`,
        `WHERE flow_id = @flow_id AND revision = @expected_revision AND expires_at_utc > ${NOW}`,
        `  AND (@lease_id IS NULL OR (lease_id = @lease_id AND lease_expires_at_utc > ${NOW}));`,
      ]).join('\n'),
    );
  });

  it('leases: acquire when unheld, lapsed or ours; renew only an unexpired own lease; release only our own, expiry ignored', () => {
    expect(s.acquireLease.text).toBe(
      [
        'SET NOCOUNT OFF;',
        `UPDATE ${T} SET lease_id = @lease_id, lease_expires_at_utc = ${SPLIT('@duration_ms')}`,
        `WHERE flow_id = @flow_id AND expires_at_utc > ${NOW}`,
        `  AND (lease_id IS NULL OR lease_expires_at_utc <= ${NOW} OR lease_id = @lease_id);`,
      ].join('\n'),
    );
    expect(s.renewLease.text).toBe(
      [
        'SET NOCOUNT OFF;',
        `UPDATE ${T} SET lease_expires_at_utc = ${SPLIT('@duration_ms')}`,
        `WHERE flow_id = @flow_id AND expires_at_utc > ${NOW} AND lease_id = @lease_id AND lease_expires_at_utc > ${NOW};`,
      ].join('\n'),
    );
    expect(s.releaseLease.text).toBe(
      ['SET NOCOUNT OFF;', `UPDATE ${T} SET lease_id = NULL, lease_expires_at_utc = NULL WHERE flow_id = @flow_id AND lease_id = @lease_id;`].join('\n'),
    );
  });

  it('delete and the bounded prune batch (DELETE TOP (1000), count read server-side)', () => {
    expect(s.delete.text).toBe(['SET NOCOUNT OFF;', `DELETE FROM ${T} WHERE flow_id = @flow_id;`].join('\n'));
    expect(s.pruneBatch.text).toBe(['SET NOCOUNT OFF;', `DELETE TOP (1000) FROM ${T} WHERE expires_at_utc <= ${NOW};`, 'SELECT @@ROWCOUNT AS deleted;'].join('\n'));
    expect(s.countByStatus.text).toBe(`SELECT status, COUNT_BIG(*) AS n FROM ${T} WHERE expires_at_utc > ${NOW} GROUP BY status;`);
    expect(s.now.text).toBe(`SELECT ${NOW} AS now;`);
  });

  it('list: newest first, live rows, each filter only when used, the cursor as exact datetime2(7) text', () => {
    expect(flowList(names, {}).text).toBe(
      [
        'SELECT TOP (@limit) flow_id, flow_name, status, last_message, created_at_utc, updated_at_utc,',
        '       CONVERT(varchar(27), updated_at_utc, 121) AS updated_exact',
        `FROM ${T}`,
        `WHERE expires_at_utc > ${NOW}`,
        'ORDER BY updated_at_utc DESC, flow_id DESC;',
      ].join('\n'),
    );
    expect(flowList(names, { status: 'Running', flowName: 'x', cursor: true }).text).toContain(
      [
        `WHERE expires_at_utc > ${NOW}`,
        '  AND status = @status',
        '  AND flow_name = @flow_name',
        // a seek bound at the cursor, so a page does not rescan the earlier ones (review L6)
        '  AND updated_at_utc <= CONVERT(datetime2(7), @cursor_at, 121)',
        '  AND (updated_at_utc < CONVERT(datetime2(7), @cursor_at, 121) OR (updated_at_utc = CONVERT(datetime2(7), @cursor_at, 121) AND flow_id < @cursor_id))',
      ].join('\n'),
    );
    expect(Object.keys(s).filter((k) => k.startsWith('list'))).toHaveLength(8);
  });

  it('every write turns NOCOUNT off; every instant is SYSUTCDATETIME(); no client time, no GETDATE', () => {
    for (const [name, st] of all) {
      if (/^\s*(SET NOCOUNT OFF;\n)?(UPDATE|DELETE)|INSERT INTO/m.test(st.text) && name !== 'catalogSnapshot') expect(st.text.startsWith('SET NOCOUNT OFF;'), name).toBe(true);
      expect(st.text, name).not.toMatch(/GETDATE|GETUTCDATE|CURRENT_TIMESTAMP/i);
    }
  });

  it('every parameter the text uses is declared, and typed: ids nvarchar(400), durations and revisions bigint', () => {
    for (const [name, st] of all) {
      const used = new Set([...st.text.matchAll(/@([a-z_]+)/g)].map((m) => m[1]!).filter((p) => !['created', 'updated', 'carried', 'carried_at', 'schema_id', 'object_id'].includes(p) && !p.startsWith('@')));
      used.delete('ROWCOUNT');
      for (const p of used) expect(Object.keys(st.params), `${name} uses @${p}`).toContain(p);
    }
    expect(typeName(s.create, 'flow_id')).toBe('NVarChar');
    expect(length(s.create, 'flow_id')).toBe(400);
    expect(typeName(s.create, 'ttl_ms')).toBe('BigInt');
    expect(typeName(s.update, 'expected_revision')).toBe('BigInt');
    expect(typeName(s.update, 'revision')).toBe('BigInt');
    expect(typeName(s.acquireLease, 'duration_ms')).toBe('BigInt');
    expect(length(s.acquireLease, 'lease_id')).toBe(64);
    expect(typeName(flowList(names, { status: 'Running' }), 'limit')).toBe('Int');
  });

  it('the catalog snapshot reads the objects holding the name, the columns, the primary key and the indexes, by parameter', () => {
    const t = s.catalogSnapshot.text;
    expect(t).toContain("OBJECT_ID(QUOTENAME(@schema) + N'.' + QUOTENAME(@table), N'U')");
    expect(t.match(/^SELECT /gm)).toHaveLength(4);
    expect(Object.keys(s.catalogSnapshot.params)).toEqual(['schema', 'table']);
  });
});
