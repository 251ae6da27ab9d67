// Recovery routing at scale and under races, over real stores (PGlite always; the PostgreSQL server with PG_URL;
// SQL Server with MSSQL_CONNECTION_STRING): claim first (the POST and the sweep cannot both route), one reference
// job per registration (memory flat in the number of registrations), each callback sent exactly once, and the cap
// on registrations per correlation id.
import { skipOnGap } from './engine-gaps';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildEnvelope } from '../../shared/channel/envelope';
import { RegistrationLimitError, ResponseChannel } from '../../shared/channel/response-channel';
import { sweepChannel } from '../../shared/channel/sweep';
import { CALLBACK_QUEUE } from '../../shared/queue-names';
import { loadConfig } from '../../shared/settings';
import { callbackSender } from '../../shared/handlers/callback-sender';
import { silentLogger } from '../../shared/log';
import { PermanentJobError } from '../../shared/transport/job';
import type { TransportStore } from '../../shared/transport/types';
import { WakeSignal } from '../../shared/transport/wake';
import { sleep } from '../support/messages';
import { channelFixtures, type ChannelHarness } from './channel-fixtures';

const SECRET = 'contract-test-secret-0123456789';
const REGISTRATIONS = 1000;
const PAYLOAD_CHARS = 262_000;
const config = { ...loadConfig({}).channel, deliveryConfirmationTimeoutMs: 1, maxRegistrationsPerCorrelationId: REGISTRATIONS };

/** A loopback receiver that counts the POSTs per path. */
async function receiver(): Promise<{ server: Server; port: number; hits: Map<string, number>; bodies: number }> {
  const hits = new Map<string, number>();
  const state = { bodies: 0 };
  const server = createServer((req, res) => {
    let size = 0;
    req.on('data', (c: Buffer) => (size += c.length));
    req.on('end', () => {
      if (size > PAYLOAD_CHARS) state.bodies++;
      hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    hits,
    get bodies() {
      return state.bodies;
    },
  };
}

/** Drains the callbacks queue through the real sender, `parallel` at a time, until it stays empty. */
async function drainCallbacks(transport: TransportStore, send: ReturnType<typeof callbackSender>, parallel = 16): Promise<number> {
  let sent = 0;
  for (let empty = 0; empty < 3; ) {
    const batch = await transport.claim(CALLBACK_QUEUE, parallel, 60_000);
    if (batch.length === 0) {
      empty++;
      await sleep(20);
      continue;
    }
    empty = 0;
    await Promise.all(
      batch.map(async (m) => {
        await send(
          { id: m.id, queue: m.queue, payload: JSON.parse(m.payloadJson), payloadJson: m.payloadJson, headers: m.headers, attempt: m.attempt, createdAt: m.createdAt },
          { signal: new AbortController().signal, log: silentLogger },
        );
        sent++;
      }),
    );
    await transport.ack(batch);
  }
  return sent;
}

for (const fixture of channelFixtures()) {
  if (fixture.skipReason) console.warn(`[contract:${fixture.name}] recovery routing skipped: ${fixture.skipReason}`);
  describe.skipIf(fixture.skipReason !== undefined)(`[${fixture.name}] recovery routing`, () => {
    let h: ChannelHarness;
    let transport: TransportStore;
    let channel: ResponseChannel;

    beforeAll(async () => {
      h = await fixture.create();
      transport = await h.transport();
      await h.store.ensureSchema();
      channel = new ResponseChannel(h.store, new WakeSignal(), config, silentLogger);
    });
    afterAll(async () => h?.close());

    it(`${REGISTRATIONS} registrations × a 262 KB payload: routing memory stays flat, the sweep racing the POST routes nothing more, each callback is sent once`, async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'merge');
      const rx = await receiver();
      try {
        const corr = `many-${randomUUID()}`;
        for (let i = 0; i < REGISTRATIONS; i++) await channel.registerCallback(corr, `http://127.0.0.1:${rx.port}/cb/${i}`, 3_600_000);
        const payload = { blob: 'x'.repeat(PAYLOAD_CHARS) };

        // the sweep runs again and again while the POST routes (DELIVERY_CONFIRMATION_TIMEOUT_MS = 1: overdue at once)
        let sweeping = true;
        let sweptRoutes = 0;
        const sweeps = (async () => {
          while (sweeping) {
            sweptRoutes += (await sweepChannel(channel, { deliveryConfirmationTimeoutMs: 1, pruneIntervalMs: 3_600_000 }, silentLogger)).routed;
            await sleep(5);
          }
        })();
        const baseline = process.memoryUsage();
        let peakHeap = baseline.heapUsed;
        let peakRss = baseline.rss;
        const sampler = setInterval(() => {
          const m = process.memoryUsage();
          peakHeap = Math.max(peakHeap, m.heapUsed);
          peakRss = Math.max(peakRss, m.rss);
        }, 2);
        const started = performance.now();
        const published = await channel.publishResponse({ correlationId: corr, payload, final: true }, { confirm: false });
        const routeMs = performance.now() - started;
        clearInterval(sampler);
        await sleep(50); // let a sweep that was mid-flight finish its pass
        sweeping = false;
        await sweeps;

        const heapMb = (peakHeap - baseline.heapUsed) / 1e6;
        const rssMb = (peakRss - baseline.rss) / 1e6;
        console.log(`[${fixture.name}] routing ${REGISTRATIONS} registrations × ${PAYLOAD_CHARS} chars: ${routeMs.toFixed(0)} ms, heap +${heapMb.toFixed(1)} MB, rss +${rssMb.toFixed(1)} MB`);
        // One copy of the payload per registration (the old routing) is 1,000 × 262 KB = 262 MB of strings alone.
        expect(heapMb).toBeLessThan(64);
        expect(published.delivery).toBe('recovery');
        // The POST or a sweep that saw the stored row first routes it, never both (the claim comes first): at most
        // one sweep route, and below exactly REGISTRATIONS callback jobs are drained (both routing would give twice that).
        expect(sweptRoutes).toBeLessThanOrEqual(1);
        expect(await h.store.loadRegistrations(corr)).toEqual([]); // final: consumed with the route

        const send = callbackSender({ allowedHosts: [`127.0.0.1:${rx.port}`], secret: SECRET, timeoutMs: 30_000, holdMs: 3_600_000 }, h.store);
        const drainStarted = performance.now();
        expect(await drainCallbacks(transport, send)).toBe(REGISTRATIONS);
        console.log(`[${fixture.name}] ${REGISTRATIONS} callbacks of 262 KB sent in ${(performance.now() - drainStarted).toFixed(0)} ms`);
        expect(rx.hits.size).toBe(REGISTRATIONS);
        expect([...rx.hits.values()].every((n) => n === 1)).toBe(true);
        expect(rx.bodies).toBe(REGISTRATIONS); // every body carried the payload read from the row
        // a sweep after everything was sent routes nothing again
        expect((await sweepChannel(channel, { deliveryConfirmationTimeoutMs: 1, pruneIntervalMs: 3_600_000 }, silentLogger)).routed).toBe(0);
        expect(await transport.claim(CALLBACK_QUEUE, 10, 1000)).toEqual([]);
      } finally {
        await new Promise((r) => rx.server.close(r));
      }
    }, 240_000);

    it('concurrent routers of one response (POST, sweep, retries): exactly one routes, one job per registration', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'merge');
      const corr = `race-${randomUUID()}`;
      const regs = await Promise.all([1, 2, 3].map((i) => channel.registerCallback(corr, `https://hooks.example.com/${i}`, 60_000)));
      const id = randomUUID();
      const envelope = buildEnvelope({ payload: 'r', final: false });
      await h.store.insertMessage(id, corr, envelope, 60_000);
      const peer = new ResponseChannel(await h.openPeer(), new WakeSignal(), config, silentLogger);
      const outcomes = await Promise.all([
        ...Array.from({ length: 6 }, (_, i) => (i % 2 ? peer : channel).routeToRecovery(id, corr, envelope)),
        sweepChannel(peer, { deliveryConfirmationTimeoutMs: 1, pruneIntervalMs: 3_600_000 }, silentLogger).then((r) => (r.routed > 0 ? 'routed' : 'already-routed')),
      ]);
      expect(outcomes.filter((o) => o === 'routed')).toHaveLength(1);
      expect(outcomes.filter((o) => o !== 'routed').every((o) => o === 'already-routed')).toBe(true);
      const jobs = (await transport.claim(CALLBACK_QUEUE, 100, 30_000)).filter((j) => JSON.parse(j.payloadJson).messageId === id);
      expect(jobs.map((j) => JSON.parse(j.payloadJson).registrationId).sort()).toEqual(regs.map((r) => r.registrationId).sort());
      await transport.ack(jobs);
      expect(await h.store.loadRegistrations(corr)).toHaveLength(3); // not final: the registrations stay
    });

    it('the registration cap: one beyond MAX_REGISTRATIONS_PER_CORRELATION_ID is refused, also under concurrent saves', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'merge');
      const capped = new ResponseChannel(h.store, new WakeSignal(), { ...config, maxRegistrationsPerCorrelationId: 3 }, silentLogger);
      const corr = `cap-${randomUUID()}`;
      const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => capped.registerCallback(corr, `https://hooks.example.com/${i}`, 60_000)));
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
      for (const r of results.filter((x) => x.status === 'rejected')) {
        expect((r as PromiseRejectedResult).reason).toBeInstanceOf(RegistrationLimitError);
        expect(String((r as PromiseRejectedResult).reason.message)).toContain('MAX_REGISTRATIONS_PER_CORRELATION_ID');
      }
      const stored = await h.store.loadRegistrations(corr);
      expect(stored).toHaveLength(3);
      // re-saving one of the three is an update, not a fourth; after a delete there is room again
      expect(await h.store.saveRegistration(corr, stored[0]!.registrationId, stored[0]!.stateJson, 60_000, 3)).toBeInstanceOf(Date);
      expect(await h.store.saveRegistration(corr, randomUUID(), '{}', 60_000, 3)).toBeNull();
      await h.store.deleteRegistration(corr, stored[0]!.registrationId);
      await expect(capped.registerCallback(corr, 'https://hooks.example.com/again', 60_000)).resolves.toMatchObject({ registrationId: expect.any(String) });
      // expired registrations do not count
      const other = `cap-exp-${randomUUID()}`;
      for (let i = 0; i < 3; i++) await h.store.saveRegistration(other, randomUUID(), '{}', 1, 3);
      await sleep(20);
      expect(await h.store.saveRegistration(other, randomUUID(), '{}', 60_000, 3)).toBeInstanceOf(Date);
    });

    it('a callback keeps its row past its expiry so prune leaves it; a row pruned anyway is a dead letter, not a silent ack', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'merge');
      const corr = `hold-${randomUUID()}`;
      await channel.registerCallback(corr, 'http://127.0.0.1:9/hold', 60_000);
      const id = randomUUID();
      const envelope = buildEnvelope({ payload: { kept: true }, final: true });
      await h.store.insertMessage(id, corr, envelope, 300); // expires in 300 ms
      expect(await channel.routeToRecovery(id, corr, envelope)).toBe('routed');
      const [job] = (await transport.claim(CALLBACK_QUEUE, 100, 30_000)).filter((j) => JSON.parse(j.payloadJson).messageId === id);
      expect(await h.store.holdForCallback(id, 60_000)).toBe(envelope); // an attempt: claimed again and held
      await sleep(400);
      expect(await h.store.pruneExpiredBatch('messages')).toBeGreaterThanOrEqual(0);
      expect(await h.store.holdForCallback(id, 1)).toBe(envelope); // still there; a shorter hold never shortens it

      const gone = randomUUID();
      await h.store.insertMessage(gone, corr, envelope, 1);
      await sleep(20);
      while ((await h.store.pruneExpiredBatch('messages')) > 0);
      const send = callbackSender({ allowedHosts: ['127.0.0.1:9'], secret: SECRET, timeoutMs: 1000, holdMs: 60_000 }, h.store);
      const ref = { ...JSON.parse(job!.payloadJson), messageId: gone };
      await expect(send({ id: job!.id, queue: CALLBACK_QUEUE, payload: ref, payloadJson: JSON.stringify(ref), headers: {}, attempt: 1, createdAt: new Date() }, { signal: new AbortController().signal, log: silentLogger })).rejects.toBeInstanceOf(PermanentJobError);
      await transport.ack([job!]);
    });
  });
}
