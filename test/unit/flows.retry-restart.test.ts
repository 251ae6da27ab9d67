// Issue 26, item 4: a step's retry policy (in process, within one execution) and restarting a failed or cancelled
// run from a named step (earlier steps' results kept, later ones discarded). Virtual clock, memory store.
import { describe, expect, it } from 'vitest';
import { FlowFailedError, FlowStatusError, FlowStepNotFoundError } from '../../shared';
import { stepRetryDelayMs } from '../../shared/flows/context';
import { FlowHarness } from '../support/flow-harness';

describe('flows: step retry policy', () => {
  it('retries a throwing step in process with its backoff and goes on with the result (one execution, no queue retry)', async () => {
    const h = new FlowHarness();
    const tries: number[] = [];
    h.registry.register('flaky', async (ctx) => {
      const v = await ctx.step(
        'call',
        () => {
          tries.push(h.clock.now());
          if (tries.length < 3) throw new Error(`busy ${tries.length}`);
          return 'ok';
        },
        { maxAttempts: 5, backoff: { initialMs: 1000, factor: 2 } },
      );
      return v;
    });
    const { id } = await h.flows.start('flaky', null);
    await h.run(60_000);
    const s = await h.state(id);
    expect(s.status).toBe('Succeeded');
    expect(JSON.parse(s.resultJson!)).toBe('ok');
    expect(tries).toHaveLength(3);
    expect([tries[1]! - tries[0]!, tries[2]! - tries[1]!]).toEqual([1000, 2000]);
    expect(h.handled.map((x) => x.outcome)).toEqual(['acked']);
    expect(s.attempts).toBe(1);
  });

  it('spent attempts record the step as failed and fail the run (FlowFailedError), acknowledged, with no queue retry', async () => {
    const h = new FlowHarness();
    let n = 0;
    h.registry.register('hopeless', async (ctx) => {
      await ctx.step('call', () => {
        n++;
        throw new Error('down');
      }, { maxAttempts: 3, backoff: 10 });
    });
    const { id } = await h.flows.start('hopeless', null);
    await h.run(60_000);
    const s = await h.state(id);
    expect(n).toBe(3);
    expect(s.status).toBe('Failed');
    expect(s.error).toEqual({ name: 'FlowFailedError', message: "step 'call' failed after 3 attempts: down" });
    expect(s.steps.call).toMatchObject({ completed: true, error: { name: 'FlowFailedError' } });
    expect(h.handled.map((x) => x.outcome)).toEqual(['acked']);
  });

  it('the default keeps the old behaviour: a throw fails the execution and the queue retries the run', async () => {
    const h = new FlowHarness();
    let n = 0;
    h.registry.register('once', async (ctx) =>
      ctx.step('call', () => {
        if (++n === 1) throw new Error('first fails');
        return n;
      }),
    );
    const { id } = await h.flows.start('once', null);
    await h.run(60_000);
    expect((await h.state(id)).status).toBe('Succeeded');
    expect(h.handled.map((x) => x.outcome)).toEqual(['failed', 'acked']);
  });

  it('a FlowFailedError from the step is not retried; a bad maxAttempts is refused', async () => {
    const h = new FlowHarness();
    let n = 0;
    h.registry.register('terminal', async (ctx) => {
      await ctx.step('call', () => {
        n++;
        throw new FlowFailedError('no such customer');
      }, { maxAttempts: 5 });
    });
    h.registry.register('bad', async (ctx) => ctx.step('call', () => 1, { maxAttempts: 0 }));
    const a = await h.flows.start('terminal', null);
    const b = await h.flows.start('bad', null);
    h.maxAttempts = 1;
    await h.run(60_000);
    expect(n).toBe(1);
    expect((await h.state(a.id)).error?.message).toBe('no such customer');
    expect((await h.state(b.id)).lastMessage).toMatch(/maxAttempts must be a whole number >= 1/);
  });

  it('backoff forms: a number, a function of the retry, exponential capped', () => {
    expect(stepRetryDelayMs(250, 3)).toBe(250);
    expect(stepRetryDelayMs((n) => n * 10, 3)).toBe(30);
    expect([1, 2, 3, 4].map((n) => stepRetryDelayMs({ initialMs: 100, factor: 3, maxMs: 1000 }, n))).toEqual([100, 300, 900, 1000]);
    expect(stepRetryDelayMs(undefined, 2)).toBe(200);
  });
});

describe('flows: restart from a step', () => {
  it('keeps the steps before the named one, runs it and the later ones again, and ends Succeeded', async () => {
    const h = new FlowHarness();
    const runs = { a: 0, b: 0, c: 0 };
    let failC = true;
    h.registry.register('abc', async (ctx) => {
      const a = await ctx.step('a', () => ++runs.a);
      const b = await ctx.step('b', () => ++runs.b);
      const c = await ctx.step('c', () => {
        runs.c++;
        if (failC) throw new FlowFailedError('c refused');
        return 'c';
      });
      return { a, b, c };
    });
    const { id } = await h.flows.start('abc', null);
    await h.run(10_000);
    const failed = await h.state(id);
    expect(failed.status).toBe('Failed');
    const aDone = failed.steps.a!.completedAt;
    failC = false;
    const restarted = await h.flows.restart(id, 'b');
    expect(restarted.status).toBe('Running');
    expect(Object.keys(restarted.steps)).toEqual(['a']);
    expect(restarted.lastMessage).toBe("Restarted from step 'b' by an operator");
    await h.run(10_000);
    const done = await h.state(id);
    expect(done.status).toBe('Succeeded');
    expect(JSON.parse(done.resultJson!)).toEqual({ a: 1, b: 2, c: 'c' });
    expect(runs).toEqual({ a: 1, b: 2, c: 2 });
    expect(done.steps.a!.completedAt).toBe(aDone);
    expect(done.error).toBeUndefined();
  });

  it('restarts a cancelled run; refuses a Running or Succeeded run and a step the run never reached', async () => {
    const h = new FlowHarness();
    h.registry.register('sleeper', async (ctx) => {
      await ctx.step('first', () => 1);
      await ctx.sleep('nap', 3_600_000);
      return 'woke';
    });
    const { id } = await h.flows.start('sleeper', null);
    await h.run(10_000); // parked in its nap
    await expect(h.flows.restart(id, 'first')).rejects.toBeInstanceOf(FlowStatusError);
    await h.flows.cancel(id);
    await expect(h.flows.restart(id, 'no-such-step')).rejects.toBeInstanceOf(FlowStepNotFoundError);
    const r = await h.flows.restart(id, 'nap');
    expect(Object.keys(r.steps)).toEqual(['first']);
    await h.run(2 * 3_600_000);
    const done = await h.state(id);
    expect(done.status).toBe('Succeeded');
    await expect(h.flows.restart(id, 'first')).rejects.toBeInstanceOf(FlowStatusError);
  });
});
