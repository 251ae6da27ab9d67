// Adapter for BullMQ (https://github.com/taskforcesh/bullmq), version pinned in package.json: the Redis-based queue,
// the anchor users pick when they do not want SQL. It runs on Redis (BENCH_REDIS_URL, redis://127.0.0.1:6379), not
// on the PostgreSQL database the harness creates for each measurement, so its numbers are reported as ratios
// against the SQL queues, never as one of them (README.md).
//
// Contract: see adapters/pg-boss.mjs header and README.md "Adapter contract".
//
// Isolation: each measurement uses its own queue, named after the measurement's throw-away database
// (bench_bullmq_<workload>_r<round>), under the key prefix `bench-peers`. setup() deletes every key of that queue
// (queue.obliterate({force: true}), then SCAN + UNLINK of `<prefix>:<queue>:*` for anything left) and checks that
// none is left before anything is timed; teardown() deletes them again. Nothing else in the Redis server is
// touched (no FLUSHDB: the server may be shared).
//
// Settings from BullMQ's docs:
//   - Worker `concurrency` = the harness's concurrency (guide/workers/concurrency: the local concurrency factor,
//     for handlers that await I/O as here);
//   - `removeOnComplete: { count: 0 }` on the Worker (guide/workers/auto-removal-of-jobs; "Going to production"
//     asks for auto-removal so completed jobs do not pile up in Redis); failed jobs are kept (removeOnFail unset);
//   - Queue.addBulk for the bulk API (guide/queues/adding-bulks: one round trip, atomic);
//   - connection `maxRetriesPerRequest: null` for the Worker (guide/connections, "Going to production").
//   BULLMQ_WORKERS (1) starts more Worker instances in this process, the concurrency split between them (the docs'
//   other way to scale, usually in separate processes).
import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';
import { packageVersion } from '../lib/versions.mjs';

const VERSION = packageVersion('bullmq');
const IOREDIS_VERSION = packageVersion('ioredis');
const PREFIX = 'bench-peers';
const JOB_NAME = 'bench';

const num = (name, dflt) => (process.env[name] ? Number(process.env[name]) : dflt);
const REDIS_URL = process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379';

function connectionOptions() {
  const u = new URL(REDIS_URL);
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.pathname.length > 1 ? { db: Number(u.pathname.slice(1)) } : {}),
    maxRetriesPerRequest: null,
  };
}

/** Delete every key of one queue; resolves to how many keys there were. */
async function deleteQueueKeys(redis, queueName) {
  let deleted = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${PREFIX}:${queueName}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) deleted += await redis.unlink(...keys);
  } while (cursor !== '0');
  return deleted;
}

export default function create() {
  const knobs = {
    workers: num('BULLMQ_WORKERS', 1), // Worker instances in this process; the concurrency is split between them
    removeOnComplete: { count: 0 }, // completed jobs are deleted at once
    ioredis: IOREDIS_VERSION,
    redis: REDIS_URL,
    prefix: PREFIX,
  };
  const errors = [];
  let queueName = null;
  let admin = null; // plain ioredis client for key clean-up and server facts
  let queue = null;
  let workers = [];

  const cleanup = async () => {
    if (queue) await queue.obliterate({ force: true }).catch((e) => errors.push(`error: obliterate: ${e.message}`));
    return deleteQueueKeys(admin, queueName);
  };

  return {
    name: 'bullmq',
    version: VERSION,
    knobs,
    errors,

    async setup(dbUrl) {
      // One queue per measurement, named after the harness's throw-away database.
      queueName = new URL(dbUrl).pathname.slice(1) || 'bench';
      admin = new IORedis(connectionOptions());
      const info = await admin.info('server');
      knobs.redisVersion = /redis_version:(\S+)/.exec(info)?.[1];
      const persistence = await admin.info('persistence');
      knobs.redisPersistence = `aof_enabled:${/aof_enabled:(\d)/.exec(persistence)?.[1]}, rdb save: ${JSON.stringify((await admin.config('GET', 'save'))[1] ?? '')}`;
      queue = new Queue(queueName, { connection: connectionOptions(), prefix: PREFIX });
      queue.on('error', (e) => errors.push(`error: queue: ${e?.message ?? e}`));
      await queue.waitUntilReady();
      await cleanup();
      const left = await deleteQueueKeys(admin, queueName);
      if (left !== 0) throw new Error(`bullmq: ${left} keys of queue ${queueName} left after clean-up`);
    },

    async enqueueOne(payload) {
      await queue.add(JOB_NAME, payload);
    },

    async enqueueBulk(payloads) {
      await queue.addBulk(payloads.map((data) => ({ name: JOB_NAME, data })));
    },

    async startWorker(handler, concurrency) {
      if (workers.length) throw new Error('worker already running');
      const n = Math.max(1, Math.min(knobs.workers, concurrency));
      for (let i = 0; i < n; i++) {
        const share = Math.floor(concurrency / n) + (i < concurrency % n ? 1 : 0);
        const worker = new Worker(queueName, (job) => handler(job.data), {
          connection: connectionOptions(),
          prefix: PREFIX,
          concurrency: share,
          removeOnComplete: knobs.removeOnComplete,
        });
        worker.on('error', (e) => errors.push(`error: worker: ${e?.message ?? e}`));
        worker.on('failed', (job, e) => errors.push(`error: job ${job?.id} failed: ${e?.message ?? e}`));
        workers.push(worker);
      }
      await Promise.all(workers.map((w) => w.waitUntilReady()));
    },

    async stop() {
      const ws = workers;
      workers = [];
      await Promise.all(ws.map((w) => w.close()));
    },

    async pendingCount() {
      // Completed jobs are removed (removeOnComplete), so every job still in one of these states is not done.
      return queue.getJobCountByTypes('waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'failed');
    },

    async teardown() {
      await this.stop();
      if (admin && queueName) await cleanup();
      await queue?.close();
      await admin?.quit();
      queue = null;
      admin = null;
    },
  };
}
