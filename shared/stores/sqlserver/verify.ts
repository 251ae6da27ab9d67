// Catalog verification of the transport table (spec §3.3–3.4). The evaluation is pure (catalog rows in,
// problems out) so every rule is unit-tested without a server; verifyTransportTable runs the catalog query.

import type { TransportNames } from '../../sql/identifiers';
import type { Logger } from '../../log';
import {
  catalogSet,
  columnTypeProblem,
  compatibilityProblem,
  triggerProblem,
  declaredIndexProblems,
  evaluateExpectedColumns,
  groupIndexes,
  isRowstore,
  keysEqual,
  nameOccupiedProblem,
  normaliseDefault,
  normaliseFilter,
  primaryKeyProblems,
  readCatalogSets,
  renderType,
  sameName,
  typeCode,
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
import {
  BIN2,
  catalogSnapshot,
  CREATED_INDEX_KEYS,
  DEAD_LETTER_INDEX_KEYS,
  DEAD_LETTER_SOURCE_COLUMN,
  DEAD_LETTER_SOURCE_DEFINITION,
  qualifiedTable,
} from './statements';
import { ORDERING_KEY_COLUMN } from './ordering-sql';
import { createFilteredIndexText, readySetIndexes, readySetTables, type FilteredIndex } from './ready-set';

// The catalog row shapes and renderType moved to catalog-common.ts (shared with channel-verify.ts); re-exported
// here so this module's public surface is unchanged.
export { renderType };
export type { CatalogColumnRow, CatalogIndexRow, CatalogKeyColumnRow, CatalogObjectRow } from './catalog-common';

export interface TransportCatalog {
  objects: CatalogObjectRow[];
  columns: CatalogColumnRow[];
  primaryKey: CatalogKeyColumnRow[];
  indexes: CatalogIndexRow[];
  /** absent in older fakes: no check */
  database?: CatalogDatabaseRow[];
  triggers?: CatalogTriggerRow[];
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
  /**
   * Recording an unversioned database as version 1: only version 1's columns are required. A column a later
   * version adds (dead_letter_source, version 4) is checked when present and left to that version when missing.
   */
  versionOneOnly?: boolean;
  /**
   * The schema versions own the indexes (the store runs behind the schema gate): the ready set's indexes are
   * deferrable versions that may still be building, so a missing or unusable one is a warning, as on an operator's table.
   */
  indexesFromMigrations?: boolean;
}

interface ExpectedColumn extends ExpectedColumnShape {
  collation?: string;
  /** the queue column on an operator table: any type and collation (the claim predicate supplies BIN2). */
  unconstrainedOnOperatorPath?: boolean;
  /** a computed column (schema version 4): the store reads it, and a stored one would never be filled. */
  computed?: boolean;
  /** created by a schema version after 1 (not there in databases from before versioning) */
  addedAfterVersionOne?: boolean;
}

const BASE_COLUMNS: readonly ExpectedColumn[] = [
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
  // Not in the spec's DDL: added by migration 4 (and the store's own phase 1). The spec's statements list their
  // columns, so .NET hosts sharing the table neither write nor see it.
  { name: DEAD_LETTER_SOURCE_COLUMN, type: 'nvarchar(200)', nullable: true, collation: BIN2, computed: true, addedAfterVersionOne: true },
  // Job priority (issue 16 §4): added by migration 13 (and the store's own phase 1); the claim orders by it.
  { name: 'priority', type: 'smallint', nullable: false, defaults: ['((0))', '(0)'], addedAfterVersionOne: true },
  // Ordering keys (migration 15 and phase 1): the claim compares it exactly, so BIN2 like the queue column.
  { name: ORDERING_KEY_COLUMN, type: 'nvarchar(200)', nullable: true, collation: BIN2, addedAfterVersionOne: true },
];

/**
 * The ready set (schema version 20 and the store's phase 1): state, and seq with its sequence default (the default's
 * text names the sequence, so the expected columns depend on the names). Both nullable: rows from before them keep NULL.
 */
function seqDefaults(names: TransportNames): string[] {
  const text = `(NEXT VALUE FOR ${readySetTables(names).seq})`;
  return [text, normaliseDefault(text)];
}

function expectedColumns(names: TransportNames): readonly ExpectedColumn[] {
  return [
    ...BASE_COLUMNS,
    { name: 'state', type: 'tinyint', nullable: true, addedAfterVersionOne: true },
    // the first text is the one a problem shows; the catalog's text is compared in its normalised form
    { name: 'seq', type: 'bigint', nullable: true, defaults: seqDefaults(names), addedAfterVersionOne: true },
  ];
}

const EXPECTED_PRIMARY_KEY = ['id'];

/** The transport's rules for a found column: the queue column is unconstrained on an operator table. */
function foundColumnProblems(label: string, expected: ExpectedColumn, found: CatalogColumnRow, mode: VerifyMode): string[] {
  const problems: string[] = [];
  if (expected.computed && !found.is_computed) {
    problems.push(`${label}: expected a computed column AS ${DEAD_LETTER_SOURCE_DEFINITION}; found a stored column nothing fills.`);
  }
  const unconstrained = expected.unconstrainedOnOperatorPath === true && !mode.autoCreate;
  if (!unconstrained) {
    const typeProblem = columnTypeProblem(label, expected, found);
    if (typeProblem) problems.push(typeProblem);
  } else if (found.is_nullable) {
    problems.push(`${label}: expected NOT NULL; found NULL.`);
  }
  if (expected.collation && !unconstrained && !sameName(found.collation_name, expected.collation)) {
    problems.push(
      `${label}: expected COLLATE ${expected.collation}; found ${found.collation_name ?? 'no collation'} ` +
        '(a non-binary collation folds queue names the store treats as distinct).',
    );
  }
  return problems;
}

/**
 * Operator table: a queue column that is not nvarchar makes SQL Server convert the column to the nvarchar
 * parameter's type (CONVERT_IMPLICIT), which turns the ready-index seek into a scan or a range seek plus a sort
 * under UPDLOCK on every claim. Allowed (it works), but worth a warning.
 */
function queueColumnWarnings(columns: readonly CatalogColumnRow[], names: TransportNames, mode: VerifyMode): string[] {
  if (mode.autoCreate) return [];
  const queue = columns.find((c) => sameName(c.name, 'queue'));
  if (!queue || queue.type_name.toLowerCase() === 'nvarchar') return [];
  return [
    `${qualifiedTable(names)}.queue is ${renderType(queue)}; the store binds queue names as nvarchar(200), so SQL Server ` +
      'converts the column on every claim and the ready index no longer gives a plain seek in order. Prefer nvarchar(200) ' +
      `COLLATE ${BIN2}.`,
  ];
}

export function evaluateTableColumns(
  columns: readonly CatalogColumnRow[],
  names: TransportNames,
  mode: VerifyMode,
): { problems: string[]; warnings: string[] } {
  const laterVersionMissing = (c: ExpectedColumn) =>
    c.addedAfterVersionOne === true && !columns.some((found) => sameName(found.name, c.name));
  const all = expectedColumns(names);
  const expected = mode.versionOneOnly ? all.filter((c) => !laterVersionMissing(c)) : all;
  return evaluateExpectedColumns(qualifiedTable(names), columns, expected, {
    writer: "store's",
    checkFound: (label, expected, found) => foundColumnProblems(label, expected, found, mode),
  });
}

export function evaluatePrimaryKey(keyColumns: readonly CatalogKeyColumnRow[], names: TransportNames): string[] {
  return primaryKeyProblems(qualifiedTable(names), keyColumns, EXPECTED_PRIMARY_KEY);
}

/** Self-created path: every index must exist by name on this table with exactly the declared shape. */
export function evaluateIndexes(rows: readonly CatalogIndexRow[], names: TransportNames): string[] {
  const problems = declaredIndexProblems(
    qualifiedTable(names),
    rows,
    [
      { name: names.createdIndex, keys: CREATED_INDEX_KEYS },
      { name: names.deadLetterIndex, keys: DEAD_LETTER_INDEX_KEYS },
    ],
    'store',
  );
  for (const index of readySetIndexes(names)) {
    const problem = filteredIndexProblem(rows, names, index);
    if (problem) problems.push(problem);
  }
  return problems;
}

/**
 * Whether a catalog index can serve as one of the ready set's filtered indexes: a rowstore index on exactly its keys,
 * its included columns among the found ones, and its filter (compared without brackets, parentheses, spaces and case,
 * where the catalog shows it). Enabled, not hypothetical, not unique.
 */
function servesAs(found: ReturnType<typeof groupIndexes>[number], index: FilteredIndex): boolean {
  return (
    isRowstore(found.typeDesc) &&
    !found.isDisabled &&
    !found.isHypothetical &&
    !found.isUnique &&
    found.hasFilter &&
    (found.filter === null || normaliseFilter(found.filter) === normaliseFilter(index.where)) &&
    keysEqual(found.keys, index.keys) &&
    (index.include ?? []).every((c) => found.included.some((f) => f.toLowerCase() === c.toLowerCase()))
  );
}

function filteredIndexProblem(rows: readonly CatalogIndexRow[], names: TransportNames, index: FilteredIndex): string | null {
  const table = qualifiedTable(names);
  const found = groupIndexes(rows).find((i) => sameName(i.name, index.name));
  if (!found) return `expected the index [${index.name}] on ${table} to exist after schema creation, but it does not.`;
  if (servesAs(found, index)) return null;
  return (
    `the index [${index.name}] on ${table} cannot serve the store: expected a rowstore index ${createFilteredIndexText(table, index).replace(/^CREATE INDEX \S+ ON \S+ /, '')}; ` +
    `found (${found.keys.join(', ')})${found.included.length ? ` INCLUDE (${found.included.join(', ')})` : ''}${found.hasFilter ? ` WHERE ${found.filter ?? '…'}` : ' unfiltered'}. ` +
    'Drop it so the store recreates it, or rename it.'
  );
}

/** Operator path (and indexes the migrations still build): a warning per ready-set index no index of any name serves. */
export function readySetIndexWarnings(rows: readonly CatalogIndexRow[], names: TransportNames): string[] {
  const table = qualifiedTable(names);
  const present = groupIndexes(rows);
  return readySetIndexes(names)
    .filter((index) => !present.some((found) => servesAs(found, index)))
    .map(
      (index) =>
        `${table} has no index serving the ready set's ${index.role}, so the claims' reads of it ` +
        `read the queue's rows instead of one bounded seek. Create it: ${createFilteredIndexText(table, index)} WITH (ONLINE = ON); ` +
        '-- omit WITH (ONLINE = ON) where the edition lacks it (or run `npm run schema -- apply`, which builds it)',
    );
}

/** Names of the declared indexes not present (by name, on this table): what phase 2 must build. */
export function missingIndexes(rows: readonly CatalogIndexRow[], names: TransportNames): string[] {
  const present = groupIndexes(rows);
  return [...readySetIndexes(names).map((i) => i.name), names.createdIndex, names.deadLetterIndex].filter(
    (name) => !present.some((i) => sameName(i.name, name)),
  );
}

/** Operator path: warn when no index serves the dead-letter count (queue, dead_letter_source). */
export function hasUsableDeadLetterIndex(rows: readonly CatalogIndexRow[]): boolean {
  return groupIndexes(rows).some(
    (i) => isRowstore(i.typeDesc) && !i.isDisabled && !i.isHypothetical && !i.hasFilter && keysEqual(i.keys.slice(0, 2), DEAD_LETTER_INDEX_KEYS),
  );
}

export function deadLetterIndexWarning(names: TransportNames): string {
  const table = qualifiedTable(names);
  return (
    `${table} has no enabled, unfiltered index keyed (${DEAD_LETTER_INDEX_KEYS.join(', ')}), so every queue statistics call ` +
    `reads every dead letter of every queue. Create it: CREATE INDEX [${names.deadLetterIndex}] ON ${table} ` +
    `(${DEAD_LETTER_INDEX_KEYS.join(', ')}) WITH (ONLINE = ON); -- omit WITH (ONLINE = ON) where the edition lacks it`
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
    const occupant = catalog.objects.find((o) => typeCode(o) !== 'U');
    if (occupant) {
      return {
        status: 'present',
        problems: [nameOccupiedProblem(`${table} to be a user table`, occupant)],
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
  for (const problem of [compatibilityProblem(catalog.database ?? []), triggerProblem(table, catalog.triggers ?? [])]) {
    if (problem) problems.push(problem);
  }
  const warnings = [...columns.warnings, ...queueColumnWarnings(catalog.columns, names, mode)];
  if (mode.skipIndexes) return { status: 'present', problems, warnings };
  if (mode.autoCreate && !mode.indexesFromMigrations) problems.push(...evaluateIndexes(catalog.indexes, names));
  else {
    warnings.push(...readySetIndexWarnings(catalog.indexes, names));
    if (!hasUsableDeadLetterIndex(catalog.indexes)) warnings.push(deadLetterIndexWarning(names));
  }
  return { status: 'present', problems, warnings };
}

/** Runs the catalog query (outside any DDL transaction: catalog reads inside it deadlocked, spec §3.2). */
export async function readTransportCatalog(
  parent: Queryable,
  names: TransportNames,
  requestTimeoutMs?: number,
): Promise<TransportCatalog> {
  const sets = await readCatalogSets(parent, catalogSnapshot(), { schema: names.schema, table: names.table }, requestTimeoutMs);
  return {
    objects: catalogSet<CatalogObjectRow>(sets, 0),
    columns: catalogSet<CatalogColumnRow>(sets, 1),
    primaryKey: catalogSet<CatalogKeyColumnRow>(sets, 2),
    indexes: catalogSet<CatalogIndexRow>(sets, 3),
    database: catalogSet<CatalogDatabaseRow>(sets, 4),
    triggers: catalogSet<CatalogTriggerRow>(sets, 5),
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
