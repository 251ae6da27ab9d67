// BENCH_ONLY=ids: primary-key index size and insert rate after BENCH_ID_ROWS (default 1M) publishes with
// generated ids, ID_GENERATION=sequential (UUIDv7) vs random (UUIDv4), each into a fresh PostgreSQL schema
// through the store's own batched publish (500 per statement, BENCH_ID_IN_FLIGHT statements in flight, default 4). PostgreSQL server only: PGlite is
// one session and SQL Server is not here (its layout is argued in docs/generated-ids.md).

import { Pool } from 'pg';
import { silentLogger } from '../shared/log';
import { pgPoolClient } from '../shared/stores/postgres/client';
import { PLANNER_OPTIONS } from '../shared/stores/postgres/connect';
import { PostgresTransportStore } from '../shared/stores/postgres/store';
import { idGenerator, type IdGenerationMode } from '../shared/transport/ids';
import type { OutgoingMessage } from '../shared/transport/types';
import type { BenchStores } from './stores';

const ROWS = Number(process.env.BENCH_ID_ROWS ?? 1_000_000);
const BATCH = 500;
const IN_FLIGHT = Number(process.env.BENCH_ID_IN_FLIGHT ?? 4);
const TABLE = 'asyncresponse_transport_messages';

type Record = (what: string, value: string, note?: string) => void;

async function runMode(pgUrl: string, mode: IdGenerationMode, record: Record): Promise<void> {
  const pool = new Pool({ connectionString: pgUrl, max: IN_FLIGHT + 1, options: PLANNER_OPTIONS });
  const client = pgPoolClient(pool);
  const schema = `ar_bench_ids_${mode}_${process.pid}`;
  const store = new PostgresTransportStore(client, { schema, table: TABLE, autoCreateSchema: true, logger: silentLogger });
  const newId = idGenerator(mode, 'uuidv7');
  try {
    await store.ensureSchema();
    let next = 0;
    const started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < ROWS) {
          const size = Math.min(BATCH, ROWS - next);
          next += size;
          const batch: OutgoingMessage[] = Array.from({ length: size }, () => ({
            id: newId(),
            queue: 'ids',
            payloadJson: '{}',
            headers: {},
            delayMs: 60_000, // delayed: no NOTIFY wake, nothing drains them
            generatedId: true,
          }));
          await store.publish(batch);
        }
      }),
    );
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const size = await client.query<{ pk: string }>(
      `SELECT pg_relation_size(i.indexrelid)::text AS pk FROM pg_index i
       WHERE i.indrelid = $1::regclass AND i.indisprimary`,
      [`"${schema}"."${TABLE}"`],
    );
    const mb = Number(size.rows[0]!.pk) / 1024 / 1024;
    record(`ids ${mode}: insert rate (${ROWS} publishes, ${BATCH}/batch)`, `${Math.round(ROWS / seconds)} rows/s`, `${seconds.toFixed(1)} s`);
    record(`ids ${mode}: primary-key index size`, `${mb.toFixed(1)} MB`, `${((Number(size.rows[0]!.pk) / ROWS)).toFixed(1)} bytes/row`);
  } finally {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await client.close();
  }
}

export async function benchIds(s: BenchStores, record: Record): Promise<void> {
  const pgUrl = process.env.PG_URL ?? process.env.DATABASE_URL;
  if (s.store.kind !== 'postgres' || !pgUrl) {
    console.log('  ids: skipped (needs the PostgreSQL server: BENCH_STORE=postgres with PG_URL)');
    return;
  }
  // BENCH_ID_MODES=random,sequential swaps the order (the first run also warms the server's caches)
  const modes = (process.env.BENCH_ID_MODES ?? 'sequential,random').split(',').map((m) => m.trim());
  for (const mode of modes) {
    if (mode !== 'sequential' && mode !== 'random') throw new Error(`BENCH_ID_MODES: '${mode}' is not sequential or random`);
    await runMode(pgUrl, mode, record);
  }
}
