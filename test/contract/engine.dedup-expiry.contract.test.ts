// Dedup keys, debounce and expiry through the engine on PGlite, PostgreSQL and SQL Server (issue 16 §3): the engine
// API takes the same fields as the HTTP publish; a held key answers its job, a debounce replaces the waiting one, a
// topic publish refuses a key, and an expired job is dead-lettered with reason `expired` (or dropped) unrun.
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine, PublishRejectedError, silentLogger, type Engine, type Job } from '../../shared';
import { sleep } from '../support/messages';
import { engineTargets } from './engine-targets';

const TARGETS = engineTargets('dedup', { sqlServer: true });

for (const target of TARGETS) {
  describe.skipIf(target.skip !== undefined)(`engine dedup and expiry on ${target.name}`, { timeout: 60_000 }, () => {
    if (target.skip) console.warn(`skipped engine dedup/expiry contract on ${target.name}: ${target.skip}`);
    let engine: Engine | undefined;
    const ran: unknown[] = [];
    afterAll(async () => {
      await engine?.close();
      await target.cleanup();
    });
    const open = async () =>
      (engine ??= await createEngine({
        store: await target.store(),
        schema: target.schema,
        queues: {
          work: { handler: async (job: Job) => void ran.push(job.payload) },
          lossy: { handler: async (job: Job) => void ran.push(job.payload), policy: { deadLetter: false } },
          'news:a': { handler: async () => undefined },
        },
        topics: { news: ['a'] },
        emptyPollDelayMs: 100,
        logger: silentLogger,
      }));

    it('a held key answers its job as a duplicate; debounce answers debounced with the new due time', async () => {
      const e = await open();
      const first = await e.publish('work', { payload: { v: 1 }, dedupKey: 'order-9', dedupWindowSeconds: 60, delaySeconds: 60 });
      expect(first.duplicate).toBe(false);
      const again = await e.publish('work', { payload: { v: 2 }, dedupKey: 'order-9', dedupWindowSeconds: 60 });
      expect(again).toEqual({ id: first.id, queue: 'work', availableAt: first.availableAt, duplicate: true });
      const debounced = await e.publish('work', { payload: { v: 3 }, dedupKey: 'order-9', dedupWindowSeconds: 60, dedupMode: 'debounce', delaySeconds: 120 });
      expect(debounced).toMatchObject({ id: first.id, duplicate: true, debounced: true });
      expect(debounced.availableAt!.getTime()).toBeGreaterThan(first.availableAt!.getTime() + 50_000);
      expect(await e.stats('work')).toMatchObject({ ready: 0, delayed: 1 });
      expect(await e.cancel('work', first.id)).toBe('deleted');
    });

    it('the engine refuses bad dedup and expiry fields with field errors, and a key on a topic publish', async () => {
      const e = await open();
      const rejected = async (p: Promise<unknown>) => {
        const err = await p.then(() => undefined, (x: unknown) => x);
        expect(err).toBeInstanceOf(PublishRejectedError);
        return (err as PublishRejectedError).errors.map((f) => f.field);
      };
      expect(await rejected(e.publish('work', { payload: 1, dedupKey: 'k', dedupWindowSeconds: -1 }))).toEqual(['dedupWindowSeconds']);
      expect(await rejected(e.publish('work', { payload: 1, dedupKey: 'k', dedupWindowSeconds: 1, dedupMode: 'later' as never }))).toEqual(['dedupMode']);
      expect(await rejected(e.publish('work', { payload: 1, expiresAt: '2020-01-01T00:00:00Z' }))).toEqual(['expiresAt']);
      expect(await rejected(e.publishToTopic('news', { payload: 1, dedupKey: 'k', dedupWindowSeconds: 5 }))).toEqual(['dedupKey', 'dedupWindowSeconds']);
    });

    it('a job not started by its expiry is dead-lettered with reason expired, unrun; a live one runs', async () => {
      const e = await open();
      ran.length = 0;
      const expiring = await e.publish('work', { payload: { expiring: true }, ttlSeconds: 0.3 });
      const live = await e.publish('work', { payload: { live: true }, ttlSeconds: 600 });
      await sleep(500);
      const report = await e.drain('work', { budgetMs: 3000, idleGraceMs: 300 });
      expect(report).toMatchObject({ claimed: 2, completed: 1, deadLettered: 1 });
      expect(ran).toEqual([{ live: true }]);
      const [dead] = await e.store.listDeadLetters(e.deadLetterQueue, 'work', 10);
      expect(dead).toMatchObject({ id: expiring.id, reason: 'expired', sourceQueue: 'work' });
      expect(dead!.headers['AR-Expires-At']).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(live.duplicate).toBe(false);
    });

    it('on a queue that drops dead letters an expired job is dropped, unrun', async () => {
      const e = await open();
      ran.length = 0;
      await e.publish('lossy', { payload: { expiring: true }, ttlSeconds: 0.3 });
      await sleep(500);
      const report = await e.drain('lossy', { budgetMs: 3000, idleGraceMs: 300 });
      expect(report).toMatchObject({ claimed: 1, dropped: 1, completed: 0 });
      expect(ran).toEqual([]);
      expect(await e.stats('lossy')).toMatchObject({ ready: 0, delayed: 0, deadLettered: 0 });
    });
  });
}
