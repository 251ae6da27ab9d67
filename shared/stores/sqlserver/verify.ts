// Catalog verification of the transport table (spec §3.3–3.4). The evaluation is pure (catalog rows in,
// problems out) so every rule is unit-tested without a server; verifyTransportTable runs the catalog query.

import type { ConnectionPool, Transaction } from 'mssql';
import type { TransportNames } from '../../sql/identifiers';
import type { Logger } from '../../log';
import { newRequest } from './connection';
import { BIN2, catalogSnapshot, CREATED_INDEX_KEYS, qualifiedTable, READY_INDEX_KEYS } from './statements';

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
}

export interface TransportCatalog {
  objects: CatalogObjectRow[];
  columns: CatalogColumnRow[];
  primaryKey: CatalogKeyColumnRow[];
  indexes: CatalogIndexRow[];
}

export interface VerificationResult {
  /** 'absent' only when no user table holds the name (and no other object occupies it). */
  status: 'present' | 'absent';
  problems: string[];
  warnings: string[];
}

export interface VerifyMode {
  /** true: the store created the table, so the queue column and both indexes are checked exactly. */
  autoCreate: boolean;
  /** table-level checks only (diagnosing a failed phase 1, before any index could have been built). */
  skipIndexes?: boolean;
}

interface ExpectedColumn {
  name: string;
  type: string;
  nullable: boolean;
  /** lower-cased accepted default texts as the catalog stores them. */
  defaults?: string[];
  collation?: string;
  /** the queue column on an operator table: any type and collation (the claim predicate supplies BIN2). */
  unconstrainedOnOperatorPath?: boolean;
}

const EXPECTED_COLUMNS: readonly ExpectedColumn[] = [
  { name: 'id', type: 'uniqueidentifier', nullable: false },
  { name: 'queue', type: 'nvarchar(200)', nullable: false, collation: BIN2, unconstrainedOnOperatorPath: true },
  { name: 'payload_json', type: 'nvarchar(max)', nullable: false },
  { name: 'headers_json', type: 'nvarchar(max)', nullable: false, defaults: ["(n'{}')", "('{}')"] },
  { name: 'created_at', type: 'datetime2(7)', nullable: false, defaults: ['(sysutcdatetime())'] },
  { name: 'available_at', type: 'datetime2(7)', nullable: false, defaults: ['(sysutcdatetime())'] },
  { name: 'locked_until', type: 'datetime2(7)', nullable: true },
  { name: 'lock_id', type: 'uniqueidentifier', nullable: true },
  { name: 'attempts', type: 'int', nullable: false, defaults: ['((0))', '(0)'] },
  { name: 'dead_letter_reason', type: 'nvarchar(max)', nullable: true },
];

const EXPECTED_PRIMARY_KEY = ['id'];

const OBJECT_KINDS: Record<string, string> = {
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

const nullability = (nullable: boolean) => (nullable ? 'NULL' : 'NOT NULL');
const sameName = (a: string | null | undefined, b: string) => (a ?? '').toLowerCase() === b.toLowerCase();
const normaliseDefault = (text: string) => text.replace(/\s+/g, '').toLowerCase();

function kindOf(row: CatalogObjectRow): string {
  return OBJECT_KINDS[row.type.trim().toUpperCase()] ?? `a ${row.type_desc.toLowerCase().replace(/_/g, ' ')}`;
}

export function evaluateTableColumns(
  columns: readonly CatalogColumnRow[],
  names: TransportNames,
  mode: VerifyMode,
): { problems: string[]; warnings: string[] } {
  const table = qualifiedTable(names);
  const problems: string[] = [];
  const warnings: string[] = [];
  for (const expected of EXPECTED_COLUMNS) {
    const found = columns.find((c) => sameName(c.name, expected.name));
    if (!found) {
      problems.push(`${table} is missing the column '${expected.name}'; expected ${expected.type} ${nullability(expected.nullable)}.`);
      continue;
    }
    const label = `column '${expected.name}' of ${table}`;
    const unconstrained = expected.unconstrainedOnOperatorPath === true && !mode.autoCreate;
    const foundType = renderType(found);
    if (!unconstrained && (foundType !== expected.type || found.is_nullable !== expected.nullable)) {
      problems.push(
        `${label}: expected ${expected.type} ${nullability(expected.nullable)}; found ${foundType} ${nullability(found.is_nullable)}.`,
      );
    } else if (unconstrained && found.is_nullable) {
      problems.push(`${label}: expected NOT NULL; found NULL.`);
    }
    if (expected.collation && !unconstrained && !sameName(found.collation_name, expected.collation)) {
      problems.push(
        `${label}: expected COLLATE ${expected.collation}; found ${found.collation_name ?? 'no collation'} ` +
          '(a non-binary collation folds queue names the store treats as distinct).',
      );
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
    if (EXPECTED_COLUMNS.some((e) => sameName(extra.name, e.name))) continue;
    const hasDefault = extra.default_object_id !== 0 && extra.default_object_id !== null;
    if (!extra.is_nullable && !hasDefault && !extra.is_identity && !extra.is_computed) {
      problems.push(
        `column '${extra.name}' of ${table} is NOT NULL without a default, so the store's inserts would fail ` +
          '(error 515); make it NULL or give it a default.',
      );
    }
  }
  return { problems, warnings };
}

export function evaluatePrimaryKey(keyColumns: readonly CatalogKeyColumnRow[], names: TransportNames): string[] {
  const table = qualifiedTable(names);
  if (keyColumns.length === 0) return [`${table} has no primary key; expected PRIMARY KEY (${EXPECTED_PRIMARY_KEY.join(', ')}).`];
  const found = [...keyColumns].sort((a, b) => a.key_ordinal - b.key_ordinal).map((k) => k.column_name);
  const matches =
    found.length === EXPECTED_PRIMARY_KEY.length && found.every((c, i) => sameName(c, EXPECTED_PRIMARY_KEY[i] ?? ''));
  return matches
    ? []
    : [`the primary key of ${table} is on (${found.join(', ')}); expected PRIMARY KEY (${EXPECTED_PRIMARY_KEY.join(', ')}).`];
}

interface IndexShape {
  name: string;
  typeDesc: string;
  isUnique: boolean;
  isDisabled: boolean;
  isHypothetical: boolean;
  hasFilter: boolean;
  /** ascending key columns in key order; descending keys are marked with a trailing ' DESC'. */
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

const keysEqual = (found: readonly string[], expected: readonly string[]) =>
  found.length === expected.length && found.every((c, i) => sameName(c, expected[i] ?? ''));

const isRowstore = (typeDesc: string) => typeDesc === 'CLUSTERED' || typeDesc === 'NONCLUSTERED';

/** Why an index cannot serve as the declared one, or null when it can (a clustered variant is accepted). */
function indexDefect(index: IndexShape, expectedKeys: readonly string[]): string | null {
  if (!isRowstore(index.typeDesc)) return `it is a ${index.typeDesc.toLowerCase().replace(/_/g, ' ')} index`;
  if (index.isUnique) return 'it is UNIQUE';
  if (index.hasFilter) return 'it is filtered';
  if (index.isDisabled) return 'it is disabled';
  if (index.isHypothetical) return 'it is hypothetical';
  if (!keysEqual(index.keys, expectedKeys)) return `it is keyed (${index.keys.join(', ')})`;
  return null;
}

/** Self-created path: both indexes must exist by name on this table with exactly the declared shape. */
export function evaluateIndexes(rows: readonly CatalogIndexRow[], names: TransportNames): string[] {
  const table = qualifiedTable(names);
  const indexes = groupIndexes(rows);
  const problems: string[] = [];
  const expected: Array<[string, readonly string[]]> = [
    [names.readyIndex, READY_INDEX_KEYS],
    [names.createdIndex, CREATED_INDEX_KEYS],
  ];
  for (const [name, keys] of expected) {
    const found = indexes.find((i) => sameName(i.name, name));
    if (!found) {
      problems.push(`expected the index [${name}] on ${table} to exist after schema creation, but it does not.`);
      continue;
    }
    const defect = indexDefect(found, keys);
    if (defect) {
      problems.push(
        `the index [${name}] on ${table} cannot serve the store: ${defect}; expected a plain index on ` +
          `(${keys.join(', ')}). Drop it so the store recreates it, or rename it.`,
      );
    }
  }
  return problems;
}

/** Names of the declared indexes not present (by name, on this table): what phase 2 must build. */
export function missingIndexes(rows: readonly CatalogIndexRow[], names: TransportNames): string[] {
  const present = groupIndexes(rows);
  return [names.readyIndex, names.createdIndex].filter((name) => !present.some((i) => sameName(i.name, name)));
}

/** Operator path: warn (not fail) when no index under any name serves the claim's seek and order. */
export function hasUsableDequeueIndex(rows: readonly CatalogIndexRow[]): boolean {
  return groupIndexes(rows).some(
    (i) => isRowstore(i.typeDesc) && !i.isDisabled && !i.isHypothetical && !i.hasFilter && keysEqual(i.keys, READY_INDEX_KEYS),
  );
}

export function dequeueIndexWarning(names: TransportNames): string {
  const table = qualifiedTable(names);
  return (
    `${table} has no enabled, unfiltered index keyed (${READY_INDEX_KEYS.join(', ')}), so every claim sorts the ` +
    `ready set under UPDLOCK. Create it: CREATE INDEX [${names.readyIndex}] ON ${table} ` +
    `(${READY_INDEX_KEYS.join(', ')}) WITH (ONLINE = ON); -- omit WITH (ONLINE = ON) where the edition lacks it`
  );
}

export function evaluateTransportCatalog(
  catalog: TransportCatalog,
  names: TransportNames,
  mode: VerifyMode,
): VerificationResult {
  const table = qualifiedTable(names);
  const target = catalog.objects.find((o) => o.is_target);
  if (!target && catalog.columns.length === 0) {
    const occupant = catalog.objects.find((o) => o.type.trim().toUpperCase() !== 'U');
    if (occupant) {
      return {
        status: 'present',
        problems: [`expected ${table} to be a user table, but the name is occupied by ${kindOf(occupant)} ([${occupant.name}]).`],
        warnings: [],
      };
    }
    return {
      status: 'absent',
      problems: mode.autoCreate ? [`expected ${table} to exist after schema creation, but it does not.`] : [],
      warnings: [],
    };
  }
  const columns = evaluateTableColumns(catalog.columns, names, mode);
  const problems = [...columns.problems, ...evaluatePrimaryKey(catalog.primaryKey, names)];
  const warnings = [...columns.warnings];
  if (mode.skipIndexes) return { status: 'present', problems, warnings };
  if (mode.autoCreate) problems.push(...evaluateIndexes(catalog.indexes, names));
  else if (!hasUsableDequeueIndex(catalog.indexes)) warnings.push(dequeueIndexWarning(names));
  return { status: 'present', problems, warnings };
}

type Queryable = ConnectionPool | Transaction;

/** Runs the catalog query (outside any DDL transaction: catalog reads inside it deadlocked, spec §3.2). */
export async function readTransportCatalog(
  parent: Queryable,
  names: TransportNames,
  requestTimeoutMs?: number,
): Promise<TransportCatalog> {
  const statement = catalogSnapshot();
  const request = newRequest(parent, requestTimeoutMs);
  request.input('schema', statement.params.schema, names.schema);
  request.input('table', statement.params.table, names.table);
  const result = await request.query(statement.text);
  const sets = result.recordsets as unknown as unknown[][];
  return {
    objects: (sets[0] ?? []) as CatalogObjectRow[],
    columns: (sets[1] ?? []) as CatalogColumnRow[],
    primaryKey: (sets[2] ?? []) as CatalogKeyColumnRow[],
    indexes: (sets[3] ?? []) as CatalogIndexRow[],
  };
}

export const VERIFICATION_FIX_HINT =
  'Fix the table to match the documented DDL (`npm run schema -- print --dialect sqlserver`), or point the ' +
  'store at its own table or schema.';

/**
 * Verifies the transport table. Throws an Error listing every problem; returns 'absent' on the operator path
 * when the table is not there yet (the caller re-checks next time and does not latch).
 */
export async function verifyTransportTable(
  parent: Queryable,
  names: TransportNames,
  mode: VerifyMode,
  logger?: Logger,
): Promise<'verified' | 'absent'> {
  const result = evaluateTransportCatalog(await readTransportCatalog(parent, names), names, mode);
  for (const warning of result.warnings) logger?.warn(warning);
  if (result.problems.length > 0) {
    throw new Error(`${result.problems.join(' ')} ${VERIFICATION_FIX_HINT}`);
  }
  return result.status === 'absent' ? 'absent' : 'verified';
}
