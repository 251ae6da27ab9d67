// Catalog verification of the channel's three tables and its ack sequence (spec §3.3–3.4). Same approach as
// verify.ts (the transport's): the evaluation is pure — catalog rows in, problems out — so every rule is
// unit-tested without a server; readChannelCatalog runs the one catalog query.

import type { ConnectionPool, Transaction } from 'mssql';
import type { ChannelNames } from '../../channel/types';
import type { Logger } from '../../log';
import {
  BIGINT_MAX,
  channelAckSequenceMigration,
  channelCatalogSnapshot,
  channelIndexes,
  qualifiedChannelNames,
} from './channel-statements';
import { newRequest } from './connection';
import { BIN2 } from './statements';
import {
  renderType,
  type CatalogColumnRow,
  type CatalogIndexRow,
  type CatalogKeyColumnRow,
  type CatalogObjectRow,
} from './verify';

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

interface ExpectedColumn {
  name: string;
  type: string;
  nullable: boolean;
  /** lower-cased accepted default texts as the catalog stores them. */
  defaults?: string[];
  /** an identity column compared ordinally: any _BIN/_BIN2 collation. */
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

const OBJECT_KINDS: Record<string, string> = {
  U: 'a user table',
  V: 'a view',
  SN: 'a synonym',
  P: 'a stored procedure',
  PC: 'a stored procedure',
  FN: 'a function',
  IF: 'a function',
  TF: 'a function',
  FS: 'a function',
  FT: 'a function',
  AF: 'an aggregate function',
  SO: 'a sequence',
  TR: 'a trigger',
  PK: 'a primary key constraint',
  UQ: 'a unique constraint',
  F: 'a foreign key constraint',
  C: 'a check constraint',
  D: 'a default constraint',
  SQ: 'a service queue',
  TT: 'a table type',
  ET: 'an external table',
};

const nullability = (nullable: boolean) => (nullable ? 'NULL' : 'NOT NULL');
const sameName = (a: string | null | undefined, b: string) => (a ?? '').toLowerCase() === b.toLowerCase();
const normaliseDefault = (text: string) => text.replace(/\s+/g, '').toLowerCase();
const typeCode = (row: CatalogObjectRow) => row.type.trim().toUpperCase();

function kindOf(row: CatalogObjectRow): string {
  return OBJECT_KINDS[typeCode(row)] ?? `a ${row.type_desc.toLowerCase().replace(/_/g, ' ')}`;
}

export const CHANNEL_VERIFICATION_FIX_HINT =
  'Fix the channel tables to match the documented DDL (printSqlServerChannelSchema, `npm run schema -- print ' +
  '--dialect sqlserver`), or point the channel at its own tables or schema.';

/**
 * Identity columns are compared ordinally (spec "Identity columns need a binary collation"): any _BIN/_BIN2
 * collation passes; a case-insensitive one would merge ids differing only in case; a case-sensitive but
 * linguistic one (_CS_AS) still folds width/kana and compares linguistically, so it is rejected too.
 */
export function binaryCollationProblem(label: string, collation: string | null): string | null {
  if (collation === null) return null; // not a character column: the type check reports it
  if (/_BIN/i.test(collation)) return null;
  if (/_CI(_|$)/i.test(collation)) {
    return (
      `${label}: the collation ${collation} is case-insensitive, so correlation ids that differ only in case ` +
      `would be one conversation; expected a binary collation (COLLATE ${BIN2}, or any _BIN2/_BIN collation).`
    );
  }
  return (
    `${label}: the collation ${collation} is not binary, so correlation ids are not compared ordinally; ` +
    `expected a binary collation (COLLATE ${BIN2}, or any _BIN2/_BIN collation).`
  );
}

function evaluateColumns(
  kind: TableKind,
  table: string,
  columns: readonly CatalogColumnRow[],
  skip: ReadonlySet<string>,
): { problems: string[]; warnings: string[] } {
  const expectedColumns = EXPECTED[kind].columns;
  const problems: string[] = [];
  const warnings: string[] = [];
  for (const expected of expectedColumns) {
    const found = columns.find((c) => sameName(c.name, expected.name));
    if (!found) {
      if (!skip.has(expected.name)) {
        problems.push(`${table} is missing the column '${expected.name}'; expected ${expected.type} ${nullability(expected.nullable)}.`);
      }
      continue;
    }
    const label = `column '${expected.name}' of ${table}`;
    const foundType = renderType(found);
    if (foundType !== expected.type || found.is_nullable !== expected.nullable) {
      problems.push(
        `${label}: expected ${expected.type} ${nullability(expected.nullable)}; found ${foundType} ${nullability(found.is_nullable)}.`,
      );
    }
    if (expected.binary) {
      const problem = binaryCollationProblem(label, found.collation_name);
      if (problem) problems.push(problem);
    }
    if (expected.defaults) {
      if (found.default_object_id === 0 || found.default_object_id === null) {
        problems.push(`${label} has no default; expected DEFAULT ${expected.defaults[0]}.`);
      } else if (found.default_definition === null) {
        warnings.push(`${label}: the default's text is not visible to this login, so it was not checked.`);
      } else if (!expected.defaults.includes(normaliseDefault(found.default_definition))) {
        problems.push(`${label}: expected DEFAULT ${expected.defaults[0]}; found DEFAULT ${found.default_definition}.`);
      }
    }
  }
  for (const extra of columns) {
    if (expectedColumns.some((e) => sameName(extra.name, e.name))) continue;
    const hasDefault = extra.default_object_id !== 0 && extra.default_object_id !== null;
    if (!extra.is_nullable && !hasDefault && !extra.is_identity && !extra.is_computed) {
      problems.push(
        `column '${extra.name}' of ${table} is NOT NULL without a default, so the channel's inserts would fail ` +
          '(error 515); make it NULL or give it a default.',
      );
    }
  }
  return { problems, warnings };
}

function evaluatePrimaryKey(kind: TableKind, table: string, keyColumns: readonly CatalogKeyColumnRow[]): string[] {
  const expected = EXPECTED[kind].primaryKey;
  if (keyColumns.length === 0) return [`${table} has no primary key; expected PRIMARY KEY (${expected.join(', ')}).`];
  const found = [...keyColumns].sort((a, b) => a.key_ordinal - b.key_ordinal).map((k) => k.column_name);
  const matches = found.length === expected.length && found.every((c, i) => sameName(c, expected[i] ?? ''));
  return matches ? [] : [`the primary key of ${table} is on (${found.join(', ')}); expected PRIMARY KEY (${expected.join(', ')}).`];
}

interface IndexShape {
  name: string;
  typeDesc: string;
  isUnique: boolean;
  isDisabled: boolean;
  isHypothetical: boolean;
  hasFilter: boolean;
  keys: string[];
}

function groupIndexes(rows: readonly CatalogIndexRow[]): IndexShape[] {
  const byName = new Map<string, IndexShape & { ordered: Array<[number, string]> }>();
  for (const row of rows) {
    if (!row.index_name) continue;
    let shape = byName.get(row.index_name);
    if (!shape) {
      shape = {
        name: row.index_name,
        typeDesc: row.type_desc,
        isUnique: row.is_unique,
        isDisabled: row.is_disabled,
        isHypothetical: row.is_hypothetical,
        hasFilter: row.has_filter,
        keys: [],
        ordered: [],
      };
      byName.set(row.index_name, shape);
    }
    if (row.column_name && row.key_ordinal && row.key_ordinal > 0 && !row.is_included_column) {
      shape.ordered.push([row.key_ordinal, row.is_descending_key ? `${row.column_name} DESC` : row.column_name]);
    }
  }
  return [...byName.values()].map(({ ordered, ...shape }) => ({
    ...shape,
    keys: ordered.sort((a, b) => a[0] - b[0]).map(([, column]) => column),
  }));
}

function indexDefect(index: IndexShape, expectedKeys: readonly string[]): string | null {
  if (index.typeDesc !== 'CLUSTERED' && index.typeDesc !== 'NONCLUSTERED') {
    return `it is a ${index.typeDesc.toLowerCase().replace(/_/g, ' ')} index`;
  }
  if (index.isUnique) return 'it is UNIQUE';
  if (index.hasFilter) return 'it is filtered';
  if (index.isDisabled) return 'it is disabled';
  if (index.isHypothetical) return 'it is hypothetical';
  const same = index.keys.length === expectedKeys.length && index.keys.every((c, i) => sameName(c, expectedKeys[i] ?? ''));
  return same ? null : `it is keyed (${index.keys.join(', ')})`;
}

function evaluateIndexes(names: ChannelNames, tableName: string, table: string, rows: readonly CatalogIndexRow[]): string[] {
  const present = groupIndexes(rows);
  const problems: string[] = [];
  for (const declared of channelIndexes(names).filter((i) => i.table === tableName)) {
    const found = present.find((i) => sameName(i.name, declared.index));
    if (!found) {
      problems.push(`expected the index [${declared.index}] on ${table} to exist after schema creation, but it does not.`);
      continue;
    }
    const defect = indexDefect(found, declared.keys);
    if (defect) {
      problems.push(
        `the index [${declared.index}] on ${table} cannot serve the channel: ${defect}; expected a plain index on ` +
          `(${declared.keys.join(', ')}). Drop it so the store recreates it, or rename it.`,
      );
    }
  }
  return problems;
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
        problems.push(`expected ${table} to be a user table, but the name is occupied by ${kindOf(other)} ([${other.name}]).`);
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
    if (mode.autoCreate && !mode.skipIndexes) {
      problems.push(...evaluateIndexes(names, tableName, table, catalog.indexes.filter((i) => sameName(i.table_name, tableName))));
    }
  }

  const sequence = catalog.sequences.find((s) => sameName(s.name, names.ackSequence));
  if (sequence) {
    problems.push(...evaluateSequence(sequence, q.sequence));
  } else {
    const other = occupant(names.ackSequence, 'SO');
    if (other) {
      problems.push(`expected ${q.sequence} to be a sequence, but the name is occupied by ${kindOf(other)} ([${other.name}]).`);
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

type Queryable = ConnectionPool | Transaction;

/** Runs the catalog query (outside any DDL transaction: catalog reads inside it deadlocked, spec §3.2). */
export async function readChannelCatalog(parent: Queryable, names: ChannelNames, requestTimeoutMs?: number): Promise<ChannelCatalog> {
  const statement = channelCatalogSnapshot();
  const request = newRequest(parent, requestTimeoutMs);
  request.input('schema', statement.params.schema, names.schema);
  request.input('recovery_table', statement.params.recovery_table, names.recoveryTable);
  request.input('message_table', statement.params.message_table, names.messageTable);
  request.input('subscriber_table', statement.params.subscriber_table, names.subscriberTable);
  request.input('sequence', statement.params.sequence, names.ackSequence);
  const result = await request.query(statement.text);
  const sets = result.recordsets as unknown as unknown[][];
  return {
    objects: (sets[0] ?? []) as CatalogObjectRow[],
    columns: (sets[1] ?? []) as ChannelCatalogColumnRow[],
    primaryKey: (sets[2] ?? []) as ChannelCatalogKeyColumnRow[],
    indexes: (sets[3] ?? []) as ChannelCatalogIndexRow[],
    sequences: (sets[4] ?? []) as CatalogSequenceRow[],
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
