// The flows layer on the engine (real transport and channel on PGlite, PostgreSQL when PG_URL is set, SQL Server when
// MSSQL_CONNECTION_STRING is set): the example flow completes through the flows queue, its approval answered by a
// code handler on `approvals` whose result travels as a correlated response through the channel's recovery path (the
// callbacks queue's `flow` internal target) into the parked run, with the SQL flow state store of the target.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { engineTargets } from './engine-targets';
import { skipOnGap } from './engine-gaps';
import { appFlows } from '../../flows';
import { createEngine, FlowRegistry, silentLogger, type Engine } from '../../shared';
import { MemoryMetrics } from '../../shared/telemetry/metrics';
import { METRIC } from '../../shared/telemetry/metric-names';

const TARGETS = engineTargets('flows', { sqlServer: true });

for (const target of TARGETS) {
  describe.skipIf(target.skip !== undefined)(`flows on the engine (${target.name})`, () => {
    if (target.skip) console.warn(`skipped flows engine contract on ${target.name}: ${target.skip}`);
    const engines: Engine[] = [];
    afterAll(async () => {
      for (const e of engines) await e.close();
      await target.cleanup();
    });

    it('example-approval completes: reserve, approval answered by a handler through the channel, cool-off', async () => {
      const approvals: unknown[] = [];
      const metrics = new MemoryMetrics();
      const engine = await createEngine({
        store: await target.store(),
        schema: target.schema,
        logger: silentLogger,
        metrics,
        queues: {
          approvals: {
            handler: async (job) => {
              approvals.push(job.payload);
              return { approved: true, by: 'auto-approver', n: 12345678901234567890n.toString() };
            },
          },
        },
        flows: { registry: appFlows },
      });
      engines.push(engine);
      expect(engine.flowsQueue).toBe('flows');
      expect(engine.route('flows')?.description).toEqual({ kind: 'flows' });
      const stop = new AbortController();
      const running = engine.run([...engine.queues, 'flows', 'callbacks'], { signal: stop.signal });
      try {
        const started = await engine.flows!.start('example-approval', { item: 'book', coolOffSeconds: 1 }, { id: `ex-${target.name}` });
        expect(started).toEqual({ id: `ex-${target.name}`, status: 'Running', created: true });
        const t0 = Date.now();
        const done = await engine.flows!.waitForEnd(started.id, 20_000);
        expect(done?.status).toBe('Succeeded');
        expect(Date.now() - t0).toBeLessThan(10_000);
        expect(JSON.parse(done!.resultJson!)).toEqual({ item: 'book', approval: { approved: true, by: 'auto-approver', n: '12345678901234567890' } });
        expect(approvals).toEqual([{ flowId: started.id, item: 'book' }]);
        expect(Object.keys(done!.steps)).toEqual(['reserve', 'approve', 'cool-off']);
        expect(done!.steps.reserve).toMatchObject({ completed: true, resultJson: '{"reserved":"book"}' });
        expect(metrics.named(METRIC.flowRunsEnded)).toEqual([{ name: METRIC.flowRunsEnded, value: 1, properties: { flow: 'example-approval', outcome: 'succeeded' } }]);
        // the approval answered within the in-process window: taken in process, no park (and the 1 s cool-off waits in process)
        expect(metrics.named(METRIC.flowRunsParked).map((r) => r.properties.on)).toEqual([]);
        expect(metrics.named(METRIC.flowStepDuration).map((r) => r.properties.kind)).toEqual(['step', 'await', 'sleep']);
        // a repeated start returns the run as it is now
        await expect(engine.flows!.start('example-approval', { coolOffSeconds: 1, item: 'book' }, { id: started.id })).resolves.toEqual({ id: started.id, status: 'Succeeded', created: false });
      } finally {
        stop.abort();
        await running;
      }
    }, 120_000); // opening PGlite with every schema version takes 20-30 s on a loaded 2-core machine

    it('a request trigger: carried by the breadcrumb\'s write, or with an ordering key published after it; both reach their handler with the correlation id', async () => {
      const seen: Array<{ payload: unknown; correlationId?: string; headers: Record<string, string>; id: string }> = [];
      const metrics = new MemoryMetrics();
      const registry = new FlowRegistry().register('ask-twice', async (ctx, input: { jobId: string }) => {
        const a = await ctx.awaitResponse('carried', { queue: 'asks', id: input.jobId, payload: { n: 1 }, headers: { 'x-tag': 'one' } });
        const b = await ctx.awaitResponse('keyed', { queue: 'asks', payload: { n: 2 }, orderingKey: 'k' });
        return [a, b];
      });
      const engine = await createEngine({
        store: await target.store(),
        schema: target.schema,
        logger: silentLogger,
        metrics,
        queues: {
          asks: {
            handler: async (job) => {
              seen.push({ payload: job.payload, ...(job.correlationId !== undefined ? { correlationId: job.correlationId } : {}), headers: job.headers, id: job.id });
              return { answer: (job.payload as { n: number }).n * 10 };
            },
          },
        },
        // a park registers the run for recovery (the spec's MERGE, a gap of the TDS engine here): on SQL Server the
        // run waits in process long enough not to park when the engine is slow under load
        flows: { registry, ...(target.name === 'sqlserver' ? { timings: { awaitInProcessMs: 25_000 } } : {}) },
      });
      engines.push(engine);
      const stop = new AbortController();
      const running = engine.run([...engine.queues, 'flows', 'callbacks'], { signal: stop.signal });
      try {
        const id = `req-${randomUUID()}`;
        const jobId = randomUUID();
        await engine.flows!.start('ask-twice', { jobId }, { id });
        const done = await engine.flows!.waitForEnd(id, 30_000);
        expect(done?.status).toBe('Succeeded');
        expect(JSON.parse(done!.resultJson!)).toEqual([{ answer: 10 }, { answer: 20 }]);
        expect(seen.map((j) => j.payload)).toEqual([{ n: 1 }, { n: 2 }]);
        expect(seen[0]!.id).toBe(jobId);
        expect(seen[0]!.headers['x-tag']).toBe('one');
        for (const j of seen) expect(j.correlationId).toMatch(/^[0-9a-f-]{36}$/);
        expect(seen[0]!.correlationId).not.toBe(seen[1]!.correlationId);
        // the carried publish is counted like any other
        expect(metrics.named(METRIC.jobsPublished).filter((r) => r.properties.queue === 'asks').reduce((a, r) => a + r.value, 0)).toBe(2);
      } finally {
        stop.abort();
        await running;
      }
    }, 120_000);

    it('a request whose id is already queued is not published again, nor counted in jobs.published', async () => {
      const metrics = new MemoryMetrics();
      const registry = new FlowRegistry().register('ask-existing', async (ctx, input: { jobId: string }) => {
        return ctx.awaitResponse('ask', { queue: 'held', id: input.jobId, payload: { from: 'flow' } });
      });
      const engine = await createEngine({
        store: await target.store(),
        schema: target.schema,
        logger: silentLogger,
        metrics,
        queues: { held: { handler: async () => undefined } },
        flows: { registry, queue: 'flows-existing' },
      });
      engines.push(engine);
      const jobId = randomUUID();
      await engine.publish('held', { id: jobId, payload: { from: 'before' } });
      const stop = new AbortController();
      const running = engine.run(['flows-existing', 'callbacks'], { signal: stop.signal }); // 'held' is not drained
      try {
        const id = `existing-${randomUUID()}`;
        await engine.flows!.start('ask-existing', { jobId }, { id });
        const t0 = Date.now();
        while (!(await engine.flows!.get(id))?.steps.ask && Date.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 50));
        expect((await engine.flows!.get(id))?.steps.ask).toBeDefined(); // the request's write (its breadcrumb) committed
        const held = metrics.named(METRIC.jobsPublished).filter((r) => r.properties.queue === 'held');
        expect(held.reduce((a, r) => a + r.value, 0)).toBe(1); // the publish before the flow, not the flow's request
        expect(await engine.stats('held')).toMatchObject({ ready: 1 });
      } finally {
        stop.abort();
        await running;
      }
    }, 120_000);

    it('a response posted later (no live waiter) completes the parked step within about a second', async (ctx) => {
      await skipOnGap(target.name, ctx, 'merge'); // the run's recovery registration is the spec's MERGE
      const registry = new FlowRegistry().register('ask-later', async (ctx) => {
        const answer = await ctx.awaitResponse('ask', async (cid) => {
          await ctx.set('cid', cid);
        });
        return { answer };
      });
      const engine = await createEngine({
        store: await target.store(),
        schema: target.schema,
        logger: silentLogger,
        queues: { unused: { handler: async () => undefined } },
        flows: { registry, queue: 'flows-later' },
      });
      engines.push(engine);
      const stop = new AbortController();
      const running = engine.run(['flows-later', 'callbacks'], { signal: stop.signal });
      try {
        const { id } = await engine.flows!.start('ask-later', null);
        let cid: string | undefined;
        for (let i = 0; i < 100 && !cid; i++) {
          const s = await engine.flows!.get(id);
          cid = s?.values.cid && s.steps.ask?.pendingCorrelationId ? (JSON.parse(s.values.cid) as string) : undefined;
          if (!cid) await new Promise((r) => setTimeout(r, 50));
        }
        expect(cid).toBeDefined();
        // the in-process window (3 s by default) passes with no answer: the run parks and releases its lease
        for (let i = 0; i < 100 && (await engine.stores.flows.observeLease(id)) !== 'unheld'; i++) await new Promise((r) => setTimeout(r, 100));
        expect(await engine.stores.flows.observeLease(id)).toBe('unheld');
        const t0 = Date.now();
        const published = await engine.channel.publishResponse({ correlationId: cid!, payload: { ok: 'later' }, final: true }, { confirm: true });
        expect(published.delivery).toBe('recovery');
        const done = await engine.flows!.waitForEnd(id, 10_000);
        const took = Date.now() - t0;
        expect(done?.status).toBe('Succeeded');
        expect(JSON.parse(done!.resultJson!)).toEqual({ answer: { ok: 'later' } });
        expect(took).toBeLessThan(1500);
        // the await's deadline wake-up (7 days out) went with the step: nothing is left delayed on the flows queue
        await new Promise((r) => setTimeout(r, 200));
        expect(await engine.store.listWaiting({ queue: 'flows-later', state: 'delayed', order: 'oldest', top: 10 })).toEqual([]);
      } finally {
        stop.abort();
        await running;
      }
    }, 120_000); // opening PGlite with every schema version takes 20-30 s on a loaded 2-core machine

    it('a quick answer published by another process is taken by the waiting run (NOTIFY on PostgreSQL, a poll elsewhere): no park', async (ctx) => {
      await skipOnGap(target.name, ctx, 'merge'); // the run's recovery registration is the spec's MERGE
      const registry = new FlowRegistry().register('ask-elsewhere', async (ctx) => {
        const answer = await ctx.awaitResponse('ask', async (cid) => {
          await ctx.set('cid', cid);
        });
        return { answer };
      });
      const metrics = new MemoryMetrics();
      const runner = await createEngine({ store: await target.store(), schema: target.schema, logger: silentLogger, metrics, queues: { unused: { handler: async () => undefined } }, flows: { registry, queue: 'flows-elsewhere', timings: { awaitInProcessMs: 5_000 } } });
      engines.push(runner);
      // the other process: its own engine (channel, pools, listener) on the same database (PGlite: the same instance is one process, so its store is shared)
      const other = target.name !== 'pglite' ? await createEngine({ store: await target.store('same'), schema: target.schema, logger: silentLogger, queues: { unused: { handler: async () => undefined } } }) : runner;
      if (other !== runner) engines.push(other);
      const stop = new AbortController();
      const running = runner.run(['flows-elsewhere', 'callbacks'], { signal: stop.signal });
      try {
        const { id } = await runner.flows!.start('ask-elsewhere', null);
        let cid: string | undefined;
        for (let i = 0; i < 100 && !cid; i++) {
          const s = await runner.flows!.get(id);
          cid = s?.values.cid && s.steps.ask?.pendingCorrelationId ? (JSON.parse(s.values.cid) as string) : undefined;
          if (!cid) await new Promise((r) => setTimeout(r, 20));
        }
        expect(cid).toBeDefined();
        // another process's channel has no in-process taker: it stores the response (no registration yet)
        const t0 = Date.now();
        const published = await other.channel.store.insertMessage(randomUUID(), cid!, JSON.stringify({ SchemaVersion: 1, Success: true, Payload: { ok: 'elsewhere' }, ExceptionMessage: null, ExceptionStackTrace: null, Final: true }), 60_000);
        expect(published.inserted).toBe(true);
        const done = await runner.flows!.waitForEnd(id, 10_000);
        expect(done?.status).toBe('Succeeded');
        expect(JSON.parse(done!.resultJson!)).toEqual({ answer: { ok: 'elsewhere' } });
        expect(Date.now() - t0).toBeLessThan(2_500); // NOTIFY: at once; the poll: within a second
        expect(metrics.named(METRIC.flowRunsParked)).toEqual([]);
      } finally {
        stop.abort();
        await running;
      }
    }, 120_000);

    it("an in-process wait never outlasts the invocation's budget: a drain with a 1.5 s budget parks the run and returns on time", async (ctx) => {
      await skipOnGap(target.name, ctx, 'merge'); // parking registers the run for recovery: the spec's MERGE
      const registry = new FlowRegistry().register('ask-budget', async (ctx) => ({ answer: await ctx.awaitResponse('ask', async () => undefined) }));
      const metrics = new MemoryMetrics();
      // a window far longer than the budget: without the budget's bound the drain would wait it out
      const engine = await createEngine({ store: await target.store(), schema: target.schema, logger: silentLogger, metrics, queues: { unused: { handler: async () => undefined } }, flows: { registry, queue: 'flows-budget', timings: { awaitInProcessMs: 20_000 } } });
      engines.push(engine);
      const { id } = await engine.flows!.start('ask-budget', null);
      const t0 = Date.now();
      const report = await engine.drain('flows-budget', { budgetMs: 1_500, idleGraceMs: 1_500 });
      const took = Date.now() - t0;
      expect(report.completed).toBe(1);
      expect(took).toBeLessThan(5_000);
      expect(metrics.named(METRIC.flowRunsParked).map((r) => r.properties.on)).toEqual(['response']);
      const s = await engine.flows!.get(id);
      expect(s?.status).toBe('Running');
      expect(s?.steps.ask?.pendingCorrelationId).toBeDefined();
    }, 120_000);

    it('refuses a flows queue that is another queue, and timings that contradict each other', async () => {
      // the options are checked before anything is opened: no store is given (injected stores would stay open)
      const store = target.name === 'sqlserver' ? ({ kind: 'sqlserver', connectionString: process.env.MSSQL_CONNECTION_STRING! } as const) : await target.store();
      await expect(
        createEngine({ store, schema: target.schema, logger: silentLogger, queues: { a: { handler: async () => 1 } }, flows: { registry: new FlowRegistry(), queue: 'a' } }),
      ).rejects.toThrow(/flows.queue 'a' is already a worker, built-in or dead-letter queue/);
      await expect(
        createEngine({ store, schema: target.schema, logger: silentLogger, queues: { a: { handler: async () => 1 } }, flows: { registry: new FlowRegistry(), timings: { leaseDurationMs: 10_000, leaseRenewIntervalMs: 20_000 } } }),
      ).rejects.toThrow(/leaseRenewIntervalMs must be above 0 and below leaseDurationMs/);
    });
  });
}
