// Statements per run at the wire (issue 26): example-approval with an immediate approver (a code handler on
// `approvals`) costs at most 12 statements a run that reach the database, every one counted: the start, the
// flows and approvals jobs' claims and acks, the checkpoints, the approval job's publish and the response taken
// by the waiting run. Counted by wrapping the drivers (bench/wire-count.ts): every query a pg connection sends
// (BEGIN/COMMIT included) and every PGlite query. The runs are awaited through in-memory metrics, so the test's
// own waiting reads nothing.
import { afterAll, describe, expect, it } from 'vitest';
import { countWire } from '../../bench/wire-count';
import { appFlows } from '../../flows';
import { createEngine, silentLogger, type Engine } from '../../shared';
import { MemoryMetrics } from '../../shared/telemetry/metrics';
import { METRIC } from '../../shared/telemetry/metric-names';
import { engineTargets } from './engine-targets';

const RUNS = 40;
const MAX_PER_RUN = 12;
/**
 * Where the store carries jobs (PostgreSQL, PGlite: every target here), the start job rides on the run's create and
 * the approval request on the breadcrumb's checkpoint: two statements fewer than publishing them on their own (7.0 a
 * run before, 4.5 to 5.5 with them carried, claims and acks batching as they may).
 */
const MAX_PER_RUN_CARRIED = 6;

for (const target of engineTargets('flowstmts')) {
  describe.skipIf(target.skip !== undefined)(`flows: statements per run at the wire (${target.name})`, () => {
    const engines: Engine[] = [];
    afterAll(async () => {
      for (const e of engines) await e.close();
      await target.cleanup();
    });

    it(`example-approval with an immediate approver: at most ${MAX_PER_RUN} statements a run, two flow-state UPDATEs`, async () => {
      const metrics = new MemoryMetrics();
      const engine = await createEngine({
        store: target.store(),
        schema: target.schema,
        logger: silentLogger,
        metrics,
        queues: { approvals: { handler: async () => ({ approved: true }) } },
        flows: { registry: appFlows },
      });
      engines.push(engine);
      const stop = new AbortController();
      const running = engine.run([...engine.queues, 'flows', 'callbacks'], { signal: stop.signal });
      const ended = () => metrics.named(METRIC.flowRunsEnded).length;
      const untilEnded = async (n: number) => {
        const t0 = Date.now();
        while (ended() < n) {
          if (Date.now() - t0 > 60_000) throw new Error(`only ${ended()} of ${n} runs ended in 60 s`);
          await new Promise((r) => setTimeout(r, 10));
        }
      };
      try {
        // warm-up: schema checks, pools, prepared paths
        await engine.flows.start('example-approval', { item: 'warm-up' }, { id: 'warm-up' });
        await untilEnded(1);
        const wire = countWire();
        try {
          await Promise.all(Array.from({ length: RUNS }, (_, i) => engine.flows.start('example-approval', { item: `i-${i}` }, { id: `run-${i}` })));
          await untilEnded(RUNS + 1);
        } finally {
          wire.stop();
        }
        const perRun = wire.total() / RUNS;
        // every write of a run's row after its creation: a checkpoint (its step rows in the same statement), a lease renewal
        const flowUpdates = [...wire.byStatement.entries()].filter(([sql]) => /^(WITH run AS \()?UPDATE \S*asyncresponse_flow_state/.test(sql)).reduce((a, [, n]) => a + n, 0) / RUNS;
        console.info(`[flows statements ${target.name}] ${perRun.toFixed(2)} statements a run; flow-state UPDATEs ${flowUpdates.toFixed(2)} a run`, Object.fromEntries(wire.byStatement));
        expect(perRun).toBeLessThanOrEqual(MAX_PER_RUN);
        expect(perRun).toBeLessThanOrEqual(MAX_PER_RUN_CARRIED);
        const count = (pattern: RegExp) => [...wire.byStatement.entries()].filter(([sql]) => pattern.test(sql)).reduce((a, [, n]) => a + n, 0) / RUNS;
        // the start: one statement, the create carrying its start job; no publish statement of its own anywhere
        expect(count(/^WITH run AS \(INSERT INTO \S*asyncresponse_flow_state/)).toBe(1);
        expect(count(/^INSERT INTO \S*asyncresponse_flow_state/)).toBe(0);
        expect(count(/^WITH src AS/)).toBe(0);
        // two UPDATEs: the approval's breadcrumb (reserve's completion rides on it, written before the trigger) and the
        // end (the approval taken in process and the cool-off ride on it, with the lease's release)
        expect(flowUpdates).toBeGreaterThanOrEqual(2);
        expect(flowUpdates).toBeLessThanOrEqual(2.2);
        for (let i = 0; i < RUNS; i++) {
          const s = await engine.flows.get(`run-${i}`);
          expect(s?.status).toBe('Succeeded');
          expect(Object.keys(s!.steps)).toEqual(['reserve', 'approve', 'cool-off']);
          expect(JSON.parse(s!.steps.approve!.resultJson!)).toEqual({ approved: true });
          expect(await engine.stores.flows.observeLease(`run-${i}`)).toBe('unheld');
        }
        // answered in process: nothing parked, no registration routed, no wake-up
        expect(metrics.named(METRIC.flowRunsParked)).toEqual([]);
      } finally {
        stop.abort();
        await running;
      }
    }, 180_000);
  });
}
