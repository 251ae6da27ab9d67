// Bytes a flow run's writes send as its steps grow (issue 26, item 2): one run of a 500-step flow (each step returns
// a small object) on PGlite, with the flow store's writes wrapped to measure the ledger each one sends. Run:
// npm run build && node dist/bench/flow-bytes.js (BENCH_FLOW_STEPS, default 500).
import { createEngine, FlowRegistry, silentLogger } from '../shared';
import { serializeFlowState, type FlowState } from '../shared/flows/state';
import { openStores, type Stores } from '../shared/stores/open';
import { DEFAULT_CHANNEL, DEFAULT_POOL } from '../shared/engine/options';

const STEPS = Number(process.env.BENCH_FLOW_STEPS ?? 500);

export async function benchFlowBytes(): Promise<void> {
  const opened = await openStores(
    { store: { kind: 'pglite', dataDir: 'memory://' }, schema: 'public', transportTable: 'asyncresponse_transport_messages', autoCreateSchema: true, pool: DEFAULT_POOL, azureClientId: undefined, channel: DEFAULT_CHANNEL },
    silentLogger,
  );
  const writes: number[] = [];
  const flows = opened.flows;
  const tryUpdate = flows.tryUpdate.bind(flows);
  flows.tryUpdate = (state: FlowState, ...rest) => {
    writes.push(Buffer.byteLength(serializeFlowState(state), 'utf8'));
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
    const total = writes.reduce((a, b) => a + b, 0);
    const at = (k: number) => writes[Math.min(writes.length, Math.max(1, k)) - 1]!;
    console.log(
      `flow bytes: ${STEPS} steps in ${writes.length} writes; the ledger a write sends: #1 ${at(1)} B, #${Math.floor(writes.length / 2)} ${at(Math.floor(writes.length / 2))} B, #${writes.length} ${at(writes.length)} B; ` +
        `${total} B in all (${(total / writes.length).toFixed(0)} B a write; ${((at(writes.length) - at(1)) / Math.max(1, writes.length - 1)).toFixed(0)} B more per write: grows with the steps, not flat)`,
    );
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
