// The catalog rules the transport's verification (verify.ts) and the channel's (channel-verify.ts) share: the
// catalog row shapes, name and type rendering, and the column, primary-key and index checks. Pure functions
// (catalog rows in, problem texts out), except readCatalogSets, which runs a catalog snapshot statement.

import type { ConnectionPool, Transaction } from 'mssql';
import { newRequest } from './connection';
import type { Statement } from './statements';

export interface CatalogObjectRow {
  name: string;
  type: string;
  type_desc: string;
  /** true for the user table OBJECT_ID resolved the configured name to. */
  is_target: boolean;
}

export interface CatalogColumnRow {
  name: string;
  type_name: string;
  /** bytes; -1 for (max). */
  max_length: number;
  precision: number;
  scale: number;
  is_nullable: boolean;
  collation_name: string | null;
  is_identity: boolean;
  is_computed: boolean;
  /** 0 when the column has no default constraint. */
  default_object_id: number | null;
  /** NULL also when the default exists but its text is not visible to this login. */
  default_definition: string | null;
}

export interface CatalogKeyColumnRow {
  constraint_name: string;
  column_name: string;
  key_ordinal: number;
}

/** One row per index column (or one row with null column fields for an index without columns). */
export interface CatalogIndexRow {
  index_name: string | null;
  type_desc: string;
  is_unique: boolean;
  is_primary_key: boolean;
  is_disabled: boolean;
  is_hypothetical: boolean;
  has_filter: boolean;
  column_name: string | null;
  key_ordinal: number | null;
  is_descending_key: boolean | null;
  is_included_column: boolean | null;
  /** a filtered index's predicate as the catalog stores it, e.g. ([state]=(1)); absent in older fakes */
  filter_definition?: string | null;
}

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

/** The catalog's type rendered as DDL: nvarchar(200), nvarchar(max), datetime2(7), decimal(18,2), int. */
export function renderType(column: Pick<CatalogColumnRow, 'type_name' | 'max_length' | 'precision' | 'scale'>): string {
  const type = column.type_name.toLowerCase();
  const width = (bytes: number) => (column.max_length === -1 ? 'max' : String(bytes));
  switch (type) {
    case 'nvarchar':
    case 'nchar':
      return `${type}(${width(column.max_length / 2)})`;
    case 'varchar':
    case 'char':
    case 'varbinary':
    case 'binary':
      return `${type}(${width(column.max_length)})`;
    case 'datetime2':
    case 'datetimeoffset':
    case 'time':
      return `${type}(${column.scale})`;
    case 'decimal':
    case 'numeric':
      return `${type}(${column.precision},${column.scale})`;
    default:
      return type;
  }
}

export const nullability = (nullable: boolean) => (nullable ? 'NULL' : 'NOT NULL');
export const sameName = (a: string | null | undefined, b: string) => (a ?? '').toLowerCase() === b.toLowerCase();
export const normaliseDefault = (text: string) => text.replace(/\s+/g, '').toLowerCase();
/** sys.objects.type without its padding: 'U', 'V', 'SO', … */
export const typeCode = (row: CatalogObjectRow) => row.type.trim().toUpperCase();

export function kindOf(row: CatalogObjectRow): string {
  return OBJECT_KINDS[typeCode(row)] ?? `a ${row.type_desc.toLowerCase().replace(/_/g, ' ')}`;
}

/** A configured name held by an object of another kind; `expected` is e.g. "[dbo].[t] to be a user table". */
export function nameOccupiedProblem(expected: string, occupant: CatalogObjectRow): string {
  return `expected ${expected}, but the name is occupied by ${kindOf(occupant)} ([${occupant.name}]).`;
}

export const keysEqual = (found: readonly string[], expected: readonly string[]) =>
  found.length === expected.length && found.every((c, i) => sameName(c, expected[i] ?? ''));

// ---- columns --------------------------------------------------------------------------------------------

export interface ExpectedColumnShape {
  name: string;
  type: string;
  nullable: boolean;
  /** lower-cased accepted default texts as the catalog stores them. */
  defaults?: string[];
}

function missingColumnProblem(table: string, expected: ExpectedColumnShape): string {
  return `${table} is missing the column '${expected.name}'; expected ${expected.type} ${nullability(expected.nullable)}.`;
}

/** The type-or-nullability mismatch of a found column, or null when both match. */
export function columnTypeProblem(label: string, expected: ExpectedColumnShape, found: CatalogColumnRow): string | null {
  const foundType = renderType(found);
  if (foundType === expected.type && found.is_nullable === expected.nullable) return null;
  return `${label}: expected ${expected.type} ${nullability(expected.nullable)}; found ${foundType} ${nullability(found.is_nullable)}.`;
}

/** Checks a found column's default against the expected texts: a problem, or a warning when it is not visible. */
function checkColumnDefault(
  label: string,
  defaults: readonly string[],
  found: CatalogColumnRow,
  problems: string[],
  warnings: string[],
): void {
  if (found.default_object_id === 0 || found.default_object_id === null) {
    problems.push(`${label} has no default; expected DEFAULT ${defaults[0]}.`);
  } else if (found.default_definition === null) {
    warnings.push(`${label}: the default's text is not visible to this login, so it was not checked.`);
  } else if (!defaults.includes(normaliseDefault(found.default_definition))) {
    problems.push(`${label}: expected DEFAULT ${defaults[0]}; found DEFAULT ${found.default_definition}.`);
  }
}

/** Extra columns (not in `expected`) that are NOT NULL without a default: the writer's inserts would fail. */
function unfillableColumnProblems(
  table: string,
  columns: readonly CatalogColumnRow[],
  expected: readonly ExpectedColumnShape[],
  writer: string,
): string[] {
  const problems: string[] = [];
  for (const extra of columns) {
    if (expected.some((e) => sameName(extra.name, e.name))) continue;
    const hasDefault = extra.default_object_id !== 0 && extra.default_object_id !== null;
    if (!extra.is_nullable && !hasDefault && !extra.is_identity && !extra.is_computed) {
      problems.push(
        `column '${extra.name}' of ${table} is NOT NULL without a default, so the ${writer} inserts would fail ` +
          '(error 515); make it NULL or give it a default.',
      );
    }
  }
  return problems;
}

export interface ColumnCheckOptions<E extends ExpectedColumnShape> {
  /** whose inserts an unfillable extra column would break, as the text says it: "store's", "channel's". */
  writer: string;
  /** the caller's type, nullability and collation rules for a found column, as problem texts. */
  checkFound: (label: string, expected: E, found: CatalogColumnRow) => string[];
  /** expected columns whose absence the caller reports another way (not as a problem here). */
  skipMissing?: ReadonlySet<string>;
}

/**
 * One table's columns against the expected ones, per expected column in order: missing, the caller's
 * checkFound problems, the default; then the extra columns the writer's inserts could not fill.
 */
export function evaluateExpectedColumns<E extends ExpectedColumnShape>(
  table: string,
  columns: readonly CatalogColumnRow[],
  expectedColumns: readonly E[],
  options: ColumnCheckOptions<E>,
): { problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  for (const expected of expectedColumns) {
    const found = columns.find((c) => sameName(c.name, expected.name));
    if (!found) {
      if (!options.skipMissing?.has(expected.name)) problems.push(missingColumnProblem(table, expected));
      continue;
    }
    const label = `column '${expected.name}' of ${table}`;
    problems.push(...options.checkFound(label, expected, found));
    if (expected.defaults) checkColumnDefault(label, expected.defaults, found, problems, warnings);
  }
  problems.push(...unfillableColumnProblems(table, columns, expectedColumns, options.writer));
  return { problems, warnings };
}

// ---- primary key ----------------------------------------------------------------------------------------

export function primaryKeyProblems(table: string, keyColumns: readonly CatalogKeyColumnRow[], expected: readonly string[]): string[] {
  if (keyColumns.length === 0) return [`${table} has no primary key; expected PRIMARY KEY (${expected.join(', ')}).`];
  const found = [...keyColumns].sort((a, b) => a.key_ordinal - b.key_ordinal).map((k) => k.column_name);
  return keysEqual(found, expected)
    ? []
    : [`the primary key of ${table} is on (${found.join(', ')}); expected PRIMARY KEY (${expected.join(', ')}).`];
}

// ---- indexes --------------------------------------------------------------------------------------------

export interface IndexShape {
  name: string;
  typeDesc: string;
  isUnique: boolean;
  isDisabled: boolean;
  isHypothetical: boolean;
  hasFilter: boolean;
  /** the filter predicate as the catalog stores it (null: none, or not read) */
  filter: string | null;
  /** ascending key columns in key order; descending keys are marked with a trailing ' DESC'. */
  keys: string[];
  /** included (non-key) columns */
  included: string[];
}

/** A filter predicate without brackets, parentheses, spaces and case: ([state]=(1)) and state = 1 both read state=1. */
export const normaliseFilter = (text: string) => text.replace(/[[\]()\s]/g, '').toLowerCase();

export function groupIndexes(rows: readonly CatalogIndexRow[]): IndexShape[] {
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
        filter: row.filter_definition ?? null,
        keys: [],
        included: [],
        ordered: [],
      };
      byName.set(row.index_name, shape);
    }
    if (row.column_name && row.key_ordinal && row.key_ordinal > 0 && !row.is_included_column) {
      shape.ordered.push([row.key_ordinal, row.is_descending_key ? `${row.column_name} DESC` : row.column_name]);
    } else if (row.column_name && row.is_included_column) {
      shape.included.push(row.column_name);
    }
  }
  return [...byName.values()].map(({ ordered, ...shape }) => ({
    ...shape,
    keys: ordered.sort((a, b) => a[0] - b[0]).map(([, column]) => column),
  }));
}

export const isRowstore = (typeDesc: string) => typeDesc === 'CLUSTERED' || typeDesc === 'NONCLUSTERED';

/** Why an index cannot serve as the declared one, or null when it can (a clustered variant is accepted). */
export function indexDefect(index: IndexShape, expectedKeys: readonly string[]): string | null {
  if (!isRowstore(index.typeDesc)) return `it is a ${index.typeDesc.toLowerCase().replace(/_/g, ' ')} index`;
  if (index.isUnique) return 'it is UNIQUE';
  if (index.hasFilter) return 'it is filtered';
  if (index.isDisabled) return 'it is disabled';
  if (index.isHypothetical) return 'it is hypothetical';
  if (!keysEqual(index.keys, expectedKeys)) return `it is keyed (${index.keys.join(', ')})`;
  return null;
}

/**
 * Self-created path: every declared index must exist by name on `table` with exactly its declared shape.
 * `user` names who the index must serve in the problem text: 'store', 'channel'.
 */
export function declaredIndexProblems(
  table: string,
  rows: readonly CatalogIndexRow[],
  declared: ReadonlyArray<{ name: string; keys: readonly string[] }>,
  user: string,
): string[] {
  const present = groupIndexes(rows);
  const problems: string[] = [];
  for (const { name, keys } of declared) {
    const found = present.find((i) => sameName(i.name, name));
    if (!found) {
      problems.push(`expected the index [${name}] on ${table} to exist after schema creation, but it does not.`);
      continue;
    }
    const defect = indexDefect(found, keys);
    if (defect) {
      problems.push(
        `the index [${name}] on ${table} cannot serve the ${user}: ${defect}; expected a plain index on ` +
          `(${keys.join(', ')}). Drop it so the store recreates it, or rename it.`,
      );
    }
  }
  return problems;
}

// ---- catalog query --------------------------------------------------------------------------------------

export type Queryable = ConnectionPool | Transaction;

/**
 * Runs a catalog snapshot statement (outside any DDL transaction: catalog reads inside it deadlocked, spec
 * §3.2) with every parameter bound, and returns its result sets in order.
 */
export async function readCatalogSets<P extends string>(
  parent: Queryable,
  statement: Statement<P>,
  values: Record<P, string>,
  requestTimeoutMs?: number,
): Promise<unknown[][]> {
  const request = newRequest(parent, requestTimeoutMs);
  for (const name of Object.keys(statement.params) as P[]) request.input(name, statement.params[name], values[name]);
  const result = await request.query(statement.text);
  return result.recordsets as unknown as unknown[][];
}

/** Result set `index` of a catalog snapshot as its row type (empty when the batch returned fewer sets). */
export function catalogSet<T>(sets: readonly unknown[][], index: number): T[] {
  return (sets[index] ?? []) as T[];
}

/** OPENJSON (the transport's and the channel's batch statements) needs database compatibility level 130 (SQL Server 2016) or higher. */
export const MIN_COMPATIBILITY_LEVEL = 130;

export interface CatalogDatabaseRow {
  compatibility_level: number | null;
}

export interface CatalogTriggerRow {
  trigger_name: string;
  /** the channel snapshot tags each trigger with its configured table name */
  table_name?: string;
}

export function compatibilityProblem(rows: readonly CatalogDatabaseRow[]): string | null {
  const level = rows[0]?.compatibility_level;
  if (level === null || level === undefined || level >= MIN_COMPATIBILITY_LEVEL) return null;
  return (
    `the database's compatibility level is ${level}; the store's batch statements (transport and channel) use OPENJSON, which needs ` +
    `${MIN_COMPATIBILITY_LEVEL} or higher (found only at run time as "Invalid object name 'OPENJSON'"). Raise it: ` +
    `ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = ${MIN_COMPATIBILITY_LEVEL}; -- or higher (160 is SQL Server 2022's)`
  );
}

/** Enabled triggers break every statement with an OUTPUT clause (error 334): publish, claim, response insert. */
export function triggerProblem(table: string, triggers: readonly CatalogTriggerRow[]): string | null {
  if (triggers.length === 0) return null;
  const names = triggers.map((t) => `[${t.trigger_name}]`).join(', ');
  return (
    `${table} has enabled trigger(s) ${names}: SQL Server refuses an OUTPUT clause without INTO on a table with ` +
    'enabled triggers (error 334), and the store\'s publish and claim statements use one. Disable or drop them ' +
    '(DISABLE TRIGGER ... ON ...), or point the store at its own table.'
  );
}
