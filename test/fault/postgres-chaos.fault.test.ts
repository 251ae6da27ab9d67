// Chaos on the real PostgreSQL server: while three drain loops on their own pools work through 2,000 jobs, their
// busy sessions are killed in bursts (pg_terminate_backend, what a failover or a proxy reset does to a pool).
// The kills must reach the drains (failed claims or acks are counted), every job must still complete within the
// default delivery attempts (none dead-lettered), and nothing may stay leased. Jobs can run twice (an ack lost
// with its connection): that is at-least-once, and the test reports how often it happened. A claim whose answer was
// lost after it committed is handed back by the lock id the drain chose (before that, such rows waited out the lease
// with an attempt spent, and rows re-claimed at the head of the queue could lose five answers in a row: CI saw 5+
// and 7 dead letters).
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
import { announce, newSchema, PG_SKIP_REASON } from '../contract/fixtures';

const JOBS = 2000;
const TABLE = 'asyncresponse_transport_messages';
const fast = { baseMs: 20, maxMs: 200 };

// fails the run under REQUIRE_PG=1 when PG_URL is missing; otherwise prints why it skips
const runs = announce({ name: 'postgres', skipReason: PG_SKIP_REASON });

describe.skipIf(!runs)('drains under killed PostgreSQL sessions', () => {
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
    const handled = new Map<string, number>();
    let maxAttempt = 0;
    const drainers = [open(4), open(4), open(4)];
    let killed = 0;
    let chaos = true;
    // The chaos is paced by the work done, not by the clock: at most KILLS_PER_JOB kills per job run so far (and a
    // few to start). Paced by the clock, a machine starved by the rest of the suite ran twice as long under the same
    // kill rate: CI saw 2,085 kills (about one a job, against 600-800 on a quiet machine) and 5 jobs whose ack was
    // killed five times in a row, dead-lettered by the default limit.
    const KILLS_PER_JOB = 0.4;
    const chaosLoop = (async () => {
      while (chaos) {
        await new Promise((r) => setTimeout(r, 30));
        if (killed >= 20 + KILLS_PER_JOB * handled.size) continue;
        // busy sessions only (a statement in flight), two at a time: idle pool connections would mostly be
        // replaced without the drains noticing
        const r = await admin.query(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM (SELECT pid FROM pg_stat_activity
            WHERE application_name = $1 AND state <> 'idle' AND pid <> pg_backend_pid() ORDER BY random() LIMIT 2) AS victim`,
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
          handled.set(job.id, (handled.get(job.id) ?? 0) + 1);
          maxAttempt = Math.max(maxAttempt, job.attempt);
          await new Promise((r) => setTimeout(r, 20));
        },
        policy: { maxDeliveryAttempts: 5, redeliveryDelayMs: 10, redeliveryMaxDelayMs: 50 }, // the default limit
        deadLetterQueue: 'chaos_dlq',
        // A lease whose ack died with its session lapses quickly, but not so quickly that a starved machine holding an
        // ack past the lease re-claims the same rows until they run out of attempts (CI saw 7 dead letters once
        // with 1.5 s, not reproduced here; the test now names any dead letter's attempts and reason).
        lockTimeoutMs: 3000,
        batchSize: 16,
        concurrency: 8,
        budgetMs: 3000,
        idleGraceMs: 300,
        emptyPollDelayMs: 20,
        claimRetry: retryPolicy({ lock: fast, throttling: fast, failover: fast, connection: fast }),
        wake: new WakeSignal(),
        logger: silentLogger,
      });

    // Timers run drains again and again; here each drainer repeats until every job has run (or 60 s pass). A
    // drain that ends on an error is counted like one the timer would retry at its next run.
    const reports: DrainReport[] = [];
    const drainRound = async () => {
      for (const r of await Promise.allSettled(drainers.map((d) => drainOnce(d)))) if (r.status === 'fulfilled') reports.push(r.value);
    };
    const started = Date.now();
    while (ids.some((id) => !handled.has(id)) && Date.now() - started < 60_000) await drainRound();
    chaos = false;
    await chaosLoop;
    // Without chaos: drain until the table is empty (leases of acks that died with their session lapse after 3 s
    // and come back), or 20 s pass.
    const rowsLeft = async () => (await admin.query(`SELECT queue, count(*)::int AS n FROM "${schema}"."${TABLE}" GROUP BY queue ORDER BY queue`)).rows;
    const calm = Date.now();
    while ((await rowsLeft()).some((r: { queue: string }) => r.queue === 'chaos') && Date.now() - calm < 20_000) await drainRound();

    const missing = ids.filter((id) => !handled.has(id));
    const twice = [...handled.values()].filter((n) => n > 1).length;
    const claimFailures = reports.reduce((n, r) => n + r.claimFailures, 0);
    const ackFailures = reports.reduce((n, r) => n + r.ackFailures, 0);
    const released = reports.reduce((n, r) => n + r.released, 0);
    const releaseFailures = reports.reduce((n, r) => n + r.releaseFailures, 0);
    const recovered = reports.reduce((n, r) => n + r.lostClaimsRecovered, 0);
    const summary =
      `[fault:postgres-chaos] ${killed} busy sessions killed; drains saw ${claimFailures} failed claims and ${ackFailures} jobs whose ack failed; ${released} rows handed back unstarted (${releaseFailures} more whose hand-back failed); ${recovered} rows of claims whose answer was lost handed back by lock id; ` +
        `${JOBS} jobs ran, ${twice} more than once (at-least-once), highest attempt ${maxAttempt}`;
    console.info(summary);
    expect(claimFailures + ackFailures, 'faults that reached the drains').toBeGreaterThan(0);
    expect(missing).toEqual([]);
    const deadLetters = (await admin.query(`SELECT attempts, dead_letter_reason AS reason FROM "${schema}"."${TABLE}" WHERE queue = 'chaos_dlq' LIMIT 5`)).rows;
    expect(deadLetters, `dead letters (attempts, reason); ${summary}`).toEqual([]);
    expect(await rowsLeft()).toEqual([]); // nothing waiting or leased
  }, 120_000);
});
