import { describe, expect, it } from 'vitest';
import { FlowHarness } from '../support/flow-harness';

const DAY = 86_400_000;

describe('flow timers (durable-flows.md §2.5, the reference DurableFlowTimerTests)', () => {
  it('a 3-day timer parks: wakeAt persisted, a delayed wake-up job, no execution held while it sleeps; it wakes via that job', async () => {
    const h = new FlowHarness();
    const after: number[] = [];
    h.registry.register('long-sleep', async (ctx) => {
      await ctx.sleep('three-days', 3 * DAY);
      await ctx.step('after', () => after.push(h.clock.now()));
      return 'awake';
    });
    const t0 = h.clock.now();
    const { id } = await h.flows.start('long-sleep', null);
    await h.run(0);
    const parked = await h.state(id);
    expect(parked.status).toBe('Running');
    expect(parked.steps['three-days']?.wakeAt).toBe(new Date(t0 + 3 * DAY).toISOString());
    expect(parked.lastMessage).toBe(`Sleeping until ${new Date(t0 + 3 * DAY).toISOString()}`);
    const wakes = h.jobsOf(id);
    expect(wakes).toHaveLength(1);
    expect(wakes[0]).toMatchObject({ job: { kind: 'wake', reason: 'timer' }, availableAt: t0 + 3 * DAY, running: false });
    expect(h.store.leaseOf(id)?.leaseId).toBeNull();
    expect(h.clock.pendingSleeps).toBe(0); // nothing waits in process
    // the ledger outlives the sleep by a whole idle expiry
    expect(h.store.rows.get(id)!.expiresAt).toBe(t0 + 3 * DAY + 14 * DAY);
    await h.run(3 * DAY - 1000);
    expect(after).toEqual([]);
    await h.run(2000);
    expect(after).toEqual([t0 + 3 * DAY]);
    expect((await h.state(id)).status).toBe('Succeeded');
    expect(h.handled.map((x) => x.kind)).toEqual(['start', 'wake']);
  });

  it('a short timer waits in process under the lease: one execution', async () => {
    const h = new FlowHarness({ timerInProcessThresholdMs: 5000 });
    h.registry.register('short', async (ctx) => {
      await ctx.sleep('brief', 3000);
      return 'done';
    });
    const t0 = h.clock.now();
    const { id } = await h.flows.start('short', null);
    await h.run(10_000);
    const s = await h.state(id);
    expect(s.status).toBe('Succeeded');
    expect(h.handled).toHaveLength(1);
    expect(s.attempts).toBe(1);
    expect(Date.parse(s.steps.brief!.completedAt!) - t0).toBe(3000);
  });

  it('sleepUntil an instant in the past completes at once without a wake-up', async () => {
    const h = new FlowHarness();
    h.registry.register('past', async (ctx) => {
      await ctx.sleepUntil('yesterday', new Date(h.clock.now() - DAY));
      return 'done';
    });
    const { id } = await h.flows.start('past', null);
    await h.run(0);
    const s = await h.state(id);
    expect(s.status).toBe('Succeeded');
    expect(s.steps.yesterday).toMatchObject({ completed: true });
    expect(s.steps.yesterday?.wakeAt).toBeUndefined();
    expect(h.handled).toHaveLength(1);
  });

  it('a wake-up delivered early re-parks for the remainder; the due time stays the first execution\'s', async () => {
    const h = new FlowHarness();
    let sleepArg = 6 * 3_600_000;
    h.registry.register('six-hours', async (ctx) => {
      await ctx.sleep('settle', sleepArg);
      return 'done';
    });
    const t0 = h.clock.now();
    const { id } = await h.flows.start('six-hours', null);
    await h.run(0);
    sleepArg = 60_000; // a hot-fix of the code must not move a sleeping run's instant
    await h.run(3_600_000);
    // an operator kick (or an early delivery) one hour in
    await h.flows.suspend(id);
    await h.flows.resume(id);
    await h.run(0);
    const s = await h.state(id);
    expect(s.status).toBe('Running');
    expect(s.steps.settle?.wakeAt).toBe(new Date(t0 + 6 * 3_600_000).toISOString());
    const timers = h.jobsOf(id).filter((j) => j.job.kind === 'wake');
    expect(timers.map((j) => j.availableAt)).toEqual([t0 + 6 * 3_600_000]); // the re-park waits for the same instant: it shares the first's wake-up
    await h.run(5 * 3_600_000 + 1000);
    const done = await h.state(id);
    expect(done.status).toBe('Succeeded');
    expect(Date.parse(done.steps.settle!.completedAt!)).toBe(t0 + 6 * 3_600_000);
  });

  it('a crash at the timer step (the wake-up publish lost) is redelivered and resumes the sleep: side effects exactly once', async () => {
    const h = new FlowHarness();
    const effects = { before: 0, after: 0 };
    h.registry.register('crashy', async (ctx) => {
      await ctx.step('before', () => ++effects.before);
      await ctx.sleep('nap', DAY);
      await ctx.step('after', () => ++effects.after);
      return effects;
    });
    const t0 = h.clock.now();
    const { id } = await h.flows.start('crashy', null);
    h.publishFaults.push('before'); // the park's wake-up publish fails: the execution fails, its job is redelivered
    await h.run(0);
    expect(h.handled.map((x) => x.outcome)).toEqual(['failed']);
    expect((await h.state(id)).steps.nap?.wakeAt).toBe(new Date(t0 + DAY).toISOString());
    await h.run(2 * DAY);
    const s = await h.state(id);
    expect(s.status).toBe('Succeeded');
    expect(effects).toEqual({ before: 1, after: 1 });
    expect(Date.parse(s.steps.nap!.completedAt!)).toBe(t0 + DAY);
  });

  it('a completed timer is memoized like any step', async () => {
    const h = new FlowHarness();
    let fail = true;
    h.registry.register('memo', async (ctx) => {
      await ctx.sleep('nap', 60_000);
      await ctx.step('then', () => {
        if (fail) {
          fail = false;
          throw new Error('once');
        }
      });
      return 'done';
    });
    const { id } = await h.flows.start('memo', null);
    await h.run(120_000);
    const s = await h.state(id);
    expect(s.status).toBe('Succeeded');
    // start (parks), timer wake (sleep completes, 'then' fails), redelivery (sleep memoized: no third park)
    expect(h.handled.map((x) => `${x.kind}:${x.outcome}`)).toEqual(['start:acked', 'wake:failed', 'wake:acked']);
    expect(s.steps.nap?.completed).toBe(true);
  });
});
