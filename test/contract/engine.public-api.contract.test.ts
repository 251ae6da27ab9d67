// The public entry (shared/index.ts) against every available store: each queue runs its own handler and policy,
// a drain and a long-running run use them, stats shows them, and nothing is read from the environment.
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runOrdersWorker } from '../../examples/own-worker';
import { createEngine, EngineOptionsError, PublishRejectedError, silentLogger, type Engine, type Job } from '../../shared';
import { setEnv } from '../support/env';
import { eventually, sleep } from '../support/messages';
import { engineTargets } from './engine-targets';

const TARGETS = engineTargets('engine', { sqlServer: true });

const failing = (seen: Job[]) => async (job: Job) => {
  seen.push(job);
  throw new Error(`refused ${job.queue}`);
};

for (const target of TARGETS) {
  describe.skipIf(target.skip !== undefined)(`engine public API on ${target.name}`, () => {
    if (target.skip) console.warn(`skipped engine contract on ${target.name}: ${target.skip}`);
    const engines: Engine[] = [];
    afterAll(async () => {
      for (const e of engines) await e.close();
      await target.cleanup();
    });
    const seen: Record<string, Job[]> = { two: [], four: [], dropper: [], fine: [] };
    let engine: Engine;

    it('builds from explicit options alone, whatever the environment says', async () => {
      const restore = setEnv({ DATABASE_URL: 'postgres://127.0.0.1:1/nowhere', QUEUES: 'other', MAX_DELIVERY_ATTEMPTS: '1', BATCH_SIZE: 'x' });
      try {
        engine = await createEngine({
          store: await target.store(),
          schema: target.schema,
          queues: {
            two: { handler: failing(seen.two!), policy: { maxDeliveryAttempts: 2, redeliveryDelayMs: 0 } },
            four: { handler: failing(seen.four!), policy: { maxDeliveryAttempts: 4, redeliveryDelayMs: 0 } },
            dropper: { handler: failing(seen.dropper!), policy: { maxDeliveryAttempts: 1, deadLetter: false } },
            fine: { handler: async (job) => void seen.fine!.push(job), policy: { concurrency: 2, batchSize: 2 } },
          },
          logger: silentLogger,
        });
        engines.push(engine);
      } finally {
        restore();
      }
      expect(engine.queues).toEqual(['two', 'four', 'dropper', 'fine']);
      expect(engine.route('two')!.policy).toMatchObject({ maxDeliveryAttempts: 2, batchSize: 16, concurrency: 16, deadLetter: true });
    });

    it('dead-letters or drops each queue by its own policy', async () => {
      const ids = {
        two: (await engine.publish('two', { payload: { q: 2 } })).id,
        four: (await engine.publish('four', { payload: { q: 4 } })).id,
        dropper: (await engine.publish('dropper', { payload: { q: 0 } })).id,
      };
      const reports = await Promise.all(['two', 'four', 'dropper'].map((q) => engine.drain(q, { budgetMs: 5000, idleGraceMs: 300 })));
      expect(reports.map((r) => [r.queue, r.deadLettered, r.dropped])).toEqual([
        ['two', 1, 0],
        ['four', 1, 0],
        ['dropper', 0, 1],
      ]);
      expect(seen.two!.map((j) => [j.id, j.attempt])).toEqual([
        [ids.two, 1],
        [ids.two, 2],
      ]);
      expect(seen.four!.map((j) => j.attempt)).toEqual([1, 2, 3, 4]);
      expect(seen.dropper!.map((j) => j.attempt)).toEqual([1]);
      const dead = await engine.store.listDeadLetters(engine.deadLetterQueue, 'dropper', 10);
      expect(dead).toEqual([]);
      expect(await engine.store.hasMessage('dropper', ids.dropper)).toBe(false);
      expect(await engine.stats('dropper')).toMatchObject({ ready: 0, delayed: 0, leased: 0, deadLettered: 0 });
      expect(await engine.stats('four')).toMatchObject({ deadLettered: 1, policy: { maxDeliveryAttempts: 4, deadLetter: true } });
    });

    it('stats shows the route without the URL path, query or credentials', async () => {
      const other = await createEngine({
        store: await target.store(),
        schema: target.schema,
        queues: { out: { handler: { kind: 'forward', url: 'https://user:secret@example.test:8443/hook?code=abc', timeoutMs: 5000 }, policy: { deadLetter: false } } },
        logger: silentLogger,
        wake: { notify: false },
      });
      engines.push(other);
      const stats = await other.stats('out');
      expect(stats).toMatchObject({
        queue: 'out',
        route: { handler: 'forward', forwardHost: 'example.test:8443', forwardTimeoutSeconds: 5 },
        policy: { maxDeliveryAttempts: 5, redeliveryDelaySeconds: 5, redeliveryMaxDelaySeconds: 300, lockTimeoutSeconds: 30, batchSize: 16, concurrency: 16, deadLetter: false },
      });
      expect(JSON.stringify(stats)).not.toMatch(/secret|code=abc|hook/);
      expect((await other.stats('response')).route).toEqual({ handler: 'response-ingress' });
    });

    it('run() keeps claiming without a budget until its signal aborts, then leaves nothing leased', async () => {
      const stop = new AbortController();
      const running = engine.run('fine', { signal: stop.signal });
      await sleep(300);
      const first = await engine.publish('fine', { payload: { n: 1 } });
      await eventually(() => seen.fine!.find((j) => j.id === first.id), 'the first job to run');
      await sleep(500); // still running after an idle stretch: no idle end, no budget
      const later = await engine.publishBatch('fine', [{ payload: { n: 2 } }, { payload: { n: 3 } }]);
      await eventually(() => (later.every((p) => seen.fine!.some((j) => j.id === p.id)) ? true : undefined), 'the later jobs to run');
      stop.abort();
      const [report] = await running;
      expect(report).toMatchObject({ queue: 'fine', completed: 3, stoppedBy: 'shutdown' });
      expect(await engine.stats('fine')).toMatchObject({ ready: 0, leased: 0 });
    });

    it('publishBatch validates every message before writing any, naming the position in the whole batch', async () => {
      const batch = Array.from({ length: 150 }, (_, n) => ({ payload: { n } }));
      (batch[120] as { id?: string }).id = 'not-a-uuid';
      const err = await engine.publishBatch('fine', batch).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PublishRejectedError);
      expect((err as PublishRejectedError).errors.map((e) => e.field)).toEqual(['[120].id']);
      expect((await engine.stats('fine')).ready).toBe(0);
      await expect(engine.publish('nowhere', { payload: 1 })).rejects.toThrow(/no route/);
    });

    it('publishBatch inserts up to 1,000 rows per statement, results in the order given', async () => {
      const batch = Array.from({ length: 2_500 }, (_, n) => ({ payload: { n } }));
      const store = engine.store as { publish: (rows: readonly unknown[]) => Promise<unknown> };
      const real = store.publish;
      const sizes: number[] = [];
      store.publish = async (rows) => {
        sizes.push(rows.length);
        return real.call(store, rows);
      };
      try {
        const results = await engine.publishBatch('fine', batch);
        expect(sizes).toEqual([1000, 1000, 500]);
        expect(results).toHaveLength(2_500);
        expect(results.every((r) => !r.duplicate && r.queue === 'fine')).toBe(true);
        expect(new Set(results.map((r) => r.id)).size).toBe(2_500);
        expect((await engine.stats('fine')).ready).toBe(2_500);
      } finally {
        store.publish = real;
      }
    });

    it('refuses bad options with every problem listed', async () => {
      const err = await createEngine({
        store: await target.store(),
        queues: { response: { handler: { kind: 'echo' } }, ok: { handler: { kind: 'forward', url: 'ftp://x' }, policy: { batchSize: 0 } } },
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EngineOptionsError);
      const text = (err as EngineOptionsError).problems.join('\n');
      for (const bit of ["'response' is built in", 'not an http(s) URL', 'policy.batchSize']) expect(text).toContain(bit);
    });

    it('runs the example program of docs/engine.md (examples/own-worker.ts) until stopped', async () => {
      const lines: string[] = [];
      const spy = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(' ')));
      try {
        const stop = new AbortController();
        const done = runOrdersWorker(await target.store(), stop.signal, target.schema);
        await eventually(() => (lines.filter((l) => /^order A-[12] .*total (7|12)$/.test(l)).length === 2 ? true : undefined), 'both orders to be handled', 20_000);
        stop.abort();
        const [report] = await done;
        expect(report).toMatchObject({ queue: 'orders', completed: 2, deadLettered: 0, stoppedBy: 'shutdown' });
      } finally {
        spy.mockRestore();
      }
    }, 30_000);
  });
}
