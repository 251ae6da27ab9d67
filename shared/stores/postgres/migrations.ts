// PostgreSQL (and PGlite) schema versions: numbered lists of named statements, run by migrator.ts one version
// per transaction under the schema advisory lock. Version 1 is the schema of the releases before versioning
// (ddl.ts + channel-statements.ts, unchanged); every statement is idempotent, so a version 1 that finds some
// of its objects completes the rest. Twins: stores/sqlserver/migrations.ts.

import { checkMigrations, type Migration, type MigrationStatement } from '../migration-plan';
import type { SchemaNames } from '../schema-names';
import { quoteIdentifier } from '../../sql/identifiers';
import { channelDdl, channelTables } from './channel-statements';
import { SOURCE_QUEUE } from './statements';
import { addPriorityColumnSql, advisoryKey, dropIndexSql, pgDeadLettersIndexDdl, pgDeadLettersListIndexDdl, createClaimIndexSql, createReadyIndexSql, dropReadyIndexSql, createTableSql, createV1IndexesSql, dropLegacyReadyIndexSql, schemaLockResource } from './ddl';
import { postgresOutboxJobFieldsStatements, postgresOutboxReadySetStatements, postgresOutboxStatements } from './outbox';
import { pgKeysBacklogDdl, pgReadySetBackfill, pgReadySetDdl, pgReadySetIndexes } from './ready-set';
import { flowStateDdl, flowStepsDdl } from './flow-statements';
import { pgScheduleDdl } from './schedule-statements';
import { pgQueueStateTableDdl } from './job-control-statements';
import { pgDedupDdl } from './dedup-statements';
import { queueStateTableName } from '../queue-state-names';
import { pgHistoryDdl, pgHistoryJobFieldsDdl } from './history-statements';
import { pgLeaseRosterDdl, pgLimitColumnsDdl, pgLimitedClaimRoutineDdl } from './limit-statements';
import { pgClaimRoutineDdl } from './claim-routine';
import { pgOrderingColumnDdl, pgOrderingIndexDdl } from './ordering-sql';

const q = (n: string) => quoteIdentifier(n, 'postgres');

/** Most of each transport page is left for the claim's new row versions (HOT updates; version 11): a claimed row grows by its lease and lock id, so at 50 a fifth of the claims of small rows found no room. */
export const TRANSPORT_FILLFACTOR = 40;
/** First statement of a version that takes the transport table's lock: its wait is bounded (the spec's 5 s). */
const BOUND_LOCK_WAIT = { name: 'bound the lock wait', text: `SET LOCAL lock_timeout = '5s'` };
/**
 * Version 24: the transport table's own autovacuum settings. Every claim and ack leaves dead versions whose index
 * entries stay until a vacuum; a claim walks those in its ranges (the ready set's head, the lapsed leases), so beside
 * 1,000,000 rows acked since the last vacuum a claim of 10 ready rows took 175–250 ms (38,000 buffers) against
 * 0.8 ms after one. The defaults vacuum once dead rows pass 20 % of the live ones: with a backlog of a million delayed
 * jobs, 200,000 acks. Here a fixed count does (the backlog no longer raises it), and without the cost delay, so the
 * vacuum of a hot queue table ends in seconds. How often autovacuum looks is the server's (autovacuum_naptime,
 * docs/operating.md).
 */
export const TRANSPORT_AUTOVACUUM = { autovacuum_vacuum_scale_factor: 0, autovacuum_vacuum_threshold: 20000, autovacuum_vacuum_cost_delay: 0 } as const;

/** Splits one of ddl.ts's scripts into its statements (they hold no ';' inside). */
function statementsOf(script: string): string[] {
  return script
    .split(/;\s*\n/)
    .map((s) => s.trim().replace(/;$/, ''))
    .filter((s) => s !== '');
}

export const migrationsTable = (n: SchemaNames) => `${q(n.schema)}.${q(n.migrationsTable)}`;
export const subscriptionsTable = (n: SchemaNames) => `${q(n.schema)}.${q(n.subscriptionsTable)}`;

/** What the runner itself runs around the migrations (not a version of their own). */
export function postgresRunnerStatements(n: SchemaNames) {
  const t = migrationsTable(n);
  const c = channelTables(n.channel);
  return {
    createSchema: `CREATE SCHEMA IF NOT EXISTS ${q(n.schema)}`,
    createMigrationsTable: `CREATE TABLE IF NOT EXISTS ${t} (
    version integer NOT NULL PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    /** to_regclass: NULL for a missing table, no error (status reads without creating anything). */
    recordedVersions: `SELECT version FROM ${t} ORDER BY version`,
    migrationsTableExists: `SELECT to_regclass($1) IS NOT NULL AS present`,
    recordVersion: `INSERT INTO ${t} (version, name, applied_at) VALUES ($1, $2, clock_timestamp())`,
    /** Which of version 1's tables exist (regclass of each qualified name). */
    baselineTables: `SELECT t.name FROM unnest($1::text[]) AS t(name) WHERE to_regclass(t.name) IS NOT NULL`,
    baselineTableNames: [`${q(n.schema)}.${q(n.transport.table)}`, c.r, c.m, c.s],
  };
}

/** Every version, in order. */
export function postgresMigrations(n: SchemaNames): readonly Migration[] {
  const channel = channelDdl(n.channel).map((text, i): MigrationStatement => ({ name: `channel ddl ${i + 1}`, text }));
  const [createSchema, createTable] = statementsOf(createTableSql(n.transport));
  const [readyIndex, createdIndex] = statementsOf(createV1IndexesSql(n.transport));
  return checkMigrations([
    {
      version: 1,
      name: 'transport and channel tables',
      statements: [
        { name: 'create schema', text: createSchema! },
        { name: 'create transport table', text: createTable! },
        { name: 'create transport ready index', text: readyIndex! },
        { name: 'create transport created index', text: createdIndex! },
        ...channel,
      ],
    },
    {
      version: 2,
      name: 'topic subscriptions table',
      statements: [
        {
          name: 'create subscriptions table',
          // topic and subscription compare byte-wise (COLLATE "C"), like queue names; SQL Server: BIN2.
          text: `CREATE TABLE IF NOT EXISTS ${subscriptionsTable(n)} (
    topic text COLLATE "C" NOT NULL,
    subscription text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (topic, subscription))`,
        },
      ],
    },
    { version: 3, name: 'publish functions (outbox)', statements: postgresOutboxStatements(n) },
    {
      version: 4,
      name: 'dead-letter source index',
      statements: [
        {
          name: 'create transport dead-letter index',
          // A queue's dead-letter count, list, requeue and delete seek (dlq, source) instead of parsing the
          // headers of every dead letter of every queue. Built in the migration's transaction (no CONCURRENTLY):
          // writes to the table wait for the build.
          text: `CREATE INDEX IF NOT EXISTS ${q(n.transport.deadLetterIndex)} ON ${q(n.schema)}.${q(n.transport.table)} (queue, ${SOURCE_QUEUE})`,
        },
      ],
    },
    // SQL Server's twin is its version 7 (versions are numbered per dialect: PostgreSQL never had 5 and 6's
    // T-SQL-only column split and procedure rewrite).
    { version: 5, name: 'durable flow state table', statements: flowStateDdl(n) },
    // Issue 16 §1 (SQL Server's twin is its version 8).
    { version: 6, name: 'schedules table', statements: pgScheduleDdl(n) },
    {
      // Pause and resume (issue 16 §4): the claim reads a queue's row here. SQL Server's twin is its version 9.
      version: 7,
      name: 'queue state table',
      statements: [{ name: 'create queue state table', text: pgQueueStateTableDdl(n.schema, queueStateTableName(n.transport, 'postgres')) }],
    },
    // Dedup keys and debounce (issue 16 §3): a new table built empty. SQL Server's twin is its version 10.
    { version: 8, name: 'dedup keys table', statements: pgDedupDdl(n.transport) },
    // Job history (issue 16 §2): a new table and its indexes, built empty. SQL Server's twin is its version 11.
    { version: 9, name: 'job history table', statements: pgHistoryDdl(n.transport) },
    {
      // Limits across instances and forward backoff (issue 17 §2): three nullable columns on the queue-state table
      // (no rewrite, no lock wait on the transport table). SQL Server's twin is its version 12.
      version: 10,
      name: 'queue limits and backoff',
      statements: [{ name: 'add queue state limit columns', text: pgLimitColumnsDdl(n.schema, queueStateTableName(n.transport, 'postgres')) }],
    },
    {
      // PostgreSQL only (SQL Server updates a row in place). A claim changes no indexed column, so with room on the
      // page its UPDATE is a HOT update: no new entry in any of the table's indexes, and the dead-letter index's
      // header expression is not evaluated again. Bulk-published pages are full at the default fillfactor of 100,
      // so every claim wrote four index entries per row; at 50 a 500-row claim wrote 2.6 times less WAL.
      // A setting only: applies to pages written from now on, no rewrite, no lock wait beyond the ALTER's own.
      version: 11,
      name: 'transport table fillfactor',
      statements: [{ name: 'set transport fillfactor', text: `ALTER TABLE ${q(n.schema)}.${q(n.transport.table)} SET (fillfactor = ${TRANSPORT_FILLFACTOR})` }],
    },
    {
      // Job priority (issue 16 §4): the column (a constant default: no table rewrite), then the claim's index on
      // (queue, priority DESC, available_at, created_at) built before the old ready index is dropped. The build holds
      // the ALTER's lock to the end of the version's transaction: reads and writes of the table wait for it (seconds
      // per million rows); lock_timeout bounds the wait for the lock, so a busy table fails the version, retried later.
      // SQL Server's twin is its versions 13 (the column) and 14 (the index).
      version: 12,
      name: 'job priority',
      statements: [
        BOUND_LOCK_WAIT,
        { name: 'add transport priority column', text: addPriorityColumnSql(n.transport) },
        { name: 'create transport priority ready index', text: createReadyIndexSql(n.transport) },
        { name: 'drop transport legacy ready index', text: dropLegacyReadyIndexSql(n.transport) },
      ],
    },
    {
      // Ordering keys (issue 17 §1): a nullable column (catalog only, no rewrite) and a partial index over keyed rows,
      // which every existing row lacks, so the build is one scan of the table (writes and reads wait for it: the
      // column's lock is held to the commit). SQL Server's twins are its versions 15 (column) and 16 (index).
      version: 13,
      name: 'ordering keys',
      statements: [
        { name: 'add transport ordering_key column', text: pgOrderingColumnDdl(n.transport) },
        { name: 'create transport ordering index', text: pgOrderingIndexDdl(n.transport) },
      ],
    },
    {
      // The claim index (issue 17 §1): the ready index's keys with (ordering_key IS NULL) after the queue, so a claim
      // seeks a queue's unkeyed rows without reading its keyed backlog and walks keyed rows in claim order apart
      // (ordering-sql.ts). Built before the ready index is dropped, under the same lock bound as version 12.
      version: 14,
      name: 'claim index',
      statements: [
        BOUND_LOCK_WAIT,
        { name: 'create transport claim index', text: createClaimIndexSql(n.transport) },
        { name: 'drop transport priority ready index', text: dropReadyIndexSql(n.transport) },
      ],
    },
    {
      // The lease roster (issue 17 §2): a new table built empty, so limited claims count a queue's leases without
      // reading its ready backlog (limit-statements.ts). SQL Server's twin is its version 17.
      version: 15,
      name: 'lease roster table',
      statements: [{ name: 'create lease roster table', text: pgLeaseRosterDdl(n.transport) }],
    },
    {
      // Priority and ordering keys from SQL (issue 17 §1): the publish functions gain `priority` and `ordering_key`.
      // Functions only (no table is touched); the wrappers' EXECUTE grants carry over. SQL Server's twin is its version 18.
      version: 16,
      name: 'publish functions: priority and ordering key',
      statements: postgresOutboxJobFieldsStatements(n),
    },
    {
      // The job's priority and ordering key kept in job history (issue 17 §1): two nullable columns, catalog only
      // (no rewrite). SQL Server's twin is its version 19.
      version: 17,
      name: 'history priority and ordering key',
      statements: [
        BOUND_LOCK_WAIT,
        { name: 'add history priority and ordering key columns', text: pgHistoryJobFieldsDdl(n.transport) },
      ],
    },
    {
      // The ready set (issue 25, ready-set.ts): the state and seq columns (catalog only, no rewrite), the publish
      // sequence, the ordering keys table, the existing rows filed (keyed rows numbered and counted, each key's first
      // row its head, delayed rows scheduled, dead letters marked: writes only those rows), the partial indexes
      // claims read, and the SQL publish filing its rows too. Each index build reads the table once while writes
      // wait (the version's locks are held to its commit); the lock wait itself is bounded. The indexes the claim no
      // longer reads are dropped by version 19, in a transaction of its own. SQL Server's twins are its versions 20-21.
      version: 18,
      name: 'ready set',
      statements: [
        BOUND_LOCK_WAIT,
        ...pgReadySetDdl(n.transport),
        ...pgReadySetBackfill(n.transport),
        { name: 'create transport dead letters index', text: pgDeadLettersIndexDdl(n.transport) },
        ...pgReadySetIndexes(n.transport),
        ...postgresOutboxReadySetStatements(n),
        { name: 'create limited claim routine', text: pgLimitedClaimRoutineDdl(n.transport) },
      ],
    },
    {
      // What claims read before the ready set: the claim index (version 14), the ordering index (version 13) and the
      // dead-letter index over every row (version 4). A host of an earlier release still running then claims and
      // lists dead letters without them (correct, slower) until it stops. docs/migrations.md says so.
      version: 19,
      name: 'drop indexes the ready set replaced',
      statements: [
        BOUND_LOCK_WAIT,
        { name: 'drop transport claim index', text: dropIndexSql(n.transport, n.transport.claimIndex) },
        { name: 'drop transport ordering index', text: dropIndexSql(n.transport, n.transport.orderingIndex) },
        { name: 'drop transport dead-letter index', text: dropIndexSql(n.transport, n.transport.deadLetterIndex) },
      ],
    },
    // A run's leading completed steps as rows of their own (issue 26, flows/step-rows.ts): a new table built empty.
    // A host of an earlier release refuses a ledger whose head names step rows (its schema version 2) instead of
    // running those steps again. SQL Server's twin is its version 29.
    { version: 20, name: 'flow steps table', statements: flowStepsDdl(n) },
    // The limited claim's routine again, its UPDATE now fetching the picked rows by TID alone (statements.ts, the
    // claim): a catalog change, no table lock. A host of an earlier release calls the same routine and gets the same rows.
    { version: 21, name: 'limited claim routine: rows by TID', statements: [{ name: 'replace limited claim routine', text: pgLimitedClaimRoutineDdl(n.transport) }] },
    // The created index (created_at over every row) only served the dead-letter list: an index over dead letters
    // alone, by source and time, takes its place (ddl.ts), so live rows write one index entry less per publish and
    // lease. The build reads the table once while writes wait (to the version's commit); the lock wait is bounded.
    // Version 18's dead-letter index is a prefix of the new one and goes too. A host of an earlier release runs the
    // same dead-letter statements and is served by the new index.
    {
      version: 22,
      name: 'dead-letter index by time; created index dropped',
      statements: [
        BOUND_LOCK_WAIT,
        { name: 'create dead letters list index', text: pgDeadLettersListIndexDdl(n.transport) },
        { name: 'drop dead letters index', text: dropIndexSql(n.transport, n.transport.deadLettersIndex) },
        { name: 'drop transport created index', text: dropIndexSql(n.transport, n.transport.createdIndex) },
      ],
    },
    // A key's count becomes its backlog, keys and keyed rows get numbers, and the key order index gives way to two
    // indexes of queued rows (ready-set.ts pgKeysBacklogDdl): a head's ack that finds the key's next job no longer
    // writes the key row, a promoted row's lease writes no key index entry, and the next-job search compares integers.
    // The column is renamed: a host of an earlier release, which reads it as an exact count, fails its claims, keyed
    // publishes and keyed acks until it stops instead of leaving a key without a head (docs/migrations.md). The
    // publish and limited claim routines are replaced to read the new columns. The index builds read the table while
    // writes wait (to the version's commit); the lock wait is bounded.
    {
      version: 23,
      name: 'key backlog, key numbers and key indexes',
      statements: [
        BOUND_LOCK_WAIT,
        ...pgKeysBacklogDdl(n.transport),
        ...postgresOutboxReadySetStatements(n),
        { name: 'replace limited claim routine', text: pgLimitedClaimRoutineDdl(n.transport) },
      ],
    },
    {
      // A setting only (TRANSPORT_AUTOVACUUM): no rewrite, no lock wait beyond the ALTER's own (bounded).
      version: 24,
      name: 'transport table autovacuum',
      statements: [
        BOUND_LOCK_WAIT,
        {
          name: 'set transport autovacuum',
          text: `ALTER TABLE ${q(n.schema)}.${q(n.transport.table)} SET (${Object.entries(TRANSPORT_AUTOVACUUM).map(([k, v]) => `${k} = ${v}`).join(', ')})`,
        },
      ],
    },
    // The claim as a routine that keeps one generic plan per session, and the limited claim's routine with the same
    // setting (claim-routine.ts): catalog changes, no table lock. A host of an earlier release sends its claim itself
    // and calls the limited routine as before.
    {
      version: 25,
      name: 'claim routines: one plan per session',
      statements: [
        { name: 'create claim routine', text: pgClaimRoutineDdl(n.transport) },
        { name: 'replace limited claim routine', text: pgLimitedClaimRoutineDdl(n.transport) },
      ],
    },
  ]);
}

/** `npm run schema -- print --dialect postgres`: each version's statements, then how the runner records it. */
export function printPostgresMigrations(n: SchemaNames): string {
  const r = postgresRunnerStatements(n);
  const out = [
    `-- AsyncResponse schema for PostgreSQL, schema ${q(n.schema)}, by version. \`npm run schema -- apply\` runs each`,
    '-- pending version in its own transaction under the schema advisory lock and records it in the migrations table.',
    `${r.createSchema};`,
    `${r.createMigrationsTable};`,
    '',
  ];
  for (const m of postgresMigrations(n)) {
    out.push(
      `-- version ${m.version}: ${m.name}`,
      'BEGIN;',
      `SELECT pg_advisory_xact_lock(${advisoryKey(schemaLockResource(n.schema))}); -- ${schemaLockResource(n.schema)}`,
    );
    for (const s of m.statements) out.push(`-- ${s.name}`, `${s.text};`);
    out.push(`INSERT INTO ${migrationsTable(n)} (version, name) VALUES (${m.version}, '${m.name}') ON CONFLICT (version) DO NOTHING;`, 'COMMIT;', '');
  }
  return out.join('\n');
}
