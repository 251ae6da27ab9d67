import { describe, expect, it } from 'vitest';
import { FlowFailedError } from '../../shared/flows/errors';
import { FlowHarness } from '../support/flow-harness';

describe('flow executor: steps, outcomes, retries (virtual clock, memory store)', () => {
  it('runs each step once, re-running the body from the top after a failed attempt', async () => {
    const h = new FlowHarness();
    const calls = { a: 0, b: 0, between: 0 };
    let failB = true;
    h.registry.register('two-steps', async (ctx, input: { n: number }) => {
      const a = await ctx.step('a', () => ++calls.a + input.n);
      calls.between++;
      const b = await ctx.step('b', () => {
        calls.b++;
        if (failB) {
          failB = false;
          throw new Error('transient downstream failure');
        }
        return a * 10;
      });
      return { a, b };
    });
    const { id } = await h.flows.start('two-steps', { n: 1 });
    await h.run(10_000);
    const s = await h.state(id);
    expect(s.status).toBe('Succeeded');
    expect(JSON.parse(s.resultJson!)).toEqual({ a: 2, b: 20 });
    expect(calls).toEqual({ a: 1, b: 2, between: 2 });
    expect(s.attempts).toBe(2);
    expect(h.handled.map((x) => x.outcome)).toEqual(['failed', 'acked']);
    expect(s.steps.a).toMatchObject({ completed: true, resultJson: '2' });
    expect(s.steps.b?.completedAt).toBeDefined();
  });

  it('records the failure as the last message and lets the queue retry, then dead-letter', async () => {
    const h = new FlowHarness();
    h.maxAttempts = 3;
    h.registry.register('always-broken', async () => {
      throw new Error('database of a partner is down');
    });
    const { id } = await h.flows.start('always-broken', null);
    await h.run(60_000);
    const s = await h.state(id);
    expect(s.status).toBe('Running'); // stuck: the dead letter is the alarm
    expect(s.attempts).toBe(3);
    expect(s.lastMessage).toBe('attempt 3 failed: Error: database of a partner is down');
    expect(h.deadLetters).toHaveLength(1);
    expect(h.jobs.size).toBe(0);
  });

  it('FlowFailedError ends the run as Failed and acknowledges the job (no retry)', async () => {
    const h = new FlowHarness();
    h.registry.register('refuses', async (ctx) => {
      await ctx.step('check', () => 'checked');
      throw new FlowFailedError('the item is not for sale');
    });
    const { id } = await h.flows.start('refuses', {});
    await h.run(10_000);
    const s = await h.state(id);
    expect(s.status).toBe('Failed');
    expect(s.error).toEqual({ name: 'FlowFailedError', message: 'the item is not for sale' });
    expect(s.attempts).toBe(1);
    expect(h.handled).toEqual([expect.objectContaining({ outcome: 'acked', kind: 'start' })]);
  });

  it('keeps values (get/set) and progress messages in the ledger', async () => {
    const h = new FlowHarness();
    h.registry.register('values', async (ctx) => {
      const seen = ctx.get<number>('count') ?? 0;
      await ctx.set('count', seen + 1);
      await ctx.progress('half way');
      await ctx.step('s', () => null);
      return ctx.get('count');
    });
    const { id } = await h.flows.start('values', null);
    await h.run(5_000);
    const s = await h.state(id);
    expect(s.values.count).toBe('1');
    expect(JSON.parse(s.resultJson!)).toBe(1);
    expect(s.lastMessage).toBe('Succeeded');
  });

  it('writes progress at most once per interval, the last message winning', async () => {
    const h = new FlowHarness({ progressIntervalMs: 1000 });
    h.registry.register('chatty', async (ctx) => {
      for (let i = 1; i <= 5; i++) await ctx.progress(`item ${i}`);
      await ctx.step('wait', () => h.clock.sleep(1500));
      return 'done';
    });
    await h.flows.start('chatty', null, { id: 'p-1' });
    const updates = () => h.store.calls.tryUpdate ?? 0;
    const before = updates();
    const stored: Array<string | undefined> = [];
    h.store.beforeCall = (op, flowId) => {
      const row = h.store.rows.get('p-1');
      if (op === 'tryUpdate' && flowId === 'p-1' && row) stored.push((JSON.parse(row.stateJson) as { lastMessage?: string }).lastMessage);
    };
    await h.run(10_000);
    stored.push((await h.state('p-1')).lastMessage);
    expect(stored).toEqual([undefined, 'item 1', 'item 5', 'Succeeded']);
    // progress 'item 1' (first is immediate; it also counts the attempt), the coalesced 'item 5' after 1 s, and the
    // end, which records step 'wait' too (with the lease's release)
    expect(updates() - before).toBe(3);
    const s = await h.state('p-1');
    expect(s.status).toBe('Succeeded');
    expect(s.steps.wait?.completed).toBe(true);
  });

  it('rejects a step name used twice at the same time in one execution', async () => {
    const h = new FlowHarness();
    h.maxAttempts = 1;
    h.registry.register('dupe', async (ctx) => {
      await Promise.all([ctx.step('x', () => h.clock.sleep(10)), ctx.step('x', () => 1)]);
    });
    const { id } = await h.flows.start('dupe', null);
    await h.run(1_000);
    expect((await h.state(id)).lastMessage).toMatch(/step 'x' is already running in this execution/);
  });

  it('a flow name this deployment does not register is retried (a rolling deploy), not failed', async () => {
    const h = new FlowHarness();
    h.maxAttempts = 2;
    h.registry.register('present', async () => 1);
    const { id } = await h.flows.start('present', null);
    // the ledger names a flow that is not registered here
    const row = h.store.rows.get(id)!;
    row.stateJson = row.stateJson.replace('"flowName":"present"', '"flowName":"renamed"');
    await h.run(10_000);
    expect((await h.state(id)).status).toBe('Running');
    expect(h.deadLetters[0]?.error).toMatchObject({ message: expect.stringMatching(/does not register/) });
  });
});

describe('flow executor: the lease', () => {
  it('a wake-up that finds another execution holding the lease is acknowledged without running the body', async () => {
    const h = new FlowHarness();
    let runs = 0;
    h.registry.register('one', async (ctx) => ctx.step('s', () => ++runs));
    const { id } = await h.flows.start('one', null, { id: 'leased' });
    await h.store.tryCreate((await h.flows.get(id))!, 60_000); // the starter wrote it already: false, nothing changes
    h.store.seizeLease(id, 60_000);
    await h.run(0);
    expect(runs).toBe(0);
    expect(h.handled).toEqual([expect.objectContaining({ outcome: 'acked' })]);
  });

  it("a redelivered job waits out its own earlier attempt's lease, then runs", async () => {
    const h = new FlowHarness();
    let runs = 0;
    h.registry.register('one', async (ctx) => ctx.step('s', () => ++runs));
    const { id } = await h.flows.start('one', null, { id: 'own' });
    const job = [...h.jobs.values()][0]!;
    h.store.seizeLease(id, 30_000, `${job.id.replace(/-/g, '')}.earlier`);
    const t0 = h.clock.now();
    await h.run(0);
    expect(runs).toBe(1);
    expect((await h.state(id)).status).toBe('Succeeded');
    expect(h.clock.now() - t0).toBeGreaterThanOrEqual(30_000);
  });

  it('renews the lease while a long step runs, and stops an execution whose lease was taken', async () => {
    const h = new FlowHarness({ leaseDurationMs: 60_000, leaseRenewIntervalMs: 20_000 });
    h.maxAttempts = 1;
    let afterSteal = false;
    h.registry.register('slow', async (ctx) => {
      await ctx.step('long', () => h.clock.sleep(70_000)); // longer than one lease: renewals keep it
      await ctx.step('stolen', async () => {
        h.store.seizeLease(ctx.flowId, 60_000);
        await h.clock.sleep(25_000); // the next renewal fails
      });
      afterSteal = true;
    });
    const { id } = await h.flows.start('slow', null);
    await h.run(200_000);
    const s = await h.state(id);
    expect(s.steps.long?.completed).toBe(true);
    expect(s.steps.stolen?.completed).toBeUndefined();
    expect(afterSteal).toBe(false);
    expect(h.store.calls.tryRenewLease).toBeGreaterThanOrEqual(4);
    expect(h.deadLetters[0]?.error).toMatchObject({ name: 'FlowLeaseLostError' });
  });
});

describe('flow controls: suspend, resume, cancel', () => {
  it('suspending a running execution stops it at its next checkpoint; resume wakes it; it then completes', async () => {
    const h = new FlowHarness();
    const ran: string[] = [];
    h.registry.register('pausable', async (ctx) => {
      await ctx.step('one', async () => {
        ran.push('one');
        if (ran.length === 1) await h.flows.suspend(ctx.flowId); // an operator, while the step runs
      });
      await ctx.step('two', () => ran.push('two'));
      return 'ok';
    });
    const { id } = await h.flows.start('pausable', null);
    await h.run(5_000);
    expect((await h.state(id)).status).toBe('Suspended');
    expect(h.handled.at(-1)?.outcome).toBe('acked');
    expect(ran).toEqual(['one']);
    await expect(h.flows.suspend(id)).resolves.toMatchObject({ status: 'Suspended' });
    await h.flows.resume(id);
    await h.run(5_000);
    const s = await h.state(id);
    expect(s.status).toBe('Succeeded');
    expect(ran).toEqual(['one', 'one', 'two']); // 'one' did not checkpoint (the run was suspended under it): at-least-once
  });

  it('cancel ends a run as Failed; resuming or cancelling an ended run is refused', async () => {
    const h = new FlowHarness();
    h.registry.register('sleepy', async (ctx) => {
      await ctx.sleep('nap', 3_600_000);
    });
    const { id } = await h.flows.start('sleepy', null);
    await h.run(0);
    const cancelled = await h.flows.cancel(id, 'not needed any more');
    expect(cancelled).toMatchObject({ status: 'Failed', error: { name: 'FlowCancelledError', message: 'not needed any more' } });
    await expect(h.flows.cancel(id)).rejects.toMatchObject({ name: 'FlowStatusError' });
    await expect(h.flows.resume(id)).rejects.toMatchObject({ name: 'FlowStatusError' });
    await expect(h.flows.suspend('nope')).rejects.toMatchObject({ name: 'FlowRunNotFoundError' });
    await h.run(4_000_000); // the timer's wake-up finds a Failed run and does nothing
    expect((await h.state(id)).status).toBe('Failed');
  });

  it('waitForEnd answers as soon as the run ends in this process', async () => {
    const h = new FlowHarness();
    h.registry.register('quick', async (ctx) => ctx.step('s', () => h.clock.sleep(3000).then(() => 'r')));
    const { id } = await h.flows.start('quick', null);
    const waited = h.flows.waitForEnd(id, 60_000);
    await h.run(10_000);
    expect((await waited)?.status).toBe('Succeeded');
  });
});
