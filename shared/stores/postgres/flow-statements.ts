// PostgreSQL (and PGlite) statements of the durable-flow state store (SQL Server: stores/sqlserver/
// flow-statements.ts). Every instant is clock_timestamp() (the statement's own time, not the transaction's);
// durations arrive as bigint milliseconds. flow_id is COLLATE "C": ids compare byte-wise, so `CASE-FLOW` and
// `case-flow` are two runs.

import type { FlowStatus } from '../../flows/state';
import { FLOW_PRUNE_BATCH } from '../../flows/store-rules';
import { quoteIdentifier } from '../../sql/identifiers';
import type { SchemaNames } from '../schema-names';
import { pgCarriedJobsCtes } from './carried-jobs';

const q = (n: string) => quoteIdentifier(n, 'postgres');
const NOW = 'clock_timestamp()';
const plusMs = (param: string) => `${NOW} + ${param}::bigint * interval '1 millisecond'`;
/** Microsecond-exact UTC text of a timestamptz (the list cursor hands it back). */
const exactText = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export const flowStateTable = (n: SchemaNames) => `${q(n.schema)}.${q(n.flowStateTable)}`;
export const flowStepsTable = (n: SchemaNames) => `${q(n.schema)}.${q(n.flowStepsTable)}`;

/** The run row's columns a load or an acquire returns (`row`: the run table's alias or a CTE). */
const HEAD = (row: string) => `${row}.state_json, ${row}.revision::text AS revision, ${row}.created_at_utc, ${row}.updated_at_utc, ${NOW} AS db_now`;

/**
 * The run's step rows beside its head, in one statement (flows/step-rows.ts): arrays in seq order, NULL for none.
 * One seek on the steps table's primary key.
 */
const withSteps = (n: SchemaNames, row: string, from = row) => `SELECT ${HEAD(row)}, s.seqs, s.names, s.jsons, s.revs
FROM ${from === row ? row : `${from} AS ${row}`} LEFT JOIN LATERAL (
  SELECT array_agg(seq ORDER BY seq) AS seqs, array_agg(step_name ORDER BY seq) AS names, array_agg(step_json ORDER BY seq) AS jsons,
         array_agg(revision::text ORDER BY seq) AS revs
  FROM ${flowStepsTable(n)} WHERE flow_id = ${row}.flow_id) AS s ON true`;

/**
 * A write of the run's row (`update`, a fenced UPDATE … RETURNING flow_id, revision) with its step rows in the same
 * statement: the rows past the head's count removed, the new ones written (a stale row at their position
 * overwritten), both only when the update took. Parameters after the update's own, from $first: the head's row
 * count, then seq, name and JSON arrays. One result row: n, the runs updated (0 or 1).
 */
const writeWithSteps = (n: SchemaNames, update: string, first: number, carry = false) => {
  const steps = flowStepsTable(n);
  const [count, seqs, names, jsons] = [first, first + 1, first + 2, first + 3].map((i) => `$${i}`);
  return `WITH run AS (${update}
RETURNING flow_id, revision),
stale AS (DELETE FROM ${steps} AS s USING run WHERE s.flow_id = run.flow_id AND s.seq > ${count}::int),
put AS (INSERT INTO ${steps} (flow_id, seq, step_name, step_json, revision)
  SELECT run.flow_id, x.seq, x.name, x.json, run.revision FROM run, unnest(${seqs}::int[], ${names}::text[], ${jsons}::text[]) AS x(seq, name, json)
  ON CONFLICT (flow_id, seq) DO UPDATE SET step_name = EXCLUDED.step_name, step_json = EXCLUDED.step_json, revision = EXCLUDED.revision)${
    carry ? `,\n${pgCarriedJobsCtes(n.transport, 'run', first + 4)}\n${CARRIED_SELECT}` : '\nSELECT count(*)::int AS n FROM run'
  }`;
};

/** The final SELECT of a write that carries jobs: the runs written, the carried jobs inserted, and their NOTIFYs run. */
const CARRIED_SELECT = 'SELECT (SELECT count(*)::int FROM run) AS n, (SELECT array_agg(id::text) FROM jobs) AS inserted_ids, (SELECT count(*)::int FROM jobs_woken) AS woken';

/** Version 5 of the PostgreSQL schema: the table and its two indexes. state_json is text (jsonb rejects \u0000). */
export function flowStateDdl(n: SchemaNames): Array<{ name: string; text: string }> {
  const t = flowStateTable(n);
  return [
    {
      name: 'create flow state table',
      text: `CREATE TABLE IF NOT EXISTS ${t} (
    flow_id text COLLATE "C" NOT NULL PRIMARY KEY,
    flow_name text COLLATE "C" NOT NULL,
    status text NOT NULL,
    last_message text NULL,
    state_json text NOT NULL,
    created_at_utc timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at_utc timestamptz NOT NULL,
    expires_at_utc timestamptz NOT NULL,
    revision bigint NOT NULL DEFAULT 0,
    lease_id text NULL,
    lease_expires_at_utc timestamptz NULL)`,
    },
    { name: 'create flow state expires index', text: `CREATE INDEX IF NOT EXISTS ${q(n.flowStateExpiresIndex)} ON ${t} (expires_at_utc)` },
    {
      name: 'create flow state list index',
      text: `CREATE INDEX IF NOT EXISTS ${q(n.flowStateListIndex)} ON ${t} (status, updated_at_utc, flow_id) INCLUDE (flow_name, expires_at_utc)`,
    },
  ];
}

/**
 * Version 20 of the PostgreSQL schema: the steps table (flows/step-rows.ts). Its rows go with their run (the
 * cascade serves delete and prune); the primary key serves every read and write of it.
 */
export function flowStepsDdl(n: SchemaNames): Array<{ name: string; text: string }> {
  return [
    {
      name: 'create flow steps table',
      text: `CREATE TABLE IF NOT EXISTS ${flowStepsTable(n)} (
    flow_id text COLLATE "C" NOT NULL REFERENCES ${flowStateTable(n)} (flow_id) ON DELETE CASCADE,
    seq integer NOT NULL,
    step_name text COLLATE "C" NOT NULL,
    step_json text NOT NULL,
    revision bigint NOT NULL,
    PRIMARY KEY (flow_id, seq))`,
    },
  ];
}

export interface FlowListFilter {
  status?: FlowStatus;
  flowName?: string;
  cursor?: boolean;
}

/**
 * One text per filter combination (the planner then sees only the predicates in use). Parameters: $1 limit,
 * then status, flow name, cursor instant and cursor id, each only when used, in that order.
 */
export function flowListStatement(n: SchemaNames, filter: FlowListFilter): string {
  const where = [`expires_at_utc > ${NOW}`];
  let p = 1;
  if (filter.status !== undefined) where.push(`status = $${++p}`);
  if (filter.flowName !== undefined) where.push(`flow_name = $${++p}`);
  if (filter.cursor) {
    where.push(`(updated_at_utc, flow_id) < ($${p + 1}::timestamptz, $${p + 2}::text)`);
    p += 2;
  }
  return `SELECT flow_id, flow_name, status, last_message, created_at_utc, updated_at_utc, ${exactText('updated_at_utc')} AS updated_exact
FROM ${flowStateTable(n)}
WHERE ${where.join(' AND ')}
ORDER BY updated_at_utc DESC, flow_id DESC
LIMIT $1`;
}

export function flowStatements(n: SchemaNames) {
  const t = flowStateTable(n);
  const create = `INSERT INTO ${t} AS f (flow_id, flow_name, status, last_message, state_json, created_at_utc, updated_at_utc, expires_at_utc, revision, lease_id, lease_expires_at_utc)
VALUES ($1, $2, $3, $4, $5, ${NOW}, ${NOW}, ${plusMs('$6')}, 0, NULL, NULL)
ON CONFLICT (flow_id) DO UPDATE
SET flow_name = EXCLUDED.flow_name, status = EXCLUDED.status, last_message = EXCLUDED.last_message, state_json = EXCLUDED.state_json,
    created_at_utc = EXCLUDED.created_at_utc, updated_at_utc = EXCLUDED.updated_at_utc, expires_at_utc = EXCLUDED.expires_at_utc,
    revision = 0, lease_id = NULL, lease_expires_at_utc = NULL
WHERE f.expires_at_utc <= ${NOW}`;
  const checkpoint = `UPDATE ${t}
SET flow_name = $2, status = $3, last_message = $4, state_json = $5, revision = $6::bigint,
    expires_at_utc = ${plusMs('$7')}, updated_at_utc = ${NOW},
    lease_id = CASE WHEN $11::boolean THEN NULL ELSE lease_id END,
    lease_expires_at_utc = CASE WHEN $11::boolean THEN NULL WHEN $10::bigint IS NULL THEN lease_expires_at_utc ELSE ${plusMs('$10')} END
WHERE flow_id = $1 AND revision = $8::bigint AND expires_at_utc > ${NOW}
  AND lease_id = $9::text AND lease_expires_at_utc > ${NOW}`;
  return {
    /** $1 id, $2 name, $3 status, $4 last message, $5 json, $6 ttl ms. An expired row is replaced, its lease cleared. */
    create,
    /** create with the start job (carried-jobs.ts): $7..$14 the carried jobs. One result row: n, the runs written. */
    createCarrying: `WITH run AS (${create}
RETURNING flow_id),
${pgCarriedJobsCtes(n.transport, 'run', 7)}
${CARRIED_SELECT}`,
    load: `${withSteps(n, 'f', t)}
WHERE f.flow_id = $1 AND f.expires_at_utc > ${NOW}`,
    /**
     * $1 id, $2 name, $3 status, $4 last message, $5 head json, $6 new revision, $7 ttl ms, $8 expected revision,
     * $9 lease id or NULL (lease-less compare-and-swap), $10..$13 the step rows (writeWithSteps).
     */
    update: writeWithSteps(
      n,
      `UPDATE ${t}
SET flow_name = $2, status = $3, last_message = $4, state_json = $5, revision = $6::bigint,
    expires_at_utc = ${plusMs('$7')}, updated_at_utc = ${NOW}
WHERE flow_id = $1 AND revision = $8::bigint AND expires_at_utc > ${NOW}
  AND ($9::text IS NULL OR (lease_id = $9::text AND lease_expires_at_utc > ${NOW}))`,
      10,
    ),
    /**
     * The checkpoint of an execution that holds the lease: the update above, fenced on the lease, which it extends
     * ($10 ms) or releases ($11 true: the run's last write) in the same statement, with the step that completed
     * since the last checkpoint (flows/step-rows.ts). Parameters $1..$9 as update, $12..$15 the step rows.
     */
    checkpoint: writeWithSteps(n, checkpoint, 12),
    /** The checkpoint carrying jobs (an awaited step's request with its breadcrumb): $16..$23 the carried jobs. */
    checkpointCarrying: writeWithSteps(n, checkpoint, 12, true),
    /**
     * Takes the lease and returns the state in one statement (no reload after the lease), with the database's
     * time. $1 id, $2 lease id, $3 duration ms.
     */
    acquire: `WITH a AS (UPDATE ${t} SET lease_id = $2, lease_expires_at_utc = ${plusMs('$3')}
WHERE flow_id = $1 AND expires_at_utc > ${NOW}
  AND (lease_id IS NULL OR lease_expires_at_utc <= ${NOW} OR lease_id = $2)
RETURNING flow_id, state_json, revision, created_at_utc, updated_at_utc)
${withSteps(n, 'a')}`,
    /**
     * A start job's execution: insert-if-absent (an expired row replaced, as create) and take the lease, or take
     * the lease of the live row the starter wrote, returning the state either way. $1..$6 as create, $7 lease id,
     * $8 lease duration ms.
     */
    createAndAcquire: `WITH a AS (INSERT INTO ${t} AS f (flow_id, flow_name, status, last_message, state_json, created_at_utc, updated_at_utc, expires_at_utc, revision, lease_id, lease_expires_at_utc)
VALUES ($1, $2, $3, $4, $5, ${NOW}, ${NOW}, ${plusMs('$6')}, 0, $7, ${plusMs('$8')})
ON CONFLICT (flow_id) DO UPDATE
SET flow_name = CASE WHEN f.expires_at_utc <= ${NOW} THEN EXCLUDED.flow_name ELSE f.flow_name END,
    status = CASE WHEN f.expires_at_utc <= ${NOW} THEN EXCLUDED.status ELSE f.status END,
    last_message = CASE WHEN f.expires_at_utc <= ${NOW} THEN EXCLUDED.last_message ELSE f.last_message END,
    state_json = CASE WHEN f.expires_at_utc <= ${NOW} THEN EXCLUDED.state_json ELSE f.state_json END,
    created_at_utc = CASE WHEN f.expires_at_utc <= ${NOW} THEN EXCLUDED.created_at_utc ELSE f.created_at_utc END,
    updated_at_utc = CASE WHEN f.expires_at_utc <= ${NOW} THEN EXCLUDED.updated_at_utc ELSE f.updated_at_utc END,
    revision = CASE WHEN f.expires_at_utc <= ${NOW} THEN 0 ELSE f.revision END,
    expires_at_utc = CASE WHEN f.expires_at_utc <= ${NOW} THEN EXCLUDED.expires_at_utc ELSE f.expires_at_utc END,
    lease_id = EXCLUDED.lease_id, lease_expires_at_utc = EXCLUDED.lease_expires_at_utc
WHERE f.expires_at_utc <= ${NOW} OR f.lease_id IS NULL OR f.lease_expires_at_utc <= ${NOW} OR f.lease_id = EXCLUDED.lease_id
RETURNING f.flow_id, f.state_json, f.revision, f.created_at_utc, f.updated_at_utc)
${withSteps(n, 'a')}`,
    /** $1 id, $2 lease id, $3 duration ms. */
    acquireLease: `UPDATE ${t} SET lease_id = $2, lease_expires_at_utc = ${plusMs('$3')}
WHERE flow_id = $1 AND expires_at_utc > ${NOW}
  AND (lease_id IS NULL OR lease_expires_at_utc <= ${NOW} OR lease_id = $2)`,
    renewLease: `UPDATE ${t} SET lease_expires_at_utc = ${plusMs('$3')}
WHERE flow_id = $1 AND expires_at_utc > ${NOW} AND lease_id = $2 AND lease_expires_at_utc > ${NOW}`,
    /** No expiry predicate: our own lease is cleared even on an expired row. */
    releaseLease: `UPDATE ${t} SET lease_id = NULL, lease_expires_at_utc = NULL WHERE flow_id = $1 AND lease_id = $2`,
    /** As stored: no clock predicate (the caller judges lapse). */
    observeLease: `SELECT lease_id, lease_expires_at_utc FROM ${t} WHERE flow_id = $1`,
    delete: `DELETE FROM ${t} WHERE flow_id = $1`,
    /** One bounded batch by key; the outer predicate re-checks expiry on rows refreshed meanwhile. */
    pruneBatch: `DELETE FROM ${t}
WHERE flow_id IN (SELECT flow_id FROM ${t} WHERE expires_at_utc <= ${NOW} LIMIT ${FLOW_PRUNE_BATCH})
  AND expires_at_utc <= ${NOW}`,
    now: `SELECT ${NOW} AS now`,
    countByStatus: `SELECT status, count(*)::int AS n FROM ${t} WHERE expires_at_utc > ${NOW} GROUP BY status`,
  };
}

export type FlowStatements = ReturnType<typeof flowStatements>;
