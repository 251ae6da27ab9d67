// BENCH_ONLY=stats (PostgreSQL server only): p50/p95 of queueStats for a queue while the table is empty, then with
// BENCH_STATS_DEAD_LETTERS (default 1M) dead letters of other queues on the dead-letter queue (inserted with
// generate_series, then ANALYZE), without the dead-letter index (the schema before migration 3: the statement text
// is unchanged, only the index is new) and with it. Also the publish rate with and without the index, since every
// insert now computes the indexed expression. Sessions plan as the app's pools do (PLANNER_OPTIONS).

import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { silentLogger } from '../shared/log';
import { pgPoolClient, type PgClient } from '../shared/stores/postgres/client';
import { PLANNER_OPTIONS } from '../shared/stores/postgres/connect';
import { postgresMigrations } from '../shared/stores/postgres/migrations';
import { PostgresTransportStore } from '../shared/stores/postgres/store';
import { schemaNames } from '../shared/stores/schema-names';
import { channelNames, transportNames } from '../shared/sql/identifiers';
import { DEFAULT_CHANNEL_TABLES } from '../shared/channel/types';
import { DEAD_LETTER_REASON_HEADER, DEAD_LETTER_SOURCE_HEADER } from '../shared/transport/types';
import type { BenchStores } from './stores';

const DEAD_LETTERS = Number(process.env.BENCH_STATS_DEAD_LETTERS ?? 1_000_000);
const SAMPLES = Number(process.env.BENCH_STATS_SAMPLES ?? 200);
const TABLE = 'asyncresponse_transport_messages';
const DLQ = 'deadletter';

type Record = (what: string, value: string, note?: string) => void;
interface Latency { p50: number; p95: number }

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function statsLatency(store: PostgresTransportStore, queue: string): Promise<Latency> {
  for (let i = 0; i < 10; i++) await store.queueStats(queue, DLQ); // warm the plan cache and the buffers
  const samples: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now();
    await store.queueStats(queue, DLQ);
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p95: percentile(samples, 95) };
}

async function publishRate(store: PostgresTransportStore, queue: string, n = 20_000): Promise<number> {
  const t0 = performance.now();
  for (let done = 0; done < n; done += 500) {
    await store.publish(
      Array.from({ length: 500 }, (_, k) => ({ id: randomUUID(), queue, payloadJson: '{}', headers: { 'x-n': String(done + k) }, delayMs: 60_000 })),
    );
  }
  return n / ((performance.now() - t0) / 1000);
}

const ms = (l: Latency) => `p50 ${l.p50.toFixed(2)} ms`;

export async function benchStats(s: BenchStores, record: Record): Promise<void> {
  const url = process.env.PG_URL ?? process.env.DATABASE_URL;
  if (s.store.kind !== 'postgres' || !url) {
    console.log('  stats: skipped (PostgreSQL server only: set PG_URL and BENCH_STORE=postgres)');
    return;
  }
  const client: PgClient = pgPoolClient(new Pool({ connectionString: url, max: 2, options: PLANNER_OPTIONS }));
  const schema = `ar_bench_stats_${process.pid}`;
  const store = new PostgresTransportStore(client, { schema, table: TABLE, autoCreateSchema: true, logger: silentLogger });
  const names = schemaNames(transportNames(schema, TABLE, 'postgres'), channelNames(schema, DEFAULT_CHANNEL_TABLES, 'postgres'), 'postgres');
  const index = postgresMigrations(names).flatMap((m) => m.statements).find((st) => st.name === 'create transport dead-letter index')!;
  const t = `"${schema}"."${TABLE}"`;
  try {
    await store.ensureSchema(); // the store's own DDL: table and the two v1 indexes, no dead-letter index
    const empty = await statsLatency(store, 'work');
    record('queueStats, empty table', ms(empty), `p95 ${empty.p95.toFixed(2)} ms`);
    const plainRate = await publishRate(store, 'rate-before');

    const t0 = performance.now();
    await client.query(
      `INSERT INTO ${t} (id, queue, payload_json, headers_json, dead_letter_reason, attempts)
       SELECT gen_random_uuid(), $1, '{"n":' || g || '}',
              json_build_object($2::text, 'other-' || (g % 100), $3::text, 'handler failed')::text, 'handler failed', 5
       FROM generate_series(1, $4::int) AS g`,
      [DLQ, DEAD_LETTER_SOURCE_HEADER, DEAD_LETTER_REASON_HEADER, DEAD_LETTERS],
    );
    await client.query(`ANALYZE ${t}`);
    console.log(`  (inserted ${DEAD_LETTERS} dead letters of 100 other queues in ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    const label = `${DEAD_LETTERS / 1000}k dead letters of other queues`;

    const before = await statsLatency(store, 'work');
    record(`queueStats, ${label}, no index`, ms(before), `p95 ${before.p95.toFixed(2)} ms, ${(before.p50 / empty.p50).toFixed(1)}× empty`);

    const b0 = performance.now();
    await client.query(index.text);
    await client.query(`ANALYZE ${t}`);
    console.log(`  (built the dead-letter index in ${((performance.now() - b0) / 1000).toFixed(1)} s)`);
    const after = await statsLatency(store, 'work');
    record(`queueStats, ${label}, dead-letter index`, ms(after), `p95 ${after.p95.toFixed(2)} ms, ${(after.p50 / empty.p50).toFixed(1)}× empty`);
    const busy = await statsLatency(store, 'other-7');
    record(`queueStats of a queue with ${DEAD_LETTERS / 100 / 1000}k dead letters, index`, ms(busy), `p95 ${busy.p95.toFixed(2)} ms`);

    const indexedRate = await publishRate(store, 'rate-after');
    record('publish rate without / with the dead-letter index', `${Math.round(plainRate)} / ${Math.round(indexedRate)} rows/s`, '500 per batch, one in flight');
  } finally {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await client.close();
  }
}
