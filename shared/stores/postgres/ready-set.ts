// The ready set (issue 25), PostgreSQL: what a claim reads, and how rows enter and leave it. SQL Server's twin is
// stores/sqlserver/ready-set.ts; docs/how-it-works.md tells the model.
//
// Every row of the transport table is in one of three states (the `state` column):
//   NULL  in the ready set: the claim's index holds it while it is unleased (a .NET host's rows and rows from before
//         version 18 are NULL too: a delayed one among them is passed over by the claim until it is due);
//   1     scheduled: waits for available_at (a delayed publish, a NAK with backoff, a reschedule, a debounce);
//   2     queued behind the head of its ordering key.
// A dead letter is a row of the dead-letter queue in that queue's ready set (NULL): no claim of another queue reads it.
// A claim reads four bounded ranges, each at most n rows, and takes the first n in claim order:
//   ready     the ready-set index, (queue, priority DESC, available_at, seq) WHERE state IS NULL AND lock_id IS NULL;
//   due       the scheduled index, (queue, available_at) WHERE state = 1, up to now (a claimed row leaves state 1);
//   lapsed    the leased index, (queue, locked_until) WHERE lock_id IS NOT NULL, up to now (a crashed owner's rows);
//   vacant    the keys table's vacant keys (their head settled) and each one's next row, one descent of the key index.
// So delayed rows, leased rows, rows behind a key's head, dead letters (another queue) and history (another table)
// are outside every range a claim reads: its cost is the rows it takes plus three index descents, whatever waits.
// A claim changes lock_id, so in PostgreSQL it is not a HOT update (it writes the primary key, the created index and
// the leased index): measured in bench/peers, the price of not reading leased rows.
//
// Ordering keys: `{table}_keys` holds each (queue, key)'s backlog, an upper bound of the key's rows in the table that
// is 0 exactly when it has none. A publish adds its rows under the key row's lock (INSERT … ON CONFLICT DO UPDATE,
// which reads the latest committed backlog): the first row of a key with none left is its head (state NULL or 1),
// the others wait (state 2). Removing a head (ack, history, cancel, dead-letter move) promotes the key's next row by
// seq in the same statement (pgReleaseKeys) without writing the key row; only a head that leaves no next row in the
// statement's snapshot locks the key row, and empties it unless a publisher committed after that snapshot (a
// statement's snapshot predates the lock it waits for): then it marks the key vacant instead, and the next claim of
// the queue, which starts after the removal committed, promotes it. seq comes from a sequence, drawn after the key
// lock: a key's order is publish order, never a clock tick (review H3). Until version 23 the backlog was an exact
// count (`pending`), written by every removal.
//
// The statements end with a SELECT that does not read the data-modifying CTEs it does not need (the key updates, the
// promotion): PostgreSQL runs every data-modifying CTE to completion whether or not it is read, and a join to one
// (e.g. `FROM removed, (SELECT count(*) FROM released)`) was planned as a nested loop that rescanned it per row.

import { quoteIdentifier, type TransportNames } from '../../sql/identifiers';

const q = (n: string) => quoteIdentifier(n, 'postgres');

export const STATE_SCHEDULED = 1;
export const STATE_QUEUED = 2;

export const READY_SET_KEYS = 'queue, priority DESC, available_at, seq';
export const READY_SET_FILTER = 'state IS NULL AND lock_id IS NULL';
/** The claim order, the ready-set index's keys after the queue. */
export const CLAIM_ORDER = 'priority DESC, available_at, seq';

/**
 * A claimed row's times (`alias`: the row) as epoch milliseconds: pg parses a float8 with parseFloat, a timestamptz
 * with a regular expression into a Date (two per row were 15 % of a drain's allocations). Date has millisecond
 * precision anyway. date_part, not EXTRACT: since PostgreSQL 14 EXTRACT computes in numeric, 0.30 µs a value here
 * against 0.06 for date_part's float8 (two a claimed row); the rounding of either is monotonic, so times keep their order.
 */
export const claimTimes = (alias: string) =>
  `date_part('epoch', ${alias}.created_at) * 1000 AS created_ms, date_part('epoch', ${alias}.available_at) * 1000 AS available_ms`;

export function pgTables(names: TransportNames) {
  return {
    t: `${q(names.schema)}.${q(names.table)}`,
    k: `${q(names.schema)}.${q(names.keysTable)}`,
    seq: `${q(names.schema)}.${q(names.sequence)}`,
  };
}

/** The `state` a row gets when it is (re)published or moved: scheduled when its time is ahead. */
export const stateFor = (delayedExpr: string) => `CASE WHEN ${delayedExpr} THEN ${STATE_SCHEDULED} END`;

/**
 * Version 18's objects on an existing table (each idempotent; catalog-only column changes, no rewrite). Its key
 * count `pending` is version 23's `backlog`.
 */
export function pgReadySetDdl(names: TransportNames): Array<{ name: string; text: string }> {
  const { t, k, seq } = pgTables(names);
  return [
    { name: 'create publish sequence', text: `CREATE SEQUENCE IF NOT EXISTS ${seq} AS bigint` },
    { name: 'add state and seq columns', text: `ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS state smallint NULL, ADD COLUMN IF NOT EXISTS seq bigint NULL` },
    // a default set after the column exists: existing rows keep NULL (a volatile default in ADD COLUMN would rewrite the table)
    { name: 'seq default', text: `ALTER TABLE ${t} ALTER COLUMN seq SET DEFAULT nextval('${seq}')` },
    {
      name: 'create ordering keys table',
      text: `CREATE TABLE IF NOT EXISTS ${k} (
    queue text NOT NULL,
    ordering_key text NOT NULL,
    pending integer NOT NULL,
    vacant boolean NOT NULL DEFAULT false,
    PRIMARY KEY (queue, ordering_key)) WITH (fillfactor = 50)`,
    },
    { name: 'create vacant keys index', text: `CREATE INDEX IF NOT EXISTS ${q(`${names.keysTable}_vacant_idx`.slice(0, 63))} ON ${k} (queue) WHERE vacant` },
  ];
}

/**
 * Version 18's backfill, in the version's transaction: keyed rows get seq in (created_at, id) order and their keys'
 * counts; each key's first row stays in the ready set, the rest queue behind it; delayed unleased rows are scheduled.
 * Dead letters (a reason) keep NULL: they are another queue's rows and never counted.
 */
export function pgReadySetBackfill(names: TransportNames): Array<{ name: string; text: string }> {
  const { t, k, seq } = pgTables(names);
  return [
    {
      name: 'number keyed rows',
      text: `UPDATE ${t} AS m SET seq = o.s FROM (
    SELECT x.id, nextval('${seq}') AS s FROM (
      SELECT id FROM ${t} WHERE ordering_key IS NOT NULL AND seq IS NULL AND dead_letter_reason IS NULL ORDER BY created_at, id) AS x) AS o
  WHERE m.id = o.id`,
    },
    {
      name: 'count keys',
      // the count column by position: `pending` here, `backlog` on a table a store of version 23 or later created
      text: `INSERT INTO ${k}
  SELECT queue, ordering_key, count(*) FROM ${t} WHERE ordering_key IS NOT NULL AND dead_letter_reason IS NULL GROUP BY queue, ordering_key
  ON CONFLICT (queue, ordering_key) DO NOTHING`,
    },
    {
      name: 'queue keyed rows behind their heads',
      text: `UPDATE ${t} AS m SET state = ${STATE_QUEUED}
  WHERE m.ordering_key IS NOT NULL AND m.dead_letter_reason IS NULL AND m.state IS NULL AND EXISTS (
    SELECT 1 FROM ${t} AS o WHERE o.queue = m.queue AND o.ordering_key = m.ordering_key AND o.dead_letter_reason IS NULL AND o.seq < m.seq)`,
    },
    {
      name: 'schedule delayed rows',
      text: `UPDATE ${t} SET state = ${STATE_SCHEDULED}
  WHERE state IS NULL AND lock_id IS NULL AND dead_letter_reason IS NULL AND available_at > clock_timestamp()`,
    },
  ];
}

export function pgReadySetIndexes(names: TransportNames): Array<{ name: string; text: string }> {
  const { t } = pgTables(names);
  return [
    { name: 'create ready-set index', text: `CREATE INDEX IF NOT EXISTS ${q(names.readySetIndex)} ON ${t} (${READY_SET_KEYS}) WHERE ${READY_SET_FILTER}` },
    { name: 'create scheduled index', text: `CREATE INDEX IF NOT EXISTS ${q(names.scheduledIndex)} ON ${t} (queue, available_at) WHERE state = ${STATE_SCHEDULED}` },
    { name: 'create leased index', text: `CREATE INDEX IF NOT EXISTS ${q(names.leasedIndex)} ON ${t} (queue, locked_until) INCLUDE (lock_id) WHERE lock_id IS NOT NULL` },
    { name: 'create key order index', text: `CREATE INDEX IF NOT EXISTS ${q(names.keyOrderIndex)} ON ${t} (queue, ordering_key, seq) WHERE ordering_key IS NOT NULL` },
  ];
}

/** Version 23's key index: the rows queued behind their key's head (what the successor searches read). */
export function pgKeyQueueIndexDdl(names: TransportNames): string {
  const { t } = pgTables(names);
  return `CREATE INDEX IF NOT EXISTS ${q(names.keyQueueIndex)} ON ${t} (queue, ordering_key, seq) WHERE state = ${STATE_QUEUED}`;
}

/**
 * Version 23: a key's count becomes its backlog, an upper bound of its rows that is 0 exactly when it has none
 * (pgReleaseKeys: a head's removal that finds the key's next row no longer writes the key row). The column is
 * renamed so that a host of an earlier release, which reads it as an exact count, fails on it instead of trusting
 * it (its claims, keyed publishes and acks of keyed rows fail until it stops; docs/migrations.md). The key queue
 * index holds the queued rows only, so a promoted row's lease writes no entry into it. Each key gets a number (`id`)
 * and each keyed row its key's (`key_no`): the next-job search reads (key_no, seq), integers, where the key queue
 * index's first columns are two texts (PostgreSQL 15 checks every entry of the key on the leaf page it lands on, so a
 * search with about 100 queued rows a key took 7 µs through the texts and 2 through the numbers).
 */
export function pgKeysBacklogDdl(names: TransportNames): Array<{ name: string; text: string }> {
  const { t, k, seq } = pgTables(names);
  return [
    {
      name: 'rename key count to backlog',
      text: `DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '${k.replace(/'/g, "''")}'::regclass AND attname = 'pending' AND NOT attisdropped) THEN
    ALTER TABLE ${k} RENAME COLUMN pending TO backlog;
  END IF;
END $$`,
    },
    { name: 'create key queue index', text: pgKeyQueueIndexDdl(names) },
    // each key's number, drawn from the publish sequence (the key table is small: its rewrite-free column, then its rows)
    { name: 'add key number', text: `ALTER TABLE ${k} ADD COLUMN IF NOT EXISTS id bigint` },
    { name: 'number keys', text: `UPDATE ${k} SET id = nextval('${seq}') WHERE id IS NULL` },
    { name: 'key number default', text: `ALTER TABLE ${k} ALTER COLUMN id SET DEFAULT nextval('${seq}')` },
    { name: 'add row key number', text: `ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS key_no bigint NULL` },
    {
      name: 'number keyed rows by key',
      text: `UPDATE ${t} AS m SET key_no = kk.id FROM ${k} AS kk
  WHERE m.ordering_key IS NOT NULL AND m.key_no IS NULL AND kk.queue = m.queue AND kk.ordering_key = m.ordering_key`,
    },
    { name: 'create key next index', text: pgKeyNextIndexDdl(names) },
    { name: 'drop key order index', text: `DROP INDEX IF EXISTS ${q(names.schema)}.${q(names.keyOrderIndex)}` },
  ];
}

/** Version 23's index for a key's next job: its queued rows by key number and seq. */
export function pgKeyNextIndexDdl(names: TransportNames): string {
  const { t } = pgTables(names);
  return `CREATE INDEX IF NOT EXISTS ${q(names.keyNextIndex)} ON ${t} (key_no, seq) WHERE state = ${STATE_QUEUED}`;
}

export interface CandidateOptions {
  queueParam: string;
  /** Rows wanted: a parameter or a scalar subquery. */
  n: string;
  /** Extra condition the whole claim must meet (the queue's pause test), uncorrelated. */
  hold?: string;
}

/**
 * The claim's CTEs (each bounded by n): `vacant` (the keys whose head settled, locked so two claims do not both
 * promote one), one CTE per range (a locking clause is not allowed in a UNION's branches), and `picked`, the rows to
 * lease in claim order, by ctid (the locked version's) and id: the UPDATE fetches them by ctid (a TID scan, no
 * primary-key descent per row) and checks the id. A claim's statement continues with `claimed`
 * (the UPDATE of the picked rows) and `promoteVacant` below. Each leaf locks only rows it returns (SKIP LOCKED);
 * the union may lock up to 3n rows it does not take (due, lapsed and vacant rows beyond the claim), for the
 * length of the claim's statement, and only while such rows exist.
 */
export function pgClaimCandidates(names: TransportNames, o: CandidateOptions): string {
  const { t, k } = pgTables(names);
  const hold = o.hold ? ` AND NOT ${o.hold}` : '';
  return `vacant AS (
  SELECT vk.ordering_key, nx.id, nx.state, nx.available_at <= now() AS due
  FROM ${k} AS vk
  LEFT JOIN LATERAL (
    SELECT s.id, s.state, s.available_at FROM ${t} AS s
    WHERE s.key_no = vk.id AND s.state = ${STATE_QUEUED}
    ORDER BY s.seq LIMIT 1) AS nx ON true
  WHERE vk.queue = ${o.queueParam} AND vk.vacant
  LIMIT ${o.n}
  FOR UPDATE OF vk SKIP LOCKED),
ready_rows AS (
  SELECT ctid, id, priority, available_at, seq FROM ${t}
  WHERE queue = ${o.queueParam} AND ${READY_SET_FILTER} AND available_at <= now()
  ORDER BY ${CLAIM_ORDER} LIMIT ${o.n} FOR UPDATE SKIP LOCKED),
due_rows AS (
  SELECT ctid, id, priority, available_at, seq FROM ${t}
  WHERE queue = ${o.queueParam} AND state = ${STATE_SCHEDULED} AND available_at <= now() AND lock_id IS NULL
  ORDER BY available_at LIMIT ${o.n} FOR UPDATE SKIP LOCKED),
lapsed_rows AS (
  SELECT ctid, id, priority, available_at, seq FROM ${t}
  WHERE queue = ${o.queueParam} AND lock_id IS NOT NULL AND locked_until <= now()
  ORDER BY locked_until LIMIT ${o.n} FOR UPDATE SKIP LOCKED),
next_rows AS (
  SELECT m.ctid, m.id, m.priority, m.available_at, m.seq FROM vacant AS v JOIN ${t} AS m ON m.id = v.id
  WHERE v.state = ${STATE_QUEUED} AND v.due AND m.state = ${STATE_QUEUED}
  FOR UPDATE OF m SKIP LOCKED),
picked AS (
  SELECT c.ctid, c.id FROM (
    SELECT * FROM ready_rows UNION ALL SELECT * FROM due_rows UNION ALL SELECT * FROM lapsed_rows UNION ALL SELECT * FROM next_rows) AS c
  WHERE true${hold}
  ORDER BY c.${CLAIM_ORDER.replace(/, /g, ', c.')}
  LIMIT ${o.n})`;
}

/**
 * After `claimed` (the UPDATE of the picked rows, RETURNING id): a vacant key's next row that is not due yet becomes
 * scheduled, and a key stops being vacant once its next row was taken, scheduled, or found not waiting (the key has
 * a head again, or no rows: then its count is reset). A due next row the claim did not take keeps the key vacant.
 */
export function pgPromoteVacant(names: TransportNames, queueParam: string): string {
  const { t, k } = pgTables(names);
  return `scheduled_successors AS (
  UPDATE ${t} SET state = ${STATE_SCHEDULED}
  WHERE id = ANY(ARRAY(SELECT v.id FROM vacant AS v WHERE v.state = ${STATE_QUEUED} AND NOT v.due))
  RETURNING id),
settled_keys AS (
  UPDATE ${k} AS sk SET vacant = false, backlog = CASE WHEN v.id IS NULL THEN 0 ELSE sk.backlog END
  FROM vacant AS v
  WHERE sk.queue = ${queueParam} AND sk.ordering_key = v.ordering_key
    AND (v.id IS NULL OR v.state IS DISTINCT FROM ${STATE_QUEUED} OR NOT v.due OR v.id = ANY(ARRAY(SELECT id FROM claimed)))
  RETURNING 1)`;
}

/**
 * CTEs that settle the keys of rows a statement removed. `removed` must yield (queue, ordering_key, key_no, state,
 * seq) of the rows the statement deleted (or moved out of their queue). A key whose head was among them goes on to
 * its next job, the first queued row after the head's seq in this statement's snapshot (`heads`, by the key's
 * number; by its queue and key for a head without one, such as a .NET host's row), which is promoted (`promoted`: it
 * joins the ready set, or the scheduled rows when not due). The snapshot predates any lock, yet the row it finds is
 * the key's next: publishers of a key take the key row's lock before they draw their rows' seq and hold it to their
 * commit, so a row the snapshot sees was published after every row of the key with a lower seq committed. Such a
 * key's row is not written: its count stays an upper bound of the key's rows, and only whether it is zero matters.
 * Two cases lock the key row (in (queue, key) order, so two removers cannot deadlock):
 *  - no next row in the snapshot (`released`): when the count under the lock equals the snapshot's, no publisher
 *    committed since, so the key has no row left and its count becomes 0 (the next publish is its head); otherwise
 *    the key is marked vacant and the next claim of the queue, whose snapshot sees the publisher's row, promotes it;
 *  - the next row is gone when the promotion locks it (a cancel committed meanwhile): the key is marked vacant (`lost`).
 * Removing a row that was not its key's head touches neither the key nor its count. The search starts past the
 * head's seq (every row queued behind a head drew its seq after the head did), so it skips the index entries of the
 * key's finished jobs, which stay until a VACUUM.
 */
export function pgReleaseKeys(names: TransportNames, removed: string, handover?: Handover): string {
  const { t, k } = pgTables(names);
  const live = handover ? `,\n         bool_and(r.live) FILTER (WHERE r.state IS DISTINCT FROM ${STATE_QUEUED}) AS head_live` : '';
  return `gone AS (
  SELECT r.queue, r.ordering_key, max(r.key_no) AS key_no, max(r.seq) FILTER (WHERE r.state IS DISTINCT FROM ${STATE_QUEUED}) AS head_seq${live}
  FROM ${removed} AS r WHERE r.ordering_key IS NOT NULL GROUP BY r.queue, r.ordering_key
  HAVING bool_or(r.state IS DISTINCT FROM ${STATE_QUEUED})),
heads AS (
  SELECT g.*, nx.id, nx.priority, nx.available_at, nx.seq
  FROM gone AS g LEFT JOIN LATERAL (
    (SELECT s.id, s.priority, s.available_at, s.seq FROM ${t} AS s
     WHERE g.key_no IS NOT NULL AND s.key_no = g.key_no AND s.seq > COALESCE(g.head_seq, -1) AND s.state = ${STATE_QUEUED}
     ORDER BY s.seq LIMIT 1)
    UNION ALL
    (SELECT s.id, s.priority, s.available_at, s.seq FROM ${t} AS s
     WHERE g.key_no IS NULL AND s.queue = g.queue AND s.ordering_key = g.ordering_key AND s.seq > COALESCE(g.head_seq, -1) AND s.state = ${STATE_QUEUED}
     ORDER BY s.seq LIMIT 1)) AS nx ON true),
key_locks AS (
  SELECT lk.queue, lk.ordering_key FROM ${k} AS lk JOIN heads AS h ON h.queue = lk.queue AND h.ordering_key = lk.ordering_key
  WHERE h.id IS NULL
  ORDER BY lk.queue COLLATE "C", lk.ordering_key COLLATE "C"
  FOR UPDATE OF lk),
released AS (
  UPDATE ${k} AS rk SET backlog = CASE WHEN rk.backlog IS DISTINCT FROM seen.backlog THEN rk.backlog ELSE 0 END,
         vacant = rk.vacant OR rk.backlog IS DISTINCT FROM seen.backlog
  FROM heads AS h, LATERAL (SELECT sk.backlog FROM ${k} AS sk WHERE sk.queue = h.queue AND sk.ordering_key = h.ordering_key) AS seen
  WHERE (SELECT count(*) FROM key_locks) >= 0 AND h.id IS NULL AND rk.queue = h.queue AND rk.ordering_key = h.ordering_key
  RETURNING rk.vacant),
${handover ? pgHandOver(names, handover) : `promoted AS (
  UPDATE ${t} AS p SET state = CASE WHEN p.available_at <= now() THEN NULL ELSE ${STATE_SCHEDULED} END
  FROM heads AS h
  WHERE h.id IS NOT NULL AND p.id = h.id AND p.state = ${STATE_QUEUED}
  RETURNING p.id)`},
lost AS (
  UPDATE ${k} AS lk SET vacant = true
  FROM heads AS h
  WHERE h.id IS NOT NULL AND h.id NOT IN (SELECT id FROM promoted) AND lk.queue = h.queue AND lk.ordering_key = h.ordering_key
  RETURNING 1)`;
}

/**
 * Ack-and-take-next (issue 25): the acking drain asks for the successors of the heads it acks, and the ack leases
 * them to it as a claim would, instead of promoting them into the ready set for its next claim. `removed` must
 * also yield `live` (the head's lease had not lapsed when the ack removed it).
 */
export interface Handover {
  /** The drain's queue: only its keys' successors are taken. */
  queue: string;
  /** Most successors to take (the drain's free room; 0 = promote as usual). */
  max: string;
  /** The lease, ms, and the lock id the taken rows get (a fresh one per ack, so a lost answer is handed back by it). */
  leaseMs: string;
  lockId: string;
  /** The queue's pause or backoff test, uncorrelated (as the claim's hold). */
  hold: string;
}

/**
 * The handover's CTEs, in place of `promoted` (same name, so the statement's other parts are unchanged). Each
 * key's successor is the one promotion finds (`heads`), so FIFO per key holds exactly as with promotion. A successor
 * is taken, not just promoted, when all of these hold, else it is promoted as before and the next claim (anyone's)
 * takes it:
 *  - its head's lease was live when the ack removed it: the taken row's lease replaces it one for one, so the
 *    queue's count of live leases (what a limited claim counts, limit-statements.ts) never grows, and no slot a
 *    limited claim gave away on a lapse is taken twice (the same rule as renew's, review M2);
 *  - it is on the drain's queue and due now; the queue is not paused or backed off (the drain does not ask under a
 *    rate limit: tokens are spent by claims only);
 *  - it precedes the queue's first ready row in claim order (priority, then availability, then seq): a claim at
 *    this moment would have taken it first. One descent of the ready-set index; due scheduled rows, lapsed leases
 *    and vacant keys (a claim's other ranges, rare and bounded) are not compared: the drain's next claim takes
 *    them in claim order with whatever else is ready, as it would after a promotion;
 *  - it is among the first \`max\` such successors in claim order.
 * A taken row gets what a claim sets (attempts + 1, locked_until, lock_id, state NULL); the rest get promotion's state.
 */
function pgHandOver(names: TransportNames, h: Handover): string {
  const { t } = pgTables(names);
  // `take` comes with each successor from one window pass (not `id = ANY(array of the taken)` per row: that is
  // quadratic in the batch, a third of a 500-row ack's time), and only when more are eligible than the drain has room
  // for: a drain asks for room for every keyed job it acks, so the sort and the window (5 % of a 500-head ack) are
  // usually skipped by a one-time filter
  return `successors AS (
  SELECT hs.id, hs.priority, hs.available_at, hs.seq, hs.queue, hs.head_live FROM heads AS hs WHERE hs.id IS NOT NULL),
first_ready AS MATERIALIZED (
  SELECT fr.priority, fr.available_at, fr.seq FROM ${t} AS fr
  WHERE fr.queue = ${h.queue} AND fr.${READY_SET_FILTER.replace(' AND lock_id', ' AND fr.lock_id')} AND fr.available_at <= now()
  ORDER BY fr.${CLAIM_ORDER.replace(/, /g, ', fr.')} LIMIT 1),
eligible AS (
  SELECT c.id, c.priority, c.available_at, c.seq,
         COALESCE(c.head_live AND c.queue = ${h.queue} AND c.available_at <= now() AND NOT ${h.hold}
           AND (f.priority IS NULL OR c.priority > f.priority OR (c.priority = f.priority AND (c.available_at, c.seq) < (f.available_at, f.seq))), false) AS ok
  FROM successors AS c LEFT JOIN first_ready AS f ON true),
ranked AS (
  SELECT e.id, e.ok AS take FROM eligible AS e WHERE (SELECT count(*) FROM eligible AS c WHERE c.ok) <= ${h.max}
  UNION ALL
  SELECT e.id, e.ok AND row_number() OVER (PARTITION BY e.ok ORDER BY e.${CLAIM_ORDER.replace(/, /g, ', e.')}) <= ${h.max} FROM eligible AS e
  WHERE (SELECT count(*) FROM eligible AS c WHERE c.ok) > ${h.max}),
promoted AS (
  UPDATE ${t} AS p SET state = CASE WHEN p.available_at <= now() THEN NULL ELSE ${STATE_SCHEDULED} END,
    attempts = CASE WHEN r.take THEN p.attempts + 1 ELSE p.attempts END,
    locked_until = CASE WHEN r.take THEN clock_timestamp() + ${h.leaseMs}::bigint * interval '1 millisecond' ELSE p.locked_until END,
    lock_id = CASE WHEN r.take THEN ${h.lockId}::uuid ELSE p.lock_id END
  FROM ranked AS r
  WHERE p.id = r.id AND p.state = ${STATE_QUEUED}
  RETURNING p.id, p.queue, p.payload_json, p.headers_json, p.attempts, p.lock_id,
    ${claimTimes('p')},
    p.priority, p.ordering_key, p.seq, r.take AS taken)`;
}

/**
 * The keys part of a publish: `keyed_src` yields (queue, ordering_key, ord) of the keyed rows that will be inserted;
 * `keyed` counts them into the keys table (locking each key row until the commit) and answers, per key, the first
 * row's ord, whether it is the key's head (the key had no row left) and the key's number (the rows' key_no).
 */
export function pgCountKeys(names: TransportNames, keyedSrc: string): string {
  const { k } = pgTables(names);
  return `key_counts AS (
  SELECT queue, ordering_key, count(*)::int AS n, min(ord) AS first FROM ${keyedSrc} GROUP BY queue, ordering_key),
keyed AS (
  INSERT INTO ${k} AS kk (queue, ordering_key, backlog)
  SELECT queue, ordering_key, n FROM key_counts ORDER BY queue COLLATE "C", ordering_key COLLATE "C"
  ON CONFLICT (queue, ordering_key) DO UPDATE SET backlog = kk.backlog + EXCLUDED.backlog
  RETURNING kk.queue, kk.ordering_key, kk.backlog, kk.id),
key_heads AS (
  SELECT c.queue, c.ordering_key, c.first, k2.backlog - c.n = 0 AS head, k2.id AS key_no
  FROM key_counts AS c JOIN keyed AS k2 ON k2.queue = c.queue AND k2.ordering_key = c.ordering_key)`;
}

/** Keys whose rows are all gone (count 0, not vacant), a bounded batch: run by the dedup-key prune. */
export function pgPruneKeys(names: TransportNames): string {
  const { k } = pgTables(names);
  return `DELETE FROM ${k} WHERE backlog = 0 AND NOT vacant AND ctid IN (SELECT ctid FROM ${k} WHERE backlog = 0 AND NOT vacant LIMIT 1000)`;
}

/**
 * Whether queue `queueParam` has a row a claim would take now (the outlooks), from the claim's own ranges: each part
 * reads the first entry of its index in the index's order (written as ORDER BY … LIMIT 1, not EXISTS: for an
 * EXISTS the planner may bet on a Seq Scan finding a match early, and read a whole backlog of rows that are not due).
 * A vacant key counts: its claim takes or schedules the successor.
 */
export function pgClaimableExists(names: TransportNames, queueParam: string): string {
  const { t, k } = pgTables(names);
  return `(COALESCE((SELECT available_at <= now() FROM ${t} WHERE queue = ${queueParam} AND ${READY_SET_FILTER} AND available_at <= now() ORDER BY ${CLAIM_ORDER} LIMIT 1), false)
    OR COALESCE((SELECT available_at <= now() FROM ${t} WHERE queue = ${queueParam} AND state = ${STATE_SCHEDULED} ORDER BY available_at LIMIT 1), false)
    OR COALESCE((SELECT locked_until <= now() FROM ${t} WHERE queue = ${queueParam} AND lock_id IS NOT NULL ORDER BY locked_until LIMIT 1), false)
    OR EXISTS (SELECT 1 FROM ${k} WHERE queue = ${queueParam} AND vacant))`;
}

/** Milliseconds until the queue's earliest live lease lapses (NULL: none): the leased index's first live entry. */
export function pgLeaseLapsesInMs(names: TransportNames, queueParam: string): string {
  const { t } = pgTables(names);
  return `(SELECT (EXTRACT(EPOCH FROM locked_until - clock_timestamp()) * 1000)::float8 FROM ${t}
      WHERE queue = ${queueParam} AND lock_id IS NOT NULL AND locked_until > now() ORDER BY locked_until LIMIT 1)`;
}
