// PostgreSQL schema: the transport table twin of the spec's SQL Server DDL, created under advisory transaction
// locks keyed like the SQL Server applock resources, plus catalog verification.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import type { Queryable } from './client';
import { pgKeyQueueIndexDdl, pgReadySetIndexes, READY_SET_FILTER, READY_SET_KEYS } from './ready-set';
import { IS_DEAD_LETTER, SOURCE_QUEUE } from './statements';

/** FNV-1a 64-bit over UTF-8, as a signed int64 string: the advisory-lock key for a resource name. */
export function advisoryKey(resource: string): string {
  let hash = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  for (const byte of Buffer.from(resource, 'utf8')) {
    hash ^= BigInt(byte);
    hash = (hash * prime) & 0xffffffffffffffffn;
  }
  return BigInt.asIntN(64, hash).toString();
}

export const schemaLockResource = (schema: string) => `asyncresponse:ddl:${schema}`;
export const tableLockResource = (schema: string, table: string) => `asyncresponse:ddl:${schema}.${table}`;

function qualified(n: TransportNames): string {
  return `${quoteIdentifier(n.schema, 'postgres')}.${quoteIdentifier(n.table, 'postgres')}`;
}

export function createTableSql(n: TransportNames): string {
  return `CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(n.schema, 'postgres')};
CREATE TABLE IF NOT EXISTS ${qualified(n)} (
    id uuid NOT NULL PRIMARY KEY,
    queue text NOT NULL,
    payload_json text NOT NULL,
    headers_json text NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    available_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    locked_until timestamptz NULL,
    lock_id uuid NULL,
    attempts integer NOT NULL DEFAULT 0,
    dead_letter_reason text NULL
);`;
}

/** Version 1's indexes (the ready index before priorities): migration 1 only. */
export function createV1IndexesSql(n: TransportNames): string {
  return `CREATE INDEX IF NOT EXISTS ${quoteIdentifier(n.legacyReadyIndex, 'postgres')} ON ${qualified(n)} (queue, available_at, created_at);
CREATE INDEX IF NOT EXISTS ${quoteIdentifier(n.createdIndex, 'postgres')} ON ${qualified(n)} (created_at);`;
}

/** The claim's order (statements.ts, limit-statements.ts): higher priority first, then availability order. */
export const READY_INDEX_KEYS = 'queue, priority DESC, available_at, created_at';

/** Job priority (issue 16 §4), not in the spec's DDL: .NET hosts that name their columns insert the default 0. */
export function addPriorityColumnSql(n: TransportNames): string {
  return `ALTER TABLE ${qualified(n)} ADD COLUMN IF NOT EXISTS priority smallint NOT NULL DEFAULT 0`;
}

/** The claim's ready index, built before the legacy one is dropped (so claims always have one of the two). */
export function createReadyIndexSql(n: TransportNames): string {
  return `CREATE INDEX IF NOT EXISTS ${quoteIdentifier(n.readyIndex, 'postgres')} ON ${qualified(n)} (${READY_INDEX_KEYS})`;
}

export function dropLegacyReadyIndexSql(n: TransportNames): string {
  return `DROP INDEX IF EXISTS ${quoteIdentifier(n.schema, 'postgres')}.${quoteIdentifier(n.legacyReadyIndex, 'postgres')}`;
}

/**
 * Version 14's claim index: the ready index's keys with `(ordering_key IS NULL)` after the queue, so the claim seeks
 * a queue's unkeyed rows and its keyed rows apart, each in claim order (ordering-sql.ts pgClaimable). Statements
 * that filter on the queue alone read it as they read the ready index (queue still leads).
 */
export const CLAIM_INDEX_KEYS = 'queue, (ordering_key IS NULL), priority DESC, available_at, created_at';
/** How pg_get_indexdef prints CLAIM_INDEX_KEYS (it doubles the expression's parentheses). */
export const CLAIM_INDEX_KEYS_PRINTED = 'queue, ((ordering_key IS NULL)), priority DESC, available_at, created_at';

export function createClaimIndexSql(n: TransportNames): string {
  return `CREATE INDEX IF NOT EXISTS ${quoteIdentifier(n.claimIndex, 'postgres')} ON ${qualified(n)} (${CLAIM_INDEX_KEYS})`;
}

export function dropReadyIndexSql(n: TransportNames): string {
  return `DROP INDEX IF EXISTS ${quoteIdentifier(n.schema, 'postgres')}.${quoteIdentifier(n.readyIndex, 'postgres')}`;
}

export function dropIndexSql(n: TransportNames, index: string): string {
  return `DROP INDEX IF EXISTS ${quoteIdentifier(n.schema, 'postgres')}.${quoteIdentifier(index, 'postgres')}`;
}

/** Version 18's dead-letter index: version 4's keys over dead letters only (IS_DEAD_LETTER), so live rows never write it. */
export function pgDeadLettersIndexDdl(n: TransportNames): string {
  return `CREATE INDEX IF NOT EXISTS ${quoteIdentifier(n.deadLettersIndex, 'postgres')} ON ${qualified(n)} (queue, ${SOURCE_QUEUE}) WHERE ${IS_DEAD_LETTER}`;
}

/**
 * Version 22's dead-letter index, over dead letters only (live rows never write it): a source's dead letters by
 * time, so the list reads the newest in index order and the count reads the source's entries. It takes over what
 * the created index (created_at, over every row) served, so a publish, a claim and every lease write one index
 * entry less (bench/peers: the plain drain +7 %, docs/benchmarks.md). The prune needs no order: its age test is on
 * clock_timestamp(), which no index can bound, and it reads the queue's dead letters through this index too.
 */
export function pgDeadLettersListIndexDdl(n: TransportNames): string {
  return `CREATE INDEX IF NOT EXISTS ${quoteIdentifier(n.deadLettersListIndex, 'postgres')} ON ${qualified(n)} (queue, ${SOURCE_QUEUE}, created_at) WHERE ${IS_DEAD_LETTER}`;
}

/**
 * The store's own index step (AUTO_CREATE_SCHEMA without migrations): today's indexes, the ready set's (its columns
 * exist by then: the store adds them first), and the superseded ones dropped.
 */
export function createIndexesSql(n: TransportNames): string {
  return `${pgReadySetIndexes(n).filter((s) => s.name !== 'create key order index').map((s) => s.text).join(';\n')};
${pgKeyQueueIndexDdl(n)};
${pgDeadLettersListIndexDdl(n)};
${dropLegacyReadyIndexSql(n)};
${dropReadyIndexSql(n)};
${dropIndexSql(n, n.claimIndex)};
${dropIndexSql(n, n.orderingIndex)};
${dropIndexSql(n, n.deadLetterIndex)};
${dropIndexSql(n, n.deadLettersIndex)};
${dropIndexSql(n, n.createdIndex)};
${dropIndexSql(n, n.keyOrderIndex)};`;
}

/** The script `npm run schema -- print --dialect postgres` prints. */
export function printPostgresSchema(n: TransportNames): string {
  return `-- asyncresponse transport table (PostgreSQL). Idempotent; run as the schema owner.
BEGIN;
SELECT pg_advisory_xact_lock(${advisoryKey(schemaLockResource(n.schema))}); -- ${schemaLockResource(n.schema)}
${createTableSql(n)}
${addPriorityColumnSql(n)};
COMMIT;
BEGIN;
SET LOCAL lock_timeout = '5s';
SELECT pg_advisory_xact_lock(${advisoryKey(tableLockResource(n.schema, n.table))}); -- ${tableLockResource(n.schema, n.table)}
${createIndexesSql(n)}
COMMIT;
`;
}

interface ColumnRow {
  column_name: string;
  data_type: string;
  is_nullable: 'YES' | 'NO';
  column_default: string | null;
}

const EXPECTED_COLUMNS: ReadonlyArray<{ name: string; type: string; nullable: boolean; hasDefault?: boolean; afterVersionOne?: boolean }> = [
  { name: 'id', type: 'uuid', nullable: false },
  { name: 'queue', type: 'text', nullable: false },
  { name: 'payload_json', type: 'text', nullable: false },
  { name: 'headers_json', type: 'text', nullable: false, hasDefault: true },
  { name: 'created_at', type: 'timestamp with time zone', nullable: false, hasDefault: true },
  { name: 'available_at', type: 'timestamp with time zone', nullable: false, hasDefault: true },
  { name: 'locked_until', type: 'timestamp with time zone', nullable: true },
  { name: 'lock_id', type: 'uuid', nullable: true },
  { name: 'attempts', type: 'integer', nullable: false, hasDefault: true },
  { name: 'dead_letter_reason', type: 'text', nullable: true },
  // job priority (PostgreSQL version 12): checked when present, left to that version when recording version 1
  { name: 'priority', type: 'smallint', nullable: false, hasDefault: true, afterVersionOne: true },
  // the ready set (PostgreSQL version 18): the store adds and files them itself under AUTO_CREATE_SCHEMA
  { name: 'state', type: 'smallint', nullable: true, afterVersionOne: true },
  { name: 'seq', type: 'bigint', nullable: true, hasDefault: true, afterVersionOne: true },
];

/** How pg_get_indexdef ends the ready-set index's definition. */
const READY_SET_PRINTED_FILTER = 'WHERE ((state IS NULL) AND (lock_id IS NULL))';

export interface CatalogState {
  exists: boolean;
  problems: string[];
  warnings: string[];
  missingIndexes: boolean;
  /** The table predates priorities (PostgreSQL version 12): the store adds the column itself under AUTO_CREATE_SCHEMA. */
  missingPriority?: boolean;
  /** The table predates the ready set (PostgreSQL version 18): the store files it itself under AUTO_CREATE_SCHEMA. */
  missingReadySet?: boolean;
}

/** Reads the catalog and compares the table with the expected shape. */
export async function inspectTransportTable(q: Queryable, n: TransportNames, mode: { versionOneOnly?: boolean } = {}): Promise<CatalogState> {
  const rel = await q.query<{ relkind: string }>(
    `SELECT c.relkind FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1 AND c.relname = $2`,
    [n.schema, n.table],
  );
  const kind = rel.rows[0]?.relkind;
  if (kind === undefined) return { exists: false, problems: [], warnings: [], missingIndexes: true };
  const where = `table ${qualified(n)}`;
  if (kind !== 'r' && kind !== 'p') {
    const what = { v: 'a view', m: 'a materialized view', i: 'an index', S: 'a sequence', f: 'a foreign table' }[kind] ?? `an object of kind '${kind}'`;
    return { exists: true, problems: [`expected ${where} to be a table, but the name is occupied by ${what}`], warnings: [], missingIndexes: false };
  }
  const cols = await q.query<ColumnRow>(
    `SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns
     WHERE table_schema = $1 AND table_name = $2`,
    [n.schema, n.table],
  );
  const problems = evaluateColumns(cols.rows, where, mode.versionOneOnly === true);
  const pk = await q.query<{ column_name: string }>(
    `SELECT a.attname AS column_name FROM pg_index i
     JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace s ON s.oid = c.relnamespace
     JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(i.indkey)
     WHERE s.nspname = $1 AND c.relname = $2 AND i.indisprimary`,
    [n.schema, n.table],
  );
  const pkCols = pk.rows.map((r) => r.column_name);
  if (pkCols.length === 0) problems.push(`${where} has no primary key; expected PRIMARY KEY (id)`);
  else if (pkCols.length !== 1 || pkCols[0] !== 'id') problems.push(`${where}: expected PRIMARY KEY (id); found (${pkCols.join(', ')})`);

  const idx = await q.query<{ def: string; valid: boolean }>(
    `SELECT pg_get_indexdef(i.indexrelid) AS def, (i.indisvalid AND i.indisready) AS valid FROM pg_index i
     JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace s ON s.oid = c.relnamespace
     WHERE s.nspname = $1 AND c.relname = $2 AND NOT i.indisprimary`,
    [n.schema, n.table],
  );
  const warnings: string[] = [];
  const hasReady = idx.rows.some((r) => r.valid && r.def.includes(`(${READY_SET_KEYS})`) && r.def.endsWith(READY_SET_PRINTED_FILTER));
  // version 22's dead-letter list index (it replaced the created index, which is no longer built or looked for)
  const hasDeadLetterList = idx.rows.some((r) => r.valid && /, created_at\) WHERE \(headers_json ~~ /.test(r.def));
  const missingReadySet = !cols.rows.some((r) => r.column_name === 'state');
  if (!hasReady && !missingReadySet) {
    warnings.push(
      `${where} has no ready-set index (a valid index on (${READY_SET_KEYS}) WHERE ${READY_SET_FILTER}, PostgreSQL schema version 18); ` +
        `every claim will read the queue's rows. Create it: ${pgReadySetIndexes(n)[0]!.text}`,
    );
  }
  const missingPriority = !cols.rows.some((r) => r.column_name === 'priority');
  return { exists: true, problems, warnings, missingIndexes: !hasReady || !hasDeadLetterList, missingPriority, missingReadySet };
}

export function evaluateColumns(rows: readonly ColumnRow[], where: string, versionOneOnly = false): string[] {
  const problems: string[] = [];
  const byName = new Map(rows.map((r) => [r.column_name.toLowerCase(), r]));
  for (const col of EXPECTED_COLUMNS) {
    const found = byName.get(col.name);
    if (!found && versionOneOnly && col.afterVersionOne) continue;
    const expected = `${col.type} ${col.nullable ? 'NULL' : 'NOT NULL'}`;
    if (!found) {
      problems.push(`${where} is missing the column '${col.name}' (expected ${expected})`);
      continue;
    }
    const actual = `${found.data_type} ${found.is_nullable === 'YES' ? 'NULL' : 'NOT NULL'}`;
    if (actual !== expected) problems.push(`column '${col.name}' of ${where}: expected ${expected}; found ${actual}`);
    if (col.hasDefault && found.column_default === null) problems.push(`column '${col.name}' of ${where} has no default`);
  }
  for (const r of rows) {
    if (!EXPECTED_COLUMNS.some((c) => c.name === r.column_name.toLowerCase()) && r.is_nullable === 'NO' && r.column_default === null) {
      problems.push(`${where} has an extra column '${r.column_name}' that is NOT NULL without a default, so inserts would fail`);
    }
  }
  return problems;
}
