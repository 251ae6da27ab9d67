// README "Using the engine from your own program": a worker outside Functions, built on the public entry
// (shared/index.ts) alone. It publishes two orders and runs the `orders` queue with the in-code handler of
// handlers/orders.ts until it is stopped. The tests run this file (test/contract/engine.public-api.contract.test.ts).
import { createEngine, type DrainReport, type EngineOptions } from '../shared';
import { ordersHandler } from '../handlers/orders';

export async function runOrdersWorker(store: EngineOptions['store'], signal: AbortSignal, schema?: string): Promise<DrainReport[]> {
  const engine = await createEngine({
    store, // { kind: 'postgres', url } | { kind: 'sqlserver', connectionString } | { kind: 'pglite', dataDir } | { stores } opened already
    schema, // default: public (PostgreSQL), dbo (SQL Server)
    queues: {
      orders: { handler: ordersHandler, policy: { maxDeliveryAttempts: 3, concurrency: 8, batchSize: 8 } },
      audit: { handler: { kind: 'forward', url: 'http://127.0.0.1:9/audit' }, policy: { deadLetter: false } },
    },
    logger: { debug() {}, info: console.log, warn: console.warn, error: console.error },
  });
  try {
    await engine.publishBatch('orders', [
      { payload: { orderId: 'A-1', lines: [{ sku: 'tea', quantity: 2, unitPrice: 3.5 }] } },
      { payload: { orderId: 'A-2', lines: [{ sku: 'cup', quantity: 1, unitPrice: 12 }] }, correlationId: 'order-A-2' },
    ]);
    // No budget: claims until `signal` aborts, then settles what it started and releases what it did not.
    return await engine.run('orders', { signal });
  } finally {
    await engine.close();
  }
}

if (require.main === module) {
  // The program decides where its settings come from; the engine itself reads no environment.
  const url = process.argv[2];
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  void runOrdersWorker(url ? { kind: 'postgres', url } : { kind: 'pglite', dataDir: 'memory://' }, stop.signal).then((r) => console.log(r));
}
