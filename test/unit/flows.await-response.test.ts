import { describe, expect, it } from 'vitest';
import { FlowHarness } from '../support/flow-harness';

/** A flow that asks `approvals` and waits for the answer, with a step before it whose runs are counted. */
function approvalFlow(h: FlowHarness, options: { timeoutMs?: number; until?: (r: { payload: unknown; final: boolean }) => boolean } = {}) {
  const runs = { reserve: 0, triggers: 0 };
  h.registry.register('ask', async (ctx, input: { item: string }) => {
    await ctx.step('reserve', () => ++runs.reserve);
    const approval = await ctx.awaitResponse(
      'approve',
      async (correlationId) => {
        runs.triggers++;
        await ctx.publish('approvals', { payload: { flowId: ctx.flowId, item: input.item }, correlationId });
      },
      options,
    );
    return { item: input.item, approval };
  });
  return runs;
}

describe('awaited responses (durable-flows.md §1.4)', () => {
  it('persists the breadcrumb (and registers for recovery) before the trigger runs, then parks holding nothing', async () => {
    const h = new FlowHarness();
    const seen: Array<{ pending?: string; watched: boolean }> = [];
    h.onPublish = async (p) => {
      const s = await h.store.load((p.payload as { flowId: string }).flowId);
      seen.push({ pending: s?.steps.approve?.pendingCorrelationId, watched: h.watches.has(p.correlationId!) });
    };
    approvalFlow(h);
    const { id } = await h.flows.start('ask', { item: 'book' });
    await h.run(0);
    const cid = h.published[0]!.correlationId!;
    expect(seen).toEqual([{ pending: cid, watched: true }]);
    const s = await h.state(id);
    expect(s.steps.approve).toMatchObject({ pendingCorrelationId: cid });
    expect(h.store.leaseOf(id)?.leaseId).toBeNull();
    expect(h.jobsOf(id).map((j) => j.job.kind)).toEqual(['wake']); // the deadline's wake-up (7 days by default)
    expect(h.jobsOf(id)[0]!.availableAt).toBe(h.clock.now() + 7 * 86_400_000);
    expect(h.clock.pendingSleeps).toBe(0);
  });

  it('a response while the run is parked is checkpointed into its step and wakes the run; it completes with reserve run once', async () => {
    const h = new FlowHarness();
    const runs = approvalFlow(h);
    const { id } = await h.flows.start('ask', { item: 'book' });
    await h.run(0);
    const cid = h.published[0]!.correlationId!;
    expect(await h.respond(cid, { approved: true, by: 'ann' }, { id: 'r1' })).toBe('woken');
    expect((await h.state(id)).steps.approve?.received).toEqual([expect.objectContaining({ id: 'r1', final: true, payloadJson: '{"approved":true,"by":"ann"}' })]);
    await h.run(0);
    const s = await h.state(id);
    expect(s.status).toBe('Succeeded');
    expect(JSON.parse(s.resultJson!)).toEqual({ item: 'book', approval: { approved: true, by: 'ann' } });
    expect(runs).toEqual({ reserve: 1, triggers: 1 });
    expect(s.steps.approve).toMatchObject({ completed: true, resultJson: '{"approved":true,"by":"ann"}' });
    expect(s.steps.approve?.pendingCorrelationId).toBeUndefined();
    expect(h.jobsOf(id)).toEqual([]); // the deadline's 7-day wake-up went with the step, not left to run as a no-op
    // a redelivered recovery of the same response changes nothing
    expect(await h.respond(cid, { approved: false }, { id: 'r1' })).toBe('stale');
  });

  it('a settled await drops its deadline wake-up when the run parks again: only the next await\'s is armed', async () => {
    const h = new FlowHarness();
    h.registry.register('two', async (ctx) => {
      const a = await ctx.awaitResponse('a', async (cid) => void (await ctx.publish('approvals', { payload: 'a', correlationId: cid })), { timeoutMs: 60_000 });
      const b = await ctx.awaitResponse('b', async (cid) => void (await ctx.publish('approvals', { payload: 'b', correlationId: cid })), { timeoutMs: 120_000 });
      return [a, b];
    });
    const { id } = await h.flows.start('two', {});
    await h.run(0);
    const t1 = h.clock.now();
    expect(h.jobsOf(id).map((j) => j.availableAt - t1)).toEqual([60_000]);
    await h.respond(h.published.find((p) => p.payload === 'a')!.correlationId!, 'yes-a');
    await h.run(0);
    const t2 = h.clock.now();
    expect((await h.state(id)).status).toBe('Running');
    expect(h.jobsOf(id).map((j) => j.availableAt - t2)).toEqual([120_000]); // a's wake-up gone, b's armed
    await h.respond(h.published.find((p) => p.payload === 'b')!.correlationId!, 'yes-b');
    await h.run(0);
    expect((await h.state(id)).status).toBe('Succeeded');
    expect(h.jobsOf(id)).toEqual([]);
  });

  it('a crash after the trigger re-attaches to the same correlation id on the next execution and never re-sends', async () => {
    const h = new FlowHarness();
    const runs = approvalFlow(h);
    const { id } = await h.flows.start('ask', { item: 'lamp' });
    // the crash: the park's deadline wake-up cannot be published, the execution fails, its job is redelivered
    h.publishFaults.push('before');
    await h.run(0);
    expect(h.handled.map((x) => x.outcome)).toEqual(['failed']);
    await h.run(5_000); // the redelivery re-attaches and parks again
    expect(runs.triggers).toBe(1);
    const cid = h.published[0]!.correlationId!;
    expect((await h.state(id)).steps.approve?.pendingCorrelationId).toBe(cid);
    await h.respond(cid, 'yes');
    await h.run(0);
    expect((await h.state(id)).status).toBe('Succeeded');
    expect(runs).toEqual({ reserve: 1, triggers: 1 });
    expect(h.published).toHaveLength(1);
  });

  it('a response that lands while the execution still holds the lease (a fast responder) is not lost', async () => {
    const h = new FlowHarness();
    approvalFlow(h);
    const wakeOutcomes: string[] = [];
    h.onPublish = async (p) => {
      await h.respond(p.correlationId!, 'instant', { id: 'fast' });
      // a second worker takes the wake-up at once: it finds the lease held and acknowledges it unrun
      const wake = [...h.jobs.values()].find((j) => j.job.kind === 'wake' && j.job.reason === 'response')!;
      wakeOutcomes.push(await h.runNow(wake));
    };
    const { id } = await h.flows.start('ask', { item: 'pen' });
    await h.run(0);
    expect(wakeOutcomes).toEqual(['acked']);
    const s = await h.state(id);
    expect(s.status).toBe('Succeeded');
    expect(JSON.parse(s.resultJson!)).toEqual({ item: 'pen', approval: 'instant' });
  });

  it('progress responses: `until` decides; declined ones are consumed and the wait stays armed', async () => {
    const h = new FlowHarness();
    approvalFlow(h, { until: (r) => (r.payload as { status: string }).status === 'done' });
    const { id } = await h.flows.start('ask', { item: 'car' });
    await h.run(0);
    const cid = h.published[0]!.correlationId!;
    await h.respond(cid, { status: 'working', pct: 10 }, { final: false });
    await h.respond(cid, { status: 'working', pct: 60 }, { final: false });
    await h.run(0);
    let s = await h.state(id);
    expect(s.status).toBe('Running');
    expect(s.steps.approve?.received).toBeUndefined();
    expect(s.steps.approve?.message).toBe('2 progress response(s) received; still waiting');
    await h.respond(cid, { status: 'done' }, { final: true });
    await h.run(0);
    s = await h.state(id);
    expect(s.status).toBe('Succeeded');
    expect(JSON.parse(s.resultJson!).approval).toEqual({ status: 'done' });
  });

  it('a timeout faults the step; the next execution starts it afresh with a new correlation id', async () => {
    const h = new FlowHarness();
    const runs = approvalFlow(h, { timeoutMs: 60_000 });
    const { id } = await h.flows.start('ask', { item: 'tv' });
    await h.run(0);
    const first = h.published[0]!.correlationId!;
    await h.run(61_000); // the deadline's wake-up: timed out (the execution fails), then the redelivery re-triggers
    const s = await h.state(id);
    expect(runs.triggers).toBe(2);
    const second = h.published[1]!.correlationId!;
    expect(second).not.toBe(first);
    expect(s.steps.approve).toMatchObject({ pendingCorrelationId: second });
    expect(s.steps.approve?.faulted).toBeUndefined();
    expect(h.handled.map((x) => x.outcome)).toContain('failed');
    // a late answer to the first request is stale; the second completes the step
    expect(await h.respond(first, 'late')).toBe('stale');
    await h.respond(second, 'on time');
    await h.run(0);
    expect(JSON.parse((await h.state(id)).resultJson!).approval).toBe('on time');
    expect(runs.reserve).toBe(1);
  });

  it('a trigger that throws (known not sent) restarts the step with a new id on the redelivery', async () => {
    const h = new FlowHarness();
    let attempts = 0;
    const cids: string[] = [];
    h.registry.register('flaky-trigger', async (ctx) =>
      ctx.awaitResponse('ask', (cid) => {
        cids.push(cid);
        if (++attempts === 1) throw new Error('broker unreachable');
      }),
    );
    const { id } = await h.flows.start('flaky-trigger', null);
    await h.run(5_000);
    expect(cids).toHaveLength(2);
    expect(cids[0]).not.toBe(cids[1]);
    await h.respond(cids[1]!, 42);
    await h.run(0);
    expect(JSON.parse((await h.state(id)).resultJson!)).toBe(42);
  });

  it('an error response ends the wait with AwaitedResponseError (terminal unless the flow catches it)', async () => {
    const h = new FlowHarness();
    approvalFlow(h);
    const { id } = await h.flows.start('ask', { item: 'boat' });
    await h.run(0);
    await h.respond(h.published[0]!.correlationId!, null, { error: 'approval job dead-lettered' });
    await h.run(0);
    const s = await h.state(id);
    expect(s.status).toBe('Failed');
    expect(s.error).toEqual({ name: 'AwaitedResponseError', message: "the response awaited by step 'approve' reports a failure: approval job dead-lettered" });
  });

  it('a suspended run keeps a response that arrives (not woken); resume wakes it and it completes', async () => {
    const h = new FlowHarness();
    approvalFlow(h);
    const { id } = await h.flows.start('ask', { item: 'hat' });
    await h.run(0);
    await h.flows.suspend(id);
    const before = h.jobs.size;
    expect(await h.respond(h.published[0]!.correlationId!, 'ok')).toBe('kept');
    expect(h.jobs.size).toBe(before);
    await h.flows.resume(id);
    await h.run(0);
    expect((await h.state(id)).status).toBe('Succeeded');
  });
});

describe('awaited responses with a request trigger ({ queue, payload })', () => {
  const requestFlow = (h: FlowHarness, request: Record<string, unknown> = {}) =>
    h.registry.register('ask', async (ctx, input: { item: string }) => {
      await ctx.step('reserve', () => 'r');
      const approval = await ctx.awaitResponse('approve', { queue: 'approvals', payload: { flowId: ctx.flowId, item: input.item }, ...request });
      return { item: input.item, approval };
    });

  it('without a store that carries jobs: published with the correlation id after its breadcrumb, and answered as before', async () => {
    const h = new FlowHarness();
    const seen: Array<{ pending?: string; cid?: string }> = [];
    h.onPublish = async (p) => {
      const s = await h.store.load((p.payload as { flowId: string }).flowId);
      seen.push({ pending: s?.steps.approve?.pendingCorrelationId, cid: p.correlationId });
    };
    requestFlow(h);
    const { id } = await h.flows.start('ask', { item: 'book' });
    await h.run(0);
    expect(h.published).toEqual([{ queue: 'approvals', payload: { flowId: id, item: 'book' }, correlationId: expect.any(String) }]);
    const cid = h.published[0]!.correlationId!;
    expect(seen).toEqual([{ pending: cid, cid }]);
    expect(await h.respond(cid, { approved: true })).toBe('woken');
    await h.run(0);
    expect(JSON.parse((await h.state(id)).resultJson!)).toEqual({ item: 'book', approval: { approved: true } });
  });

  it('with a store that carries jobs: the start is one create carrying its start job, and the breadcrumb and the request one write', async () => {
    const h = new FlowHarness({}, { carryJobs: true });
    requestFlow(h);
    const { id } = await h.flows.start('ask', { item: 'pen' });
    expect(h.store.calls.tryCreate).toBe(1);
    expect(h.jobsOf(id).map((j) => j.job.kind)).toEqual(['start']); // inserted by the create itself
    const updatesBefore: number[] = [];
    h.onPublish = () => void updatesBefore.push(h.store.calls.tryUpdate ?? 0);
    await h.run(0);
    // one write: the breadcrumb (reserve's completion folded in) carrying the request
    expect(h.carried).toHaveLength(1);
    expect(h.carried[0]).toMatchObject({ queue: 'approvals', payloadJson: JSON.stringify({ flowId: id, item: 'pen' }) });
    const cid = h.published[0]!.correlationId!;
    expect(JSON.parse(h.carried[0]!.headersJson)).toEqual({ 'correlation-id': cid });
    expect(updatesBefore).toEqual([1]);
    expect((await h.state(id)).steps.approve?.pendingCorrelationId).toBe(cid);
    expect(await h.respond(cid, 'yes')).toBe('woken');
    await h.run(0);
    expect((await h.state(id)).status).toBe('Succeeded');
  });

  it('a write that does not take carries nothing: the request is not sent, and the replay sends it once', async () => {
    const h = new FlowHarness({}, { carryJobs: true });
    requestFlow(h);
    const { id } = await h.flows.start('ask', { item: 'cup' });
    let failNext = true;
    h.store.beforeCall = (op) => {
      if (op === 'tryUpdate' && failNext) {
        failNext = false;
        throw new Error('connection lost (injected)');
      }
    };
    await h.run(0);
    // the first execution failed at its breadcrumb's write: nothing was carried, nothing recorded of the step
    expect(h.carried).toEqual([]);
    expect(h.published).toEqual([]);
    expect((await h.state(id)).steps.approve).toBeUndefined();
    // the redelivery sent the request once
    await h.run(1_000);
    expect(h.carried).toHaveLength(1);
    expect(h.published).toHaveLength(1);
    expect((await h.state(id)).steps.approve?.pendingCorrelationId).toBe(h.published[0]!.correlationId);
  });

  it('a request the publisher declines to carry (an ordering or dedup key) is published after its breadcrumb', async () => {
    const h = new FlowHarness({}, { carryJobs: 'decline' });
    const seen: Array<string | undefined> = [];
    h.onPublish = async (p) => void seen.push((await h.store.load((p.payload as { flowId: string }).flowId))?.steps.approve?.pendingCorrelationId);
    requestFlow(h);
    await h.flows.start('ask', { item: 'mug' });
    await h.run(0);
    expect(h.carried).toEqual([]);
    expect(h.published).toHaveLength(1);
    expect(seen).toEqual([h.published[0]!.correlationId]);
  });

  it('a trigger that is neither a function nor a request with a queue fails the step', async () => {
    const h = new FlowHarness();
    h.registry.register('bad', async (ctx) => ctx.awaitResponse('approve', { payload: 1 } as never));
    const { id } = await h.flows.start('bad', {});
    await h.run(0);
    const s = await h.state(id);
    expect(s.status).toBe('Failed');
    expect(s.error?.message).toMatch(/a function of the correlation id or a request \{ queue, payload \}/);
    expect(h.published).toEqual([]);
  });
});

describe('carried writes: what committed counts', () => {
  it('a request that committed with its breadcrumb is not faulted when the caller then fails: the next execution re-attaches, nothing is sent twice', async () => {
    const h = new FlowHarness({}, { carryJobs: true });
    h.registry.register('ask', async (ctx) => ctx.awaitResponse('approve', { queue: 'approvals', payload: { flowId: ctx.flowId } }));
    let failAfterCommit = true;
    h.onPublish = () => {
      if (failAfterCommit) {
        failAfterCommit = false;
        throw new Error('metrics sink failed after the commit (injected)');
      }
    };
    const { id } = await h.flows.start('ask', {});
    await h.run(1_000);
    const cid = h.published[0]!.correlationId!;
    expect(h.carried).toHaveLength(1);
    expect(h.published).toHaveLength(1);
    const s = await h.state(id);
    expect(s.steps.approve?.pendingCorrelationId).toBe(cid);
    expect(s.steps.approve?.faulted).toBeUndefined();
    expect(await h.respond(cid, 'ok')).toBe('woken');
    await h.run(0);
    expect((await h.state(id)).status).toBe('Succeeded');
    expect(h.carried).toHaveLength(1);
  });

  it('a start whose create met a live row gone by the read after it creates again (one row, one start job)', async () => {
    const h = new FlowHarness({}, { carryJobs: true });
    h.registry.register('noop', async () => 'done');
    // a live row of another run with this id, gone (expired, deleted) between the create and the read
    h.store.rows.set('r1', { stateJson: '{}', revision: 0, expiresAt: h.clock.now() + 60_000, updatedAt: 0, createdAt: 0, leaseId: null, leaseExpiresAt: null });
    h.store.beforeCall = (op) => {
      if (op === 'load') h.store.rows.delete('r1');
    };
    const started = await h.flows.start('noop', { n: 1 }, { id: 'r1' });
    h.store.beforeCall = undefined;
    expect(started).toEqual({ id: 'r1', status: 'Running', created: true });
    expect(h.store.calls.tryCreate).toBe(2);
    expect(h.jobsOf('r1').map((j) => j.job.kind)).toEqual(['start']);
    await h.run(0);
    expect((await h.state('r1')).status).toBe('Succeeded');
  });
});
