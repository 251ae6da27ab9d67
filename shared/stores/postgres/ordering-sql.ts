// Ordering keys (issue 17 §1) in PostgreSQL: the column, its partial index and the claim's head-of-key test.
// SQL Server twins: stores/sqlserver/ordering-sql.ts.
//
// A keyed row may be claimed only while it is the oldest row (by created_at, then id) of its (queue, key) left in
// the table, whatever its state: ready, delayed (a NAK'd head waits out its delay) or leased. Rows leave the table
// only through ack, cancel and the dead-letter move, so the head stays the head until it succeeded or was buried.
//
// Finding the heads (pgClaimable): a claim first walks the front of the queue in claim order, a window of twice the
// rows it wants, testing each keyed row with one probe (pgHeadOfKey). Unkeyed rows and keys with shallow backlogs
// fill the claim there. When the window holds fewer claimable rows than asked, typically because every key's head
// is leased and the rows behind them wait, the rest comes from the keys themselves: a loose index scan (a recursive
// CTE) takes each key's first entry of the ordering index, one descent per key, instead of probing every row of
// the backlog (at 100 rows per key, a claim that found nothing read 99,000 rows and took 740 ms; the key walk over
// 1,000 keys takes about 10 ms). Rows from the window come first, so the claim order holds across both parts.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';

export const ORDERING_KEY_COLUMN = 'ordering_key';

const q = (n: string) => quoteIdentifier(n, 'postgres');

/** Migration 11 (and the store's own schema step): a nullable column, a catalog-only change (no rewrite). */
export function pgOrderingColumnDdl(names: TransportNames): string {
  return `ALTER TABLE ${q(names.schema)}.${q(names.table)} ADD COLUMN IF NOT EXISTS ${ORDERING_KEY_COLUMN} text NULL`;
}

/** Keyed rows only, so unkeyed queues pay nothing on insert; the probe below is one descent of it. */
export function pgOrderingIndexDdl(names: TransportNames): string {
  return `CREATE INDEX IF NOT EXISTS ${q(names.orderingIndex)} ON ${q(names.schema)}.${q(names.table)} (queue, ${ORDERING_KEY_COLUMN}, created_at, id) WHERE ${ORDERING_KEY_COLUMN} IS NOT NULL`;
}

/**
 * The claim's extra predicate on the candidate row `c` of queue `queueParam`: unkeyed, or no older row of its key.
 * The older row is looked up without SKIP LOCKED (a subquery is never locked): a row another claim holds still
 * counts. In one claim statement two rows of one key cannot both pass (the younger sees the older).
 */
export function pgHeadOfKey(names: TransportNames, c: string, queueParam: string): string {
  const t = `${q(names.schema)}.${q(names.table)}`;
  return `(${c}.${ORDERING_KEY_COLUMN} IS NULL OR NOT EXISTS (
    SELECT 1 FROM ${t} AS older
    WHERE older.queue = ${queueParam} AND older.${ORDERING_KEY_COLUMN} IS NOT NULL AND older.${ORDERING_KEY_COLUMN} = ${c}.${ORDERING_KEY_COLUMN}
      AND (older.created_at, older.id) < (${c}.created_at, ${c}.id)))`;
}

/**
 * Each key's head in queue `queueParam`: the first entry per key of the ordering index, one descent per key
 * (PostgreSQL has no skip scan of its own before 18). Yields (id) of heads in any state; callers test readiness.
 */
export function pgKeyHeads(names: TransportNames, queueParam: string): string {
  const t = `${q(names.schema)}.${q(names.table)}`;
  const k = ORDERING_KEY_COLUMN;
  return `WITH RECURSIVE heads AS (
      (SELECT ${k}, id FROM ${t} WHERE queue = ${queueParam} AND ${k} IS NOT NULL ORDER BY ${k}, created_at, id LIMIT 1)
      UNION ALL
      SELECT nx.${k}, nx.id FROM heads AS h, LATERAL (
        SELECT ${k}, id FROM ${t} WHERE queue = ${queueParam} AND ${k} IS NOT NULL AND ${k} > h.${k}
        ORDER BY ${k}, created_at, id LIMIT 1) AS nx)
    SELECT id FROM heads`;
}

export interface ClaimableOptions {
  queueParam: string;
  /** Rows wanted: a parameter or a scalar subquery. */
  n: string;
  /** Extra conditions on the candidate row `c` (e.g. the queue's pause test). */
  extraWhere?: string;
  /**
   * A text[] parameter of keys whose head the caller just settled (a drain's acks): their successors are likely
   * heads now, found by one descent per key (`keyed_freed`) before the front is walked. See pgClaimable.
   */
  freedKeysParam?: string;
}

/** The claim order (the claim index's keys after the queue and the keyed flag), over a table alias. */
const claimOrder = (a: string) => `${a}.priority DESC, ${a}.available_at, ${a}.created_at`;
const orderCols = (a: string) => `${a}.id, ${a}.priority, ${a}.available_at, ${a}.created_at`;

/**
 * The ids a claim takes, locked FOR UPDATE SKIP LOCKED, at most `n`, in claim order: ready, unleased rows that are
 * unkeyed or the head of their key (see the header). Three parts, each locking only the rows it returns:
 * - `unkeyed`: the queue's unkeyed rows, a seek on the claim index's `(ordering_key IS NULL) IS TRUE` half;
 * - `keyed_front`: the heads among the first 2n ready keyed rows in claim order (`keyed_window`, the index's
 *   other half), each tested by one probe;
 * - `keyed_rest`: each key's first row (pgKeyHeads) not already taken, walked only when the front gave fewer than
 *   half the rows asked, the window holds fewer heads than that (its heads locked by a concurrent claim are that
 *   claim's, not a reason to walk) and rows lie behind it (a window not full holds every ready keyed row). Every row
 *   of the window precedes every row behind it, so the claim order holds across the two keyed parts. A front that
 *   gave half or more may leave heads behind the window for the next claim, which starts at the front again: a key
 *   whose head sorts behind its own successors (a retried head's later available_at) fills the window with rows
 *   that wait for it, until the front thins and the walk finds it.
 * The readiness tests stand on the locked row `c`: PostgreSQL re-reads a row it had to wait for and re-tests them,
 * so a row another claimer took meanwhile drops out. `IS TRUE` / `IS FALSE`, not `= false`: the planner folds
 * `x = false` into `NOT x`, which the index does not match.
 */
export function pgClaimable(names: TransportNames, o: ClaimableOptions): string {
  const t = `${q(names.schema)}.${q(names.table)}`;
  const k = ORDERING_KEY_COLUMN;
  const ready = (a: string) =>
    `${a}.queue = ${o.queueParam} AND ${a}.available_at <= now() AND (${a}.locked_until IS NULL OR ${a}.locked_until <= now())`;
  const extra = o.extraWhere ? ` AND ${o.extraWhere}` : '';
  const freed = o.freedKeysParam;
  // what the front may take: n, less the freed keys' heads already locked (at most three quarters of n, so rows of
  // other keys always get a quarter of the claim in claim order: hints never starve keys nobody hinted)
  const nFront = freed ? `((${o.n}) - (SELECT count(*) FROM keyed_freed))` : o.n;
  const frontWindow = freed ? nFront : `(${o.n})`;
  const notFreed = (a: string) => (freed ? ` AND ${a}.id <> ALL(ARRAY(SELECT id FROM keyed_freed))` : '');
  // the first 2n ready keyed rows in claim order; read again, only when the front came back short, to tell whether
  // rows lie behind it and whether its heads were few (not merely taken by a concurrent claim, which SKIP LOCKED passes)
  const keyedWindow = (a: string) => `SELECT ${orderCols(a)}, ${a}.${k} FROM ${t} AS ${a}
      WHERE ${ready(a)} AND (${a}.${k} IS NULL) IS FALSE${notFreed(a)}
      ORDER BY ${claimOrder(a)}
      LIMIT 2 * ${frontWindow}`;
  const freedPart = freed
    ? `keyed_freed AS (
    SELECT ${orderCols('c')} FROM unnest(${freed}::text[]) AS f(key)
    CROSS JOIN LATERAL (
      SELECT o.id FROM ${t} AS o WHERE o.queue = ${o.queueParam} AND o.${k} IS NOT NULL AND o.${k} = f.key
      ORDER BY o.created_at, o.id LIMIT 1) AS head
    JOIN ${t} AS c ON c.id = head.id
    WHERE ${ready('c')}${extra}
    ORDER BY ${claimOrder('c')}
    LIMIT ((${o.n}) * 3) / 4
    FOR UPDATE OF c SKIP LOCKED),
  `
    : '';
  return `WITH ${freedPart}unkeyed AS (
    SELECT ${orderCols('c')} FROM ${t} AS c
    WHERE ${ready('c')} AND (c.${k} IS NULL) IS TRUE${extra}
    ORDER BY ${claimOrder('c')}
    LIMIT ${o.n}
    FOR UPDATE OF c SKIP LOCKED),
  keyed_front AS (
    SELECT ${orderCols('c')} FROM (${keyedWindow('w')}) AS w
    JOIN ${t} AS c ON c.id = w.id
    WHERE ${pgHeadOfKey(names, 'w', o.queueParam)} AND ${ready('c')}${extra}
    ORDER BY ${claimOrder('w')}
    LIMIT ${nFront}
    FOR UPDATE OF c SKIP LOCKED),
  keyed_rest AS (
    SELECT ${orderCols('c')} FROM ${t} AS c
    WHERE ${freed ? `((SELECT count(*) FROM keyed_freed) + (SELECT count(*) FROM keyed_front)) * 2 < (${o.n}) AND ` : ''}(SELECT count(*) FROM keyed_front) * 2 < ${nFront}
      AND (SELECT count(*) = 2 * ${frontWindow} AND count(*) FILTER (WHERE ${pgHeadOfKey(names, 'v', o.queueParam)}) * 2 < ${nFront} FROM (${keyedWindow('v')}) AS v)
      AND c.id = ANY(ARRAY(${pgKeyHeads(names, o.queueParam)}))
      AND ${ready('c')}${extra} AND c.id <> ALL(ARRAY(SELECT id FROM keyed_front))${notFreed('c')}
    ORDER BY ${claimOrder('c')}
    LIMIT ${nFront}
    FOR UPDATE OF c SKIP LOCKED)
  SELECT x.id FROM (SELECT * FROM unkeyed UNION ALL ${freed ? 'SELECT * FROM keyed_freed UNION ALL ' : ''}SELECT * FROM keyed_front UNION ALL SELECT * FROM keyed_rest) AS x
  ORDER BY ${claimOrder('x')}
  LIMIT ${o.n}`;
}

/**
 * Whether queue `queueParam` has a row a claim would take now (outlooks): an unkeyed ready row, or a ready head.
 * The same parts as pgClaimable without locks; each EXISTS stops at its first row.
 */
export function pgClaimableExists(names: TransportNames, queueParam: string): string {
  const t = `${q(names.schema)}.${q(names.table)}`;
  const k = ORDERING_KEY_COLUMN;
  const ready = (a: string) =>
    `${a}.queue = ${queueParam} AND ${a}.available_at <= now() AND (${a}.locked_until IS NULL OR ${a}.locked_until <= now())`;
  return `(EXISTS (SELECT 1 FROM ${t} AS c WHERE ${ready('c')} AND (c.${k} IS NULL) IS TRUE)
    OR EXISTS (SELECT 1 FROM (SELECT w.* FROM ${t} AS w WHERE ${ready('w')} AND (w.${k} IS NULL) IS FALSE ORDER BY ${claimOrder('w')} LIMIT 64) AS c
      WHERE ${pgHeadOfKey(names, 'c', queueParam)})
    OR EXISTS (SELECT 1 FROM ${t} AS c WHERE c.id = ANY(ARRAY(${pgKeyHeads(names, queueParam)})) AND ${ready('c')}))`;
}
