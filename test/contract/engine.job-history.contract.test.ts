// Job lookup and history through the engine on PGlite, PostgreSQL and SQL Server (issue 16 §2): a queue whose
// policy keeps history answers engine.job(id) as completed after its drain (attempts, times, correlation id) and
// finds it with searchJobs, a page at a time; a queue without history answers null once the job is done; a job
// that failed for good reads as dead-lettered with its reason; bad searches and ids are refused before any SQL.
import { afterAll, describe, expect, it } from 'vitest';
import { engineTargets } from './engine-targets';
import { createEngine, InvalidJobIdError, JobSearchError, PermanentJobError, silentLogger, UnknownQueueError, type Engine } from '../../shared';

const TARGETS = engineTargets('jobhist', { sqlServer: true });

const DAY = 86_400_000;

for (const target of TARGETS) {
  describe.skipIf(target.skip !== undefined)(`engine job history on ${target.name}`, { timeout: 60_000 }, () => {
    if (target.skip) console.warn(`skipped engine job-history contract on ${target.name}: ${target.skip}`);
    let engine: Engine | undefined;
    afterAll(async () => {
      await engine?.close();
      await target.cleanup();
    });
    const open = async () =>
      (engine ??= await createEngine({
        store: await target.store(),
        schema: target.schema,
        queues: {
          kept: { policy: { historyRetentionMs: 7 * DAY }, handler: async () => ({ ok: true }) },
          plain: { handler: async () => ({ ok: true }) },
          failing: {
            policy: { maxDeliveryAttempts: 1 },
            handler: () => {
              throw new PermanentJobError('card declined');
            },
          },
        },
        logger: silentLogger,
      }));

    it('a queue that keeps history: the drained job is found completed, with its attempts, times and correlation id', async () => {
      const e = await open();
      const published = await e.publish('kept', { payload: { n: 1 }, correlationId: 'order-1' });
      expect(await e.job(published.id)).toMatchObject({ state: 'ready', queue: 'kept', attempts: 0, correlationId: 'order-1' });
      const report = await e.drain('kept', { budgetMs: 2000, idleGraceMs: 0 });
      expect(report.completed).toBe(1);
      const job = await e.job(published.id.toUpperCase());
      expect(job).toMatchObject({ id: published.id, state: 'completed', queue: 'kept', attempts: 1, correlationId: 'order-1', lastError: null });
      expect(job!.completedAt!.getTime()).toBeGreaterThanOrEqual(job!.createdAt.getTime());
    });

    it('a queue without history deletes on ack: the job is gone once done', async () => {
      const e = await open();
      const published = await e.publish('plain', { payload: { n: 2 } });
      await e.drain('plain', { budgetMs: 2000, idleGraceMs: 0 });
      expect(await e.job(published.id)).toBeNull();
    });

    it('a job that failed for good is dead-lettered, with its reason as the last error and its own queue', async () => {
      const e = await open();
      const published = await e.publish('failing', { payload: { n: 3 } });
      await e.drain('failing', { budgetMs: 2000, idleGraceMs: 0 });
      const job = await e.job(published.id);
      expect(job).toMatchObject({ state: 'dead-lettered', queue: 'failing', attempts: 1 });
      expect(job!.lastError).toContain('card declined');
    });

    it('searchJobs: newest first, a page at a time by cursor, by queue or correlation id', async () => {
      const e = await open();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await e.publish('kept', { payload: { i }, correlationId: 'batch-7' })).id);
      await e.drain('kept', { budgetMs: 2000, idleGraceMs: 0 });
      const first = await e.searchJobs({ correlationId: 'batch-7', top: 2 });
      expect(first.items).toHaveLength(2);
      expect(first.nextCursor).toEqual(expect.any(String));
      const second = await e.searchJobs({ correlationId: 'batch-7', top: 2, cursor: first.nextCursor });
      expect([...first.items, ...second.items].map((j) => j.id).sort()).toEqual([...ids].sort());
      expect(second.nextCursor).toBeUndefined();
      expect([...first.items, ...second.items].every((j) => j.state === 'completed' && j.queue === 'kept')).toBe(true);
      const byQueue = await e.searchJobs({ queue: 'kept', state: 'completed' });
      expect(byQueue.items.length).toBeGreaterThanOrEqual(4);
      expect((await e.searchJobs({ queue: 'kept', since: new Date(Date.now() + DAY) })).items).toEqual([]);
    });

    it('refuses a search with neither queue nor correlation id, a bad cursor, a bad top; an unknown queue; a non-UUID id', async () => {
      const e = await open();
      await expect(e.searchJobs({})).rejects.toThrow(JobSearchError);
      await expect(e.searchJobs({ queue: 'kept', cursor: 'nope!' })).rejects.toMatchObject({ errors: [{ field: 'cursor' }] });
      await expect(e.searchJobs({ queue: 'kept', top: 0 })).rejects.toMatchObject({ errors: [{ field: 'top' }] });
      await expect(e.searchJobs({ queue: 'nope' })).rejects.toThrow(UnknownQueueError);
      await expect(e.job('not-a-uuid')).rejects.toThrow(InvalidJobIdError);
      expect(await e.job('00000000-0000-4000-8000-000000000000')).toBeNull();
    });
  });
}
