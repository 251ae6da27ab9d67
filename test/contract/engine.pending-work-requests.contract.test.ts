// Queue mode: what the table still holds after a drain, and when an instance starts, becomes a drain request, so
// nothing waits for the 5-minute safety-net timer: rows due now get a request now; leases (a peer's that may have
// crashed, or claims a drain could not settle) get one that surfaces when the earliest lapses, at most one
// outstanding per queue. A drain of the queue still running here keeps quiet (it asks when it ends), and an engine
// without drain requests probes nothing. On PGlite (the engine logic is the store's claimOutlook contract-tested
// on every store in transport.claim-outlook.contract.test.ts).
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { DrainAnnouncer } from '../../shared/drain-requests/sender';
import { createEngine, type Engine } from '../../shared/index';
import { silentLogger } from '../../shared/log';

interface Call {
  kind: 'now' | 'delayed' | 'lease';
  queue: string;
  ms: number;
}

function recorder(): { announcer: Required<DrainAnnouncer>; calls: Call[] } {
  const calls: Call[] = [];
  return {
    calls,
    announcer: {
      announce: (queue, ms) => void calls.push({ kind: ms > 0 ? 'delayed' : 'now', queue, ms }),
      announceLeaseLapse: (queue, ms) => void calls.push({ kind: 'lease', queue, ms }),
    },
  };
}

const engines: Engine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) await e.close();
});

async function engine(drainRequests?: DrainAnnouncer, lockTimeoutMs = 20_000): Promise<Engine> {
  const e = await createEngine({
    store: { kind: 'pglite', dataDir: 'memory://' },
    queues: { jobs: { handler: async () => undefined, policy: { lockTimeoutMs } }, other: { handler: async () => undefined } },
    drainRequests,
    logger: silentLogger,
  });
  engines.push(e);
  await e.store.ensureSchema();
  return e;
}

/** A row published behind the engine's back (as SQL, or an instance that is gone, would): its announcement is dropped below. */
async function publishUnannounced(e: Engine, queue: string): Promise<string> {
  const id = randomUUID();
  await e.store.publish([{ id, queue, payloadJson: '{}', headers: {}, delayMs: 0 }]);
  return id;
}
const rawStore = (e: Engine) => e.store;

describe('[pglite] pending work → drain requests (queue mode)', () => {
  it('start-up: a request now for a queue with rows due, one at the lapse for a queue with only leased rows, none for an empty one', async () => {
    const { announcer, calls } = recorder();
    const e = await engine(announcer);
    await publishUnannounced(e, 'jobs');
    await publishUnannounced(e, 'other');
    await rawStore(e).claim('other', 1, 15_000); // a crashed instance's claim
    calls.length = 0; // what the publishes above announced through the engine's stores is not the point here
    expect(await e.announcePending()).toBe(2);
    expect(calls.filter((c) => c.kind === 'now')).toEqual([{ kind: 'now', queue: 'jobs', ms: 0 }]);
    const lease = calls.filter((c) => c.kind === 'lease');
    expect(lease.map((c) => c.queue)).toEqual(['other']);
    expect(lease[0]!.ms).toBeGreaterThan(10_000);
    expect(lease[0]!.ms).toBeLessThanOrEqual(15_000);
    expect(calls).toHaveLength(2); // response, callbacks: empty, nothing announced
  });

  it("after a drain: a request at the lapse of a peer's lease on the queue, none when nothing is leased", async () => {
    const { announcer, calls } = recorder();
    const e = await engine(announcer);
    const drain = () => e.drain('jobs', { budgetMs: 5000, idleGraceMs: 0 });
    await drain();
    expect(calls).toEqual([]); // empty queue, nothing leased: no request (an idle app stays idle)
    await publishUnannounced(e, 'jobs');
    await rawStore(e).claim('jobs', 1, 12_000); // a peer holds it
    calls.length = 0;
    const report = await drain();
    expect(report.claimed).toBe(0);
    expect(calls.map((c) => `${c.kind} ${c.queue}`)).toEqual(['lease jobs']);
    expect(calls[0]!.ms).toBeGreaterThan(8000);
    expect(calls[0]!.ms).toBeLessThanOrEqual(12_000);
  });

  it('a drain stopped by its budget with rows still due adds no request (drainQueues fans out instead)', async () => {
    const { announcer, calls } = recorder();
    const e = await createEngine({
      store: { kind: 'pglite', dataDir: 'memory://' },
      queues: { jobs: { handler: () => new Promise((r) => setTimeout(r, 300)), policy: { concurrency: 1, prefetch: 0, batchSize: 1 } } },
      drainRequests: announcer,
      logger: silentLogger,
    });
    engines.push(e);
    for (let i = 0; i < 5; i++) await publishUnannounced(e, 'jobs');
    calls.length = 0;
    const report = await e.drain('jobs', { budgetMs: 100, idleGraceMs: 0 });
    expect(report).toMatchObject({ stoppedBy: 'budget', claimed: 1, released: 0 });
    expect((await e.store.claimOutlook('jobs')).due).toBe(true); // rows were due when it ended
    expect(calls).toEqual([]);
  });

  it('no probe while another drain of the queue runs here: the last one to end asks', async () => {
    const { announcer, calls } = recorder();
    const e = await engine(announcer);
    await publishUnannounced(e, 'jobs');
    await rawStore(e).claim('jobs', 1, 12_000);
    calls.length = 0;
    const stop = new AbortController();
    const long = e.drain('jobs', { budgetMs: 60_000, idleGraceMs: 60_000, signal: stop.signal });
    await e.drain('jobs', { budgetMs: 5000, idleGraceMs: 0 });
    expect(calls).toEqual([]); // the long drain still runs: it sees the same lease, and asks when it ends
    stop.abort();
    await long;
    expect(calls.map((c) => `${c.kind} ${c.queue}`)).toEqual(['lease jobs']);
  });

  it('without drain requests (timer mode, a library user): no probe, nothing announced', async () => {
    const e = await engine(undefined);
    let probes = 0;
    const store = rawStore(e);
    const original = store.claimOutlook.bind(store);
    store.claimOutlook = (q) => (probes++, original(q));
    await publishUnannounced(e, 'jobs');
    await store.claim('jobs', 1, 12_000);
    await e.drain('jobs', { budgetMs: 5000, idleGraceMs: 0 });
    expect(await e.announcePending()).toBe(0);
    expect(probes).toBe(0);
    await e.store.claimOutlook('jobs'); // the counter does see the engine's probes
    expect(probes).toBe(1);
  });
});

describe('[pglite] a limited queue and a backed-off queue → drain requests when room may come (queue mode)', () => {
  async function limitedEngine(drainRequests: DrainAnnouncer): Promise<Engine> {
    const e = await createEngine({
      store: { kind: 'pglite', dataDir: 'memory://' },
      queues: { capped: { handler: async () => undefined, policy: { concurrencyLimit: 1 } }, other: { handler: async () => undefined } },
      drainRequests,
      logger: silentLogger,
    });
    engines.push(e);
    await e.store.ensureSchema();
    return e;
  }

  it('rows due but no room under the concurrency limit: no request now (no loop), one at the lapse of the lease holding the room', async () => {
    const { announcer, calls } = recorder();
    const e = await limitedEngine(announcer);
    await publishUnannounced(e, 'capped');
    await publishUnannounced(e, 'capped');
    // a peer with the same limit holds the only slot (limited claims count the leases limited claims enrolled)
    expect((await rawStore(e).claimLimited('capped', 1, 15_000, randomUUID(), { concurrency: 1 })).messages).toHaveLength(1);
    calls.length = 0;
    const report = await e.drain('capped', { budgetMs: 3000, idleGraceMs: 0 });
    expect(report.claimed).toBe(0);
    expect(calls.filter((c) => c.queue === 'capped').map((c) => c.kind)).toEqual(['lease']);
    expect(calls.find((c) => c.queue === 'capped')!.ms).toBeGreaterThan(10_000);
  });

  it('a queue a forward target backed off: no request now; one when the backoff ends', async () => {
    const { announcer, calls } = recorder();
    const e = await limitedEngine(announcer);
    await publishUnannounced(e, 'other');
    await rawStore(e).backOffQueue('other', 4_000);
    calls.length = 0;
    const report = await e.drain('other', { budgetMs: 3000, idleGraceMs: 0 });
    expect(report.claimed).toBe(0);
    const asked = calls.filter((c) => c.queue === 'other');
    expect(asked.map((c) => c.kind)).toEqual(['lease']);
    expect(asked[0]!.ms).toBeGreaterThan(3_000);
    expect(asked[0]!.ms).toBeLessThanOrEqual(4_000);
    expect((await e.stats('other')).backoffUntil).toBeInstanceOf(Date);
  });
});
