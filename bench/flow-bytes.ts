// Bytes a flow run's writes send as its steps grow (issue 26, item 2): one run of a 500-step flow (each step returns
// a small object) on PGlite, with the flow store's writes wrapped to measure what each one sends: the head and the
// new step rows (flows/step-rows.ts), beside the whole ledger a write sent before the step rows. Run:
// npm run build && node dist/bench/flow-bytes.js (BENCH_FLOW_STEPS, default 500).
import { createEngine, FlowRegistry, silentLogger } from '../shared';
import { serializeFlowState, type FlowState } from '../shared/flows/state';
import { ledgerWrite } from '../shared/flows/step-rows';
import { openStores, type Stores } from '../shared/stores/open';
import { DEFAULT_CHANNEL, DEFAULT_POOL } from '../shared/engine/options';

const STEPS = Number(process.env.BENCH_FLOW_STEPS ?? 500);

export async function benchFlowBytes(): Promise<void> {
  const opened = await openStores(
    { store: { kind: 'pglite', dataDir: 'memory://' }, schema: 'public', transportTable: 'asyncresponse_transport_messages', autoCreateSchema: true, pool: DEFAULT_POOL, azureClientId: undefined, channel: DEFAULT_CHANNEL },
    silentLogger,
  );
  const writes: number[] = [];
  const whole: number[] = [];
  const flows = opened.flows;
  const tryUpdate = flows.tryUpdate.bind(flows);
  flows.tryUpdate = (state: FlowState, ...rest) => {
    const w = ledgerWrite(state);
    writes.push(Buffer.byteLength(w.headJson, 'utf8') + w.rows.reduce((a, r) => a + Buffer.byteLength(r.name, 'utf8') + Buffer.byteLength(r.json, 'utf8') + 4, 0));
    whole.push(Buffer.byteLength(serializeFlowState(state), 'utf8'));
    return tryUpdate(state, ...rest);
  };
  const stores: Stores = { transport: opened.transport, channel: opened.channel, flows, close: () => opened.close() };
  const registry = new FlowRegistry().register('many-steps', async (ctx, n: number) => {
    for (let i = 0; i < n; i++) await ctx.step(`step-${i}`, () => ({ i, ok: true }));
    return n;
  });
  const engine = await createEngine({ store: { stores }, schema: 'public', logger: silentLogger, queues: {}, flows: { registry } });
  const stop = new AbortController();
  const running = engine.run(['flows'], { signal: stop.signal });
  try {
    await engine.flows.start('many-steps', STEPS, { id: 'bytes' });
    const end = await engine.flows.waitForEnd('bytes', 300_000);
    if (end?.status !== 'Succeeded') throw new Error(`the run ended ${end?.status}`);
    const report = (label: string, xs: number[]) => {
      const total = xs.reduce((a, b) => a + b, 0);
      const at = (k: number) => xs[Math.min(xs.length, Math.max(1, k)) - 1]!;
      const mid = Math.floor(xs.length / 2);
      // the first and last writes are the start and the end (the result); the slope is read between #10 and the one before last
      const slope = (at(xs.length - 1) - at(10)) / Math.max(1, xs.length - 11);
      console.log(
        `${label}: #1 ${at(1)} B, #10 ${at(10)} B, #${mid} ${at(mid)} B, #${xs.length - 1} ${at(xs.length - 1)} B, #${xs.length} ${at(xs.length)} B; ` +
          `${total} B in all (${(total / xs.length).toFixed(0)} B a write; ${slope.toFixed(1)} B more per write from #10 on)`,
      );
    };
    console.log(`flow bytes: ${STEPS} steps in ${writes.length} writes`);
    report('  sent (head + new step rows)', writes);
    report('  the whole ledger (what a write sent before the step rows)', whole);
  } finally {
    stop.abort();
    await running;
    await engine.close();
  }
}

if (require.main === module) {
  benchFlowBytes().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
