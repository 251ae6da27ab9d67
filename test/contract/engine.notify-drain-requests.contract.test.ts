// Queue mode on PostgreSQL: a NOTIFY for a queue this instance is not draining becomes a drain request (a job
// published from SQL, or by another instance, starts without waiting for the safety-net timer); while a drain of
// that queue runs here, no request is added (busy instances must not feed the storage queue's length).
import { Pool } from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../shared/index';
import { silentLogger } from '../../shared/log';
import { eventually, sleep } from '../support/messages';
import { announce, newSchema, PG_SKIP_REASON } from './fixtures';

const runs = announce({ name: 'postgres', skipReason: PG_SKIP_REASON });

describe.skipIf(!runs)('[postgres] NOTIFY → drain requests (queue mode)', () => {
  const url = process.env.PG_URL!;
  const schema = newSchema();
  const engines: Engine[] = [];
  afterAll(async () => {
    for (const e of engines) await e.close();
    const pool = new Pool({ connectionString: url, max: 1 });
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });

  it('announces a queue published elsewhere while idle here, and not while a drain of it runs here', async () => {
    const announced: string[] = [];
    const handled: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const listening = await createEngine({
      store: { kind: 'postgres', url, pool: { max: 4 } },
      schema,
      queues: {
        jobs: {
          handler: async (job) => {
            handled.push(job.id);
            if (handled.length === 2) await gate; // busy: the drain loop waits on this handler, not on a wake
          },
          policy: { concurrency: 1, prefetch: 0 }, // one slot, none held ahead: a running handler leaves no claim to wake
        },
      },
      drainRequests: { announce: (target, delayMs) => void (delayMs <= 0 && announced.push(target)) },
      logger: silentLogger,
    });
    engines.push(listening);
    await listening.store.ensureSchema();
    const other = await createEngine({ store: { kind: 'postgres', url, pool: { max: 2 } }, schema, queues: { jobs: { handler: async () => undefined } }, logger: silentLogger });
    engines.push(other);

    await other.publish('jobs', { payload: { n: 1 } });
    await eventually(() => (announced.includes('jobs') ? true : undefined), 'the NOTIFY of a publish elsewhere to become a drain request');

    announced.length = 0;
    const stop = new AbortController();
    const running = listening.run('jobs', { signal: stop.signal });
    await eventually(() => (handled.length === 1 ? true : undefined), 'the first job to be drained here');
    await other.publish('jobs', { payload: { n: 2 } });
    await eventually(() => (handled.length === 2 ? true : undefined), 'the running drain to take the second job');
    // the drain is busy in a handler (no loop is waiting for a wake) when the third job's NOTIFY arrives
    const third = await other.publish('jobs', { payload: { n: 3 } });
    await sleep(300); // the NOTIFY has arrived by now
    expect(announced).toEqual([]);
    release();
    await eventually(() => (handled.includes(third.id) ? true : undefined), 'the running drain to take the third job');
    stop.abort();
    await running;
    expect(announced).toEqual([]);
  });
});
