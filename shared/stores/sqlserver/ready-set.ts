// The ready set (issue 25) in T-SQL: what a claim reads, and how rows enter and leave it. The PostgreSQL twin is
// stores/postgres/ready-set.ts (the model is the same; docs/how-it-works.md tells it).
//
// Every row of the transport table is in one of these states (the `state` column, tinyint NULL):
//   NULL  the ready set: the claim's filtered index holds it while it is unleased (rows of a .NET host and rows from
//         before schema version 20 are NULL too: a delayed one among them is passed over until it is due);
//   1     scheduled: waits for available_at (a delayed publish, a NAK with a delay, a reschedule, a debounce);
//   2     queued behind the head of its ordering key.
// A dead letter is a row of the dead-letter queue in that queue's ready set (NULL): no claim of another queue reads it
// (as on PostgreSQL; a drain of the dead-letter queue claims it like any row).
// A claim is one batch, one short transaction (XACT_ABORT ON). Unless the queue is paused it runs four statements,
// each bounded by @n and each touching only the rows it modifies (no U lock is kept on a row it passes over, H2):
//   (a) vacant keys: UPDATE TOP (@n) of the keys table's vacant rows (READPAST), then each such key's first row by
//       seq (one descent of the key order index) becomes its head: ready when due, else scheduled;
//   (b) due rows: the first @n scheduled rows with available_at <= now leave state 1 (the scheduled index's range);
//   (c) lapsed leases: the first @n leases with locked_until <= now are handed back (the leased index's range);
//   (d) the claim: TOP (@n) of the ready-set index in claim order under UPDLOCK, ROWLOCK, READPAST.
// So delayed rows (state 1), leased rows (lock_id set), rows behind a key's head (state 2), dead letters (another
// queue) and history (another table) are outside the ranges a claim reads: its cost is the rows it takes
// plus three bounded seeks, whatever waits beside them (review H1, H2). Which index serves each statement is said
// beside it below.
//
// Ordering keys: `{table}_keys` counts each (queue, key)'s rows. A publish counts its keyed rows under the key row's
// lock (UPDLOCK, HOLDLOCK: a missing key's range too), the key rows visited in (queue, key) order; the first row of a
// key that had none left is its head (state NULL or 1), the others wait (state 2). seq comes from the sequence
// `{table}_seq`, drawn after the key lock (NEXT VALUE FOR … OVER (ORDER BY ord)): a key's order is publish order,
// never a clock tick (review H3). A remover (ack, ack into history, cancel, the dead-letter move) OUTPUTs each
// removed row's (queue, ordering_key, state, seq) into a table variable and subtracts from its key in the same
// transaction; when the head was among them and rows remain, a later statement of that transaction promotes the key's
// next row by seq (it starts after the key lock, so it sees every counted row). A key becomes vacant only when its
// count went wrong (the claim's (a) repairs it). Keys are compared as SQL Server compares nvarchar (trailing spaces pad), in the counts and in the
// successor lookup alike: two keys that differ only in trailing spaces share one order on SQL Server.

import { derivedName, IDENTIFIER_CAP, quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { BIN2, exactQueueMatch } from './queue-match';
import { dbClockPlus } from './db-clock';

const q = (n: string) => quoteIdentifier(n, 'sqlserver');
/** An N'…' literal of a validated name (the same rule as statements.ts nameLiteral, which this module cannot import). */
const literal = (value: string) => {
  if (!/^[A-Za-z0-9_:.[\]]+$/.test(value)) throw new Error(`refusing to render '${value}' as a SQL literal`);
  return `N'${value}'`;
};

export const STATE_SCHEDULED = 1;
export const STATE_QUEUED = 2;

export const READY_SET_KEYS = ['queue', 'priority DESC', 'available_at', 'seq'] as const;
export const READY_SET_FILTER = 'state IS NULL AND lock_id IS NULL';
/** The claim order: the ready-set index's keys after the queue. */
export const CLAIM_ORDER = READY_SET_KEYS.slice(1).join(', ');
export const SCHEDULED_KEYS = ['queue', 'available_at'] as const;
export const SCHEDULED_FILTER = `state = ${STATE_SCHEDULED}`;
export const LEASED_KEYS = ['queue', 'locked_until'] as const;
export const LEASED_INCLUDE = ['lock_id'] as const;
export const LEASED_FILTER = 'lock_id IS NOT NULL';
export const KEY_ORDER_KEYS = ['queue', 'ordering_key', 'seq'] as const;
export const KEY_ORDER_FILTER = 'ordering_key IS NOT NULL';

export function readySetTables(names: TransportNames) {
  return {
    t: `${q(names.schema)}.${q(names.table)}`,
    k: `${q(names.schema)}.${q(names.keysTable)}`,
    seq: `${q(names.schema)}.${q(names.sequence)}`,
    vacantIndex: derivedName(names.table, '_keys_vacant_idx', IDENTIFIER_CAP.sqlserver),
  };
}

export interface FilteredIndex {
  /** what it serves, for messages */
  role: string;
  name: string;
  keys: readonly string[];
  include?: readonly string[];
  where: string;
}

/** The four filtered indexes of the ready set, in the order the migrations build them (versions 23–26). */
export function readySetIndexes(names: TransportNames): FilteredIndex[] {
  return [
    { role: 'ready set', name: names.readySetIndex, keys: READY_SET_KEYS, where: READY_SET_FILTER },
    { role: 'scheduled rows', name: names.scheduledIndex, keys: SCHEDULED_KEYS, where: SCHEDULED_FILTER },
    { role: 'leases', name: names.leasedIndex, keys: LEASED_KEYS, include: LEASED_INCLUDE, where: LEASED_FILTER },
    { role: 'key order', name: names.keyOrderIndex, keys: KEY_ORDER_KEYS, where: KEY_ORDER_FILTER },
  ];
}

/** `CREATE INDEX … ON t (keys) [INCLUDE (…)] WHERE …` (no options: the caller adds WITH (…) where it may). */
export function createFilteredIndexText(table: string, index: FilteredIndex): string {
  const include = index.include ? ` INCLUDE (${index.include.join(', ')})` : '';
  return `CREATE INDEX ${q(index.name)} ON ${table} (${index.keys.join(', ')})${include} WHERE ${index.where}`;
}

// ---- DDL: schema version 20 and the store's phase 1 ------------------------------------------------------

/** The publish-order sequence (version 20 and phase 1), behind its guard. */
export function createSequenceIfMissing(names: TransportNames): string[] {
  const { seq } = readySetTables(names);
  return [`IF OBJECT_ID(${literal(seq)}, N'SO') IS NULL`, `    CREATE SEQUENCE ${seq} AS bigint START WITH 1 INCREMENT BY 1;`];
}

/**
 * The state and seq columns, each behind its guard. Both are nullable and added without WITH VALUES, so existing rows
 * stay NULL and neither add touches a row on any edition (the default fills only rows inserted later).
 */
export function addReadySetColumnsIfMissing(names: TransportNames): string[] {
  const { t, seq } = readySetTables(names);
  return [
    `IF COL_LENGTH(${literal(t)}, N'state') IS NULL`,
    `    ALTER TABLE ${t} ADD state tinyint NULL;`,
    `IF COL_LENGTH(${literal(t)}, N'seq') IS NULL`,
    `    ALTER TABLE ${t} ADD seq bigint NULL DEFAULT (NEXT VALUE FOR ${seq});`,
  ];
}

/**
 * T-SQL lines that count one row of `@key` into the keys table `k` under the key row's lock (UPDLOCK, HOLDLOCK: a
 * concurrent counter of the same key waits), `keyWhere` selecting its row and `queueVar` naming its queue; the
 * caller declares @pending. Indented by `indent` spaces, for the batch that embeds them.
 */
export function countOneIntoKeyLines(k: string, keyWhere: string, queueVar: string, indent: number): string[] {
  const pad = ' '.repeat(indent);
  return [
    `${pad}SELECT @pending = pending FROM ${k} WITH (UPDLOCK, HOLDLOCK) WHERE ${keyWhere};`,
    `${pad}IF @pending IS NULL`,
    `${pad}    INSERT INTO ${k} (queue, ordering_key, pending) VALUES (${queueVar}, @key, 1);`,
    `${pad}ELSE`,
    `${pad}    UPDATE ${k} SET pending = pending + 1 WHERE ${keyWhere};`,
  ];
}

export function keysTableBody(): string {
  return [
    `    queue nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
    `    ordering_key nvarchar(200) COLLATE ${BIN2} NOT NULL,`,
    '    pending int NOT NULL,',
    '    vacant bit NOT NULL DEFAULT 0,',
    '    PRIMARY KEY (queue, ordering_key)',
  ].join('\n');
}

/** The ordering keys table and its vacant-keys index, built with it (empty: no wait on anything). */
export function createKeysTableIfMissing(names: TransportNames): string[] {
  const { k, vacantIndex } = readySetTables(names);
  return [
    `IF OBJECT_ID(${literal(k)}, N'U') IS NULL`,
    'BEGIN',
    `CREATE TABLE ${k} (`,
    keysTableBody(),
    ');',
    `CREATE INDEX ${q(vacantIndex)} ON ${k} (queue) WHERE vacant = 1;`,
    'END',
  ];
}

/**
 * No lock escalation on the transport table (review H2.2): a long claim, prune or backfill could otherwise turn its
 * row locks into a table lock that READPAST cannot skip. Metadata only; guarded so a second run takes no Sch-M.
 */
export function disableLockEscalation(names: TransportNames): string[] {
  const { t } = readySetTables(names);
  return [
    `IF EXISTS (SELECT 1 FROM sys.tables WHERE object_id = OBJECT_ID(${literal(t)}, N'U') AND lock_escalation <> 1)`,
    `    ALTER TABLE ${t} SET (LOCK_ESCALATION = DISABLE);`,
  ];
}

// ---- the backfill: schema version 21 and the store's phase 1 -------------------------------------------

export const BACKFILL_BATCH = 5000;

/**
 * Files the rows of before version 20 that are not ready now: delayed unleased unkeyed rows get state 1 (keyed ones
 * are the keyed backfill's). One walk of the primary key in batches of 5,000 ids, each batch its
 * own UPDATE: run outside a transaction, every batch commits by itself, so the walk never holds more than one
 * batch's locks. Idempotent (only rows with state NULL change). Correctness does not wait for it: such a row left
 * NULL is passed over by claims until it is due.
 */
export function fileExistingRowsBatched(names: TransportNames): string[] {
  const { t } = readySetTables(names);
  return [
    'DECLARE @last uniqueidentifier;',
    'DECLARE @ids TABLE (id uniqueidentifier NOT NULL PRIMARY KEY);',
    'WHILE 1 = 1',
    'BEGIN',
    '    DELETE FROM @ids;',
    '    IF @last IS NULL',
    `        INSERT INTO @ids (id) SELECT TOP (${BACKFILL_BATCH}) id FROM ${t} ORDER BY id;`,
    '    ELSE',
    `        INSERT INTO @ids (id) SELECT TOP (${BACKFILL_BATCH}) id FROM ${t} WHERE id > @last ORDER BY id;`,
    '    IF @@ROWCOUNT = 0 BREAK;',
    '    SELECT TOP (1) @last = id FROM @ids ORDER BY id DESC;',
    `    UPDATE m SET state = ${STATE_SCHEDULED}`,
    `    FROM ${t} AS m INNER JOIN @ids AS b ON b.id = m.id`,
    '    WHERE m.state IS NULL AND m.ordering_key IS NULL AND m.lock_id IS NULL AND m.dead_letter_reason IS NULL',
    '      AND m.available_at > SYSUTCDATETIME();',
    'END;',
  ];
}

/**
 * The keyed rows of before version 20, in one transaction: numbered from the sequence in their old order (created_at,
 * id), counted into their keys, each key's first row left its head (scheduled when it is delayed and unleased), the
 * rest queued behind it. Reads the keyed rows only (the ordering index of version 16); dead letters are not counted.
 * Idempotent: numbered rows, counted keys and filed rows are left alone.
 */
export function fileKeyedRows(names: TransportNames): Array<{ name: string; lines: string[] }> {
  const { t, k, seq } = readySetTables(names);
  const live = (a = '') => `${a}ordering_key IS NOT NULL AND ${a}dead_letter_reason IS NULL`;
  return [
    {
      name: 'number keyed rows',
      lines: [
        'DECLARE @numbered TABLE (id uniqueidentifier NOT NULL PRIMARY KEY, s bigint NOT NULL);',
        'INSERT INTO @numbered (id, s)',
        `SELECT id, NEXT VALUE FOR ${seq} OVER (ORDER BY created_at, id) FROM ${t} WHERE ${live()} AND seq IS NULL;`,
        `UPDATE m SET seq = n.s FROM ${t} AS m INNER JOIN @numbered AS n ON n.id = m.id;`,
      ],
    },
    {
      name: 'count keys',
      lines: [
        `INSERT INTO ${k} (queue, ordering_key, pending)`,
        `SELECT m.queue, m.ordering_key, COUNT(*) FROM ${t} AS m`,
        `WHERE ${live('m.')}`,
        `  AND NOT EXISTS (SELECT 1 FROM ${k} AS e WHERE e.queue = m.queue AND e.ordering_key = m.ordering_key)`,
        'GROUP BY m.queue, m.ordering_key;',
      ],
    },
    {
      name: 'queue keyed rows behind their heads',
      lines: [
        `UPDATE m SET state = ${STATE_QUEUED}`,
        `FROM ${t} AS m`,
        `WHERE ${live('m.')} AND m.state IS NULL AND m.lock_id IS NULL`,
        `  AND EXISTS (SELECT 1 FROM ${t} AS o WHERE o.queue = m.queue AND o.ordering_key IS NOT NULL AND o.ordering_key = m.ordering_key`,
        '    AND o.dead_letter_reason IS NULL AND o.seq < m.seq);',
      ],
    },
    {
      name: 'schedule delayed heads',
      lines: [
        `UPDATE ${t} SET state = ${STATE_SCHEDULED}`,
        `WHERE ${live()} AND state IS NULL AND lock_id IS NULL AND available_at > SYSUTCDATETIME();`,
      ],
    },
  ];
}

// ---- the claim ------------------------------------------------------------------------------------------

/** The batch-level declaration the claim's promotion needs (before BEGIN TRANSACTION). */
export const VACANT_KEYS_DECLARATION = `DECLARE @vacant TABLE (ordering_key nvarchar(200) COLLATE ${BIN2} NOT NULL);`;

/**
 * (a), (b) and (c) of the claim (see the header), each bounded by `top`, for queue @queue; lines indented for a
 * BEGIN … END block. Every statement modifies each row it reads (no U lock is kept on a passed-over row).
 */
export function promoteLines(names: TransportNames, top: string): string[] {
  const { t, k } = readySetTables(names);
  const match = exactQueueMatch('queue', 'queue');
  const sameKey = `f.queue = @queue AND f.ordering_key IS NOT NULL AND f.ordering_key = v.ordering_key`;
  return [
    // (a) keys table: {table}_keys_vacant_idx (queue) WHERE vacant = 1, a seek to at most `top` rows, each X-locked by
    // this UPDATE to the commit (so a second claim skips it: READPAST; a publisher of the key waits for it)
    `    UPDATE TOP (${top}) ${k} WITH (ROWLOCK, READPAST)`,
    '    SET vacant = 0',
    '    OUTPUT inserted.ordering_key INTO @vacant (ordering_key)',
    `    WHERE ${match} AND vacant = 1;`,
    '    IF @@ROWCOUNT > 0',
    '    BEGIN',
    // each key's first row by seq: one descent of the key order index (queue, ordering_key, seq) WHERE ordering_key IS
    // NOT NULL; it becomes the head only while it waits behind one (state 2)
    `        UPDATE m SET state = CASE WHEN m.available_at <= SYSUTCDATETIME() THEN NULL ELSE ${STATE_SCHEDULED} END`,
    '        FROM @vacant AS v',
    `        CROSS APPLY (SELECT TOP (1) f.id FROM ${t} AS f WHERE ${sameKey} ORDER BY f.seq) AS nx`,
    `        INNER JOIN ${t} AS m ON m.id = nx.id`,
    `        WHERE m.state = ${STATE_QUEUED};`,
    // a vacant key without a row (its count went wrong): nothing to promote, and its count starts again
    '        UPDATE kk SET pending = 0',
    `        FROM @vacant AS v INNER JOIN ${k} AS kk ON kk.queue = @queue AND kk.ordering_key = v.ordering_key`,
    `        WHERE NOT EXISTS (SELECT 1 FROM ${t} AS f WHERE ${sameKey});`,
    '    END;',
    // (b) the scheduled index (queue, available_at) WHERE state = 1: a range seek up to now, at most `top` rows
    '    WITH due AS (',
    `        SELECT TOP (${top}) state FROM ${t} WITH (ROWLOCK, READPAST)`,
    `        WHERE ${match} AND state = ${STATE_SCHEDULED} AND available_at <= SYSUTCDATETIME()`,
    '        ORDER BY available_at)',
    '    UPDATE due SET state = NULL;',
    // (c) the leased index (queue, locked_until) INCLUDE (lock_id) WHERE lock_id IS NOT NULL: leases that lapsed,
    // at most `top` rows, back into the ready set (attempts stay: the claim that takes one counts its delivery)
    '    WITH lapsed AS (',
    `        SELECT TOP (${top}) lock_id, locked_until FROM ${t} WITH (ROWLOCK, READPAST)`,
    `        WHERE ${match} AND lock_id IS NOT NULL AND locked_until <= SYSUTCDATETIME()`,
    '        ORDER BY locked_until)',
    '    UPDATE lapsed SET lock_id = NULL, locked_until = NULL;',
  ];
}

/**
 * (d) the claim: TOP (`top`) of the ready-set index (queue, priority DESC, available_at, seq) WHERE state IS NULL AND
 * lock_id IS NULL, in that order, one ordered seek of the queue's range under UPDLOCK, ROWLOCK, READPAST; every
 * predicate is on the index's keys or filter, so a row is locked only when it is taken (the residual
 * `available_at <= now` rejects only a .NET host's delayed rows, inside the seek). Every row gets @lock_id, which the
 * drain chose (the fence stays (id, lock_id); a lost answer is handed back by it). OUTPUT order is not guaranteed:
 * priority, available_at and seq come back for the client's sort. `outputIdsInto`: the limited claim's roster.
 */
export function claimLines(names: TransportNames, top: string, outputIdsInto?: string): string[] {
  const { t } = readySetTables(names);
  return [
    '    WITH next AS (',
    `        SELECT TOP (${top}) id, queue, payload_json, headers_json, attempts, locked_until, lock_id, created_at, available_at, priority, ordering_key, seq`,
    `        FROM ${t} WITH (UPDLOCK, ROWLOCK, READPAST)`,
    `        WHERE ${exactQueueMatch('queue', 'queue')} AND ${READY_SET_FILTER} AND available_at <= SYSUTCDATETIME()`,
    `        ORDER BY ${CLAIM_ORDER})`,
    '    UPDATE next',
    `    SET attempts = attempts + 1, locked_until = ${dbClockPlus('@lock_timeout_ms')}, lock_id = @lock_id`,
    ...(outputIdsInto ? [`    OUTPUT inserted.id INTO ${outputIdsInto} (id)`] : []),
    '    OUTPUT inserted.id, inserted.queue, inserted.payload_json, inserted.headers_json, inserted.attempts,',
    '           inserted.lock_id, inserted.created_at, inserted.available_at, inserted.priority, inserted.ordering_key, inserted.seq;',
  ];
}

// ---- removers and publishers ------------------------------------------------------------------------------

/** A remover's table variable of removed rows (OUTPUT deleted.queue, deleted.ordering_key, deleted.state, deleted.seq INTO it). */
export const REMOVED_DECLARATION = `DECLARE @removed TABLE (queue nvarchar(200) COLLATE ${BIN2} NOT NULL, ordering_key nvarchar(200) COLLATE ${BIN2} NULL, state tinyint NULL, seq bigint NULL);`;
/** releaseKeysLines' table variables: the keys of the removed rows, and the keys whose next job the remover promoted. */
export const GONE_DECLARATION =
  `DECLARE @gone TABLE (queue nvarchar(200) COLLATE ${BIN2} NOT NULL, ordering_key nvarchar(200) COLLATE ${BIN2} NOT NULL, ` +
  'n int NOT NULL, head bit NOT NULL, head_seq bigint NULL, PRIMARY KEY (queue, ordering_key));\n' +
  `DECLARE @promoted TABLE (queue nvarchar(200) COLLATE ${BIN2} NOT NULL, ordering_key nvarchar(200) COLLATE ${BIN2} NOT NULL, ` +
  'PRIMARY KEY (queue, ordering_key));';

/**
 * Settles the keys of the rows in `removed` (in the remover's transaction, after its DELETE; `removed` has queue,
 * ordering_key, state and seq): each key loses its removed rows from its count (@gone is clustered on (queue, key),
 * so the join visits and X-locks the key rows in that order). When its head was among them (a row not queued) and
 * rows remain, the key's next row by seq is promoted at once: ready when due, else scheduled. That is a statement of
 * its own, after the count: it starts once the key rows' locks were granted, so every publisher counted in `pending`
 * has committed and its rows are visible (under read committed snapshot too: a statement's snapshot is taken when
 * it starts), and no publisher of the key can add a row until this transaction commits. So on SQL Server the ack
 * promotes always, and PostgreSQL's race (pgReleaseKeys: a statement's snapshot predates its lock wait) does not
 * arise. Served by the key order index (queue, ordering_key, seq) WHERE ordering_key IS NOT NULL: one descent per
 * key, starting after the head's seq (every row queued behind a head drew its seq after the head's, under the key's
 * lock), so the key's deleted entries not yet cleaned up by the ghost cleanup are not walked. A key whose count says
 * rows remain but whose next row was not found (a count gone wrong, e.g. a keyed row of an earlier release's host)
 * is marked vacant: the claim batch repairs it (promoteLines (a)). Dead letters were never counted. Needs
 * GONE_DECLARATION. Unkeyed removals skip it after one read of the table variable. A cancel locks its key row before
 * its DELETE (job-control-statements.ts cancelJob), so a remover holding a key waits for no row lock held by a
 * remover waiting for that key.
 */
export function releaseKeysLines(names: TransportNames, removed = '@removed'): string[] {
  const { t, k } = readySetTables(names);
  const gk = 'kk.queue = g.queue AND kk.ordering_key = g.ordering_key';
  return [
    'INSERT INTO @gone (queue, ordering_key, n, head, head_seq)',
    `SELECT queue, ordering_key, COUNT(*), MAX(CASE WHEN state = ${STATE_QUEUED} THEN 0 ELSE 1 END), MAX(CASE WHEN state = ${STATE_QUEUED} THEN NULL ELSE seq END)`,
    `FROM ${removed} WHERE ordering_key IS NOT NULL GROUP BY queue, ordering_key;`,
    'IF @@ROWCOUNT > 0',
    'BEGIN',
    '    UPDATE kk SET pending = CASE WHEN kk.pending > g.n THEN kk.pending - g.n ELSE 0 END',
    `    FROM @gone AS g INNER JOIN ${k} AS kk ON ${gk};`,
    `    UPDATE m SET state = CASE WHEN m.available_at <= SYSUTCDATETIME() THEN NULL ELSE ${STATE_SCHEDULED} END`,
    '    OUTPUT inserted.queue, inserted.ordering_key INTO @promoted (queue, ordering_key)',
    `    FROM @gone AS g INNER JOIN ${k} AS kk ON ${gk}`,
    `    CROSS APPLY (SELECT TOP (1) f.id FROM ${t} AS f`,
    '        WHERE f.queue = g.queue AND f.ordering_key IS NOT NULL AND f.ordering_key = g.ordering_key AND f.seq > COALESCE(g.head_seq, -1)',
    '        ORDER BY f.seq) AS nx',
    `    INNER JOIN ${t} AS m ON m.id = nx.id`,
    `    WHERE g.head = 1 AND kk.pending > 0 AND m.state = ${STATE_QUEUED};`,
    '    UPDATE kk SET vacant = 1',
    `    FROM @gone AS g INNER JOIN ${k} AS kk ON ${gk}`,
    '    WHERE g.head = 1 AND kk.pending > 0 AND kk.vacant = 0',
    '      AND NOT EXISTS (SELECT 1 FROM @promoted AS p WHERE p.queue = g.queue AND p.ordering_key = g.ordering_key);',
    'END;',
  ];
}

/** A publisher's rows to insert: ord, queue, key and the state counting gives them (NULL = not queued). */
export const FRESH_DECLARATION =
  `DECLARE @fresh TABLE (ord int NOT NULL PRIMARY KEY, queue nvarchar(200) COLLATE ${BIN2} NOT NULL, ` +
  `ordering_key nvarchar(200) COLLATE ${BIN2} NULL, state tinyint NULL);`;
export const COUNTS_DECLARATION =
  `DECLARE @counts TABLE (queue nvarchar(200) COLLATE ${BIN2} NOT NULL, ordering_key nvarchar(200) COLLATE ${BIN2} NOT NULL, ` +
  'n int NOT NULL, first_ord int NOT NULL, pending int NULL, PRIMARY KEY (queue, ordering_key));';

/**
 * Counts the keyed rows of @fresh into the keys table (inside the publisher's transaction, before the INSERT): each
 * key row is read and locked WITH (UPDLOCK, HOLDLOCK) to the commit (a missing key's range too, so two publishers of
 * a new key meet there; where they still both insert, the second fails with 2627, its transaction rolls back with
 * its counts, and the store runs it again). @counts is clustered on (queue, key): key rows are visited in that order.
 * A key's first new row is its head when the key had no row left; every other keyed row gets state 2 in @fresh.
 * Needs FRESH_DECLARATION and COUNTS_DECLARATION.
 */
export function countKeysLines(names: TransportNames): string[] {
  const { k } = readySetTables(names);
  const join = 'k.queue = c.queue AND k.ordering_key = c.ordering_key';
  return [
    'INSERT INTO @counts (queue, ordering_key, n, first_ord)',
    'SELECT queue, ordering_key, COUNT(*), MIN(ord) FROM @fresh WHERE ordering_key IS NOT NULL GROUP BY queue, ordering_key;',
    'IF @@ROWCOUNT > 0',
    'BEGIN',
    `    UPDATE c SET pending = k.pending FROM @counts AS c INNER JOIN ${k} AS k WITH (UPDLOCK, HOLDLOCK) ON ${join};`,
    `    INSERT INTO ${k} (queue, ordering_key, pending) SELECT queue, ordering_key, n FROM @counts WHERE pending IS NULL;`,
    `    UPDATE k SET pending = k.pending + c.n FROM @counts AS c INNER JOIN ${k} AS k ON ${join} WHERE c.pending IS NOT NULL;`,
    `    UPDATE f SET state = ${STATE_QUEUED} FROM @fresh AS f INNER JOIN @counts AS c ON c.queue = f.queue AND c.ordering_key = f.ordering_key`,
    '    WHERE c.pending > 0 OR f.ord <> c.first_ord;',
    'END;',
  ];
}

// ---- outlooks -----------------------------------------------------------------------------------------------

/**
 * Whether queue @`param` has a row a claim would take now, from the claim's own ranges (each EXISTS one seek of its
 * index: the ready set, the scheduled rows up to now, the lapsed leases, the vacant keys). A vacant key counts: its
 * claim takes or schedules the successor.
 */
export function claimableExists(names: TransportNames, param = 'queue'): string {
  const { t, k } = readySetTables(names);
  const match = exactQueueMatch('queue', param);
  return [
    `(EXISTS (SELECT 1 FROM ${t} WHERE ${match} AND ${READY_SET_FILTER} AND available_at <= SYSUTCDATETIME())`,
    `    OR EXISTS (SELECT 1 FROM ${t} WHERE ${match} AND ${SCHEDULED_FILTER} AND available_at <= SYSUTCDATETIME())`,
    `    OR EXISTS (SELECT 1 FROM ${t} WHERE ${match} AND ${LEASED_FILTER} AND locked_until <= SYSUTCDATETIME())`,
    `    OR EXISTS (SELECT 1 FROM ${k} WHERE ${match} AND vacant = 1))`,
  ].join('\n');
}

/** Milliseconds until the queue's earliest live lease lapses (NULL: none): the leased index's first live entry. */
export function leaseLapsesInMs(names: TransportNames, param = 'queue'): string {
  const { t } = readySetTables(names);
  return (
    `(SELECT TOP (1) DATEDIFF_BIG(MILLISECOND, SYSUTCDATETIME(), locked_until) FROM ${t} ` +
    `WHERE ${exactQueueMatch('queue', param)} AND ${LEASED_FILTER} AND locked_until > SYSUTCDATETIME() ORDER BY locked_until)`
  );
}
