// `npm run probe:sqlserver`: the T-SQL review's probes (../shared/reviews/tsql-2026-12-04.md §5, P0–P9), rewritten for
// the code as it is now (the ready set of issue 25), against the server MSSQL_CONNECTION_STRING reaches. Each probe
// prints what it saw and what the design assumes, and the run exits 1 when an assumption fails. What a probe cannot
// check on the server it reached (another engine, a setting it cannot change, a step that needs a person) it says,
// and that does not fail the run.
//
// Where it runs: in scratch databases it creates and drops (one with READ_COMMITTED_SNAPSHOT OFF, one ON) when the
// login may create databases; otherwise in a scratch schema of the connection string's database, under that
// database's setting. It uses the product's own statements (shared/stores/sqlserver) and schema versions.
//
// PROBE_ROWS (default 200000): the delayed backlog of P1; P2 uses 3% of it (6,000 by default), P8 half of it.

import { randomBytes, randomUUID } from 'node:crypto';
import * as sql from 'mssql';
import { silentLogger } from '../shared/log';
import { DEFAULT_CHANNEL_TABLES } from '../shared/channel/types';
import { openStores, type OpenedStores } from '../shared/stores/open';
import { SqlServerTransportStore } from '../shared/stores/sqlserver/store';
import { createSqlServerPool } from '../shared/stores/sqlserver/connection';
import { ackBatch, claimBatch, type Statement } from '../shared/stores/sqlserver/statements';
import { STATE_SCHEDULED } from '../shared/stores/sqlserver/ready-set';
import { transportNames, type TransportNames } from '../shared/sql/identifiers';
import { schemaNames } from '../shared/stores/schema-names';
import { sqlServerOutboxNames } from '../shared/stores/sqlserver/outbox';
import { channelNames } from '../shared/sql/identifiers';
import type { TransportStore } from '../shared/transport/types';

const TABLE = 'asyncresponse_transport_messages';
const ROWS = Math.max(1000, Number(process.env.PROBE_ROWS ?? 200_000));

export type Outcome = 'holds' | 'fails' | 'not checked' | 'info';
export interface ProbeResult {
  id: string;
  finding: string;
  mode: string;
  outcome: Outcome;
  saw: string;
  assumes: string;
}

interface Mode {
  label: string;
  connectionString: string;
  /** A database this run created (dropped at the end). */
  created?: string;
}

interface Ctx {
  mode: Mode;
  engine: 'sqlserver' | 'other';
  schema: string;
  names: TransportNames;
  pool: sql.ConnectionPool;
  store: TransportStore;
  /** The publish procedure, when the schema versions could be applied (not on an engine the version gate refuses). */
  publishProcedure?: string;
  close(): Promise<void>;
}

const t = (c: Ctx) => `[${c.schema}].[${TABLE}]`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (n: number) => n.toLocaleString('en-US');

/** A connection string with another database. */
export function withDatabase(cs: string, database: string): string {
  const replaced = cs.replace(/(^|;)\s*(Database|Initial Catalog)\s*=[^;]*/i, `$1Database=${database}`);
  return replaced === cs && !/(^|;)\s*(Database|Initial Catalog)\s*=/i.test(cs) ? `${cs.replace(/;?\s*$/, '')};Database=${database}` : replaced;
}

/** A request on a pool or transaction, made through its own request() (where a test harness's statement rewrite sits). */
const req = (parent: sql.ConnectionPool | sql.Transaction): sql.Request => parent.request();

async function exec<P extends string>(parent: sql.ConnectionPool | sql.Transaction, st: Statement<P>, values: Record<P, unknown>): Promise<sql.IResult<Record<string, unknown>>> {
  const request = req(parent);
  for (const name of Object.keys(st.params) as P[]) request.input(name, st.params[name], values[name]);
  return request.query(st.text);
}

async function scalar<T>(parent: sql.ConnectionPool | sql.Transaction, text: string): Promise<T> {
  const r = await req(parent).query(text);
  const row = (r.recordset?.[0] ?? {}) as Record<string, unknown>;
  return Object.values(row)[0] as T;
}

/** Row locks (KEY, RID) and all locks this session holds in its database. */
async function locksHeld(tx: sql.Transaction): Promise<{ row: number; all: number; detail: string }> {
  const r = await req(tx).query<{ resource_type: string; request_mode: string; locks: number }>(
    PROBE_SQL.locksHeld(),
  );
  const rows = r.recordset;
  const row = rows.filter((x) => x.resource_type === 'KEY' || x.resource_type === 'RID').reduce((a, x) => a + Number(x.locks), 0);
  return { row, all: rows.reduce((a, x) => a + Number(x.locks), 0), detail: rows.map((x) => `${x.resource_type} ${x.request_mode} ${x.locks}`).join(', ') };
}

async function logicalReads(tx: sql.Transaction): Promise<number> {
  return Number(await scalar(tx, PROBE_SQL.logicalReads()));
}

/** In a transaction that is rolled back: the claim batch, then what the session holds and read. */
async function measuredClaim(c: Ctx, queue: string, n: number): Promise<{ claimed: number; locks: { row: number; all: number; detail: string }; reads: number }> {
  const tx = c.pool.transaction();
  await tx.begin();
  try {
    const before = await logicalReads(tx);
    const r = await exec(tx, claimBatch(c.names), { n, queue, lock_timeout_ms: 60_000, lock_id: randomUUID() });
    const reads = (await logicalReads(tx)) - before;
    return { claimed: r.recordset?.length ?? 0, locks: await locksHeld(tx), reads };
  } finally {
    await tx.rollback().catch(() => undefined);
  }
}

const msgs = (queue: string, count: number, extra: { orderingKey?: string; delayMs?: number } = {}) =>
  Array.from({ length: count }, (_, i) => ({ id: randomUUID(), queue, payloadJson: JSON.stringify(i), headers: {}, delayMs: extra.delayMs ?? 0, ...(extra.orderingKey ? { orderingKey: extra.orderingKey } : {}) }));

async function publishMany(c: Ctx, queue: string, count: number, extra: { orderingKey?: string } = {}): Promise<void> {
  for (let done = 0; done < count; done += 1000) await c.store.publish(msgs(queue, Math.min(1000, count - done), extra));
}

/** n scheduled (delayed a day) rows of `queue`, inserted in one statement as a delayed publish files them. */
async function insertDelayed(c: Ctx, queue: string, n: number): Promise<void> {
  await req(c.pool).input('queue', sql.NVarChar(200), queue).input('n', sql.Int(), n).query(PROBE_SQL.insertDelayed(t(c)));
}

/**
 * Every T-SQL text the probes send besides the product's own statements, by name (the grammar check parses each:
 * test/support/sqlserver-statement-sources.ts). `t` is the transport table, `s` the scratch schema.
 */
export const PROBE_SQL = {
  locksHeld: () =>
    'SELECT resource_type, request_mode, COUNT(*) AS locks FROM sys.dm_tran_locks WHERE request_session_id = @@SPID AND resource_database_id = DB_ID() GROUP BY resource_type, request_mode;',
  logicalReads: () => 'SELECT logical_reads FROM sys.dm_exec_sessions WHERE session_id = @@SPID;',
  /** @queue, @n: n rows of the queue delayed a day, filed as scheduled as a delayed publish files them. */
  insertDelayed: (t: string) =>
    [
      'WITH d0 AS (SELECT 1 AS x UNION ALL SELECT 1), d1 AS (SELECT 1 AS x FROM d0 a CROSS JOIN d0 b CROSS JOIN d0 c CROSS JOIN d0 d),',
      '     d2 AS (SELECT 1 AS x FROM d1 a CROSS JOIN d1 b), d3 AS (SELECT 1 AS x FROM d2 a CROSS JOIN d2 b CROSS JOIN d0 c CROSS JOIN d0 d CROSS JOIN d0 e CROSS JOIN d0 f)',
      `INSERT INTO ${t} (id, queue, payload_json, available_at, state)`,
      `SELECT TOP (@n) NEWID(), @queue, N'{}', DATEADD(DAY, 1, SYSUTCDATETIME()), ${STATE_SCHEDULED} FROM d3;`,
    ].join('\n'),
  escalationAttempts: (t: string) =>
    `SELECT COALESCE(SUM(index_lock_promotion_attempt_count), 0) AS n FROM sys.dm_db_index_operational_stats(DB_ID(), OBJECT_ID(N'${t}'), NULL, NULL);`,
  clockTicks: () =>
    'DECLARE @v TABLE (v datetime2(7)); DECLARE @i int = 0; WHILE @i < 20000 BEGIN INSERT INTO @v VALUES (SYSUTCDATETIME()); SET @i += 1; END; ' +
    'SELECT COUNT(*) AS samples, COUNT(DISTINCT v) AS distinct_values, DATEDIFF(MICROSECOND, MIN(v), MAX(v)) AS span_us FROM @v;',
  /** @queue: two publishes of key k in one transaction through the publish procedure. */
  twoKeyedPublishes: (publish: string) =>
    [
      'DECLARE @j uniqueidentifier; BEGIN TRAN;',
      `EXEC ${publish} @queue = @queue, @payload = N'1', @ordering_key = N'k', @message_id = @j OUTPUT;`,
      `EXEC ${publish} @queue = @queue, @payload = N'2', @ordering_key = N'k', @message_id = @j OUTPUT;`,
      'COMMIT;',
    ].join('\n'),
  statisticsXml: (on: boolean) => `SET STATISTICS XML ${on ? 'ON' : 'OFF'};`,
  /** @queue */
  leasedKeyed: (t: string) => `SELECT TOP (1) id, lock_id FROM ${t} WHERE queue = @queue AND ordering_key = N'k' AND lock_id IS NOT NULL;`,
  /** @queue */
  liveLeases: (t: string) => `SELECT COUNT(*) AS n FROM ${t} WHERE queue = @queue AND lock_id IS NOT NULL AND locked_until > SYSUTCDATETIME();`,
  optimizedLocking: () => "SELECT CAST(DATABASEPROPERTYEX(DB_NAME(), 'IsOptimizedLockingOn') AS int) AS ol;",
  /** @queue */
  insertReady: (t: string) => `INSERT INTO ${t} (id, queue, payload_json) VALUES (NEWID(), @queue, N'{}');`,
  /** @queue */
  keyedPublish: (publish: string) => `DECLARE @j uniqueidentifier; EXEC ${publish} @queue = @queue, @payload = N'"S"', @ordering_key = N'k', @message_id = @j OUTPUT;`,
  engineEdition: () => "SELECT CAST(SERVERPROPERTY('EngineEdition') AS int) AS e;",
  /** @n: a copy of n rows without the column the ALTER adds. */
  m3Copy: (copy: string) =>
    [
      `CREATE TABLE ${copy} (id uniqueidentifier NOT NULL PRIMARY KEY, payload_json nvarchar(max) NOT NULL);`,
      'WITH d0 AS (SELECT 1 AS x UNION ALL SELECT 1), d1 AS (SELECT 1 AS x FROM d0 a CROSS JOIN d0 b CROSS JOIN d0 c CROSS JOIN d0 d),',
      '     d2 AS (SELECT 1 AS x FROM d1 a CROSS JOIN d1 b), d3 AS (SELECT 1 AS x FROM d2 a CROSS JOIN d2 b CROSS JOIN d0 c CROSS JOIN d0 d CROSS JOIN d0 e CROSS JOIN d0 f)',
      `INSERT INTO ${copy} (id, payload_json) SELECT TOP (@n) NEWID(), REPLICATE(N'x', 100) FROM d3;`,
    ].join('\n'),
  tableBytes: (copy: string) => `SELECT SUM(used_page_count) * 8192 AS bytes FROM sys.dm_db_partition_stats WHERE object_id = OBJECT_ID(N'${copy}');`,
  addNotNullColumn: (copy: string) => `ALTER TABLE ${copy} ADD priority smallint NOT NULL DEFAULT 0;`,
  logBytes: () =>
    'SELECT database_transaction_log_bytes_used AS b FROM sys.dm_tran_database_transactions WHERE transaction_id = CURRENT_TRANSACTION_ID() AND database_id = DB_ID();',
  dropSchema: (s: string) =>
    [
      "DECLARE @s nvarchar(max) = N'';",
      `SELECT @s = @s + N'DROP PROCEDURE ' + QUOTENAME(SCHEMA_NAME(schema_id)) + N'.' + QUOTENAME(name) + N'; ' FROM sys.procedures WHERE schema_id = SCHEMA_ID(N'${s}');`,
      `SELECT @s = @s + N'DROP TABLE ' + QUOTENAME(SCHEMA_NAME(schema_id)) + N'.' + QUOTENAME(name) + N'; ' FROM sys.tables WHERE schema_id = SCHEMA_ID(N'${s}');`,
      `SELECT @s = @s + N'DROP SEQUENCE ' + QUOTENAME(SCHEMA_NAME(schema_id)) + N'.' + QUOTENAME(name) + N'; ' FROM sys.sequences WHERE schema_id = SCHEMA_ID(N'${s}');`,
      `EXEC (@s); EXEC (N'DROP SCHEMA [${s}]');`,
    ].join('\n'),
  databaseName: () => 'SELECT DB_NAME() AS d;',
  rcsi: () => 'SELECT is_read_committed_snapshot_on AS r FROM sys.databases WHERE database_id = DB_ID();',
  createDatabase: (db: string) => `CREATE DATABASE [${db}];`,
  setRcsi: (db: string, on: boolean) => `ALTER DATABASE [${db}] SET READ_COMMITTED_SNAPSHOT ${on ? 'ON' : 'OFF'} WITH ROLLBACK IMMEDIATE;`,
  singleUser: (db: string) => `ALTER DATABASE [${db}] SET SINGLE_USER WITH ROLLBACK IMMEDIATE;`,
  dropDatabase: (db: string) => `DROP DATABASE [${db}];`,
  version: () => 'SELECT @@VERSION AS v;',
};

type Probe = (c: Ctx) => Promise<Omit<ProbeResult, 'mode'>>;

const P0: Probe = async (c) => {
  const queue = 'p0';
  await c.store.publish(msgs(queue, 2));
  const tx = c.pool.transaction();
  await tx.begin();
  const first = { claimed: 0 };
  try {
    first.claimed = (await exec(tx, claimBatch(c.names), { n: 10, queue, lock_timeout_ms: 60_000, lock_id: randomUUID() })).recordset?.length ?? 0;
  } finally {
    await tx.rollback().catch(() => undefined);
  }
  const claimed = await c.store.claim(queue, 10, 30_000);
  return {
    id: 'P0',
    finding: 'the claim batch (claimBatch, rendered for this schema) compiles and runs',
    outcome: first.claimed === 2 && claimed.length === 2 ? 'holds' : 'fails',
    saw: `2 ready rows published; the batch in a rolled-back transaction returned ${first.claimed}, the store's claim ${claimed.length}`,
    assumes: 'the claim returns every ready row up to @n, in one batch',
  };
};

const P1: Probe = async (c) => {
  const queue = 'p1';
  await c.store.publish(msgs(queue, 3));
  const base = await measuredClaim(c, queue, 32);
  await insertDelayed(c, queue, ROWS);
  const loaded = await measuredClaim(c, queue, 32);
  const readsOk = loaded.reads <= base.reads * 1.2 + 8;
  const locksOk = loaded.locks.row <= base.locks.row + 3;
  return {
    id: 'P1',
    finding: 'H1: delayed rows are outside the range a claim reads',
    outcome: loaded.claimed === 3 && readsOk && locksOk ? 'holds' : 'fails',
    saw:
      `claim of 32 with 3 ready rows took ${base.claimed}: ${fmt(base.reads)} logical reads, ${base.locks.row} row locks; ` +
      `with ${fmt(ROWS)} delayed rows of the queue added it took ${loaded.claimed}: ${fmt(loaded.reads)} logical reads, ${loaded.locks.row} row locks (${loaded.locks.detail})`,
    assumes: 'the claim reads and locks only the rows it takes: with the backlog, reads ≤ 1.2 × before + 8 pages (a deeper index), row locks ≤ before + 3',
  };
};

const P2: Probe = async (c) => {
  const queue = 'p2';
  const successors = Math.max(100, Math.round(ROWS * 0.03));
  await c.store.publish(msgs(queue, 1, { orderingKey: 'k' }));
  const [head] = await c.store.claim(queue, 1, 600_000);
  const base = await measuredClaim(c, queue, 10);
  const escalations = async () =>
    Number(
      await scalar(
        c.pool,
        PROBE_SQL.escalationAttempts(t(c)),
      ),
    );
  await publishMany(c, queue, successors, { orderingKey: 'k' });
  const before = await escalations();
  const loaded = await measuredClaim(c, queue, 10);
  const attempts = (await escalations()) - before;
  return {
    id: 'P2',
    finding: 'H2: rows a claim passes over are not locked (leased head, queued successors)',
    outcome: head && base.claimed === 0 && loaded.claimed === 0 && loaded.locks.row <= base.locks.row + 3 && attempts === 0 ? 'holds' : 'fails',
    saw:
      `key k's head leased${head ? '' : ' (NOT claimed)'}; claim of 10 took ${base.claimed} holding ${base.locks.row} row locks; ` +
      `with ${fmt(successors)} successors of k published it took ${loaded.claimed} holding ${loaded.locks.row} row locks (${loaded.locks.detail || 'none'}); ` +
      `lock escalation attempts on the table during it: ${attempts}`,
    assumes: 'a claim that takes nothing holds no row lock more with the successors than without, and never attempts escalation',
  };
};

const P3: Probe = async (c) => {
  const r = await req(c.pool).query<{ samples: number; distinct_values: number; span_us: number }>(
    PROBE_SQL.clockTicks(),
  );
  const clock = r.recordset[0]!;
  const tick = clock.distinct_values > 1 ? clock.span_us / (clock.distinct_values - 1) : clock.span_us;
  const clockText = `SYSUTCDATETIME(): ${fmt(clock.samples)} samples, ${fmt(clock.distinct_values)} distinct values over ${fmt(clock.span_us)} µs (one value lasts ~${Math.round(tick)} µs)`;
  if (!c.publishProcedure) {
    return {
      id: 'P3',
      finding: 'H3: FIFO per key does not rest on the clock',
      outcome: 'not checked',
      saw: `${clockText}; the publish procedures are absent here (the version gate refused this engine), so the outbox order was not run`,
      assumes: 'two publishes of one key in one transaction are claimed in publish order (seq), however coarse the clock',
    };
  }
  const rounds = 200;
  let inverted = 0;
  for (let i = 0; i < rounds; i++) {
    const queue = `p3-${i}`;
    await req(c.pool).input('queue', sql.NVarChar(200), queue).query(PROBE_SQL.twoKeyedPublishes(c.publishProcedure));
    const claimed = await c.store.claim(queue, 10, 30_000);
    if (claimed.length !== 1 || claimed[0]!.payloadJson !== '1') inverted++;
  }
  return {
    id: 'P3',
    finding: 'H3: FIFO per key does not rest on the clock',
    outcome: inverted === 0 ? 'holds' : 'fails',
    saw: `${clockText}; ${rounds} rounds of two keyed publishes in one transaction: ${inverted} rounds where the claim did not take exactly the first`,
    assumes: 'two publishes of one key in one transaction are claimed in publish order (seq), however coarse the clock: 0 inverted rounds',
  };
};

/** Scans of the product's tables in showplan XML: `PhysicalOp` followed by the operator's object. */
export function scansIn(planXml: string, tablePrefix: string): string[] {
  const out: string[] = [];
  const re = /<RelOp [^>]*PhysicalOp="(Table Scan|Index Scan|Clustered Index Scan)"[\s\S]*?<Object [^>]*Table="\[([^\]]+)\]"(?: [^>]*Index="\[([^\]]+)\]")?/g;
  for (const m of planXml.matchAll(re)) if (m[2]!.startsWith(tablePrefix)) out.push(`${m[1]} of ${m[2]}${m[3] ? ` (${m[3]})` : ''}`);
  return out;
}

async function plansOf(c: Ctx, run: (tx: sql.Transaction) => Promise<unknown>): Promise<string[]> {
  const tx = c.pool.transaction();
  await tx.begin();
  const plans: string[] = [];
  try {
    await req(tx).query(PROBE_SQL.statisticsXml(true));
    const result = (await run(tx)) as sql.IResult<Record<string, unknown>>;
    for (const set of (result.recordsets as unknown as Array<Array<Record<string, unknown>>>) ?? []) {
      for (const row of set) for (const v of Object.values(row)) if (typeof v === 'string' && v.includes('<ShowPlanXML')) plans.push(v);
    }
    await req(tx).query(PROBE_SQL.statisticsXml(false));
  } finally {
    await tx.rollback().catch(() => undefined);
  }
  return plans;
}

const P4: Probe = async (c) => {
  const queue = 'p4';
  await c.store.publish(msgs(queue, 50));
  await publishMany(c, queue, 200, { orderingKey: 'k' });
  await insertDelayed(c, queue, 2000);
  const claimPlans = await plansOf(c, (tx) => exec(tx, claimBatch(c.names), { n: 10, queue, lock_timeout_ms: 60_000, lock_id: randomUUID() }));
  await c.store.claim(queue, 100, 60_000); // leases the key's head among the ready rows
  const leased = await req(c.pool).input('queue', sql.NVarChar(200), queue).query<{ id: string; lock_id: string }>(
    PROBE_SQL.leasedKeyed(t(c)),
  );
  const keyed = leased.recordset[0];
  const ackPlans = keyed ? await plansOf(c, (tx) => exec(tx, ackBatch(c.names), { settlements: JSON.stringify([{ id: keyed.id, lock_id: keyed.lock_id }]) })) : [];
  const scans = [...claimPlans, ...ackPlans].flatMap((p) => scansIn(p, TABLE));
  const plans = claimPlans.length + ackPlans.length;
  return {
    id: 'P4',
    finding: "M1: the claim's and a keyed head's ack's accesses to the product's tables are seeks",
    outcome: plans === 0 ? 'not checked' : scans.length === 0 && keyed !== undefined ? 'holds' : 'fails',
    saw:
      plans === 0
        ? 'no showplan came back (SET STATISTICS XML is not supported here)'
        : `${claimPlans.length} claim statement plans, ${ackPlans.length} ack statement plans (a keyed head acked); scans of the product's tables: ${scans.length ? scans.join('; ') : 'none'}`,
    assumes: 'no Table Scan / Index Scan of the transport table, its keys or its state tables in either batch',
  };
};

const P5: Probe = async (c) => {
  const queue = 'p5';
  await c.store.publish(msgs(queue, 1));
  const limits = { concurrency: 1 };
  const a = await c.store.claimLimited(queue, 1, 1000, randomUUID(), limits);
  await sleep(2200);
  await c.store.publish([{ ...msgs(queue, 1)[0]!, priority: 10 }]);
  const b = await c.store.claimLimited(queue, 1, 60_000, randomUUID(), limits);
  const first = a.messages[0];
  const renewed = first ? await c.store.renew(first, 60_000) : undefined;
  const live = Number(
    (await req(c.pool).input('queue', sql.NVarChar(200), queue).query<{ n: number }>(PROBE_SQL.liveLeases(t(c)))).recordset[0]!.n,
  );
  return {
    id: 'P5',
    finding: 'M2: a lapsed lease cannot be renewed past a concurrency limit',
    outcome: first && b.messages.length === 1 && renewed === false && live <= 1 ? 'holds' : 'fails',
    saw: `concurrency 1: job A claimed with a 1 s lease, 2.2 s later job B claimed: ${b.messages.length}; A's renewal answered ${String(renewed)}; live leases now ${live}`,
    assumes: "the renewal of a lapsed lease fails (false), so live leases stay ≤ the limit (1)",
  };
};

const P6: Probe = async (c) => {
  const queue = 'p6';
  await c.store.publish(msgs(queue, 1));
  const ol = await scalar<number | null>(c.pool, PROBE_SQL.optimizedLocking()).catch(() => null);
  const writer = c.pool.transaction();
  await writer.begin();
  try {
    await req(writer).input('queue', sql.NVarChar(200), queue).query(PROBE_SQL.insertReady(t(c)));
    const started = Date.now();
    const claim = req(c.pool);
    const cancel = setTimeout(() => claim.cancel(), 10_000); // an engine without READPAST would wait for the writer
    claim.input('n', sql.Int(), 10).input('queue', sql.NVarChar(200), queue).input('lock_timeout_ms', sql.BigInt(), 60_000).input('lock_id', sql.UniqueIdentifier(), randomUUID());
    const outcome = await claim.query(claimBatch(c.names).text).then(
      (r) => `took ${r.recordset?.length ?? 0} row(s)`,
      (err: Error) => `failed: ${err.message}`,
    );
    clearTimeout(cancel);
    const ms = Date.now() - started;
    const olText = ol === 1 ? 'optimized locking ON' : ol === 0 ? 'optimized locking OFF (the Azure SQL case, I1, is not checked here)' : 'optimized locking unknown to this server (the Azure SQL case, I1, is not checked here)';
    return {
      id: 'P6',
      finding: 'I1: a claim skips a row another transaction is still inserting',
      // the writer stays open until the claim answers: a claim that waited for it would wait until the 10 s cancel
      outcome: outcome === 'took 1 row(s)' ? 'holds' : 'fails',
      saw: `${olText}; one committed ready row and one uncommitted insert in another session, kept open until the claim answered: the claim ${outcome} in ${fmt(ms)} ms`,
      assumes: 'the claim takes the committed row and answers without waiting for the writer (READPAST), long before the 10 s cancel',
    };
  } finally {
    await writer.rollback().catch(() => undefined);
  }
};

const P7: Probe = async (c) => {
  if (!c.publishProcedure) {
    return {
      id: 'P7',
      finding: "I2: a head's ack that waits for a publisher of its key promotes that publisher's job",
      outcome: 'not checked',
      saw: 'the publish procedures are absent here (the version gate refused this engine): no transaction can hold a keyed publish open',
      assumes: "after the ack, a claim takes the job published while the ack waited",
    };
  }
  const queue = 'p7';
  await c.store.publish(msgs(queue, 1, { orderingKey: 'k' }));
  const [head] = await c.store.claim(queue, 1, 60_000);
  const publisher = c.pool.transaction();
  await publisher.begin();
  let ack: Promise<number> | undefined;
  try {
    await req(publisher).input('queue', sql.NVarChar(200), queue).query(PROBE_SQL.keyedPublish(c.publishProcedure));
    ack = c.store.ack([head!]);
    await sleep(500);
    await publisher.commit();
  } catch (err) {
    await publisher.rollback().catch(() => undefined);
    throw err;
  }
  const acked = await ack;
  const next = await c.store.claim(queue, 10, 30_000);
  return {
    id: 'P7',
    finding: "I2: a head's ack that waits for a publisher of its key promotes that publisher's job",
    outcome: acked === 1 && next.length === 1 && next[0]!.payloadJson === '"S"' ? 'holds' : 'fails',
    saw: `head acked (${acked}) while a transaction publishing S on its key was open for 0.5 s; the next claim took ${next.map((m) => m.payloadJson).join(', ') || 'nothing'}`,
    assumes: 'the next claim takes S (promoted by the ack, or by the claim repairing a vacant key)',
  };
};

const P8: Probe = async (c) => {
  const edition = Number(await scalar(c.pool, PROBE_SQL.engineEdition()));
  const editionName = ({ 1: 'Personal/Desktop', 2: 'Standard', 3: 'Enterprise/Developer', 4: 'Express', 5: 'Azure SQL Database', 6: 'Azure Synapse', 8: 'Azure SQL Managed Instance' } as Record<number, string>)[edition] ?? `engine edition ${edition}`;
  const rows = Math.round(ROWS / 2);
  const copy = `[${c.schema}].[probe_m3]`;
  await req(c.pool).input('n', sql.Int(), rows).query(PROBE_SQL.m3Copy(copy));
  const size = Number(await scalar(c.pool, PROBE_SQL.tableBytes(copy)));
  const tx = c.pool.transaction();
  await tx.begin();
  let log = 0;
  try {
    await req(tx).query(PROBE_SQL.addNotNullColumn(copy));
    log = Number(await scalar(tx, PROBE_SQL.logBytes()));
  } finally {
    await tx.rollback().catch(() => undefined);
  }
  const metadataOnly = log < size / 10;
  const online = [3, 5, 8].includes(edition);
  return {
    id: 'P8',
    finding: 'M3: adding a NOT NULL column with a default',
    outcome: online ? (metadataOnly ? 'holds' : 'fails') : 'info',
    saw: `${editionName}: on ${fmt(rows)} rows (${fmt(size)} bytes) the ALTER logged ${fmt(log)} bytes (${metadataOnly ? 'metadata only' : 'a rewrite'})`,
    assumes: online ? 'metadata only on this edition (log < 10% of the table)' : 'on editions without online schema change it rewrites the table (the review\'s M3): the figure says how much',
  };
};

const P9: Probe = async () => ({
  id: 'P9',
  finding: "M4: a deferrable index build that meets a held lock",
  outcome: 'not checked',
  saw: 'needs a 1,000,000-row table at an older schema version and a third session holding a lock for a minute: by hand (the review §5, P9)',
  assumes: 'a build that times out loses only itself and is retried; the app keeps working on the older indexes (docs/migrations.md)',
});

const PER_MODE: Probe[] = [P0, P1, P2, P4, P5, P6, P7];
const ONCE: Probe[] = [P3, P8, P9];

async function openCtx(mode: Mode, engine: Ctx['engine'], o: ProbeRunOptions): Promise<Ctx> {
  const schema = `probe_${randomBytes(4).toString('hex')}`;
  const names = transportNames(schema, TABLE, 'sqlserver');
  const pool = createSqlServerPool({ connectionString: mode.connectionString, poolMax: 4, poolMin: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 600_000 });
  o.prepare?.(pool);
  await pool.connect();
  let stores: OpenedStores | undefined;
  let store: TransportStore;
  let publishProcedure: string | undefined;
  try {
    stores = await openStores(
      {
        store: { kind: 'sqlserver', connectionString: mode.connectionString },
        schema,
        transportTable: TABLE,
        autoCreateSchema: true,
        pool: { max: 4, min: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 600_000 },
        channel: DEFAULT_CHANNEL_TABLES,
      },
      silentLogger,
    );
    await stores.migrator.apply();
    await stores.transport.ensureSchema();
    store = stores.transport;
    publishProcedure = sqlServerOutboxNames(schemaNames(names, channelNames(schema, DEFAULT_CHANNEL_TABLES, 'sqlserver'), 'sqlserver')).publish;
  } catch (err) {
    // an engine the version gate refuses (no UTF-8 collation): the store's own schema steps, without the procedures
    await stores?.close().catch(() => undefined);
    stores = undefined;
    log(o, `  (${mode.label}: schema versions not applied: ${(err as Error).message.split('\n')[0]}; using the store's own schema steps)`);
    const own = createSqlServerPool({ connectionString: mode.connectionString, poolMax: 4, poolMin: 0, connectTimeoutMs: 15_000, requestTimeoutMs: 600_000 });
    o.prepare?.(own);
    const s = new SqlServerTransportStore(own, { schema, table: TABLE, autoCreateSchema: true, logger: silentLogger, verifyCatalog: engine === 'sqlserver' });
    await s.ensureSchema();
    store = s;
  }
  const opened = stores;
  return {
    mode,
    engine,
    schema,
    names,
    pool,
    store,
    publishProcedure,
    close: async () => {
      await (opened ? opened.close() : (store as SqlServerTransportStore).close?.()).catch(() => undefined);
      await req(pool)
        .query(PROBE_SQL.dropSchema(schema))
        .catch(() => undefined);
      await pool.close().catch(() => undefined);
    },
  };
}

/** The databases to run in: two scratch ones (RCSI OFF / ON) when this login may create them, else the given one. */
async function modes(cs: string, admin: sql.ConnectionPool, notes: string[]): Promise<Mode[]> {
  const base = String(await scalar(admin, PROBE_SQL.databaseName()));
  const rcsi = await scalar<boolean | number>(admin, PROBE_SQL.rcsi()).catch(() => null);
  const stem = `${base}_probe_${randomBytes(3).toString('hex')}`;
  const made: Mode[] = [];
  try {
    for (const on of [false, true]) {
      const db = `${stem}_rcsi_${on ? 'on' : 'off'}`;
      await req(admin).query(PROBE_SQL.createDatabase(db));
      made.push({ label: `RCSI ${on ? 'ON' : 'OFF'} (scratch database ${db})`, connectionString: withDatabase(cs, db), created: db });
      await req(admin).query(PROBE_SQL.setRcsi(db, on));
    }
    return made;
  } catch (err) {
    for (const m of made) await dropDatabase(admin, m.created!);
    const label = `the connection's database ${base}, READ_COMMITTED_SNAPSHOT ${rcsi === null ? 'unknown' : rcsi ? 'ON' : 'OFF'}`;
    notes.push(`scratch databases could not be made (${(err as Error).message.split('\n')[0]}): the probes ran once, in ${label}; the other setting is not checked`);
    return [{ label, connectionString: cs }];
  }
}

async function dropDatabase(admin: sql.ConnectionPool, db: string): Promise<void> {
  await req(admin).query(PROBE_SQL.singleUser(db)).catch(() => undefined);
  await req(admin).query(PROBE_SQL.dropDatabase(db)).catch((err: Error) => console.log(`  (could not drop ${db}: ${err.message})`));
}

export function summarize(results: readonly ProbeResult[]): { text: string; exitCode: number } {
  const lines: string[] = [];
  for (const r of results) {
    lines.push(`${r.id} [${r.mode}] ${r.finding}: ${r.outcome.toUpperCase()}`, `    saw:     ${r.saw}`, `    assumes: ${r.assumes}`);
  }
  const count = (o: Outcome) => results.filter((r) => r.outcome === o).length;
  lines.push('', `${results.length} probe runs: ${count('holds')} hold, ${count('fails')} fail, ${count('not checked')} not checked, ${count('info')} for information`);
  return { text: lines.join('\n'), exitCode: count('fails') > 0 ? 1 : 0 };
}

export interface ProbeRunOptions {
  /** Called on every pool the probes open before it is used: a test harness installs its statement rewrite there. */
  prepare?: (pool: sql.ConnectionPool) => void;
  /** Progress lines (default: stdout). */
  log?: (line: string) => void;
}

function log(o: ProbeRunOptions, line: string): void {
  (o.log ?? console.log)(line);
}

export interface ProbeRun {
  server: string;
  engine: Ctx['engine'];
  results: ProbeResult[];
  notes: string[];
}

/** Every probe against `cs` (scratch databases when the login may make them), cleaned up afterwards. */
export async function runProbes(cs: string, o: ProbeRunOptions = {}): Promise<ProbeRun> {
  const admin = new sql.ConnectionPool(cs);
  o.prepare?.(admin);
  await admin.connect();
  const results: ProbeResult[] = [];
  const notes: string[] = [];
  let ms: Mode[] = [];
  let server = '';
  let engine: Ctx['engine'] = 'other';
  try {
    server = String(await scalar(admin, PROBE_SQL.version())).split('\n')[0]!;
    engine = /Babelfish/i.test(server) || !/Microsoft SQL (Server|Azure)/i.test(server) ? 'other' : 'sqlserver';
    log(o, `server: ${server}${engine === 'other' ? ' (not SQL Server: what it cannot run is reported as not checked)' : ''}`);
    ms = await modes(cs, admin, notes);
    for (const [i, mode] of ms.entries()) {
      log(o, `== ${mode.label}`);
      const probes = [...PER_MODE, ...(i === 0 ? ONCE : [])];
      let c: Ctx;
      try {
        c = await openCtx(mode, engine, o);
      } catch (err) {
        for (const p of probes) {
          results.push({ id: p.name, finding: 'the schema could not be created', mode: mode.label, outcome: engine === 'sqlserver' ? 'fails' : 'not checked', saw: (err as Error).message.split('\n')[0]!, assumes: 'the schema applies' });
        }
        continue;
      }
      try {
        for (const p of probes) {
          const started = Date.now();
          try {
            results.push({ ...(await p(c)), mode: mode.label });
          } catch (err) {
            results.push({
              id: p.name,
              finding: 'the probe could not run',
              mode: mode.label,
              // on SQL Server a statement the product sends must run; another engine may lack the construct
              outcome: engine === 'sqlserver' ? 'fails' : 'not checked',
              saw: `error: ${(err as Error).message.split('\n')[0]!}`,
              assumes: "the product's statements run on this server",
            });
          }
          const last = results[results.length - 1]!;
          log(o, `  ${last.id}: ${last.outcome} (${fmt(Date.now() - started)} ms)`);
        }
      } finally {
        await c.close();
      }
    }
  } finally {
    for (const m of ms) if (m.created) await dropDatabase(admin, m.created);
    await admin.close();
  }
  return { server, engine, results, notes };
}

async function main(): Promise<number> {
  const cs = process.env.MSSQL_CONNECTION_STRING;
  if (!cs) {
    console.error('probe:sqlserver: MSSQL_CONNECTION_STRING is not set (see docs/tests.md, "Against SQL Server")');
    return 2;
  }
  const run = await runProbes(cs);
  const { text, exitCode } = summarize(run.results);
  console.log(`\n${text}`);
  for (const n of run.notes) console.log(`note: ${n}`);
  return exitCode;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(`probe:sqlserver: ${(err as Error).stack ?? err}`);
      process.exit(1);
    },
  );
}
