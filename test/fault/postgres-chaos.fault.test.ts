// Chaos on the real PostgreSQL server: while three drain loops on their own pools work through 2,000 jobs, their
// sessions are killed at random (pg_terminate_backend, what a failover or a proxy reset does to a pool). Every
// job must still complete, none may be dead-lettered, and nothing may stay leased. Jobs can run twice (an ack
// lost with its connection): that is at-least-once, and the test reports how often it happened.
import { randomUUID } from 'node:crypto';
import { Client, Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import { retryPolicy } from '../../shared/sql/retry';
import { pgPoolClient, type PgClient } from '../../shared/stores/postgres/client';
import { PostgresTransportStore } from '../../shared/stores/postgres/store';
import { drainQueue, type DrainReport } from '../../shared/transport/drain-loop';
import { WakeSignal } from '../../shared/transport/wake';
import { message } from '../support/messages';
import { newSchema, PG_SKIP_REASON } from '../contract/fixtures';

const JOBS = 2000;
const TABLE = 'asyncresponse_transport_messages';
const fast = { baseMs: 20, maxMs: 200 };

if (PG_SKIP_REASON) console.warn(`[fault:postgres-chaos] skipped: ${PG_SKIP_REASON}`);

describe.skipIf(PG_SKIP_REASON !== undefined)('drains under killed PostgreSQL sessions', () => {
  const url = process.env.PG_URL!;
  const schema = newSchema();
  const appName = `ar-chaos-${randomUUID().slice(0, 8)}`;
  const clients: PgClient[] = [];
  let admin: Client;

  const open = (max: number) => {
    const pool = new Pool({ connectionString: url, max, application_name: appName });
    pool.on('error', () => undefined); // idle clients killed by the chaos loop
    const client = pgPoolClient(pool);
    clients.push(client);
    return new PostgresTransportStore(client, { schema, table: TABLE, autoCreateSchema: true, logger: silentLogger });
  };

  beforeAll(async () => {
    admin = new Client({ connectionString: url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
    for (const c of clients) await c.close().catch(() => undefined);
  });

  it('every job completes, none is dead-lettered, nothing stays leased', async () => {
    const publisher = open(4);
    await publisher.ensureSchema();
    const ids: string[] = [];
    for (let i = 0; i < JOBS; i += 100) {
      const batch = Array.from({ length: 100 }, (_, k) => message('chaos', { i: i + k }));
      await publisher.publish(batch);
      ids.push(...batch.map((m) => m.id));
    }
    const runs = new Map<string, number>();
    const drainers = [open(4), open(4), open(4)];
    let killed = 0;
    let chaos = true;
    const chaosLoop = (async () => {
      while (chaos) {
        await new Promise((r) => setTimeout(r, 40));
        const r = await admin.query(
          'SELECT count(pg_terminate_backend(pid))::int AS n FROM (SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid() ORDER BY random() LIMIT 1) AS victim',
          [appName],
        );
        killed += r.rows[0]?.n ?? 0;
      }
    })();

    const drainOnce = (store: PostgresTransportStore): Promise<DrainReport> =>
      drainQueue({
        store,
        queue: 'chaos',
        handler: async (job) => {
          runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
          await new Promise((r) => setTimeout(r, 20));
        },
        policy: { maxDeliveryAttempts: 50, redeliveryDelayMs: 10, redeliveryMaxDelayMs: 50 },
        deadLetterQueue: 'chaos_dlq',
        lockTimeoutMs: 1500, // a lease whose ack died with its session lapses quickly
        batchSize: 16,
        concurrency: 8,
        budgetMs: 3000,
        idleGraceMs: 300,
        emptyPollDelayMs: 20,
        claimRetry: retryPolicy({ lock: fast, throttling: fast, failover: fast, connection: fast }),
        wake: new WakeSignal(),
        logger: silentLogger,
      });

    // Timers run drains again and again; here each drainer repeats until every job has run (or 60 s pass).
    const started = Date.now();
    while (ids.some((id) => !runs.has(id)) && Date.now() - started < 60_000) {
      await Promise.all(drainers.map((d) => drainOnce(d).catch(() => undefined)));
    }
    chaos = false;
    await chaosLoop;
    // Let leases of acks that died with their session lapse, then drain what they gave back, without chaos.
    await new Promise((r) => setTimeout(r, 1600));
    await Promise.all(drainers.map((d) => drainOnce(d)));

    const missing = ids.filter((id) => !runs.has(id));
    const twice = [...runs.values()].filter((n) => n > 1).length;
    console.info(`[fault:postgres-chaos] ${killed} sessions killed; ${JOBS} jobs ran, ${twice} of them more than once (at-least-once)`);
    expect(killed).toBeGreaterThan(5); // the chaos really happened
    expect(missing).toEqual([]);
    const left = await admin.query(`SELECT queue, count(*)::int AS n FROM "${schema}"."${TABLE}" GROUP BY queue`);
    expect(left.rows).toEqual([]); // nothing waiting, leased or dead-lettered
  }, 120_000);
});
