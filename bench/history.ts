// The drain with job history on against off, in the same run (issue 16 §2: history on stays ≥ 0.8× of off). Each
// round publishes BENCH_JOBS jobs to a fresh queue and drains it with the bench's drain (batch 64, concurrency 64):
// off = the plain batched ack (DELETE), on = the ack into history (DELETE … RETURNING into INSERT / DELETE … OUTPUT
// INTO, one statement per batch). Rounds alternate off/on so load drifts hit both alike; the history table keeps
// what the on rounds moved (as it would between prunes).

import type { BenchStores } from './stores';
import type { DrainOptions, DrainReport } from '../shared/transport/drain-loop';
import type { TransportStore } from '../shared/transport/types';

type Record = (what: string, value: string, note?: string) => void;
type Drain = (store: TransportStore, queue: string, extra?: Partial<DrainOptions>) => Promise<DrainReport>;
type Publish = (store: TransportStore, queue: string, n: number) => Promise<void>;

const ROUNDS = Number(process.env.BENCH_HISTORY_ROUNDS ?? 3);

export async function benchHistory(s: BenchStores, jobs: number, record: Record, drain: Drain, publish: Publish): Promise<void> {
  const rates: { off: number[]; on: number[] } = { off: [], on: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      const queue = `history_${mode}_${round}`;
      await publish(s.store, queue, jobs);
      const t0 = performance.now();
      const r = await drain(s.store, queue, { batchSize: 64, concurrency: 64, keepHistory: mode === 'on' });
      const secs = (performance.now() - t0) / 1000;
      if (r.completed !== jobs) throw new Error(`history bench: the ${mode} round ${round} completed ${r.completed} of ${jobs} jobs`);
      rates[mode].push(r.completed / secs);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const fmt = (n: number) => n.toFixed(0);
  const off = median(rates.off);
  const on = median(rates.on);
  record('drain, batch 64, history off (plain ack)', `${fmt(off)} jobs/s`, `median of ${ROUNDS} rounds of ${jobs}: ${rates.off.map(fmt).join(', ')}`);
  record('drain, batch 64, history on (ack into history)', `${fmt(on)} jobs/s`, `median of ${ROUNDS} rounds of ${jobs}: ${rates.on.map(fmt).join(', ')}`);
  record('  history on / off', `${(on / off).toFixed(2)}×`, 'target ≥ 0.80×');
}
