// Durable flows: runs per second through the shipped example-approval with an immediate approver (a code handler
// on `approvals`), start→end latency, and the cost per run and per step in statements counted at the wire (every
// query a connection sends, transactions' BEGIN/COMMIT included; the bench's own progress reads excluded) and in
// store calls. Run: npm run build && PG_URL=… node dist/bench/flows.js (BENCH_FLOWS, default 500; PGlite without
// PG_URL). Each run uses its own schema and drops it. BENCH_FLOWS_BASE=<another build's dist> drives that build
// (its createEngine, stores and example flow) with this same driver first, in the same invocation, on the same
// database, and prints the ratio of runs/s.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Pool } from 'pg';
import { appFlows } from '../flows';
import { createEngine, silentLogger } from '../shared';
import { openStores, type Stores } from '../shared/stores/open';
import { DEFAULT_CHANNEL } from '../shared/engine/options';
import { DEFAULT_POOL } from '../shared/engine/options';
import { countWire } from './wire-count';

const FLOWS = Number(process.env.BENCH_FLOWS ?? 500);
const url = process.env.PG_URL ?? process.env.DATABASE_URL;

/** Milliseconds spent in each store method (summed over concurrent calls). */
const times = new Map<string, number>();

/** Counts every call of every store method, by store and method. */
function counting<T extends object>(name: string, target: T, counts: Map<string, number>): T {
  return new Proxy(target, {
    get(t, prop, receiver) {
      const v = Reflect.get(t, prop, receiver) as unknown;
      if (typeof v !== 'function' || prop === 'close' || prop === 'constructor') return v;
      return (...args: unknown[]) => {
        const key = `${name}.${String(prop)}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
        const t0 = performance.now();
        const out = (v as (...a: unknown[]) => unknown).apply(t, args);
        if (out instanceof Promise) void out.finally(() => times.set(key, (times.get(key) ?? 0) + performance.now() - t0)).catch(() => undefined);
        return out;
      };
    },
  });
}

/** The bench's own progress read (not the flows' cost). */
const isBenchRead = (sql: string) => /GROUP BY status/.test(sql);

/** What the bench needs of a build: this one, or another build's dist (BENCH_FLOWS_BASE) driven by the same code. */
interface Build {
  label: string;
  createEngine: typeof createEngine;
  openStores: typeof openStores;
  appFlows: typeof appFlows;
  silentLogger: typeof silentLogger;
  DEFAULT_POOL: typeof DEFAULT_POOL;
  DEFAULT_CHANNEL: typeof DEFAULT_CHANNEL;
}

const thisBuild: Build = { label: 'this build', createEngine, openStores, appFlows, silentLogger, DEFAULT_POOL, DEFAULT_CHANNEL };

function loadBuild(dist: string): Build {
  const req = (m: string) => require(path.resolve(dist, m)) as Record<string, unknown>;
  const shared = req('shared');
  const options = req('shared/engine/options');
  return {
    label: dist,
    createEngine: shared.createEngine as Build['createEngine'],
    silentLogger: shared.silentLogger as Build['silentLogger'],
    openStores: req('shared/stores/open').openStores as Build['openStores'],
    appFlows: req('flows').appFlows as Build['appFlows'],
    DEFAULT_POOL: options.DEFAULT_POOL as Build['DEFAULT_POOL'],
    DEFAULT_CHANNEL: options.DEFAULT_CHANNEL as Build['DEFAULT_CHANNEL'],
  };
}

/** Starts at most this many runs at a time (a pipeline, not batches: a slow start does not hold the others). */
const STARTS_IN_FLIGHT = 64;

export async function benchFlows(build: Build = thisBuild): Promise<{ runsPerSecond: number }> {
  const { createEngine, openStores, appFlows, silentLogger, DEFAULT_POOL, DEFAULT_CHANNEL } = build;
  const wire = countWire(isBenchRead);
  const schema = url ? `bench_flows_${randomBytes(4).toString('hex')}` : 'public';
  const store = url ? ({ kind: 'postgres', url } as const) : ({ kind: 'pglite', dataDir: 'memory://' } as const);
  const opened = await openStores(
    { store, schema, transportTable: 'asyncresponse_transport_messages', autoCreateSchema: true, pool: { ...DEFAULT_POOL, max: Number(process.env.BENCH_POOL ?? 16) }, azureClientId: undefined, channel: DEFAULT_CHANNEL },
    silentLogger,
  );
  const counts = new Map<string, number>();
  times.clear();
  const stores: Stores = {
    transport: counting('transport', opened.transport, counts),
    channel: counting('channel', opened.channel, counts),
    flows: counting('flows', opened.flows, counts),
    close: () => opened.close(),
  };
  const engine = await createEngine({
    store: { stores, ...(url ? { notifyUrl: url } : {}) },
    schema,
    logger: silentLogger,
    defaults: { concurrency: Number(process.env.BENCH_CONC ?? 32), batchSize: 32 },
    queues: { approvals: { handler: async () => ({ approved: true }) } },
    flows: { registry: appFlows, ...(process.env.BENCH_FLOWS_CONC ? { policy: { concurrency: Number(process.env.BENCH_FLOWS_CONC) } } : {}) },
  });
  const stop = new AbortController();
  const running = engine.run([...engine.queues, 'flows', 'callbacks'], { signal: stop.signal });
  try {
    // warm-up (schema, pools, JIT)
    await engine.flows!.start('example-approval', { item: 'warm-up' }, { id: 'warm-up' });
    await engine.flows!.waitForEnd('warm-up', 30_000);
    counts.clear();
    times.clear();
    wire.reset();
    const t0 = Date.now();
    const ids = Array.from({ length: FLOWS }, (_, i) => `run-${i}`);
    let next = 0;
    await Promise.all(
      Array.from({ length: STARTS_IN_FLIGHT }, async () => {
        while (next < ids.length) {
          const id = ids[next++]!;
          await engine.flows!.start('example-approval', { item: id }, { id });
        }
      }),
    );
    // progress is read from the unwrapped store: the bench's reads are not the flows' cost
    for (;;) {
      const c = await opened.flows.countByStatus();
      if (c.Succeeded + c.Failed >= FLOWS + 1) break;
      if (Date.now() - t0 > 300_000) throw new Error(`not done after 300 s: ${JSON.stringify(c)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const seconds = (Date.now() - t0) / 1000;
    const statements = wire.total();
    const byStatement = new Map(wire.byStatement);
    wire.stop();
    const latencies: number[] = [];
    for (const id of ids) {
      const s = await opened.flows.load(id);
      if (s?.status !== 'Succeeded') throw new Error(`${id} ended ${s?.status}`);
      latencies.push(Date.parse(s.updatedAt) - Date.parse(s.createdAt));
    }
    latencies.sort((a, b) => a - b);
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    const steps = 3; // reserve, approve, cool-off (0 s)
    console.log(`[${build.label}] flows (${url ? 'postgres' : 'pglite'}): ${FLOWS} example-approval runs in ${seconds.toFixed(2)} s = ${(FLOWS / seconds).toFixed(0)} runs/s; start→end p50 ${latencies[Math.floor(latencies.length / 2)]} ms, p99 ${latencies[Math.floor(latencies.length * 0.99)]} ms`);
    console.log(`statements at the wire: ${(statements / FLOWS).toFixed(1)} per run = ${(statements / FLOWS / steps).toFixed(1)} per step (every query sent, BEGIN/COMMIT included; drain-loop claims included)`);
    for (const [k, v] of [...byStatement.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`  ${(v / FLOWS).toFixed(2).padStart(6)}  ${k}`);
    console.log(`store calls: ${(total / FLOWS).toFixed(1)} per run = ${(total / FLOWS / steps).toFixed(1)} per step`);
    for (const [k, v] of [...counts.entries()].sort((a, b) => b[1] - a[1])) console.log(`  ${k.padEnd(34)} ${(v / FLOWS).toFixed(2)} per run, ${((times.get(k) ?? 0) / v).toFixed(1)} ms each`);
    return { runsPerSecond: FLOWS / seconds };
  } finally {
    wire.stop();
    stop.abort();
    await running;
    await engine.close();
    if (url) {
      const pool = new Pool({ connectionString: url });
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    }
  }
}

async function main(): Promise<void> {
  const base = process.env.BENCH_FLOWS_BASE;
  if (!base) {
    await benchFlows();
    return;
  }
  // the previous build and this one in alternating rounds (BENCH_FLOWS_ROUNDS, default 3): the same driver, database
  // and settings, one invocation; a round's ratio compares two neighbouring runs, so load that comes and goes on a
  // shared machine moves both
  const rounds = Math.max(1, Number(process.env.BENCH_FLOWS_ROUNDS ?? 3));
  const ratios: number[] = [];
  for (let r = 1; r <= rounds; r++) {
    const before = await benchFlows(loadBuild(base));
    const now = await benchFlows();
    ratios.push(now.runsPerSecond / before.runsPerSecond);
    console.log(`round ${r}: runs/s ${now.runsPerSecond.toFixed(0)} this build vs ${before.runsPerSecond.toFixed(0)} base = ${ratios.at(-1)!.toFixed(1)}×`);
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  console.log(
    `runs/s ratio, this build over base (${base}), ${rounds} round(s) in one invocation: median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)}× ` +
      `(min ${sorted[0]!.toFixed(1)}×, max ${sorted.at(-1)!.toFixed(1)}×)`,
  );
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
