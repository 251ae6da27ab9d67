// The claim-flatness matrix (issue 25 §1): the cost of one claim of n = 500 over 10 ready rows, beside backlogs
// of each kind a queue builds in normal use. Cost = the buffers the prepared claim touches (EXPLAIN (ANALYZE,
// BUFFERS), inside a transaction rolled back, so every run claims the same 10 rows), which is deterministic, and its
// execution time (median of runs). Used by `npm run bench` (BENCH_ONLY=claim-flatness, sizes up to 1M) and by
// test/contract/postgres.claim-flatness.contract.test.ts (smaller sizes, in CI). PostgreSQL only.
//
// Backlogs are made through the store's own publish (delayed, keyed, mixed priorities), so they are the rows the app
// itself would write; dead letters and history rows are inserted by SQL (a move per row would take minutes).

import { randomUUID } from 'node:crypto';
import type { Client } from 'pg';
import type { TransportStore, OutgoingMessage } from '../shared/transport/types';

export const CLAIM_N = 500;
export const READY_ROWS = 10;
const QUEUE = 'work';
const DAY_MS = 86_400_000;

export type BacklogKind = 'delayed' | 'keyed' | 'dead letters' | 'history' | 'mixed priorities' | 'another queue';
export const BACKLOG_KINDS: readonly BacklogKind[] = ['delayed', 'keyed', 'dead letters', 'history', 'mixed priorities'];

export interface ClaimCost {
  /** rows the claim's scans read: every scan node's rows, and the rows its filters removed, over all its loops */
  rowsRead: number;
  /** shared buffers hit or read by the claim's plan (its top node: inclusive of every part) */
  buffers: number;
  /** the part of them the plan read (all but its writes: writeBuffers) */
  readBuffers: number;
  /** median execution time, ms */
  ms: number;
  /** rows the claim took */
  rows: number;
  /** the plan names the queue as a parameter ($1), not its value: a generic plan, as the claim routines run */
  generic: boolean;
  /** tables the plan read whole */
  seqScans: string[];
}

export interface Seeding {
  store: TransportStore;
  /** a connection of its own, on the same database */
  sql: Client;
  schema: string;
  table: string;
  historyTable: string;
}

const job = (i: number, extra: Partial<OutgoingMessage> = {}): OutgoingMessage => ({
  id: randomUUID(),
  queue: QUEUE,
  payloadJson: `{"n":${i}}`,
  headers: {},
  delayMs: 0,
  ...extra,
});

async function publishMany(store: TransportStore, count: number, make: (i: number) => OutgoingMessage, batch = 2000, concurrency = 2) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const start = next;
        next += batch;
        const size = Math.min(batch, count - start);
        await store.publish(Array.from({ length: size }, (_, k) => make(start + k)));
      }
    }),
  );
}

/** The backlog of `kind` with `size` rows (keyed: size rows over size/100 keys, each key's first row leased). */
const hasColumn = async (s: Seeding, column: string) =>
  (await s.sql.query(`SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = $3`, [s.schema, s.table, column])).rowCount === 1;

export async function seedBacklog(s: Seeding, kind: BacklogKind, size: number): Promise<void> {
  const t = `"${s.schema}"."${s.table}"`;
  if (kind === 'delayed') await publishMany(s.store, size, (i) => job(i, { delayMs: DAY_MS }));
  // ready jobs of another queue: a table as large as the backlog's, with nothing beside this queue's ready rows
  if (kind === 'another queue') await publishMany(s.store, size, (i) => job(i, { queue: 'other' }));
  if (kind === 'mixed priorities') await publishMany(s.store, size, (i) => job(i, { delayMs: DAY_MS, priority: (i % 11) - 5 }));
  if (kind === 'keyed') {
    // size/100 keys, each with its head leased (a long lease) and 99 jobs queued behind it: written as the app files
    // them (contract-tested), in one statement, so no claim leaves dead index entries a VACUUM might not remove while
    // another session holds an old snapshot (test files run side by side)
    const keys = Math.max(1, Math.round(size / 100));
    const readySet = await hasColumn(s, 'state');
    // each keyed row carries its key's number (schema version 23), as a publish writes it: the keys first
    const numbered = readySet && (await hasColumn(s, 'key_no'));
    const keysTable = `"${s.schema}"."${s.table}_keys"`;
    if (readySet) {
      await s.sql.query(
        `INSERT INTO ${keysTable} (queue, ordering_key, backlog) SELECT '${QUEUE}', 'k' || k, 0 FROM generate_series(0, $1 - 1) AS k`,
        [keys],
      );
    }
    await s.sql.query(
      `INSERT INTO ${t} (id, queue, payload_json, headers_json, ordering_key, lock_id, locked_until, attempts${readySet ? ', state, seq' : ''}${numbered ? ', key_no' : ''})
       SELECT gen_random_uuid(), '${QUEUE}', '{"n":' || g || '}', '{}', 'k' || (g % $2), CASE WHEN g <= $2 THEN gen_random_uuid() END,
              CASE WHEN g <= $2 THEN now() + interval '1 hour' END, CASE WHEN g <= $2 THEN 1 ELSE 0 END${readySet ? `, CASE WHEN g > $2 THEN 2 END, nextval('"${s.schema}"."${s.table}_seq"')` : ''}${
                numbered ? `, (SELECT kk.id FROM ${keysTable} AS kk WHERE kk.queue = '${QUEUE}' AND kk.ordering_key = 'k' || (g % $2))` : ''
              }
       FROM generate_series(1, $1) AS g ORDER BY g`,
      [size, keys],
    );
    if (readySet) {
      await s.sql.query(
        `UPDATE ${keysTable} AS k SET backlog = c.n FROM (SELECT ordering_key, count(*)::int AS n FROM ${t} WHERE queue = '${QUEUE}' AND ordering_key IS NOT NULL GROUP BY ordering_key) AS c
         WHERE k.queue = '${QUEUE}' AND k.ordering_key = c.ordering_key`,
      );
    }
  }
  if (kind === 'dead letters') {
    await s.sql.query(
      `INSERT INTO ${t} (id, queue, payload_json, headers_json, dead_letter_reason, attempts)
       SELECT gen_random_uuid(), 'deadletter', '{"n":' || g || '}', '{"AR-DeadLetter-Reason":"boom","AR-DeadLetter-Source-Queue":"${QUEUE}"}', 'boom', 5
       FROM generate_series(1, $1) AS g`,
      [size],
    );
  }
  if (kind === 'history') {
    await s.sql.query(
      `INSERT INTO "${s.schema}"."${s.historyTable}" (id, queue, state, payload_json, headers_json, attempts, created_at, available_at, completed_at)
       SELECT gen_random_uuid(), '${QUEUE}', 'completed', '{"n":' || g || '}', '{}', 1, now(), now(), now() - g * interval '1 millisecond'
       FROM generate_series(1, $1) AS g`,
      [size],
    );
  }
  // what autovacuum does after a bulk load (the server here runs without it): statistics, and the dead index
  // entries of rows claimed while seeding (the keyed heads) removed
  await s.sql.query(`VACUUM ANALYZE ${t}`);
  await s.sql.query(`VACUUM ANALYZE "${s.schema}"."${s.historyTable}"`);
}

/** The 10 ready rows the claim takes (priorities -5..5 for the mixed-priority backlog). */
export async function seedReady(s: Seeding, kind: BacklogKind | 'baseline'): Promise<void> {
  await s.store.publish(Array.from({ length: READY_ROWS }, (_, i) => job(i, kind === 'mixed priorities' ? { priority: (i % 11) - 5 } : {})));
  await s.sql.query(`ANALYZE "${s.schema}"."${s.table}"`);
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** Scan nodes (they name a relation; ModifyTable does too, and reads nothing itself). */
function rowsRead(node: PlanNode): number {
  const loops = node['Actual Loops'] ?? 1;
  const own =
    node['Relation Name'] !== undefined && node['Node Type'] !== 'ModifyTable'
      ? ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * loops
      : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsRead(child), 0);
}

const blocks = (n: PlanNode) => (n['Shared Hit Blocks'] ?? 0) + (n['Shared Read Blocks'] ?? 0);

/**
 * Buffers the plan wrote: each ModifyTable's own (its count less its input's): the rows' new versions and their index
 * entries, which deepen with the indexes (log n). The plan's read buffers are its total less these. (A node's count
 * includes its children's; a CTE's plan is listed apart and counted again in the CTE Scan that runs it, so the total
 * is the top node's, not a sum.)
 */
function writeBuffers(node: PlanNode): number {
  const children = node.Plans ?? [];
  const own = node['Node Type'] === 'ModifyTable' ? Math.max(0, blocks(node) - children.reduce((sum, c) => sum + blocks(c), 0)) : 0;
  return own + children.reduce((sum, c) => sum + writeBuffers(c), 0);
}

/** Scan nodes that read a whole table. */
export function seqScans(node: PlanNode): string[] {
  const own = node['Node Type'] === 'Seq Scan' ? [node['Relation Name'] ?? '?'] : [];
  return [...own, ...(node.Plans ?? []).flatMap(seqScans)];
}

/**
 * One claim statement (`text` with the claim's parameters) measured `runs` times, each rolled back. With `genericTypes`
 * (its parameters' types) it is measured as its routine runs it (claim-routine.ts): prepared, under a generic plan.
 */
export async function measureClaim(
  sql: Client,
  text: string,
  runs = 7,
  values: (claim: unknown[]) => unknown[] = (v) => v,
  genericTypes?: readonly string[],
): Promise<ClaimCost> {
  const buffers: number[] = [];
  const times: number[] = [];
  const read: number[] = [];
  const readBufs: number[] = [];
  let rows = 0;
  let scans: string[] = [];
  let generic = false;
  const prepared = genericTypes ? `claim_cost_${randomUUID().replace(/-/g, '')}` : undefined;
  if (prepared) await sql.query(`PREPARE ${prepared}(${genericTypes!.join(', ')}) AS ${text}`);
  // EXPLAIN EXECUTE takes no bound parameters: the values go in as literals (the prepared statement's are still parameters)
  const literal = (v: unknown) => (v === null ? 'NULL' : typeof v === 'number' ? String(v) : sql.escapeLiteral(String(v)));
  for (let i = 0; i <= runs; i++) {
    await sql.query('BEGIN');
    try {
      if (prepared) await sql.query('SET LOCAL plan_cache_mode = force_generic_plan');
      const params = values([QUEUE, CLAIM_N, 30_000, randomUUID()]);
      const r = await sql.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode; 'Execution Time': number }> }>(
        prepared ? `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE ${prepared}(${params.map(literal).join(', ')})` : `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`,
        prepared ? [] : params,
      );
      const top = r.rows[0]!['QUERY PLAN'][0]!;
      if (i === 0) continue; // the first run warms the caches
      buffers.push((top.Plan['Shared Hit Blocks'] ?? 0) + (top.Plan['Shared Read Blocks'] ?? 0));
      times.push(top['Execution Time']);
      read.push(rowsRead(top.Plan));
      readBufs.push(blocks(top.Plan) - writeBuffers(top.Plan));
      rows = top.Plan['Actual Rows'] ?? 0;
      scans = seqScans(top.Plan);
      generic = !JSON.stringify(top.Plan).includes(`'${QUEUE}'::text`);
    } finally {
      await sql.query('ROLLBACK');
    }
  }
  if (prepared) await sql.query(`DEALLOCATE ${prepared}`);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { rowsRead: median(read), buffers: median(buffers), readBuffers: median(readBufs), ms: median(times), rows, seqScans: scans, generic };
}
