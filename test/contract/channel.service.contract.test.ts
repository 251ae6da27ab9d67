// The response channel's service rules over real stores (PGlite; and the PostgreSQL server with PG_URL).
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResponseChannel } from '../../shared/channel/response-channel';
import { DEFAULT_CHANNEL_TABLES, type ChannelStore } from '../../shared/channel/types';
import { CALLBACK_QUEUE } from '../../shared/queue-names';
import { loadConfig } from '../../shared/settings';
import { RawJson } from '../../shared/json/raw-json';
import { silentLogger } from '../../shared/log';
import { channelNames } from '../../shared/sql/identifiers';
import { PostgresChannelStore } from '../../shared/stores/postgres/channel-store';
import { pgPoolClient, pgliteClient, type PgClient } from '../../shared/stores/postgres/client';
import { PostgresTransportStore } from '../../shared/stores/postgres/store';
import { WakeSignal } from '../../shared/transport/wake';
import { eventually, sleep } from '../support/messages';
import { newSchema, PG_SKIP_REASON } from './fixtures';

const config = {
  ...loadConfig({}).channel,
  heartbeatIntervalMs: 100,
  heartbeatTimeoutMs: 300,
  deliveryConfirmationTimeoutMs: 300,
  deliveryConfirmationPollMs: 20,
  activePollIntervalMs: 50,
};

const targets: Array<[string, () => Promise<PgClient>, string | undefined]> = [
  [
    'pglite',
    async () => {
      const { PGlite } = await import('@electric-sql/pglite');
      return pgliteClient(new PGlite());
    },
    undefined,
  ],
  ['postgres', async () => pgPoolClient(new Pool({ connectionString: process.env.PG_URL, max: 6 })), PG_SKIP_REASON],
];

for (const [name, open, skip] of targets) {
  if (skip) console.warn(`[contract:${name}] channel service skipped: ${skip}`);
  describe.skipIf(skip !== undefined)(`[${name}] response channel service`, () => {
    const schema = newSchema();
    let client: PgClient;
    let transport: PostgresTransportStore;
    let channel: ResponseChannel;
    let other: ResponseChannel; // a second instance: its own local waiters, same database

    beforeAll(async () => {
      client = await open();
      transport = new PostgresTransportStore(client, { schema, table: 'asyncresponse_transport_messages', autoCreateSchema: true, logger: silentLogger });
      const store = new PostgresChannelStore(client, { names: channelNames(schema, DEFAULT_CHANNEL_TABLES, 'postgres'), autoCreateSchema: true, logger: silentLogger });
      const wake = new WakeSignal();
      channel = new ResponseChannel(store, wake, config, silentLogger);
      other = new ResponseChannel(store, wake, config, silentLogger);
      await transport.ensureSchema();
      await store.ensureSchema();
    });
    afterAll(async () => {
      if (name === 'postgres') await client?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client?.close();
    });

    it('a waiter heartbeats its live row past the heartbeat timeout and deletes it when it returns', async () => {
      // A long wait ended by the test (not by the clock), so no check can race the waiter's own return: a 900 ms
      // wait once raced the fourth check on a loaded CI machine.
      const stop = new AbortController();
      const waiting = channel.waitForResponse('hb-1', 30_000, stop.signal);
      await eventually(async () => (await channel.store.countActiveSubscribers('hb-1')) === 1, 'the waiter to register');
      // four checks spread over more than three heartbeat timeouts (300 ms each): the row stays live throughout
      for (let i = 0; i < 4; i++) {
        await sleep(250);
        expect(await channel.store.countActiveSubscribers('hb-1')).toBe(1);
      }
      stop.abort();
      expect(await waiting).toBeNull();
      expect(await channel.store.countActiveSubscribers('hb-1')).toBe(0);
    });

    it('a response taken by a waiter of another instance reports live', async () => {
      const waiting = other.waitForResponse('live-1', 5000);
      // the waiter is live once its subscriber row is written (a fixed pause raced it on a loaded machine)
      await eventually(async () => (await channel.store.countActiveSubscribers('live-1')) === 1, 'the waiter of the other instance to register');
      const result = await channel.publishResponse({ correlationId: 'live-1', payload: 1, final: true });
      expect(result.delivery).toBe('live');
      expect(await waiting).toMatchObject({ correlationId: 'live-1', payload: 1 });
      // a router that comes late (the sweep) finds it acknowledged and routes nothing
      await channel.registerCallback('live-1', 'https://hooks.example.com/late', 60_000);
      expect(await channel.routeToRecovery(result.id, 'live-1', JSON.stringify({ SchemaVersion: 1, Success: true, Payload: 1 }))).toBe('acknowledged');
    });

    it('a live row whose waiter never takes the response: stored without registrations, recovery with them', async () => {
      await channel.store.upsertSubscriber('ghost-1', randomUUID(), 'crashed-instance', 30_000);
      const stored = await channel.publishResponse({ correlationId: 'ghost-1', payload: 'a', final: true });
      expect(stored.delivery).toBe('stored');

      await channel.store.upsertSubscriber('ghost-2', randomUUID(), 'crashed-instance', 30_000);
      const reg = await channel.registerCallback('ghost-2', 'https://hooks.example.com/x', 60_000);
      const routed = await channel.publishResponse({ correlationId: 'ghost-2', payload: 'b', final: true });
      expect(routed.delivery).toBe('recovery');
      const [job] = await transport.claim(CALLBACK_QUEUE, 10, 30_000);
      // a reference: the payload stays in the message row, the registration's state travels as a string
      const payload = JSON.parse(job!.payloadJson);
      expect(payload).toEqual({ messageId: routed.id, correlationId: 'ghost-2', registrationId: reg.registrationId, registration: expect.any(String) });
      expect(JSON.parse(payload.registration)).toMatchObject({ RegistrationId: reg.registrationId, CallbackUrl: 'https://hooks.example.com/x' });
      expect(job!.headers).toEqual({ 'AR-Correlation-Id': 'ghost-2' });
      expect(await channel.store.loadRegistrations('ghost-2')).toEqual([]); // final consumed it
      expect(await channel.waitForResponse('ghost-2', 0)).toBeNull(); // recovery owns it
    });

    it('a payload given as RawJson comes back as the same text: to a waiter (payloadJson), and as the row a callback sends', async () => {
      const text = '{"a":9007199254740993,"b":1e999,"c":123456789012345678901234567890,"d":0.10000000000000000000001}';
      await channel.publishResponse({ correlationId: 'exact-1', payload: new RawJson(text), final: true });
      expect((await channel.waitForResponse('exact-1', 0))?.payloadJson).toBe(text);

      await channel.store.upsertSubscriber('exact-2', randomUUID(), 'crashed-instance', 30_000);
      await channel.registerCallback('exact-2', 'https://hooks.example.com/exact', 60_000);
      const routed = await channel.publishResponse({ correlationId: 'exact-2', payload: new RawJson(text), final: true });
      expect(routed.delivery).toBe('recovery');
      const envelope = await channel.store.holdForCallback(routed.id, 60_000); // what the callback sender reads
      expect(envelope).toContain(`"Payload":${text},`);
    });

    it('routing again enqueues nothing new (the claim comes first); a non-final response keeps the registration', async () => {
      await channel.registerCallback('nf-1', 'https://hooks.example.com/y', 60_000);
      const first = await channel.publishResponse({ correlationId: 'nf-1', payload: 'progress', final: false });
      expect(first.delivery).toBe('recovery');
      // routing it again (the sweep and a confirming publisher can both try) finds it routed and does nothing
      expect(await channel.routeToRecovery(first.id, 'nf-1', JSON.stringify({ SchemaVersion: 1, Success: true, Payload: 'progress', Final: false }))).toBe('already-routed');
      const jobs = await transport.claim(CALLBACK_QUEUE, 10, 30_000);
      expect(jobs.filter((j) => JSON.parse(j.payloadJson).messageId === first.id)).toHaveLength(1);
      expect(await channel.store.loadRegistrations('nf-1')).toHaveLength(1);
    });

    it('a repeated publish of a stored id is never routed again, even with a registration', async () => {
      const id = randomUUID();
      expect((await channel.publishResponse({ correlationId: 'rep-1', id, payload: 1, final: true })).delivery).toBe('stored');
      await channel.registerCallback('rep-1', 'https://hooks.example.com/z', 60_000);
      const again = await channel.publishResponse({ correlationId: 'rep-1', id, payload: 1, final: true });
      expect(again).toMatchObject({ delivery: 'stored', duplicate: true });
      const jobs = await transport.claim(CALLBACK_QUEUE, 50, 30_000);
      expect(jobs.filter((j) => JSON.parse(j.payloadJson).messageId === id)).toHaveLength(0);
    });

    it('routing with no registration left claims nothing (the response stays deliverable)', async () => {
      const r = await channel.publishResponse({ correlationId: 'noreg-1', payload: 1, final: true });
      expect(await channel.routeToRecovery(r.id, 'noreg-1', JSON.stringify({ SchemaVersion: 1, Success: true, Payload: 1 }))).toBe('no-registrations');
      expect(await channel.waitForResponse('noreg-1', 0)).toMatchObject({ id: r.id });
    });

    it('a routing failure after the response is stored does not fail the publish (the sweep routes it later)', async () => {
      const failing: ChannelStore = Object.create(channel.store, {
        routeToCallbacks: {
          value: async () => {
            throw new Error('the route statement failed');
          },
        },
      });
      const broken = new ResponseChannel(failing, new WakeSignal(), config, silentLogger);
      await broken.registerCallback('rf-1', 'https://hooks.example.com/rf', 60_000);
      // the warning goes to the caller's (invocation) logger, not the process one, so it correlates in App Insights
      const warnings: string[] = [];
      const invocation = { ...silentLogger, warn: (m: string) => void warnings.push(m) };
      const r = await broken.publishResponse({ correlationId: 'rf-1', payload: 'x', final: true }, { confirm: false, logger: invocation });
      expect(r.delivery).toBe('stored');
      expect(warnings).toEqual([`response ${r.id} for 'rf-1' is stored, but routing it failed; the channel sweep routes it`]);
      const [row] = await channel.store.loadMessagesById('rf-1', [r.id]);
      expect(row).toMatchObject({ recoveryClaimed: false, ackedAt: null });
    });
  });
}
