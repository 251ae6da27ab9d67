// Job and queue control through the engine on PGlite, PostgreSQL and SQL Server (issue 16 §4): a running job whose
// handler waits on its signal is aborted within about one lease renewal of the cancel and ends cancelled (nothing
// retries it); a paused queue's run claims nothing while publishes land, and drains once resumed; a rescheduled
// job waits for its new time.
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine, InvalidJobIdError, JobCancelledError, silentLogger, type Engine, type Job } from '../../shared';
import { eventually, sleep } from '../support/messages';
import { engineTargets } from './engine-targets';
import { skipOnGap } from './engine-gaps';

const TARGETS = engineTargets('jobctl', { sqlServer: true });

const LOCK_MS = 3000; // a renewal every second

for (const target of TARGETS) {
  describe.skipIf(target.skip !== undefined)(`engine job control on ${target.name}`, { timeout: 60_000 }, () => {
    if (target.skip) console.warn(`skipped engine job-control contract on ${target.name}: ${target.skip}`);
    let engine: Engine | undefined;
    const runs: Array<{ id: string; attempt: number; abortedAfterMs?: number; reason?: unknown }> = [];
    const done: string[] = [];
    let cancelAt = 0;
    afterAll(async () => {
      await engine?.close();
      await target.cleanup();
    });

    const open = async () =>
      (engine ??= await createEngine({
        store: await target.store(),
        schema: target.schema,
        queues: {
          slow: {
            policy: { lockTimeoutMs: LOCK_MS, maxDeliveryAttempts: 5, redeliveryDelayMs: 0 },
            handler: (job: Job, ctx) =>
              new Promise((_, reject) => {
                const run: (typeof runs)[number] = { id: job.id, attempt: job.attempt };
                runs.push(run);
                ctx.signal.addEventListener('abort', () => {
                  run.abortedAfterMs = Date.now() - cancelAt;
                  run.reason = ctx.signal.reason;
                  reject(ctx.signal.reason);
                });
              }),
          },
          quick: { handler: async (job: Job) => void done.push(job.id), policy: { lockTimeoutMs: LOCK_MS } },
        },
        emptyPollDelayMs: 200,
        logger: silentLogger,
      }));

    it('cancel with running aborts the handler within about one renewal; the job ends cancelled and is not retried', async () => {
      const e = await open();
      const stop = new AbortController();
      const running = e.run('slow', { signal: stop.signal });
      try {
        const { id } = await e.publish('slow', { payload: { export: 1 } });
        await eventually(() => runs.some((r) => r.id === id), 'the handler to start');
        expect(await e.cancel('slow', id)).toBe('running'); // without running: left alone
        cancelAt = Date.now();
        expect(await e.cancel('slow', id, { running: true })).toBe('cancelling');
        const run = await eventually(() => runs.find((r) => r.id === id && r.abortedAfterMs !== undefined), 'the handler to be aborted', 10_000);
        console.log(`[${target.name}] handler aborted ${run.abortedAfterMs} ms after the cancel (renewal every ${LOCK_MS / 3} ms)`);
        expect(run.reason).toBeInstanceOf(JobCancelledError);
        expect(run.abortedAfterMs).toBeLessThanOrEqual(LOCK_MS / 3 + 1000);
        await eventually(async () => {
          const s = await e.stats('slow');
          return s.leased === 0 && s.ready === 0 && s.delayed === 0;
        }, 'the cancelled row to be gone');
        await sleep(LOCK_MS + 500); // a lease's worth: a retry or a lapsed re-claim would show up as a second run
        expect(runs.filter((r) => r.id === id)).toHaveLength(1);
        expect((await e.stats('slow')).deadLettered).toBe(0);
        expect(await e.cancel('slow', id, { running: true })).toBe('absent');
      } finally {
        stop.abort();
        await running;
      }
    });

    it('a paused queue claims nothing while publishes land; resume drains it; stats show the pause', async (ctx) => {
      await skipOnGap(target.name, ctx, 'merge'); // the pause is upserted into the queue-state row with MERGE
      const e = await open();
      const paused = await e.pause('quick');
      expect(paused).toMatchObject({ queue: 'quick', paused: true });
      const stop = new AbortController();
      const running = e.run('quick', { signal: stop.signal });
      try {
        const ids = (await e.publishBatch('quick', [{ payload: 1 }, { payload: 2 }, { payload: 3 }])).map((r) => r.id);
        await sleep(1500);
        expect(done.filter((d) => ids.includes(d))).toEqual([]);
        expect(await e.stats('quick')).toMatchObject({ ready: 3, paused: true, pausedAt: paused.pausedAt });
        const resumedAt = Date.now();
        expect(await e.resume('quick')).toEqual({ queue: 'quick', paused: false, pausedAt: null });
        await eventually(() => ids.every((id) => done.includes(id)), 'the queue to drain after resume', 10_000);
        console.log(`[${target.name}] drained 3 jobs ${Date.now() - resumedAt} ms after resume (same process: woken at once)`);
        expect(await e.stats('quick')).toMatchObject({ ready: 0, paused: false, pausedAt: null });
      } finally {
        stop.abort();
        await running;
      }
    });

    it('reschedule moves a waiting job; cancel deletes a waiting job; a malformed id is refused before SQL', async () => {
      const e = await open();
      const { id } = await e.publish('quick', { payload: 'later', delaySeconds: 600 });
      const moved = await e.reschedule('quick', id, { delayMs: 0 });
      expect(moved.outcome).toBe('rescheduled');
      const stop = new AbortController();
      const running = e.run('quick', { signal: stop.signal });
      try {
        await eventually(() => done.includes(id), 'the rescheduled job to run');
      } finally {
        stop.abort();
        await running;
      }
      const { id: waiting } = await e.publish('quick', { payload: 'never', delaySeconds: 600 });
      expect(await e.cancel('quick', waiting.toUpperCase())).toBe('deleted');
      expect((await e.stats('quick')).delayed).toBe(0);
      await expect(e.cancel('quick', 'nope')).rejects.toBeInstanceOf(InvalidJobIdError);
    });
  });
}
