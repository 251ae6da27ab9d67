// SQL Server / Azure SQL schema versions: numbered lists of named T-SQL batches, run by migrator.ts one
// version per transaction under the schema applock the stores' DDL takes (asyncresponse:ddl:{schema}).
// Version 1 is the schema of the releases before versioning, built from the same blocks as statements.ts
// and channel-statements.ts; every batch is guarded (IF OBJECT_ID … IS NULL …), so a version 1 that finds some
// of its objects completes the rest. Twins: stores/postgres/migrations.ts.
// sqlServerMigrationStatements() enumerates every batch (migrations and runner) for grammar/shape tests.

import * as sql from 'mssql';
import { quoteIdentifier } from '../../sql/identifiers';
import { checkMigrations, type Migration, type MigrationStatement } from '../migration-plan';
import type { SchemaNames } from '../schema-names';
import { sqlServerOutboxJobFieldsStatements, sqlServerOutboxReadySetStatements, sqlServerOutboxStatements } from './outbox';
import { flowStateDdl, flowStepsDdl } from './flow-statements';
import { scheduleDdl } from './schedule-statements';
import {
  channelAckSequenceMigration,
  channelIndexes,
  messageTableBody,
  qualifiedChannelNames,
  recoveryTableBody,
  subscriberTableBody,
} from './channel-statements';
import {
  BIN2,
  addDeadLetterSourceIfMissing,
  addPriorityIfMissing,
  dropIndexIfPresent,
  LEGACY_READY_INDEX_KEYS,
  CREATED_INDEX_KEYS,
  DEAD_LETTER_INDEX_KEYS,
  createIndexIfMissing,
  createIndexOnlineIfMissing,
  createSchemaIfMissing,
  createFilteredIndexOnlineIfMissing,
  createTableIfMissing,
  qualifiedTable,
  READY_INDEX_KEYS,
  applockLines,
  schemaApplockLines,
  tableLockResource,
  transportTableBody,
  type Statement,
} from './statements';
import {
  addReadySetColumnsIfMissing,
  createKeysTableIfMissing,
  createSequenceIfMissing,
  disableLockEscalation,
  fileExistingRowsBatched,
  fileKeyedRows,
  readySetIndexes,
} from './ready-set';
import { qualifiedQueueStateTable, queueStateTableBody } from './job-control-statements';
import { dedupDdl } from './dedup-statements';
import { addHistoryJobFieldsIfMissing, historyDdl, qualifiedHistoryTable } from './history-statements';
import { addLimitColumnsIfMissing, leaseRosterTableBody, qualifiedLeaseRoster } from './queue-state-sql';
import { addOrderingKeyIfMissing, ORDERING_INDEX_FILTER, ORDERING_INDEX_KEYS } from './ordering-sql';

const q = (n: string) => quoteIdentifier(n, 'sqlserver');

/** How long a migration's DDL waits for a table lock before its version fails (and is retried later). */
export const MIGRATION_LOCK_TIMEOUT_MS = 5000;
const batch = (name: string, lines: readonly string[]): MigrationStatement => ({ name, text: lines.join('\n') });
const bounded = (name: string, lines: readonly string[]) => batch(name, [`SET LOCK_TIMEOUT ${MIGRATION_LOCK_TIMEOUT_MS};`, ...lines]);

export const migrationsTable = (n: SchemaNames) => `${q(n.schema)}.${q(n.migrationsTable)}`;
export const subscriptionsTable = (n: SchemaNames) => `${q(n.schema)}.${q(n.subscriptionsTable)}`;

export function migrationsTableBody(): string {
  return [
    '    version int NOT NULL PRIMARY KEY,',
    '    name nvarchar(200) NOT NULL,',
    '    applied_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME()',
  ].join('\n');
}

/** Every version, in order. */
export function sqlServerMigrations(n: SchemaNames): readonly Migration[] {
  const transport = qualifiedTable(n.transport);
  const c = qualifiedChannelNames(n.channel);
  return checkMigrations([
    {
      version: 1,
      name: 'transport and channel tables',
      statements: [
        batch('create schema', createSchemaIfMissing(n.schema)),
        batch('create transport table', createTableIfMissing(transport, transportTableBody())),
        batch('create transport ready index', createIndexIfMissing(transport, n.transport.legacyReadyIndex, LEGACY_READY_INDEX_KEYS)),
        batch('create transport created index', createIndexIfMissing(transport, n.transport.createdIndex, CREATED_INDEX_KEYS)),
        batch('create channel recovery table', createTableIfMissing(c.recovery, recoveryTableBody())),
        batch('create channel message table', createTableIfMissing(c.messages, messageTableBody())),
        batch('add channel acked_seq and sequence', [channelAckSequenceMigration(n.channel)]),
        batch('create channel subscriber table', createTableIfMissing(c.subscribers, subscriberTableBody())),
        ...channelIndexes(n.channel).map((i) =>
          batch(`create channel index ${i.index}`, createIndexIfMissing(`${q(n.schema)}.${q(i.table)}`, i.index, i.keys)),
        ),
      ],
    },
    {
      version: 2,
      name: 'topic subscriptions table',
      statements: [
        batch(
          'create subscriptions table',
          // topic and subscription compare exactly (BIN2), like queue names; PostgreSQL: COLLATE "C".
          createTableIfMissing(
            subscriptionsTable(n),
            [
              `    topic nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
              `    subscription nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
              '    created_at datetime2 NOT NULL DEFAULT SYSUTCDATETIME(),',
              '    PRIMARY KEY (topic, subscription)',
            ].join('\n'),
          ),
        ),
      ],
    },
    { version: 3, name: 'publish procedures (outbox)', statements: sqlServerOutboxStatements(n) },
    {
      // The column alone, committed on its own: ALTER TABLE holds Sch-M (every reader and writer of the table
      // waits) until its transaction ends, so the index must not be built in the same one (version 5). The
      // lock wait is bounded: behind a long transaction on the table the version fails fast (error 1222) and
      // is retried later, instead of queueing all table traffic behind its Sch-M request.
      version: 4,
      name: 'dead-letter source column',
      statements: [
        batch('add transport dead_letter_source column', [
          `SET LOCK_TIMEOUT ${MIGRATION_LOCK_TIMEOUT_MS};`,
          ...addDeadLetterSourceIfMissing(transport),
        ]),
      ],
    },
    {
      // Online where the edition has it (the table stays usable during the build), offline elsewhere (writers
      // wait for the build; readers do not). Databases that recorded version 4 before it was split have the
      // index already: the guard makes this a no-op.
      version: 5,
      name: 'dead-letter source index',
      statements: [
        batch('create transport dead-letter index', [
          `SET LOCK_TIMEOUT ${MIGRATION_LOCK_TIMEOUT_MS};`,
          ...createIndexOnlineIfMissing(transport, n.transport.deadLetterIndex, DEAD_LETTER_INDEX_KEYS),
        ]),
      ],
    },
    {
      // Version 3's procedures again, as this release writes them: publishers of one message id serialise on an
      // applock named after it instead of a key-range lock on the primary key (which blocked every publisher of
      // a new time-ordered id until the caller's business transaction committed). CREATE OR ALTER keeps grants.
      version: 6,
      name: 'publish procedures: per-id lock',
      statements: sqlServerOutboxStatements(n),
    },
    {
      // A new table and its indexes, built empty: no lock wait on live traffic (PostgreSQL's twin is its version 5).
      version: 7,
      name: 'durable flow state table',
      statements: flowStateDdl(n).map((s) => batch(s.name, s.lines)),
    },
    // Issue 16 §1: a new table built empty (PostgreSQL's twin is its version 6).
    { version: 8, name: 'schedules table', statements: scheduleDdl(n).map((b) => batch(b.name, b.lines)) },
    {
      // Pause and resume (issue 16 §4): the claim reads a queue's row here. PostgreSQL's twin is its version 7.
      version: 9,
      name: 'queue state table',
      statements: [batch('create queue state table', createTableIfMissing(qualifiedQueueStateTable(n.transport), queueStateTableBody()))],
    },
    // Dedup keys and debounce (issue 16 §3): a new table built empty. PostgreSQL's twin is its version 8.
    { version: 10, name: 'dedup keys table', statements: dedupDdl(n.transport).map((b) => batch(b.name, b.lines)) },
    // Job history (issue 16 §2): a new table and its indexes, built empty. PostgreSQL's twin is its version 9.
    { version: 11, name: 'job history table', statements: historyDdl(n.transport).map((b) => batch(b.name, b.lines)) },
    {
      // Limits across instances and forward backoff (issue 17 §2): three nullable columns on the queue-state table
      // (metadata-only adds on a small table). PostgreSQL's twin is its version 10.
      version: 12,
      name: 'queue limits and backoff',
      statements: [
        batch('add queue state limit columns', [
          `SET LOCK_TIMEOUT ${MIGRATION_LOCK_TIMEOUT_MS};`,
          ...addLimitColumnsIfMissing(qualifiedQueueStateTable(n.transport)),
        ]),
      ],
    },
    {
      // Job priority (issue 16 §4), the column alone as version 4 did: a NOT NULL add with a constant default is
      // metadata-only, but its Sch-M lasts to the end of the version's transaction, so the index is version 14's.
      // PostgreSQL's twin is its version 12 (column and index together).
      version: 13,
      name: 'job priority column',
      statements: [batch('add transport priority column', [`SET LOCK_TIMEOUT ${MIGRATION_LOCK_TIMEOUT_MS};`, ...addPriorityIfMissing(transport)])],
    },
    {
      // The claim's index on (queue, priority DESC, available_at, created_at), online where the edition has it, then
      // the old ready index goes (claims have one of the two throughout).
      version: 14,
      name: 'job priority ready index',
      statements: [
        batch('create transport priority ready index', [
          `SET LOCK_TIMEOUT ${MIGRATION_LOCK_TIMEOUT_MS};`,
          ...createIndexOnlineIfMissing(transport, n.transport.readyIndex, READY_INDEX_KEYS),
        ]),
        batch('drop transport legacy ready index', [`SET LOCK_TIMEOUT ${MIGRATION_LOCK_TIMEOUT_MS};`, ...dropIndexIfPresent(transport, n.transport.legacyReadyIndex)]),
      ],
    },
    {
      // Ordering keys (issue 17 §1): the column alone, committed on its own as version 4 did (a nullable column
      // without a default is a metadata-only change, but its Sch-M lasts to the commit, so the index gets its own
      // version), with the bounded lock wait. PostgreSQL's twin is its version 13 (column and index).
      version: 15,
      name: 'ordering key column',
      statements: [batch('add transport ordering_key column', [`SET LOCK_TIMEOUT ${MIGRATION_LOCK_TIMEOUT_MS};`, ...addOrderingKeyIfMissing(transport)])],
    },
    {
      // Filtered to keyed rows (every existing row has none, so it is built empty), online where the edition has it.
      version: 16,
      name: 'ordering index',
      statements: [
        batch('create transport ordering index', [
          `SET LOCK_TIMEOUT ${MIGRATION_LOCK_TIMEOUT_MS};`,
          ...createIndexOnlineIfMissing(transport, n.transport.orderingIndex, ORDERING_INDEX_KEYS, ORDERING_INDEX_FILTER),
        ]),
      ],
    },
    {
      // The lease roster (issue 17 §2): a new table built empty, so limited claims count a queue's leases without
      // reading its ready backlog (limit-statements.ts). PostgreSQL's twin is its version 15.
      version: 17,
      name: 'lease roster table',
      statements: [batch('create lease roster table', createTableIfMissing(qualifiedLeaseRoster(n.transport), leaseRosterTableBody()))],
    },
    {
      // Priority and ordering keys from SQL (issue 17 §1): the publish procedures gain @priority and @ordering_key,
      // last and defaulted; CREATE OR ALTER keeps their grants. PostgreSQL's twin is its version 16.
      version: 18,
      name: 'publish procedures: priority and ordering key',
      statements: sqlServerOutboxJobFieldsStatements(n),
    },
    {
      // The job's priority and ordering key kept in job history (issue 17 §1): two nullable columns (metadata-only
      // adds), the Sch-M wait bounded. PostgreSQL's twin is its version 17.
      version: 19,
      name: 'history priority and ordering key',
      statements: [
        batch('add history priority and ordering key columns', [
          `SET LOCK_TIMEOUT ${MIGRATION_LOCK_TIMEOUT_MS};`,
          ...addHistoryJobFieldsIfMissing(qualifiedHistoryTable(n.transport)),
        ]),
      ],
    },
    {
      // The ready set (issue 25, ready-set.ts): the publish-order sequence, the state and seq columns (nullable, added
      // without WITH VALUES: no row is touched on any edition, existing rows stay NULL), the ordering keys table with
      // its vacant-keys index (built empty) and no lock escalation on the transport table (review H2.2). Each Sch-M
      // wait is bounded. PostgreSQL's twin is the first half of its version 18.
      version: 20,
      name: 'ready set columns and ordering keys table',
      statements: [
        bounded('create publish sequence', createSequenceIfMissing(n.transport)),
        bounded('add state and seq columns', addReadySetColumnsIfMissing(n.transport)),
        batch('create ordering keys table', createKeysTableIfMissing(n.transport)),
        bounded('disable lock escalation', disableLockEscalation(n.transport)),
      ],
    },
    {
      // The keyed rows of before the ready set, in one transaction before this release claims anything: numbered from
      // the sequence in their old order, counted into their keys, each key's first row its head, the rest queued. It
      // reads the keyed rows only (version 16's filtered index). Delayed rows are filed by version 23, in batches,
      // after the app runs (until then claims pass over them as before).
      version: 21,
      name: 'ready set: file keyed rows',
      statements: fileKeyedRows(n.transport).map((b) => bounded(b.name, b.lines)),
    },
    {
      // The SQL publish files its rows in the ready set too (outbox.ts); the wrappers keep their parameters and grants.
      // PostgreSQL's twin is the procedure part of its version 18.
      version: 22,
      name: 'publish procedures: ready set',
      statements: sqlServerOutboxReadySetStatements(n),
    },
    // Deferrable from here (migration-plan.ts): the app runs without them, so the schema gate does not wait; the
    // runner applies each outside the schema DDL lock (builds under the table applock, as the stores' index phase
    // does), one index per version, so a build lost to a lock wait loses only itself (review M4).
    {
      // Delayed unleased unkeyed rows get state 1: one walk of the primary key in batches of 5,000 rows, each batch
      // committing by itself (autocommit), so it never holds more than one batch's locks.
      version: 23,
      name: 'ready set: file delayed rows',
      deferrable: true,
      statements: [{ name: 'file delayed rows in batches', text: fileExistingRowsBatched(n.transport).join('\n'), autocommit: true }],
    },
    ...readySetIndexes(n.transport).map((index, i) => ({
      // online where the edition has it, with a low-priority wait where the server has that; offline only up to a
      // row count elsewhere (review M3); PostgreSQL builds its twins in version 18
      version: 24 + i,
      name: `ready set index ${index.name}`,
      deferrable: true,
      statements: [bounded(`create ${index.name}`, createFilteredIndexOnlineIfMissing(transport, index))],
    })),
    {
      // What claims read before the ready set: the priority ready index (version 14) and the ordering index (version
      // 16), each dropped in its own statement once the ready set's indexes exist (this version comes after them). A
      // host of an earlier release still running then claims without them (correct, slower) until it stops; the
      // schema docs say so. PostgreSQL's twin is its version 19.
      version: 28,
      name: 'drop indexes the ready set replaced',
      deferrable: true,
      statements: [
        bounded('drop transport priority ready index', dropIndexIfPresent(transport, n.transport.readyIndex)),
        bounded('drop transport ordering index', dropIndexIfPresent(transport, n.transport.orderingIndex)),
      ],
    },
    {
      // A run's leading completed steps as rows of their own (issue 26, flows/step-rows.ts): a new table built empty.
      // Required, after the deferrable 23-28 (the gate builds those first). A host of an earlier release refuses a
      // ledger whose head names step rows (its schema version 2) instead of running those steps again. PostgreSQL's
      // twin is its version 20.
      version: 29,
      name: 'flow steps table',
      statements: flowStepsDdl(n).map((s) => batch(s.name, s.lines)),
    },
  ]);
}

/** What the runner runs around the migrations, with typed parameters like every store statement. */
export function sqlServerRunnerStatements(n: SchemaNames) {
  const t = migrationsTable(n);
  const c = qualifiedChannelNames(n.channel);
  return {
    /**
     * Inside the step's transaction: XACT_ABORT, then the applock. mssql sends every batch through sp_executesql,
     * so the SET lasts for this batch only; what rolls a failed version back is the runner's rollback.
     */
    lock: { text: ['SET XACT_ABORT ON;', ...schemaApplockLines(n.schema, 'schema migrations')].join('\n'), params: {} } as Statement<never>,
    /**
     * A deferrable version's build: XACT_ABORT, then the transport table's applock (the stores' index phase takes the
     * same), 5 s at most: held by another session means that session builds it.
     */
    tableLock: {
      text: [
        'SET XACT_ABORT ON;',
        ...applockLines(
          tableLockResource(n.schema, n.transport.table),
          MIGRATION_LOCK_TIMEOUT_MS,
          `AsyncResponse schema migrations could not take the table lock ${tableLockResource(n.schema, n.transport.table)} within ${MIGRATION_LOCK_TIMEOUT_MS} ms (another session is building an index of a deferrable version).`,
        ),
      ].join('\n'),
      params: {},
    } as Statement<never>,
    ensureMigrationsTable: {
      text: [...createSchemaIfMissing(n.schema), ...createTableIfMissing(t, migrationsTableBody())].join('\n'),
      params: {},
    } as Statement<never>,
    /** One result set: present (bit). Reads no rows when the table is not there, so status creates nothing. */
    migrationsTableExists: {
      text: `SELECT CAST(CASE WHEN OBJECT_ID(@table, N'U') IS NULL THEN 0 ELSE 1 END AS bit) AS present;`,
      params: { table: sql.NVarChar(300) },
    } as Statement<'table'>,
    recordedVersions: { text: `SELECT version FROM ${t} ORDER BY version;`, params: {} } as Statement<never>,
    recordVersion: {
      text: `INSERT INTO ${t} (version, name, applied_at) VALUES (@version, @name, SYSUTCDATETIME());`,
      params: { version: sql.Int(), name: sql.NVarChar(200) },
    } as Statement<'version' | 'name'>,
    /** Which of version 1's tables exist (user tables only; OBJECT_ID of each qualified name). */
    baselineTables: {
      text: [
        'SELECT v.name FROM (VALUES (@t1), (@t2), (@t3), (@t4)) AS v(name)',
        "WHERE OBJECT_ID(v.name, N'U') IS NOT NULL;",
      ].join('\n'),
      params: { t1: sql.NVarChar(300), t2: sql.NVarChar(300), t3: sql.NVarChar(300), t4: sql.NVarChar(300) },
    } as Statement<'t1' | 't2' | 't3' | 't4'>,
    baselineTableNames: [qualifiedTable(n.transport), c.recovery, c.messages, c.subscribers] as const,
  };
}

/** Every batch this dialect's schema versioning sends, named `runner: …` or `v{version}: …`. */
export function sqlServerMigrationStatements(n: SchemaNames): Array<{ name: string; text: string }> {
  const runner = Object.entries(sqlServerRunnerStatements(n))
    .filter((e): e is [string, Statement] => typeof (e[1] as Statement).text === 'string')
    .map(([name, s]) => ({ name: `runner: ${name}`, text: s.text }));
  const versions = sqlServerMigrations(n).flatMap((m) => m.statements.map((s) => ({ name: `v${m.version}: ${s.name}`, text: s.text })));
  return [...runner, ...versions];
}

/**
 * The session options the store's statements and procedures need (tedious sets the same on every connection).
 * QUOTED_IDENTIFIER and ANSI_NULLS are captured by each procedure at creation and used on every call; the
 * others must hold for writes to a table with an index on a computed column (else error 1934).
 */
export const PRINTED_SCRIPT_SET_OPTIONS = [
  'SET QUOTED_IDENTIFIER ON;',
  'SET ANSI_NULLS ON;',
  'SET ANSI_PADDING ON;',
  'SET ANSI_WARNINGS ON;',
  'SET ARITHABORT ON;',
  'SET CONCAT_NULL_YIELDS_NULL ON;',
  'SET NUMERIC_ROUNDABORT OFF;',
] as const;

/**
 * After every batch of a version: a failed batch (runtime errors roll the transaction back under XACT_ABORT;
 * compile errors leave it open and set only @@ERROR, which outlives the batch) turns execution off for the
 * rest of the script, so no later batch runs in autocommit and nothing failed is recorded, with or without
 * sqlcmd -b. The last batch turns it back on, rolls back what is left open and says so.
 */
function stopOnFailure(version: number, inTransaction = true): string[] {
  return [
    inTransaction ? `IF @@ERROR <> 0 OR @@TRANCOUNT = 0` : 'IF @@ERROR <> 0',
    'BEGIN',
    `    RAISERROR (N'version ${version} failed and was not recorded; the script stops here (fix the error and run it again).', 16, 1);`,
    '    SET NOEXEC ON;',
    'END',
  ];
}

/** `npm run schema -- print --dialect sqlserver`: each version in its own transaction, as the runner applies it. */
export function printSqlServerMigrations(n: SchemaNames): string {
  const r = sqlServerRunnerStatements(n);
  const t = migrationsTable(n);
  const out = [
    `-- AsyncResponse schema for SQL Server 2019+ / Azure SQL, schema ${q(n.schema)}, by version. \`npm run schema -- apply\``,
    '-- runs each pending version in its own transaction under the schema applock and records it in the migrations table.',
    '-- Run this script with sqlcmd -b -I (or SSMS); it stops at the first failed version whichever way it is run.',
    ...PRINTED_SCRIPT_SET_OPTIONS,
    'GO',
    r.ensureMigrationsTable.text,
    'GO',
  ];
  for (const m of sqlServerMigrations(n)) {
    out.push(`-- version ${m.version}: ${m.name}`);
    if (m.version > 1) {
      out.push(
        `IF NOT EXISTS (SELECT 1 FROM ${t} WHERE version = ${m.version - 1})`,
        'BEGIN',
        `    RAISERROR (N'version ${m.version - 1} is not recorded, so version ${m.version} does not run; the script stops here.', 16, 1);`,
        '    SET NOEXEC ON;',
        'END',
        'GO',
      );
    }
    // a deferrable version as the runner applies it: its autocommit statements first (each batch inside commits by
    // itself), its builds under the table applock, then its record under the schema applock
    for (const s of m.statements.filter((x) => x.autocommit)) {
      out.push(`-- ${s.name} (outside a transaction: each batch commits by itself)`, s.text, 'GO', ...stopOnFailure(m.version, false), 'GO');
    }
    const inTransaction = m.statements.filter((x) => !x.autocommit);
    if (m.deferrable && inTransaction.length > 0) {
      out.push('BEGIN TRANSACTION;', r.tableLock.text, 'GO', ...stopOnFailure(m.version), 'GO');
      for (const s of inTransaction) out.push(`-- ${s.name}`, s.text, 'GO', ...stopOnFailure(m.version), 'GO');
      out.push('COMMIT;', 'GO');
    }
    out.push('BEGIN TRANSACTION;', r.lock.text, 'GO', ...stopOnFailure(m.version), 'GO');
    for (const s of m.deferrable ? [] : inTransaction) {
      // every statement is its own batch (CREATE OR ALTER PROCEDURE must open its batch), checked after it
      out.push(`-- ${s.name}`, s.text, 'GO', ...stopOnFailure(m.version), 'GO');
    }
    out.push(
      `IF NOT EXISTS (SELECT 1 FROM ${t} WHERE version = ${m.version})`,
      `    INSERT INTO ${t} (version, name) VALUES (${m.version}, N'${m.name}');`,
      'COMMIT;',
      'GO',
    );
  }
  out.push(
    '-- execution back on: a version that stopped the script is rolled back here',
    'SET NOEXEC OFF;',
    'IF @@TRANCOUNT > 0',
    'BEGIN',
    '    ROLLBACK;',
    "    RAISERROR (N'a version failed: its transaction was rolled back and it is not recorded.', 16, 1);",
    'END',
    'GO',
  );
  return out.join('\n') + '\n';
}
