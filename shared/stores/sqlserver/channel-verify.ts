// Catalog verification of the channel's three tables and its ack sequence (spec §3.3–3.4). Same approach as
// verify.ts (the transport's): the evaluation is pure — catalog rows in, problems out — so every rule is
// unit-tested without a server; readChannelCatalog runs the one catalog query.

import type { ChannelNames } from '../../channel/types';
import type { Logger } from '../../log';
import {
  BIGINT_MAX,
  channelAckSequenceMigration,
  channelCatalogSnapshot,
  channelIndexes,
  qualifiedChannelNames,
} from './channel-statements';
import {
  catalogSet,
  columnTypeProblem,
  compatibilityProblem,
  declaredIndexProblems,
  evaluateExpectedColumns,
  nameOccupiedProblem,
  primaryKeyProblems,
  readCatalogSets,
  sameName,
  typeCode,
  triggerProblem,
} from './catalog-common';
import type {
  CatalogColumnRow,
  CatalogDatabaseRow,
  CatalogIndexRow,
  CatalogKeyColumnRow,
  CatalogObjectRow,
  CatalogTriggerRow,
  ExpectedColumnShape,
  Queryable,
} from './catalog-common';
import { BIN2 } from './statements';

export type ChannelCatalogColumnRow = CatalogColumnRow & { table_name: string };
export type ChannelCatalogKeyColumnRow = CatalogKeyColumnRow & { table_name: string };
export type ChannelCatalogIndexRow = CatalogIndexRow & { table_name: string };

export interface CatalogSequenceRow {
  name: string;
  type_name: string;
  /** sql_variant values rendered as text (bigint bounds do not fit a JS number). */
  increment: string;
  minimum_value: string;
  maximum_value: string;
  is_cycling: boolean;
}

export interface ChannelCatalog {
  objects: CatalogObjectRow[];
  columns: ChannelCatalogColumnRow[];
  primaryKey: ChannelCatalogKeyColumnRow[];
  indexes: ChannelCatalogIndexRow[];
  sequences: CatalogSequenceRow[];
  /** absent in older fakes: no check */
  triggers?: CatalogTriggerRow[];
  /** the current database's compatibility level (the channel's statements use OPENJSON); absent: no check */
  database?: CatalogDatabaseRow[];
}

export interface ChannelVerifyMode {
  /** true: the store ran its DDL, so everything (indexes included) must exist exactly as declared. */
  autoCreate: boolean;
  /** table- and sequence-level checks only (diagnosing a failed DDL batch). */
  skipIndexes?: boolean;
}

export interface ChannelVerificationResult {
  /** Qualified names of tables (and the sequence, when its table is missing too) that do not exist. */
  absent: string[];
  /** Shape problems of objects that exist (kind, columns, collation, PK, indexes, sequence options). */
  problems: string[];
  warnings: string[];
  /**
   * Operator path only: the message table predates acked_seq / its sequence. The error text, with the
   * migration SQL to run; kept apart from `problems` because it is an upgrade, not a name collision.
   */
  migration: string | null;
}

type TableKind = 'recovery' | 'messages' | 'subscribers';

interface ExpectedColumn extends ExpectedColumnShape {
  /** an identity column compared ordinally: any _BIN2 collation (see binaryCollationProblem). */
  binary?: boolean;
}

const SYSUTC = ['(sysutcdatetime())'];

const EXPECTED: Record<TableKind, { columns: readonly ExpectedColumn[]; primaryKey: readonly string[] }> = {
  recovery: {
    columns: [
      { name: 'correlation_id', type: 'nvarchar(400)', nullable: false, binary: true },
      { name: 'registration_id', type: 'uniqueidentifier', nullable: false },
      { name: 'state_json', type: 'nvarchar(max)', nullable: false },
      { name: 'expires_at', type: 'datetime2(7)', nullable: false },
      { name: 'registered_at', type: 'datetime2(7)', nullable: false, defaults: SYSUTC },
    ],
    primaryKey: ['correlation_id', 'registration_id'],
  },
  messages: {
    columns: [
      { name: 'id', type: 'uniqueidentifier', nullable: false },
      { name: 'correlation_id', type: 'nvarchar(400)', nullable: false, binary: true },
      { name: 'envelope_json', type: 'nvarchar(max)', nullable: false },
      { name: 'created_at', type: 'datetime2(7)', nullable: false, defaults: SYSUTC },
      { name: 'expires_at', type: 'datetime2(7)', nullable: false },
      { name: 'acked_at', type: 'datetime2(7)', nullable: true },
      { name: 'acked_seq', type: 'bigint', nullable: true },
      { name: 'recovery_claimed', type: 'bit', nullable: false, defaults: ['((0))', '(0)'] },
    ],
    primaryKey: ['id'],
  },
  subscribers: {
    columns: [
      { name: 'correlation_id', type: 'nvarchar(400)', nullable: false, binary: true },
      { name: 'registration_id', type: 'uniqueidentifier', nullable: false },
      { name: 'instance_id', type: 'nvarchar(200)', nullable: false },
      { name: 'expires_at', type: 'datetime2(7)', nullable: false },
    ],
    primaryKey: ['correlation_id', 'registration_id'],
  },
};

export const CHANNEL_VERIFICATION_FIX_HINT =
  'Fix the channel tables to match the documented DDL (printSqlServerChannelSchema, `npm run schema -- print ' +
  '--dialect sqlserver`), or point the channel at its own tables or schema.';

/**
 * Identity columns are compared ordinally (spec "Identity columns need a binary collation"): a case-insensitive
 * collation would merge ids differing only in case; a case-sensitive but linguistic one (_CS_AS) still folds
 * width/kana and compares linguistically. A _BIN (not _BIN2) collation compares ordinally too, but the channel's
 * statements compare correlation ids under COLLATE Latin1_General_100_BIN2 (OPENJSON sources, and tables that
 * may differ), and an index on a _BIN column cannot serve a seek under another collation: every heartbeat and
 * recovery lookup would scan. So _BIN2 passes and _BIN is refused with the fix.
 */
export function binaryCollationProblem(label: string, collation: string | null): string | null {
  if (collation === null) return null; // not a character column: the type check reports it
  if (/_BIN2/i.test(collation)) return null;
  if (/_BIN(_|$)/i.test(collation)) {
    return (
      `${label}: the collation ${collation} is binary but not _BIN2; the channel compares correlation ids under ` +
      `COLLATE ${BIN2}, so an index on this column cannot be used for a seek and every lookup scans. Change the ` +
      `column to COLLATE ${BIN2} (drop the primary key and indexes that use it, ALTER TABLE … ALTER COLUMN ` +
      `correlation_id nvarchar(400) COLLATE ${BIN2} NOT NULL, recreate them), or recreate the table from the printed DDL.`
    );
  }
  if (/_CI(_|$)/i.test(collation)) {
    return (
      `${label}: the collation ${collation} is case-insensitive, so correlation ids that differ only in case ` +
      `would be one conversation; expected a binary collation (COLLATE ${BIN2}, or any _BIN2 collation).`
    );
  }
  return (
    `${label}: the collation ${collation} is not binary, so correlation ids are not compared ordinally; ` +
    `expected a binary collation (COLLATE ${BIN2}, or any _BIN2 collation).`
  );
}

/** The channel's rules for a found column: exact type and nullability; identity columns need a binary collation. */
function foundColumnProblems(label: string, expected: ExpectedColumn, found: CatalogColumnRow): string[] {
  const problems: string[] = [];
  const typeProblem = columnTypeProblem(label, expected, found);
  if (typeProblem) problems.push(typeProblem);
  if (expected.binary) {
    const problem = binaryCollationProblem(label, found.collation_name);
    if (problem) problems.push(problem);
  }
  return problems;
}

function evaluateColumns(
  kind: TableKind,
  table: string,
  columns: readonly CatalogColumnRow[],
  skip: ReadonlySet<string>,
): { problems: string[]; warnings: string[] } {
  return evaluateExpectedColumns(table, columns, EXPECTED[kind].columns, {
    writer: "channel's",
    checkFound: foundColumnProblems,
    skipMissing: skip,
  });
}

function evaluatePrimaryKey(kind: TableKind, table: string, keyColumns: readonly CatalogKeyColumnRow[]): string[] {
  return primaryKeyProblems(table, keyColumns, EXPECTED[kind].primaryKey);
}

function evaluateIndexes(names: ChannelNames, tableName: string, table: string, rows: readonly CatalogIndexRow[]): string[] {
  const declared = channelIndexes(names)
    .filter((i) => i.table === tableName)
    .map((i) => ({ name: i.index, keys: i.keys }));
  return declaredIndexProblems(table, rows, declared, 'channel');
}

/** The ack sequence as the monotonic clock it is (spec §3.4 item 2). */
export function evaluateSequence(row: CatalogSequenceRow, sequence: string): string[] {
  const problems: string[] = [];
  const label = `the sequence ${sequence}`;
  if (row.type_name.toLowerCase() !== 'bigint') {
    problems.push(
      `${label} is ${row.type_name}; expected bigint (acked_seq is bigint). Recreate it AS bigint, starting above ` +
        'its current value.',
    );
  }
  if (row.increment.trim() !== '1') {
    problems.push(`${label} increments by ${row.increment}; expected INCREMENT BY 1 (ALTER SEQUENCE ${sequence} INCREMENT BY 1).`);
  }
  if (row.is_cycling) {
    problems.push(
      `${label} is CYCLE; expected NO CYCLE, or a wrapped value would order new acknowledgements before old ` +
        `registrations (ALTER SEQUENCE ${sequence} NO CYCLE).`,
    );
  }
  if (row.maximum_value.trim() !== BIGINT_MAX) {
    problems.push(
      `${label} has MAXVALUE ${row.maximum_value}; expected the bigint maximum ${BIGINT_MAX}, or it exhausts in ` +
        `production with error 11728 (ALTER SEQUENCE ${sequence} NO MAXVALUE).`,
    );
  }
  return problems;
}

/** The operator-path error for a message table that predates acked_seq, with the statement to run. */
export function ackSequenceMigrationProblem(names: ChannelNames, missing: readonly string[]): string {
  return (
    `the channel needs ${missing.join(' and ')} (the delivery watermark's sequence), which this schema lacks. ` +
    'Run this migration (safe while older hosts are still up; see "Upgrading a manually managed schema"):\n' +
    `${channelAckSequenceMigration(names)}\n`
  );
}

export function evaluateChannelCatalog(catalog: ChannelCatalog, names: ChannelNames, mode: ChannelVerifyMode): ChannelVerificationResult {
  const q = qualifiedChannelNames(names);
  const problems: string[] = [];
  const warnings: string[] = [];
  const absent: string[] = [];
  const tables: Array<[TableKind, string, string]> = [
    ['recovery', names.recoveryTable, q.recovery],
    ['messages', names.messageTable, q.messages],
    ['subscribers', names.subscriberTable, q.subscribers],
  ];
  const occupant = (name: string, except: string) =>
    catalog.objects.find((o) => sameName(o.name, name) && typeCode(o) !== except);

  let messagesPresent = false;
  const migration: string[] = [];
  for (const [kind, tableName, table] of tables) {
    const columns = catalog.columns.filter((c) => sameName(c.table_name, tableName));
    if (columns.length === 0) {
      const other = occupant(tableName, 'U');
      if (other) {
        problems.push(nameOccupiedProblem(`${table} to be a user table`, other));
      } else if (mode.autoCreate) {
        problems.push(`expected ${table} to exist after schema creation, but it does not.`);
      } else {
        absent.push(table);
      }
      continue;
    }
    const skip = new Set<string>();
    if (kind === 'messages') {
      messagesPresent = true;
      if (!mode.autoCreate && !columns.some((c) => sameName(c.name, 'acked_seq'))) {
        skip.add('acked_seq');
        migration.push(`the column acked_seq on ${table}`);
      }
    }
    const evaluated = evaluateColumns(kind, table, columns, skip);
    problems.push(...evaluated.problems);
    warnings.push(...evaluated.warnings);
    problems.push(...evaluatePrimaryKey(kind, table, catalog.primaryKey.filter((k) => sameName(k.table_name, tableName))));
    const triggers = triggerProblem(table, (catalog.triggers ?? []).filter((t) => sameName(t.table_name, tableName)));
    if (triggers) problems.push(triggers);
    if (mode.autoCreate && !mode.skipIndexes) {
      problems.push(...evaluateIndexes(names, tableName, table, catalog.indexes.filter((i) => sameName(i.table_name, tableName))));
    }
  }

  const compatibility = compatibilityProblem(catalog.database ?? []);
  if (compatibility) problems.push(compatibility);

  const sequence = catalog.sequences.find((s) => sameName(s.name, names.ackSequence));
  if (sequence) {
    problems.push(...evaluateSequence(sequence, q.sequence));
  } else {
    const other = occupant(names.ackSequence, 'SO');
    if (other) {
      problems.push(nameOccupiedProblem(`${q.sequence} to be a sequence`, other));
    } else if (mode.autoCreate) {
      problems.push(`expected the sequence ${q.sequence} to exist after schema creation, but it does not.`);
    } else if (messagesPresent) {
      migration.push(`the sequence ${q.sequence}`);
    } else {
      absent.push(q.sequence);
    }
  }
  return { absent, problems, warnings, migration: migration.length > 0 ? ackSequenceMigrationProblem(names, migration) : null };
}

/** Runs the catalog query (outside any DDL transaction: catalog reads inside it deadlocked, spec §3.2). */
export async function readChannelCatalog(parent: Queryable, names: ChannelNames, requestTimeoutMs?: number): Promise<ChannelCatalog> {
  const values = {
    schema: names.schema,
    recovery_table: names.recoveryTable,
    message_table: names.messageTable,
    subscriber_table: names.subscriberTable,
    sequence: names.ackSequence,
  };
  const sets = await readCatalogSets(parent, channelCatalogSnapshot(), values, requestTimeoutMs);
  return {
    objects: catalogSet<CatalogObjectRow>(sets, 0),
    columns: catalogSet<ChannelCatalogColumnRow>(sets, 1),
    primaryKey: catalogSet<ChannelCatalogKeyColumnRow>(sets, 2),
    indexes: catalogSet<ChannelCatalogIndexRow>(sets, 3),
    sequences: catalogSet<CatalogSequenceRow>(sets, 4),
    triggers: catalogSet<CatalogTriggerRow>(sets, 5),
    database: catalogSet<CatalogDatabaseRow>(sets, 6),
  };
}

/** The "not migrated yet" error of the operator path (not latched: the next operation checks again). */
export function channelAbsentMessage(absent: readonly string[]): string {
  return (
    `SQL Server channel object${absent.length > 1 ? 's' : ''} ${absent.join(', ')} ` +
    `${absent.length > 1 ? 'do' : 'does'} not exist (or this login cannot see ${absent.length > 1 ? 'them' : 'it'}); ` +
    'run `npm run schema -- apply` or set AUTO_CREATE_SCHEMA=true.'
  );
}

/**
 * Verifies the channel objects. Throws an Error listing every problem; on the operator path an absent
 * object throws the "does not exist" error after any shape problem of the objects that do exist.
 */
export async function verifyChannelSchema(
  parent: Queryable,
  names: ChannelNames,
  mode: ChannelVerifyMode,
  logger?: Logger,
): Promise<void> {
  const result = evaluateChannelCatalog(await readChannelCatalog(parent, names), names, mode);
  for (const warning of result.warnings) logger?.warn(warning);
  const problems = result.migration ? [...result.problems, result.migration] : result.problems;
  if (problems.length > 0) throw new Error(`${problems.join(' ')} ${CHANNEL_VERIFICATION_FIX_HINT}`);
  if (result.absent.length > 0) throw new Error(channelAbsentMessage(result.absent));
}
