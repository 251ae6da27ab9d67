import { describe, expect, it } from 'vitest';
import { FlowHarness } from '../support/flow-harness';

describe('child runs: the parent parks until the child ends, the child wakes it', () => {
  it('a child run is started once under {parentId}:{name}, the parent parks, and resumes with its result', async () => {
    const h = new FlowHarness();
    const runs = { parent: 0, child: 0 };
    h.registry.register('double', async (ctx, n: number) => {
      await ctx.sleep('think', 60_000); // parks: the parent waits for a child that is itself parked
      return ctx.step('compute', () => (runs.child++, n * 2));
    });
    h.registry.register('parent', async (ctx) => {
      await ctx.step('before', () => ++runs.parent);
      const r = await ctx.child<number>('twice', 'double', 21);
      return { r };
    });
    const { id } = await h.flows.start('parent', null, { id: 'p' });
    await h.run(0);
    const parked = await h.state(id);
    expect(parked.steps.twice).toMatchObject({ childFlowId: 'p:twice' });
    const child = await h.state('p:twice');
    expect(child).toMatchObject({ status: 'Running', parentFlowId: 'p', parentStepName: 'twice', flowName: 'double' });
    // the child's sleep raised the parent's retention floor past the child's wake instant
    expect(Date.parse(parked.retainUntil ?? (await h.state(id)).retainUntil!)).toBeGreaterThanOrEqual(h.clock.now() + 60_000);
    await h.run(120_000);
    const s = await h.state(id);
    expect(s.status).toBe('Succeeded');
    expect(JSON.parse(s.resultJson!)).toEqual({ r: 42 });
    expect(runs).toEqual({ parent: 1, child: 1 });
  });

  it('fans out 20 children with Promise.all and joins them', async () => {
    const h = new FlowHarness();
    h.registry.register('square', async (ctx, n: number) => {
      await ctx.sleep('wait', 10_000 + n * 1000);
      return n * n;
    });
    let childrenStarted = 0;
    h.registry.register('fan', async (ctx) => {
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => ctx.child<number>(`sq-${i}`, 'square', i)));
      childrenStarted = Object.values((await h.store.load(ctx.flowId))!.steps).filter((s) => s.childFlowId).length;
      return results.reduce((a, b) => a + b, 0);
    });
    const { id } = await h.flows.start('fan', null, { id: 'fan-1' });
    await h.run(0);
    // all 20 started in the first execution, although the first child() already parked
    expect(Object.values((await h.state(id)).steps).filter((s) => s.childFlowId)).toHaveLength(20);
    for (let i = 0; i < 20; i++) expect((await h.state(`fan-1:sq-${i}`)).status).toBe('Running');
    await h.run(60_000);
    const s = await h.state(id);
    expect(s.status).toBe('Succeeded');
    expect(JSON.parse(s.resultJson!)).toBe(Array.from({ length: 20 }, (_, i) => i * i).reduce((a, b) => a + b, 0));
    expect(childrenStarted).toBe(20);
    expect(h.deadLetters).toEqual([]);
  });

  it("a child that fails fails the parent's step with ChildFlowFailedError (catchable)", async () => {
    const h = new FlowHarness();
    h.registry.register('bad', async () => {
      const { FlowFailedError } = await import('../../shared/flows/errors');
      throw new FlowFailedError('no stock');
    });
    h.registry.register('careful', async (ctx) => {
      try {
        await ctx.child('try', 'bad', null);
        return 'unexpected';
      } catch (e) {
        return `caught ${(e as Error).name}: ${(e as Error).message}`;
      }
    });
    const { id } = await h.flows.start('careful', null);
    await h.run(10_000);
    expect(JSON.parse((await h.state(id)).resultJson!)).toBe(`caught ChildFlowFailedError: child run '${id}:try' failed: no stock`);
  });

  it('cancelling a child wakes its parent, whose step then fails', async () => {
    const h = new FlowHarness();
    h.registry.register('forever', async (ctx) => ctx.sleep('long', 30 * 86_400_000));
    h.registry.register('waits', async (ctx) => ctx.child('c', 'forever', null));
    const { id } = await h.flows.start('waits', null, { id: 'w' });
    await h.run(0);
    await h.flows.cancel('w:c', 'operator gave up');
    await h.run(0);
    const s = await h.state(id);
    expect(s.status).toBe('Failed');
    expect(s.error?.message).toBe("child run 'w:c' failed: operator gave up");
  });

  it('a child that ends while the parent still holds its lease still wakes the parent (checked after the release)', async () => {
    const h = new FlowHarness();
    h.registry.register('instant', async () => 'fast');
    h.registry.register('parent', async (ctx) => ctx.child('a', 'instant', null));
    const outcomes: string[] = [];
    let raced = false;
    h.store.beforeCall = async (op, flowId) => {
      if (op !== 'releaseLease' || flowId !== 'sp' || raced) return;
      raced = true;
      // just before the parked parent releases: a second worker runs the child to its end, then the parent's wake-up,
      // which finds the lease still held and is acknowledged unrun
      outcomes.push(await h.runNow([...h.jobs.values()].find((j) => j.job.flowId === 'sp:a')!));
      outcomes.push(await h.runNow([...h.jobs.values()].find((j) => j.job.flowId === 'sp' && j.job.kind === 'wake')!));
    };
    const { id } = await h.flows.start('parent', null, { id: 'sp' });
    await h.run(5_000);
    expect(outcomes).toEqual(['acked', 'acked']);
    expect(h.handled.filter((x) => x.flowId === 'sp').map((x) => x.kind)).toEqual(['wake', 'start', 'wake']); // the last: the self-wake
    expect((await h.state(id)).status).toBe('Succeeded');
    expect(JSON.parse((await h.state(id)).resultJson!)).toBe('fast');
  });

  it('a child id taken by another flow fails the parent terminally', async () => {
    const h = new FlowHarness();
    h.registry.register('x', async () => 1);
    h.registry.register('y', async () => 2);
    h.registry.register('parent', async (ctx) => ctx.child('k', 'x', null, { id: 'taken' }));
    await h.flows.start('y', null, { id: 'taken' });
    const { id } = await h.flows.start('parent', null);
    await h.run(5_000);
    const s = await h.state(id);
    expect(s.status).toBe('Failed');
    expect(s.error?.message).toMatch(/flow run id 'taken' is taken: it is a run of flow 'y'/);
    expect(h.handled.filter((x) => x.flowId === id).map((x) => x.outcome)).toEqual(['acked']);
  });
});
