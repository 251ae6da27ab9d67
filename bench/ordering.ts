// The drain with ordering keys against the same drain without, in the same run (issue 17 §1: keyed ≥ 0.7× of
// unkeyed). Each round publishes BENCH_JOBS jobs to a fresh queue, keyed round-robin over BENCH_ORDERING_KEYS keys
// (default 1,000) or unkeyed, and drains it with the bench's drain (batch 64, concurrency 64). A keyed claim passes
// over the rows whose key's head is still running (each one index probe); keys run one job at a time, so at most
// min(keys, concurrency) jobs are in flight. Rounds alternate so load drifts hit both alike.

import { randomUUID } from 'node:crypto';
import type { BenchStores } from './stores';
import type { DrainOptions, DrainReport } from '../shared/transport/drain-loop';
import type { OutgoingMessage, TransportStore } from '../shared/transport/types';

type Record = (what: string, value: string, note?: string) => void;
type Drain = (store: TransportStore, queue: string, extra?: Partial<DrainOptions>) => Promise<DrainReport>;

const ROUNDS = Number(process.env.BENCH_ORDERING_ROUNDS ?? 3);
const KEYS = Number(process.env.BENCH_ORDERING_KEYS ?? 1000);

/** Batches of 100 from one publisher, so every key's jobs are stamped in publish order. */
async function publish(store: TransportStore, queue: string, n: number, keyed: boolean): Promise<void> {
  for (let start = 0; start < n; start += 100) {
    const rows: OutgoingMessage[] = [];
    for (let i = start; i < Math.min(n, start + 100); i++) {
      rows.push({ id: randomUUID(), queue, payloadJson: JSON.stringify({ i }), headers: {}, delayMs: 0, ...(keyed ? { orderingKey: `key-${i % KEYS}` } : {}) });
    }
    await store.publish(rows);
  }
}

export async function benchOrdering(s: BenchStores, jobs: number, record: Record, drain: Drain): Promise<void> {
  const rates: { plain: number[]; keyed: number[] } = { plain: [], keyed: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0 ? (['plain', 'keyed'] as const) : (['keyed', 'plain'] as const)) {
      const queue = `ordering_${mode}_${round}`;
      await publish(s.store, queue, jobs, mode === 'keyed');
      const t0 = performance.now();
      const r = await drain(s.store, queue, { batchSize: 64, concurrency: 64 });
      const secs = (performance.now() - t0) / 1000;
      if (r.completed !== jobs) throw new Error(`ordering bench: the ${mode} round ${round} completed ${r.completed} of ${jobs} jobs`);
      rates[mode].push(r.completed / secs);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const fmt = (n: number) => n.toFixed(0);
  const plain = median(rates.plain);
  const keyed = median(rates.keyed);
  record('drain, batch 64, no ordering keys', `${fmt(plain)} jobs/s`, `median of ${ROUNDS} rounds of ${jobs}: ${rates.plain.map(fmt).join(', ')}`);
  record(`drain, batch 64, ${KEYS} ordering keys`, `${fmt(keyed)} jobs/s`, `median of ${ROUNDS} rounds of ${jobs}: ${rates.keyed.map(fmt).join(', ')}`);
  record('  keyed / unkeyed', `${(keyed / plain).toFixed(2)}×`, 'target ≥ 0.70×');
}
