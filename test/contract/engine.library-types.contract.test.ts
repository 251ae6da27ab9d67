// The library as a user's program meets it (issue 27, item 10): `engine.flows` is typed present when flows are
// configured, a flows-only engine (`queues: {}`) runs, RawJson comes from the public entry, every problem of the
// options is reported at once, and the policy copies between options and engine in one unit (milliseconds:
// route(queue).policy), while stats() keeps the HTTP answer's seconds with the unit in every key's name.
import { afterAll, describe, expect, expectTypeOf, it } from 'vitest';
import { engineTargets } from './engine-targets';
import { createEngine, EngineOptionsError, FlowRegistry, RawJson, silentLogger, type Engine, type Flows } from '../../shared';

const TARGETS = engineTargets('libtypes', { sqlServer: true });

for (const target of TARGETS) {
  // each test opens one or two engines: on PGlite every schema version is applied first, 20-40 s on a loaded machine
  describe.skipIf(target.skip !== undefined)(`the engine's types and options (${target.name})`, { timeout: 120_000 }, () => {
    if (target.skip) console.warn(`skipped library types contract on ${target.name}: ${target.skip}`);
    const engines: Engine[] = [];
    afterAll(async () => {
      for (const e of engines) await e.close();
      await target.cleanup();
    });

    it('a flows-only engine (queues: {}) starts and runs a flow; engine.flows needs no `!`', async () => {
      const registry = new FlowRegistry().register('double', async (ctx, input: { n: number }) => ctx.step('twice', () => input.n * 2));
      const engine = await createEngine({ store: await target.store(), schema: target.schema, logger: silentLogger, queues: {}, flows: { registry } });
      engines.push(engine);
      expectTypeOf(engine.flows).toEqualTypeOf<Flows>();
      expectTypeOf(engine.flowsQueue).toEqualTypeOf<string>();
      expect(engine.queues).toEqual([]);
      const stop = new AbortController();
      const running = engine.run(undefined, { signal: stop.signal });
      try {
        const { id } = await engine.flows.start('double', { n: 21 });
        const done = await engine.flows.waitForEnd(id, 20_000);
        expect(done?.status).toBe('Succeeded');
        expect(JSON.parse(done!.resultJson!)).toBe(42);
      } finally {
        stop.abort();
        await running;
      }
    });

    it('without flows, engine.flows stays possibly undefined; with neither queues nor flows the options are refused', async () => {
      expectTypeOf<Engine['flows']>().toEqualTypeOf<Flows | undefined>();
      await expect(createEngine({ store: await target.store(), schema: target.schema, logger: silentLogger, queues: {} })).rejects.toThrow(/name at least one worker queue \(or give `flows`/);
    });

    it('EngineOptionsError reports a misspelt key and a bad value together', async () => {
      const options = { store: await target.store(), schema: target.schema, logger: silentLogger, queues: { q: { handler: async () => 1, policy: { maxDeliveryAtempts: 3, concurrency: -1 } } } };
      const err = (await createEngine(options as never).catch((e: unknown) => e)) as EngineOptionsError;
      expect(err).toBeInstanceOf(EngineOptionsError);
      expect(err.problems).toHaveLength(2);
      expect(err.problems[0]).toMatch(/queues\.q\.policy\.maxDeliveryAtempts is not a known option \(did you mean maxDeliveryAttempts\?\)/);
      expect(err.problems[1]).toMatch(/concurrency/);
    });

    it('RawJson is exported; route(queue).policy is the options’ own shape (ms) and copies into new options as it is', async () => {
      expect(new RawJson('{"a":1}').toJSON()).toEqual(JSON.parse('{"a":1}'));
      const policy = { lockTimeoutMs: 45_000, redeliveryDelayMs: 2_000, maxDeliveryAttempts: 4 };
      const engine = await createEngine({ store: await target.store(), schema: target.schema, logger: silentLogger, queues: { q: { handler: async () => 1, policy } } });
      engines.push(engine);
      const copied = engine.route('q')!.policy;
      expect(copied).toMatchObject(policy);
      const stats = await engine.stats('q');
      expect(stats.policy).toMatchObject({ lockTimeoutSeconds: 45, redeliveryDelaySeconds: 2, maxDeliveryAttempts: 4 });
      const again = await createEngine({ store: await target.store(), schema: target.schema, logger: silentLogger, queues: { q: { handler: async () => 1, policy: copied } } });
      engines.push(again);
      expect(again.route('q')!.policy).toEqual(copied);
    });
  });
}
