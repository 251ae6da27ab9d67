// Catalog verification of the SQL Server flow state table (durable-flows.md §2.2), on the rules the transport
// and the channel share (catalog-common.ts): datetime2 scale 7 (a lower scale rounds the lease fence), a binary
// collation on flow_id (_BIN or _BIN2: ids compare ordinally), character widths as minimums, the primary key on
// flow_id alone, the name held by another object kind diagnosed. evaluateFlowCatalog is pure.

import type { SchemaNames } from '../schema-names';
import {
  catalogSet,
  declaredIndexProblems,
  evaluateExpectedColumns,
  nameOccupiedProblem,
  nullability,
  primaryKeyProblems,
  readCatalogSets,
  renderType,
  sameName,
  typeCode,
  type CatalogColumnRow,
  type CatalogIndexRow,
  type CatalogKeyColumnRow,
  type CatalogObjectRow,
  type ExpectedColumnShape,
  type Queryable,
} from './catalog-common';
import { FLOW_EXPIRES_INDEX_KEYS, FLOW_LIST_INDEX_KEYS, flowCatalogSnapshot, qualifiedFlowTable } from './flow-statements';
import { BIN2 } from './statements';

export interface FlowCatalog {
  objects: CatalogObjectRow[];
  columns: CatalogColumnRow[];
  primaryKey: CatalogKeyColumnRow[];
  indexes: CatalogIndexRow[];
}

interface ExpectedFlowColumn extends ExpectedColumnShape {
  /** nvarchar of at least this many characters (-1: max). */
  minChars?: number;
  binary?: boolean;
}

const EXPECTED: readonly ExpectedFlowColumn[] = [
  { name: 'flow_id', type: 'nvarchar(400)', minChars: 400, nullable: false, binary: true },
  { name: 'flow_name', type: 'nvarchar(200)', minChars: 200, nullable: false },
  { name: 'status', type: 'nvarchar(16)', minChars: 16, nullable: false },
  { name: 'last_message', type: 'nvarchar(400)', minChars: 400, nullable: true },
  { name: 'state_json', type: 'nvarchar(max)', minChars: -1, nullable: false },
  { name: 'created_at_utc', type: 'datetime2(7)', nullable: false, defaults: ['(sysutcdatetime())'] },
  { name: 'updated_at_utc', type: 'datetime2(7)', nullable: false },
  { name: 'expires_at_utc', type: 'datetime2(7)', nullable: false },
  { name: 'revision', type: 'bigint', nullable: false, defaults: ['((0))', '(0)'] },
  { name: 'lease_id', type: 'nvarchar(64)', minChars: 64, nullable: true },
  { name: 'lease_expires_at_utc', type: 'datetime2(7)', nullable: true },
];

export const FLOW_VERIFICATION_FIX_HINT =
  'Fix the flow state table to match the documented DDL (`npm run schema -- print --dialect sqlserver`, version 7), ' +
  'or give the flow state its own table or schema.';

/** _BIN and _BIN2 compare ordinally; anything else folds something the flows treat as distinct. */
export function flowIdCollationProblem(label: string, collation: string | null): string | null {
  if (collation === null) return null; // not a character column: the type check reports it
  if (/_BIN2?(_|$)/i.test(collation)) return null;
  const folds = /_CI(_|$)/i.test(collation) ? 'case-insensitive, so flow ids that differ only in case would be one run' : 'not binary, so flow ids are not compared ordinally';
  return (
    `${label}: the collation ${collation} is ${folds}; expected a binary collation. Change the column to COLLATE ${BIN2} ` +
    `(drop the primary key, ALTER TABLE … ALTER COLUMN flow_id nvarchar(400) COLLATE ${BIN2} NOT NULL, recreate the key), ` +
    'or recreate the table from the printed DDL.'
  );
}

function foundColumnProblems(label: string, expected: ExpectedFlowColumn, found: CatalogColumnRow): string[] {
  const problems: string[] = [];
  const foundType = renderType(found);
  const nullable = found.is_nullable === expected.nullable;
  let typeOk: boolean;
  if (expected.minChars !== undefined) {
    const chars = found.max_length === -1 ? -1 : found.max_length / 2;
    typeOk =
      found.type_name.toLowerCase() === 'nvarchar' && (expected.minChars === -1 ? chars === -1 : chars === -1 ? expected.name !== 'flow_id' : chars >= expected.minChars);
  } else typeOk = foundType === expected.type;
  if (!typeOk || !nullable) {
    const wanted = expected.minChars !== undefined && expected.minChars !== -1 ? `${expected.type} or wider` : expected.type;
    problems.push(`${label}: expected ${wanted} ${nullability(expected.nullable)}; found ${foundType} ${nullability(found.is_nullable)}.`);
  }
  if (expected.binary) {
    const p = flowIdCollationProblem(label, found.collation_name);
    if (p) problems.push(p);
  }
  return problems;
}

export interface FlowVerificationResult {
  absent: boolean;
  problems: string[];
  warnings: string[];
}

/** `autoCreate`: the migrations ran, so the declared indexes must exist as declared. */
export function evaluateFlowCatalog(catalog: FlowCatalog, n: SchemaNames, mode: { autoCreate: boolean }): FlowVerificationResult {
  const table = qualifiedFlowTable(n);
  if (catalog.columns.length === 0) {
    const other = catalog.objects.find((o) => sameName(o.name, n.flowStateTable) && typeCode(o) !== 'U');
    if (other) return { absent: false, problems: [nameOccupiedProblem(`${table} to be a user table`, other)], warnings: [] };
    if (mode.autoCreate) return { absent: false, problems: [`expected ${table} to exist after schema creation, but it does not.`], warnings: [] };
    return { absent: true, problems: [], warnings: [] };
  }
  const evaluated = evaluateExpectedColumns(table, catalog.columns, EXPECTED, { writer: "flow store's", checkFound: foundColumnProblems });
  const problems = [...evaluated.problems, ...primaryKeyProblems(table, catalog.primaryKey, ['flow_id'])];
  if (mode.autoCreate) {
    problems.push(
      ...declaredIndexProblems(
        table,
        catalog.indexes,
        [
          { name: n.flowStateExpiresIndex, keys: FLOW_EXPIRES_INDEX_KEYS },
          { name: n.flowStateListIndex, keys: FLOW_LIST_INDEX_KEYS },
        ],
        'flow store',
      ),
    );
  }
  return { absent: false, problems, warnings: evaluated.warnings };
}

export async function readFlowCatalog(parent: Queryable, n: SchemaNames, requestTimeoutMs?: number): Promise<FlowCatalog> {
  const sets = await readCatalogSets(parent, flowCatalogSnapshot(), { schema: n.schema, table: n.flowStateTable }, requestTimeoutMs);
  return {
    objects: catalogSet<CatalogObjectRow>(sets, 0),
    columns: catalogSet<CatalogColumnRow>(sets, 1),
    primaryKey: catalogSet<CatalogKeyColumnRow>(sets, 2),
    indexes: catalogSet<CatalogIndexRow>(sets, 3),
  };
}

export function flowAbsentMessage(n: SchemaNames): string {
  return (
    `the SQL Server flow state table ${qualifiedFlowTable(n)} does not exist (or this login cannot see it); ` +
    'run `npm run schema -- apply` or set AUTO_CREATE_SCHEMA=true.'
  );
}
