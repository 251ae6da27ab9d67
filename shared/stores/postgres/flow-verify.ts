// Catalog verification of the PostgreSQL flow state table: the relation kind, column types and nullability,
// the primary key on flow_id alone, a deterministic collation on flow_id (ids compare ordinally), and the two
// indexes (their absence is a warning: the store works, prune and list scan). evaluateFlowTable is pure.

import type { Queryable } from './client';
import { flowStateDdl, flowStateTable } from './flow-statements';
import type { SchemaNames } from '../schema-names';

export interface FlowColumnRow {
  column_name: string;
  data_type: string;
  is_nullable: 'YES' | 'NO';
  collation_name: string | null;
  /** pg_collation.collisdeterministic of the column's collation (null: no collation, or the default). */
  deterministic: boolean | null;
}

export interface FlowTableCatalog {
  /** pg_class.relkind of the name, undefined when nothing holds it. */
  relkind?: string;
  columns: FlowColumnRow[];
  primaryKey: string[];
  /** pg_get_indexdef of each valid, non-primary index. */
  indexes: string[];
}

const TS = 'timestamp with time zone';
const EXPECTED: ReadonlyArray<[string, string, boolean]> = [
  ['flow_id', 'text', false],
  ['flow_name', 'text', false],
  ['status', 'text', false],
  ['last_message', 'text', true],
  ['state_json', 'text', false],
  ['created_at_utc', TS, false],
  ['updated_at_utc', TS, false],
  ['expires_at_utc', TS, false],
  ['revision', 'bigint', false],
  ['lease_id', 'text', true],
  ['lease_expires_at_utc', TS, true],
];

const KINDS: Record<string, string> = { v: 'a view', m: 'a materialized view', i: 'an index', S: 'a sequence', f: 'a foreign table', c: 'a composite type' };

export function evaluateFlowTable(catalog: FlowTableCatalog, n: SchemaNames): { absent: boolean; problems: string[]; warnings: string[] } {
  const where = `table ${flowStateTable(n)}`;
  if (catalog.relkind === undefined) return { absent: true, problems: [], warnings: [] };
  if (catalog.relkind !== 'r' && catalog.relkind !== 'p') {
    const what = KINDS[catalog.relkind] ?? `an object of kind '${catalog.relkind}'`;
    return { absent: false, problems: [`expected ${where} to be a table, but the name is occupied by ${what}`], warnings: [] };
  }
  const problems: string[] = [];
  const byName = new Map(catalog.columns.map((c) => [c.column_name, c]));
  for (const [name, type, nullable] of EXPECTED) {
    const c = byName.get(name);
    const expected = `${type} ${nullable ? 'NULL' : 'NOT NULL'}`;
    if (!c) {
      problems.push(`${where} is missing the column '${name}' (expected ${expected})`);
      continue;
    }
    const found = `${c.data_type} ${c.is_nullable === 'YES' ? 'NULL' : 'NOT NULL'}`;
    if (found !== expected) problems.push(`column '${name}' of ${where}: expected ${expected}; found ${found}`);
    if (name === 'flow_id' && c.deterministic === false) {
      problems.push(
        `column 'flow_id' of ${where} uses the nondeterministic collation '${c.collation_name}', so ids differing in case or accents ` +
          'could be one run; ids compare ordinally: ALTER TABLE … ALTER COLUMN flow_id TYPE text COLLATE "C"',
      );
    }
  }
  if (catalog.primaryKey.length === 0) problems.push(`${where} has no primary key; expected PRIMARY KEY (flow_id)`);
  else if (catalog.primaryKey.join(',') !== 'flow_id') problems.push(`${where}: expected PRIMARY KEY (flow_id); found (${catalog.primaryKey.join(', ')})`);
  const warnings: string[] = [];
  const [, expiresDdl, listDdl] = flowStateDdl(n);
  if (!catalog.indexes.some((d) => /\(expires_at_utc\)$/.test(d))) {
    warnings.push(`${where} has no index on (expires_at_utc): every prune reads the whole table. Create it: ${expiresDdl!.text}`);
  }
  if (!catalog.indexes.some((d) => /\(status, updated_at_utc, flow_id\)/.test(d))) {
    warnings.push(`${where} has no index on (status, updated_at_utc, flow_id): listing runs sorts the table. Create it: ${listDdl!.text}`);
  }
  return { absent: false, problems, warnings };
}

export async function readFlowTableCatalog(q: Queryable, n: SchemaNames): Promise<FlowTableCatalog> {
  const rel = await q.query<{ relkind: string }>(
    `SELECT c.relkind FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1 AND c.relname = $2`,
    [n.schema, n.flowStateTable],
  );
  const relkind = rel.rows[0]?.relkind;
  if (relkind !== 'r' && relkind !== 'p') return { relkind, columns: [], primaryKey: [], indexes: [] };
  const cols = await q.query<FlowColumnRow>(
    `SELECT c.column_name, c.data_type, c.is_nullable, c.collation_name,
            (SELECT co.collisdeterministic FROM pg_collation co WHERE co.collname = c.collation_name LIMIT 1) AS deterministic
     FROM information_schema.columns c WHERE c.table_schema = $1 AND c.table_name = $2`,
    [n.schema, n.flowStateTable],
  );
  const pk = await q.query<{ column_name: string }>(
    `SELECT a.attname AS column_name FROM pg_index i
     JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace s ON s.oid = c.relnamespace
     JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(i.indkey)
     WHERE s.nspname = $1 AND c.relname = $2 AND i.indisprimary
     ORDER BY array_position(i.indkey::int2[], a.attnum)`,
    [n.schema, n.flowStateTable],
  );
  const idx = await q.query<{ def: string }>(
    `SELECT pg_get_indexdef(i.indexrelid) AS def FROM pg_index i
     JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace s ON s.oid = c.relnamespace
     WHERE s.nspname = $1 AND c.relname = $2 AND NOT i.indisprimary AND i.indisvalid AND i.indisready AND i.indpred IS NULL`,
    [n.schema, n.flowStateTable],
  );
  return { relkind, columns: cols.rows, primaryKey: pk.rows.map((r) => r.column_name), indexes: idx.rows.map((r) => r.def) };
}
