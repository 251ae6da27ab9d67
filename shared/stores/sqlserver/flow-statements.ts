// Every T-SQL statement of the SQL Server durable-flow state store, as pure functions of the validated names
// (PostgreSQL twins: stores/postgres/flow-statements.ts). Every instant is SYSUTCDATETIME(); durations are bigint
// milliseconds split for DATEADD (dbClockPlus). Each write turns NOCOUNT off so a server-wide SET NOCOUNT ON
// cannot hide its rowsAffected. flow_id is nvarchar(400) COLLATE Latin1_General_100_BIN2: ids compare ordinally.

import * as sql from 'mssql';
import type { FlowStatus } from '../../flows/state';
import { FLOW_PRUNE_BATCH } from '../../flows/store-rules';
import { quoteIdentifier } from '../../sql/identifiers';
import type { SchemaNames } from '../schema-names';
import { BIN2, createIndexIfMissing, createTableIfMissing, dbClockPlus, nameLiteral, qualifiedTable, type Statement } from './statements';
import { readySetTables, STATE_SCHEDULED } from './ready-set';
import { KEY_AND_INDEX_SNAPSHOT } from './catalog-queries';

const q = (n: string) => quoteIdentifier(n, 'sqlserver');
const NOW = 'SYSUTCDATETIME()';

const types = {
  id: () => sql.NVarChar(400),
  name: () => sql.NVarChar(200),
  status: () => sql.NVarChar(16),
  message: () => sql.NVarChar(400),
  json: () => sql.NVarChar(sql.MAX),
  lease: () => sql.NVarChar(64),
  ms: () => sql.BigInt(),
  revision: () => sql.BigInt(),
  count: () => sql.Int(),
  sysname: () => sql.NVarChar(128),
  instant: () => sql.VarChar(27),
  flag: () => sql.Bit(),
  seq: () => sql.Int(),
};

export const qualifiedFlowTable = (n: SchemaNames) => `${q(n.schema)}.${q(n.flowStateTable)}`;
export const qualifiedStepsTable = (n: SchemaNames) => `${q(n.schema)}.${q(n.flowStepsTable)}`;

/**
 * Version 29: the steps table (flows/step-rows.ts), a run's leading completed steps one row each. Its rows go with
 * their run (the cascade serves delete and prune); the primary key serves every read and write of it. The
 * constraints are unnamed (a name derived from the table's could pass 128 characters).
 */
export function flowStepsDdl(n: SchemaNames): Array<{ name: string; lines: string[] }> {
  const body = [
    `    flow_id nvarchar(400) COLLATE ${BIN2} NOT NULL,`,
    '    seq int NOT NULL,',
    `    step_name nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
    '    step_json nvarchar(max) NOT NULL,',
    '    revision bigint NOT NULL,',
    '    PRIMARY KEY (flow_id, seq),',
    `    FOREIGN KEY (flow_id) REFERENCES ${qualifiedFlowTable(n)} (flow_id) ON DELETE CASCADE`,
  ].join('\n');
  return [{ name: 'create flow steps table', lines: createTableIfMissing(qualifiedStepsTable(n), body) }];
}

/** The run's step rows, the second result set of a load or an acquire (a seek on the steps table's key). */
const readSteps = (n: SchemaNames) => `SELECT seq, step_name, step_json, revision FROM ${qualifiedStepsTable(n)} WHERE flow_id = @flow_id ORDER BY seq;`;

/**
 * A write of the run's row (`update`: the fenced UPDATE's lines) with its step rows, in one transaction: when the
 * update took, the rows past @kept_rows go (stale ones, or the ones this write rewrites) and @step_rows' are
 * inserted at the run's new revision. @step_rows: [{"s": seq, "n": name, "j": step JSON text}] (flows/step-rows.ts).
 * One result set: updated (0/1).
 */
function withStepWrites(n: SchemaNames, update: string[], carry = false): string {
  const steps = qualifiedStepsTable(n);
  return [
    'SET NOCOUNT OFF;',
    'SET XACT_ABORT ON;',
    'DECLARE @updated int;',
    ...(carry ? CARRIED_DECLARES : []),
    'BEGIN TRANSACTION;',
    ...update,
    'SET @updated = @@ROWCOUNT;',
    'IF @updated = 1',
    'BEGIN',
    `    DELETE FROM ${steps} WHERE flow_id = @flow_id AND seq > @kept_rows;`,
    `    INSERT INTO ${steps} (flow_id, seq, step_name, step_json, revision)`,
    '    SELECT @flow_id, j.seq, j.step_name, j.step_json, @revision',
    "    FROM OPENJSON(@step_rows) WITH (seq int '$.s', step_name nvarchar(200) '$.n', step_json nvarchar(max) '$.j') AS j;",
    'END',
    ...(carry ? carriedJobLines(n, '@updated') : []),
    'COMMIT TRANSACTION;',
    'SELECT @updated AS updated;',
    ...(carry ? [CARRIED_RESULT] : []),
  ].join('\n');
}

/** A carrying write's own variables: the ids it inserted, and the instant its jobs share (as a publish's @now). */
const CARRIED_DECLARES = ['DECLARE @carried TABLE (id uniqueidentifier NOT NULL);', 'DECLARE @carried_at datetime2 = SYSUTCDATETIME();'];

/** A carrying write's last result set: the ids of the jobs it inserted (flows/jobs.ts markCarried). */
const CARRIED_RESULT = 'SELECT id FROM @carried;';

/**
 * The jobs a write carries (flows/jobs.ts CarriedJob), inserted in its transaction when the write took (`gate` = 1):
 * publishBatch's insert of unkeyed rows (the same NOT EXISTS probe without a key-range lock, a delayed row scheduled,
 * seq drawn in `ord` order), the inserted ids kept in @carried. An id already there is left alone. A concurrent insert
 * of one of the ids fails the batch with 2627 and rolls the write back whole; the store runs it again.
 * @jobs: [{ id, queue, payload_json, headers_json, delay_ms, priority, ord }].
 * PostgreSQL: stores/postgres/carried-jobs.ts (the same rows, in the write's statement).
 */
function carriedJobLines(n: SchemaNames, gate: string): string[] {
  const t = qualifiedTable(n.transport);
  const { seq } = readySetTables(n.transport);
  return [
    `IF ${gate} = 1`,
    'BEGIN',
    `    INSERT INTO ${t} (id, queue, payload_json, headers_json, created_at, available_at, priority, state, seq)`,
    '    OUTPUT inserted.id INTO @carried (id)',
    '    SELECT src.id, src.queue, src.payload_json, src.headers_json, DATEADD(NANOSECOND, src.ord * 100, @carried_at),',
    `           CASE WHEN src.delay_ms > 0 THEN ${dbClockPlus('src.delay_ms', '@carried_at')} ELSE @carried_at END,`,
    `           COALESCE(src.priority, 0), CASE WHEN src.delay_ms > 0 THEN ${STATE_SCHEDULED} END, NEXT VALUE FOR ${seq} OVER (ORDER BY src.ord)`,
    "    FROM OPENJSON(@jobs) WITH (id uniqueidentifier '$.id', queue nvarchar(200) '$.queue', payload_json nvarchar(max) '$.payload_json',",
    "        headers_json nvarchar(max) '$.headers_json', delay_ms bigint '$.delay_ms', priority smallint '$.priority', ord int '$.ord') AS src",
    `    WHERE NOT EXISTS (SELECT 1 FROM ${t} AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = src.id);`,
    'END',
  ];
}

const stepParams = () => ({ kept_rows: types.seq(), step_rows: types.json() });

export const FLOW_EXPIRES_INDEX_KEYS = ['expires_at_utc'] as const;
export const FLOW_LIST_INDEX_KEYS = ['status', 'updated_at_utc', 'flow_id'] as const;
export const FLOW_LIST_INDEX_INCLUDES = ['flow_name', 'expires_at_utc'] as const;

/** The table's columns (version 7). The revision default is unnamed: a DF_{table}_revision name could pass 128 characters. */
export function flowStateTableBody(): string {
  return [
    `    flow_id nvarchar(400) COLLATE ${BIN2} NOT NULL PRIMARY KEY,`,
    `    flow_name nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
    `    status nvarchar(16) COLLATE ${BIN2} NOT NULL,`,
    '    last_message nvarchar(400) NULL,',
    '    state_json nvarchar(max) NOT NULL,',
    '    created_at_utc datetime2(7) NOT NULL DEFAULT SYSUTCDATETIME(),',
    '    updated_at_utc datetime2(7) NOT NULL,',
    '    expires_at_utc datetime2(7) NOT NULL,',
    '    revision bigint NOT NULL DEFAULT 0,',
    '    lease_id nvarchar(64) NULL,',
    '    lease_expires_at_utc datetime2(7) NULL',
  ].join('\n');
}

/** Version 7's batches: the table, the prune index, the list index (keys plus included columns). */
export function flowStateDdl(n: SchemaNames): Array<{ name: string; lines: string[] }> {
  const t = qualifiedFlowTable(n);
  const list = createIndexIfMissing(t, n.flowStateListIndex, FLOW_LIST_INDEX_KEYS);
  list[1] = list[1]!.replace(/;$/, ` INCLUDE (${FLOW_LIST_INDEX_INCLUDES.join(', ')});`);
  return [
    { name: 'create flow state table', lines: createTableIfMissing(t, flowStateTableBody()) },
    { name: 'create flow state expires index', lines: createIndexIfMissing(t, n.flowStateExpiresIndex, FLOW_EXPIRES_INDEX_KEYS) },
    { name: 'create flow state list index', lines: list },
  ];
}

type RowParams = 'flow_id' | 'flow_name' | 'status' | 'last_message' | 'state_json';
const rowParams = () => ({ flow_id: types.id(), flow_name: types.name(), status: types.status(), last_message: types.message(), state_json: types.json() });

/**
 * Insert-if-absent without MERGE (Babelfish has none; MERGE … HOLDLOCK has a history of bugs), in one
 * transaction: replace an expired row in place (its lease cleared), else insert unless the key exists. Both
 * probes hold UPDLOCK, HOLDLOCK (a key-range lock on an absent id), so concurrent creates of one id serialise and
 * exactly one inserts; a duplicate-key error (2627/2601) still means false. One result set: created (0/1).
 */
function create(n: SchemaNames): Statement<RowParams | 'ttl_ms'> {
  return { text: [...createLines(n), 'SELECT @created AS created;'].join('\n'), params: { ...rowParams(), ttl_ms: types.ms() } };
}

/** create with the start job (carriedJobLines): two result sets, created (0/1), then the ids of the jobs inserted. */
function createCarrying(n: SchemaNames): Statement<RowParams | 'ttl_ms' | 'jobs'> {
  return { text: [...createLines(n, true), 'SELECT @created AS created;', CARRIED_RESULT].join('\n'), params: { ...rowParams(), ttl_ms: types.ms(), jobs: types.json() } };
}

function createLines(n: SchemaNames, carry = false): string[] {
  const t = qualifiedFlowTable(n);
  return [
    'SET NOCOUNT OFF;',
    'SET XACT_ABORT ON;',
    'DECLARE @created int;',
    ...(carry ? CARRIED_DECLARES : []),
    'BEGIN TRANSACTION;',
    `UPDATE ${t} WITH (UPDLOCK, HOLDLOCK)`,
    'SET flow_name = @flow_name, status = @status, last_message = @last_message, state_json = @state_json,',
    `    created_at_utc = ${NOW}, updated_at_utc = ${NOW}, expires_at_utc = ${dbClockPlus('@ttl_ms')},`,
    '    revision = 0, lease_id = NULL, lease_expires_at_utc = NULL',
    `WHERE flow_id = @flow_id AND expires_at_utc <= ${NOW};`,
    'SET @created = @@ROWCOUNT;',
    'IF @created = 0',
    'BEGIN',
    `    INSERT INTO ${t} (flow_id, flow_name, status, last_message, state_json, created_at_utc, updated_at_utc, expires_at_utc, revision)`,
    `    SELECT @flow_id, @flow_name, @status, @last_message, @state_json, ${NOW}, ${NOW}, ${dbClockPlus('@ttl_ms')}, 0`,
    `    WHERE NOT EXISTS (SELECT 1 FROM ${t} WITH (UPDLOCK, HOLDLOCK) WHERE flow_id = @flow_id);`,
    '    SET @created = @@ROWCOUNT;',
    'END',
    ...(carry ? carriedJobLines(n, '@created') : []),
    'COMMIT TRANSACTION;',
  ];
}

/** Two result sets: the head (none for a missing or expired run), then the run's step rows. */
function load(n: SchemaNames): Statement<'flow_id'> {
  return {
    text: [`SELECT state_json, revision, created_at_utc, updated_at_utc FROM ${qualifiedFlowTable(n)} WHERE flow_id = @flow_id AND expires_at_utc > ${NOW};`, readSteps(n)].join('\n'),
    params: { flow_id: types.id() },
  };
}

/** Compare-and-swap with its step rows; @lease_id NULL is the lease-less path (recovery, operator edits). */
function update(n: SchemaNames): Statement<RowParams | 'revision' | 'expected_revision' | 'ttl_ms' | 'lease_id' | 'kept_rows' | 'step_rows'> {
  return {
    text: withStepWrites(n, [
      `UPDATE ${qualifiedFlowTable(n)}`,
      'SET flow_name = @flow_name, status = @status, last_message = @last_message, state_json = @state_json, revision = @revision,',
      `    expires_at_utc = ${dbClockPlus('@ttl_ms')}, updated_at_utc = ${NOW}`,
      `WHERE flow_id = @flow_id AND revision = @expected_revision AND expires_at_utc > ${NOW}`,
      `  AND (@lease_id IS NULL OR (lease_id = @lease_id AND lease_expires_at_utc > ${NOW}));`,
    ]),
    params: { ...rowParams(), revision: types.revision(), expected_revision: types.revision(), ttl_ms: types.ms(), lease_id: types.lease(), ...stepParams() },
  };
}

/**
 * The checkpoint of an execution that holds the lease (PostgreSQL: flowStatements().checkpoint): update's write,
 * fenced on the lease, which it extends (@extend_ms) or releases (@release = 1, the execution's last write) in the
 * same statement.
 */
type CheckpointParams = RowParams | 'revision' | 'expected_revision' | 'ttl_ms' | 'lease_id' | 'extend_ms' | 'release' | 'kept_rows' | 'step_rows';

/** The checkpoint with the jobs it carries (carriedJobLines): two result sets, updated (0/1), then the ids inserted. */
function checkpointCarrying(n: SchemaNames): Statement<CheckpointParams | 'jobs'> {
  const plain = checkpoint(n, true);
  return { text: plain.text, params: { ...plain.params, jobs: types.json() } };
}

function checkpoint(n: SchemaNames, carry = false): Statement<CheckpointParams> {
  return {
    text: withStepWrites(n, [
      `UPDATE ${qualifiedFlowTable(n)}`,
      'SET flow_name = @flow_name, status = @status, last_message = @last_message, state_json = @state_json, revision = @revision,',
      `    expires_at_utc = ${dbClockPlus('@ttl_ms')}, updated_at_utc = ${NOW},`,
      '    lease_id = CASE WHEN @release = 1 THEN NULL ELSE lease_id END,',
      `    lease_expires_at_utc = CASE WHEN @release = 1 THEN NULL WHEN @extend_ms IS NULL THEN lease_expires_at_utc ELSE ${dbClockPlus('@extend_ms')} END`,
      `WHERE flow_id = @flow_id AND revision = @expected_revision AND expires_at_utc > ${NOW}`,
      `  AND lease_id = @lease_id AND lease_expires_at_utc > ${NOW};`,
    ], carry),
    params: {
      ...rowParams(),
      revision: types.revision(),
      expected_revision: types.revision(),
      ttl_ms: types.ms(),
      lease_id: types.lease(),
      extend_ms: types.ms(),
      release: types.flag(),
      ...stepParams(),
    },
  };
}

function acquireLease(n: SchemaNames): Statement<'flow_id' | 'lease_id' | 'duration_ms'> {
  return {
    text: [
      'SET NOCOUNT OFF;',
      `UPDATE ${qualifiedFlowTable(n)} SET lease_id = @lease_id, lease_expires_at_utc = ${dbClockPlus('@duration_ms')}`,
      `WHERE flow_id = @flow_id AND expires_at_utc > ${NOW}`,
      `  AND (lease_id IS NULL OR lease_expires_at_utc <= ${NOW} OR lease_id = @lease_id);`,
    ].join('\n'),
    params: { flow_id: types.id(), lease_id: types.lease(), duration_ms: types.ms() },
  };
}

/**
 * Takes the lease and returns the state with the database's time in one batch (PostgreSQL:
 * flowStatements().acquire): no reload after the lease, no clock read. No row = not taken. A second result set
 * holds the run's step rows.
 */
function acquire(n: SchemaNames): Statement<'flow_id' | 'lease_id' | 'duration_ms'> {
  return { text: ['SET NOCOUNT OFF;', ...acquireLines(n)].join('\n'), params: { flow_id: types.id(), lease_id: types.lease(), duration_ms: types.ms() } };
}

/**
 * A start job's execution in one batch (PostgreSQL: flowStatements().createAndAcquire): create's insert-if-absent
 * transaction (the starter's write usually found), then acquire's lease and its result sets (the head, the step
 * rows). A duplicate-key error (a concurrent create won) fails the batch before the lease: the store then runs
 * acquire alone.
 */
function createAndAcquire(n: SchemaNames): Statement<RowParams | 'ttl_ms' | 'lease_id' | 'duration_ms'> {
  return {
    text: [...createLines(n), ...acquireLines(n)].join('\n'),
    params: { ...rowParams(), ttl_ms: types.ms(), lease_id: types.lease(), duration_ms: types.ms() },
  };
}

function acquireLines(n: SchemaNames): string[] {
  return [
    `UPDATE ${qualifiedFlowTable(n)} SET lease_id = @lease_id, lease_expires_at_utc = ${dbClockPlus('@duration_ms')}`,
    `OUTPUT inserted.state_json, inserted.revision, inserted.created_at_utc, inserted.updated_at_utc, ${NOW} AS db_now`,
    `WHERE flow_id = @flow_id AND expires_at_utc > ${NOW}`,
    `  AND (lease_id IS NULL OR lease_expires_at_utc <= ${NOW} OR lease_id = @lease_id);`,
    readSteps(n),
  ];
}

function renewLease(n: SchemaNames): Statement<'flow_id' | 'lease_id' | 'duration_ms'> {
  return {
    text: [
      'SET NOCOUNT OFF;',
      `UPDATE ${qualifiedFlowTable(n)} SET lease_expires_at_utc = ${dbClockPlus('@duration_ms')}`,
      `WHERE flow_id = @flow_id AND expires_at_utc > ${NOW} AND lease_id = @lease_id AND lease_expires_at_utc > ${NOW};`,
    ].join('\n'),
    params: { flow_id: types.id(), lease_id: types.lease(), duration_ms: types.ms() },
  };
}

/** No expiry predicate: our own lease is cleared even on an expired row. */
function releaseLease(n: SchemaNames): Statement<'flow_id' | 'lease_id'> {
  return {
    text: [
      'SET NOCOUNT OFF;',
      `UPDATE ${qualifiedFlowTable(n)} SET lease_id = NULL, lease_expires_at_utc = NULL WHERE flow_id = @flow_id AND lease_id = @lease_id;`,
    ].join('\n'),
    params: { flow_id: types.id(), lease_id: types.lease() },
  };
}

/** As stored: no clock predicate (the caller judges lapse). */
function observeLease(n: SchemaNames): Statement<'flow_id'> {
  return {
    text: `SELECT lease_id, lease_expires_at_utc FROM ${qualifiedFlowTable(n)} WHERE flow_id = @flow_id;`,
    params: { flow_id: types.id() },
  };
}

function deleteFlow(n: SchemaNames): Statement<'flow_id'> {
  return { text: ['SET NOCOUNT OFF;', `DELETE FROM ${qualifiedFlowTable(n)} WHERE flow_id = @flow_id;`].join('\n'), params: { flow_id: types.id() } };
}

/** One bounded prune batch (below lock escalation); the count is read server-side (NOCOUNT-proof). */
function pruneBatch(n: SchemaNames): Statement<never> {
  return {
    text: [
      'SET NOCOUNT OFF;',
      `DELETE TOP (${FLOW_PRUNE_BATCH}) FROM ${qualifiedFlowTable(n)} WHERE expires_at_utc <= ${NOW};`,
      'SELECT @@ROWCOUNT AS deleted;',
    ].join('\n'),
    params: {},
  };
}

const now: Statement<never> = { text: `SELECT ${NOW} AS now;`, params: {} };

function countByStatus(n: SchemaNames): Statement<never> {
  return {
    text: `SELECT status, COUNT_BIG(*) AS n FROM ${qualifiedFlowTable(n)} WHERE expires_at_utc > ${NOW} GROUP BY status;`,
    params: {},
  };
}

export interface FlowListFilter {
  status?: FlowStatus;
  flowName?: string;
  cursor?: boolean;
}

type ListParams = 'limit' | 'status' | 'flow_name' | 'cursor_at' | 'cursor_id';

/** One text per filter combination (a seek on the list index when the status is given). */
export function flowList(n: SchemaNames, filter: FlowListFilter): Statement<ListParams> {
  const where = [`expires_at_utc > ${NOW}`];
  if (filter.status !== undefined) where.push('status = @status');
  if (filter.flowName !== undefined) where.push('flow_name = @flow_name');
  if (filter.cursor) {
    // the first conjunct bounds the backward seek at the cursor; the OR alone would rescan every earlier page (review L6)
    where.push(
      'updated_at_utc <= CONVERT(datetime2(7), @cursor_at, 121)',
      '(updated_at_utc < CONVERT(datetime2(7), @cursor_at, 121) OR (updated_at_utc = CONVERT(datetime2(7), @cursor_at, 121) AND flow_id < @cursor_id))',
    );
  }
  return {
    text: [
      'SELECT TOP (@limit) flow_id, flow_name, status, last_message, created_at_utc, updated_at_utc,',
      '       CONVERT(varchar(27), updated_at_utc, 121) AS updated_exact',
      `FROM ${qualifiedFlowTable(n)}`,
      `WHERE ${where.join('\n  AND ')}`,
      'ORDER BY updated_at_utc DESC, flow_id DESC;',
    ].join('\n'),
    params: { limit: types.count(), status: types.status(), flow_name: types.name(), cursor_at: types.instant(), cursor_id: types.id() },
  };
}

/** Every list variant, named for the shape and grammar tests. */
export function flowListVariants(n: SchemaNames): Record<string, Statement<ListParams>> {
  const out: Record<string, Statement<ListParams>> = {};
  for (const status of [undefined, 'Running' as const]) {
    for (const flowName of [undefined, 'x']) {
      for (const cursor of [false, true]) {
        const key = `list${status ? 'ByStatus' : ''}${flowName ? 'ByName' : ''}${cursor ? 'After' : ''}`;
        out[key] = flowList(n, { status, flowName, cursor });
      }
    }
  }
  return out;
}

/**
 * The catalog snapshot verification reads (outside any DDL transaction): objects holding the name, columns,
 * primary key columns, index columns.
 */
export function flowCatalogSnapshot(): Statement<'schema' | 'table'> {
  return {
    text: [
      'DECLARE @schema_id int = SCHEMA_ID(@schema);',
      "DECLARE @object_id int = OBJECT_ID(QUOTENAME(@schema) + N'.' + QUOTENAME(@table), N'U');",
      'SELECT o.name, o.type, o.type_desc, CAST(CASE WHEN o.object_id = @object_id THEN 1 ELSE 0 END AS bit) AS is_target',
      'FROM sys.objects AS o WHERE o.schema_id = @schema_id AND LOWER(o.name) = LOWER(@table);',
      'SELECT c.column_id, c.name, TYPE_NAME(c.system_type_id) AS type_name, c.max_length, c.precision, c.scale,',
      '       c.is_nullable, c.collation_name, c.is_identity, c.is_computed, c.default_object_id,',
      '       dc.definition AS default_definition',
      'FROM sys.columns AS c',
      'LEFT JOIN sys.default_constraints AS dc ON dc.object_id = c.default_object_id',
      'WHERE c.object_id = @object_id',
      'ORDER BY c.column_id;',
      ...KEY_AND_INDEX_SNAPSHOT,
    ].join('\n'),
    params: { schema: types.sysname(), table: types.sysname() },
  };
}

/** Every statement of the flow store, built once from the validated names (`nameLiteral` guards the DDL). */
export function flowStatements(n: SchemaNames) {
  nameLiteral(qualifiedFlowTable(n));
  return {
    create: create(n),
    createCarrying: createCarrying(n),
    load: load(n),
    update: update(n),
    checkpoint: checkpoint(n),
    checkpointCarrying: checkpointCarrying(n),
    acquire: acquire(n),
    createAndAcquire: createAndAcquire(n),
    acquireLease: acquireLease(n),
    renewLease: renewLease(n),
    releaseLease: releaseLease(n),
    observeLease: observeLease(n),
    delete: deleteFlow(n),
    pruneBatch: pruneBatch(n),
    now,
    countByStatus: countByStatus(n),
    ...flowListVariants(n),
    catalogSnapshot: flowCatalogSnapshot(),
  };
}

export type FlowStatements = ReturnType<typeof flowStatements>;
