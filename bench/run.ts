// npm run bench — throughput and latency of the transport on the configured store.
// Store: BENCH_STORE=postgres|pglite|sqlserver (default: postgres when PG_URL/DATABASE_URL is set, else pglite).
// Sizes: BENCH_JOBS (default 20000), BENCH_LARGE_ROWS (default 100000). Each run uses its own schema and drops it.
// Parts: BENCH_ONLY=publish,drain,wake,wake-across,responses,claim-flatness,ids,stats,history,ordering,cold-start,timer-drain (comma-separated; default all).
// history: the drain with job history on against off, alternating rounds (BENCH_HISTORY_ROUNDS, default 3); reports the ratio.
// ordering: the drain with BENCH_ORDERING_KEYS ordering keys (default 1000) against none, alternating rounds (BENCH_ORDERING_ROUNDS, default 3).
// claim-flatness (PostgreSQL server: bench/claim-flatness.ts): the matrix at BENCH_FLATNESS_ROWS per backlog (default 1000000).
// ids (PostgreSQL server only): BENCH_ID_ROWS (default 1000000) publishes per id mode, sequential vs random.
// stats (PostgreSQL server only): queueStats with 1M dead letters of other queues, without and with the dead-letter index.
// cold-start needs no store (bench/cold-start.ts); run alone it opens none.
// timer-drain runs the local host with the app's own runtime and store (bench/timer-drain.ts): BENCH_TIMER_JOBS (default 20000).
// idle-cost, idle-start, scale-out (bench/drain-triggers.ts; not in the default run, name them in BENCH_ONLY):
// local host processes in timer and queue mode (BENCH_IDLE_SECONDS, BENCH_IDLE_START_JOBS, BENCH_SCALE_JOBS).

import { randomBytes, randomUUID } from 'node:crypto';
import { silentLogger } from '../shared/log';
import { drainQueue, type DrainOptions } from '../shared/transport/drain-loop';
import type { OutgoingMessage, TransportStore } from '../shared/transport/types';
import { WakeSignal } from '../shared/transport/wake';
import { ResponseChannel } from '../shared/channel/response-channel';
import { loadConfig } from '../shared/settings';
import { Publisher } from '../shared/transport/publisher';
import { startNotifyListener } from '../shared/stores/postgres/notify-listener';
import { notifyPrefix } from '../shared/stores/postgres/statements';
import type { PostgresTransportStore } from '../shared/stores/postgres/store';
import { channelNotifyPrefix } from '../shared/stores/postgres/channel-statements';
import { channelNames } from '../shared/sql/identifiers';
import { DEFAULT_CHANNEL_TABLES } from '../shared/channel/types';
import { openBenchStores, type BenchStores } from './stores';
import { benchIds } from './ids';
import { benchColdStart } from './cold-start';
import { benchStats } from './stats';
import { benchTimerDrain } from './timer-drain';
import { benchHistory } from './history';
import { benchOrdering } from './ordering';
import { benchClaimFlatnessMatrix } from './claim-flatness';
import { benchIdleCost, benchIdleStart, benchScaleOut } from './drain-triggers';

const JOBS = Number(process.env.BENCH_JOBS ?? 20_000);
const LARGE = Number(process.env.BENCH_LARGE_ROWS ?? 100_000);
const POLICY = { maxDeliveryAttempts: 5, redeliveryDelayMs: 1000, redeliveryMaxDelayMs: 10_000 };

const msg = (queue: string, i: number): OutgoingMessage => ({ id: randomUUID(), queue, payloadJson: JSON.stringify({ i }), headers: {}, delayMs: 0 });

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : 0) : '-');
const rows: string[][] = [];
function record(what: string, value: string, note = '') {
  rows.push([what, value, note]);
  console.log(`  ${what.padEnd(52)} ${value.padStart(14)}  ${note}`);
}

/** The bench's drain: a no-op handler, generous budget, no idle grace; `extra` sets batch size, concurrency, … */
function drain(store: TransportStore, queue: string, extra: Partial<DrainOptions> = {}): ReturnType<typeof drainQueue> {
  return drainQueue({
    store,
    queue,
    handler: async () => undefined,
    policy: POLICY,
    deadLetterQueue: 'deadletter',
    lockTimeoutMs: 30_000,
    batchSize: 16,
    concurrency: 16,
    budgetMs: 600_000,
    idleGraceMs: 0,
    emptyPollDelayMs: 1,
    wake: new WakeSignal(),
    logger: silentLogger,
    ...extra,
  });
}

async function publishBatched(store: TransportStore, queue: string, n: number, batch = 100, concurrency = 4): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const start = next;
        next += batch;
        const size = Math.min(batch, n - start);
        await store.publish(Array.from({ length: size }, (_, k) => msg(queue, start + k)));
      }
    }),
  );
}

async function benchPublish(s: BenchStores) {
  const n = Math.min(JOBS, 10_000);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: s.concurrent ? 16 : 1 }, async () => {
      while (next++ < n) await s.store.publish([msg('pub_single', next)]);
    }),
  );
  const single = n / ((performance.now() - t0) / 1000);
  record('publish, one message per statement', `${fmt(single)} jobs/s`, `${n} jobs, ${s.concurrent ? 16 : 1} concurrent publishers`);
  const t1 = performance.now();
  await publishBatched(s.store, 'pub_batch', JOBS);
  record('publish, batches of 100', `${fmt(JOBS / ((performance.now() - t1) / 1000))} jobs/s`, `${JOBS} jobs, 4 concurrent publishers`);
}

async function benchDrain(s: BenchStores) {
  for (const batchSize of [1, 16, 64]) {
    const queue = `drain_${batchSize}`;
    await publishBatched(s.store, queue, JOBS);
    const t0 = performance.now();
    const r = await drain(s.store, queue, { batchSize, concurrency: Math.max(32, batchSize) });
    const secs = (performance.now() - t0) / 1000;
    record(`drain (claim → no-op → batched ack), batch ${batchSize}`, `${fmt(r.completed / secs)} jobs/s`, `${r.completed} jobs in ${fmt(secs)} s`);
  }
  if (!s.concurrent) return;
  const queue = 'drain_multi';
  await publishBatched(s.store, queue, JOBS);
  const drainers = await Promise.all([s.openPeer(), s.openPeer()]);
  const t0 = performance.now();
  const reports = await Promise.all(drainers.map((store) => drain(store, queue, { batchSize: 64, concurrency: 64 })));
  const done = reports.reduce((a, r) => a + r.completed, 0);
  const secs = (performance.now() - t0) / 1000;
  record('drain, 2 concurrent drainers (own pools), batch 64', `${fmt(done / secs)} jobs/s`, `${done} jobs; split ${reports.map((r) => r.completed).join('/')}`);
}

async function claimLatency(store: TransportStore, queue: string, samples = 300): Promise<{ p50: number; p95: number }> {
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    const [c] = await store.claim(queue, 1, 30_000);
    times.push(performance.now() - t0);
    if (c) await store.ack([c]);
  }
  times.sort((a, b) => a - b);
  return { p50: pct(times, 50), p95: pct(times, 95) };
}

/**
 * Publish → handler start latency: 200 single publishes on `publisher`, 5 ms apart, each started on a drain loop
 * of `consumer` that polls only every 250 ms, so what it measures is the wake (`notify` after each publish, or
 * whatever else calls `wake.notify`).
 */
interface WakeFigures {
  /** publish call → handler start */
  latencies: number[];
  /** the publish round trip alone (INSERT + commit) */
  publishes: number[];
  /** publish returned → handler start: the wake itself */
  afterCommit: number[];
}

async function wakeLatency(publisher: TransportStore, consumer: TransportStore, queue: string, wake: WakeSignal, notify: () => void = () => undefined): Promise<WakeFigures> {
  const started = new Map<string, number>();
  const committed = new Map<string, number>();
  const latencies: number[] = [];
  const afterCommit: number[] = [];
  const publishes: number[] = [];
  const stop = new AbortController();
  const running = drain(consumer, queue, {
    handler: async (job) => {
      const now = performance.now();
      const t = started.get(job.id);
      if (t !== undefined) latencies.push(now - t);
      const c = committed.get(job.id);
      // a handler can start before the publish call has returned (an in-process wake runs during the commit)
      afterCommit.push(c === undefined ? 0 : now - c);
    },
    idleGraceMs: 600_000,
    emptyPollDelayMs: 250,
    wake,
    stopping: stop.signal,
  });
  for (let i = 0; i < 200; i++) {
    const m = msg(queue, i);
    const t0 = performance.now();
    started.set(m.id, t0);
    await publisher.publish([m]);
    const t1 = performance.now();
    committed.set(m.id, t1);
    publishes.push(t1 - t0);
    notify();
    await new Promise((r) => setTimeout(r, 5));
  }
  await new Promise((r) => setTimeout(r, 500));
  stop.abort();
  await running;
  const sort = (xs: number[]) => xs.sort((a, b) => a - b);
  return { latencies: sort(latencies), publishes: sort(publishes), afterCommit: sort(afterCommit) };
}

function recordWake(label: string, f: WakeFigures) {
  record(label, `p50 ${fmt(pct(f.latencies, 50))} ms`, `p99 ${fmt(pct(f.latencies, 99))} ms, ${f.latencies.length} jobs`);
  record('  of which the publish round trip', `p50 ${fmt(pct(f.publishes, 50))} ms`, `p99 ${fmt(pct(f.publishes, 99))} ms`);
  record('  of which publish returned → handler start', `p50 ${fmt(pct(f.afterCommit, 50))} ms`, `p99 ${fmt(pct(f.afterCommit, 99))} ms`);
}

/** Publish on one pool, handler start on a drain loop of another pool, woken by NOTIFY (PostgreSQL only). */
async function benchWakeAcross(s: BenchStores) {
  if (s.store.kind !== 'postgres') return;
  const url = process.env.PG_URL ?? process.env.DATABASE_URL!;
  const consumer = await s.openPeer();
  const wake = new WakeSignal();
  const names = (s.store as PostgresTransportStore).names;
  const listener = startNotifyListener(
    url,
    { transport: { prefix: notifyPrefix(names), wake: (q) => wake.notify(q) }, channel: { prefix: '\u0000', wake: () => undefined } },
    silentLogger,
  );
  await listener.ready;
  const figures = await wakeLatency(s.store, consumer, 'wake_across', wake);
  await listener.close();
  recordWake('publish → handler start, other pool (NOTIFY wake)', figures);
}

async function benchClaimFlatness(s: BenchStores) {
  if (s.store.kind === 'postgres') return benchClaimFlatnessMatrix(record);
  // other stores: the claim's latency beside a large table (the matrix needs EXPLAIN (ANALYZE, BUFFERS))
  await publishBatched(s.store, 'flat', 1_000);
  const small = await claimLatency(s.store, 'flat');
  record('claim latency, 1k rows in the table', `p50 ${fmt(small.p50)} ms`, `p95 ${fmt(small.p95)} ms`);
  await publishBatched(s.store, 'flat', LARGE - 700, 500, 4);
  await publishBatched(s.store, 'deadletter', LARGE, 500, 4);
  const large = await claimLatency(s.store, 'flat');
  record(`claim latency, ${LARGE / 1000}k rows + ${LARGE / 1000}k dead letters`, `p50 ${fmt(large.p50)} ms`, `p95 ${fmt(large.p95)} ms (${fmt((large.p50 / small.p50 - 1) * 100)}% vs 1k)`);
}

async function benchWake(s: BenchStores) {
  const wake = new WakeSignal();
  const figures = await wakeLatency(s.store, s.store, 'wake', wake, () => wake.notify('wake'));
  recordWake('publish → handler start, same process (wake)', figures);
}

const CHANNEL_CONFIG = loadConfig({}).channel;

async function responseLatency(waiter: ResponseChannel, publisher: ResponseChannel, label: string, samples = 200) {
  const latencies: number[] = [];
  for (let i = 0; i < samples; i++) {
    const corr = `lat-${label}-${i}-${randomUUID()}`;
    const waiting = waiter.waitForResponse(corr, 10_000);
    while (!waiter.local.has(corr)) await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 2)); // the subscriber row is written right after the local registration
    const t0 = performance.now();
    await publisher.publishResponse({ correlationId: corr, payload: { i }, final: true }, { confirm: false });
    const got = await waiting;
    if (got) latencies.push(performance.now() - t0);
  }
  latencies.sort((a, b) => a - b);
  record(`POST response → waiting GET returns, ${label}`, `p50 ${fmt(pct(latencies, 50))} ms`, `p95 ${fmt(pct(latencies, 95))} ms, p99 ${fmt(pct(latencies, 99))} ms (${latencies.length}/${samples})`);
}

async function benchResponses(s: BenchStores) {
  const wake = new WakeSignal();
  const a = new ResponseChannel(s.channel, wake, CHANNEL_CONFIG, silentLogger);
  await s.channel.ensureSchema();
  await responseLatency(a, a, 'same process');
  if (!s.concurrent) return;
  const b = new ResponseChannel(await s.openChannelPeer(), wake, CHANNEL_CONFIG, silentLogger);
  if (s.store.kind === 'postgres') {
    const url = process.env.PG_URL ?? process.env.DATABASE_URL!;
    const listener = startNotifyListener(
      url,
      {
        transport: { prefix: '\u0000', wake: () => undefined },
        channel: { prefix: channelNotifyPrefix(channelNames((s.store as PostgresTransportStore).names.schema, DEFAULT_CHANNEL_TABLES, 'postgres')), wake: (c) => b.local.notify(c) },
      },
      silentLogger,
    );
    await listener.ready;
    await responseLatency(b, a, 'two instances (own pools), NOTIFY wake', 200);
    await listener.close();
  }
  const c = new ResponseChannel(await s.openChannelPeer(), wake, CHANNEL_CONFIG, silentLogger);
  await responseLatency(c, a, `two instances (own pools), polling every ${CHANNEL_CONFIG.activePollIntervalMs} ms`, 60);
}

const PARTS: Record<string, (s: BenchStores) => Promise<void>> = {
  publish: benchPublish,
  drain: benchDrain,
  wake: benchWake,
  'wake-across': benchWakeAcross,
  responses: benchResponses,
  'claim-flatness': benchClaimFlatness,
  ids: (s) => benchIds(s, record),
  stats: (s) => benchStats(s, record),
  history: (s) => benchHistory(s, JOBS, record, drain, (store, queue, n) => publishBatched(store, queue, n)),
  ordering: (s) => benchOrdering(s, JOBS, record, drain),
};
/** Parts that need no bench store (timer-drain opens the app's own; it sets the app's settings, so it runs last). */
const STORELESS: Record<string, () => Promise<void>> = {
  'cold-start': () => benchColdStart(record),
  'timer-drain': () => benchTimerDrain(record),
  'idle-cost': () => benchIdleCost(record),
  'idle-start': () => benchIdleStart(record),
  'scale-out': () => benchScaleOut(record),
};
/** Long parts that run host processes: only when BENCH_ONLY names them. */
const OPT_IN = ['idle-cost', 'idle-start', 'scale-out'];
const ONLY = (process.env.BENCH_ONLY ?? '').split(',').map((p) => p.trim()).filter(Boolean);
const unknownParts = ONLY.filter((p) => !(p in PARTS) && !(p in STORELESS));
if (unknownParts.length > 0) {
  console.error(`BENCH_ONLY: unknown part(s) ${unknownParts.join(', ')}; the parts are ${[...Object.keys(PARTS), ...Object.keys(STORELESS)].join(', ')}`);
  process.exit(2);
}

async function main() {
  const selected = (name: string) => (ONLY.length === 0 ? !OPT_IN.includes(name) : ONLY.includes(name));
  if (ONLY.length > 0 && ONLY.every((p) => p in STORELESS)) {
    console.log(`asyncresponse-functions bench — ${ONLY.join(', ')}, node ${process.version}`);
    for (const [name, part] of Object.entries(STORELESS)) if (selected(name)) await part();
    return;
  }
  const schema = `ar_bench_${randomBytes(4).toString('hex')}`;
  const s = await openBenchStores(schema);
  console.log(`asyncresponse-functions bench — store ${s.store.kind}, schema ${schema}, ${JOBS} jobs, node ${process.version}`);
  try {
    await s.store.ensureSchema();
    for (const [name, part] of Object.entries(PARTS)) if (selected(name)) await part(s);
    for (const [name, part] of Object.entries(STORELESS)) if (selected(name)) await part();
    const rss = process.memoryUsage().rss / 1024 / 1024;
    record('resident memory at the end', `${fmt(rss)} MB`);
  } finally {
    await s.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
