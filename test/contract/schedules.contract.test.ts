// The schedules table (issue 16 §1) on PGlite and the PostgreSQL server: the upsert keeps the next slot when only
// the payload changes and re-applying an unchanged definition changes nothing; the due seek; a firing is the
// compare-and-set advance plus its jobs in one transaction, so of several evaluators of one slot exactly one
// advances and one job exists, on a queue or on every subscription of a topic; pause, resume, delete and list.

import { describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { silentLogger } from '../../shared/log';
import { createScheduleService, type ScheduleService } from '../../shared/schedules/service';
import { occurrenceId } from '../../shared/schedules/occurrence-id';
import { SCHEDULE_SLOT_HEADER, type ScheduleDefinition, type ScheduleStore } from '../../shared/schedules/types';
import { channelNames } from '../../shared/sql/identifiers';
import type { PgClient } from '../../shared/stores/postgres/client';
import { openPgPool, openPglite } from '../../shared/stores/postgres/connect';
import { openPostgresStoresOn, type OpenedStores } from '../../shared/stores/open';
import { topicCopyId } from '../../shared/transport/topic-names';
import type { TransportStore } from '../../shared/transport/types';
import { openForDescribe } from '../support/lifecycle';
import { newSchema, PG_SKIP_REASON } from './fixtures';

const POOL = { max: 4, min: 0, connectTimeoutMs: 5000, requestTimeoutMs: 30_000 };
const LOCK = 30_000;

interface Opened {
  transport: TransportStore;
  schedules: ScheduleStore;
}
interface ScheduleHarness extends Opened {
  /** Another store set on its own connections (PostgreSQL server only; PGlite has one session). */
  openPeer?: () => Promise<Opened>;
  /** Moves a schedule's next slot (the database clock cannot be moved). */
  setNextSlot(name: string, at: Date): Promise<void>;
  close(): Promise<void>;
}

async function open(client: PgClient, schema: string): Promise<OpenedStores> {
  const stores = await openPostgresStoresOn(
    client,
    { schema, table: 'asyncresponse_transport_messages', autoCreateSchema: true, logger: silentLogger },
    { names: channelNames(schema, DEFAULT_CHANNEL_TABLES, 'postgres'), autoCreateSchema: true, logger: silentLogger },
  );
  await stores.transport.ensureSchema();
  return stores;
}

const setNext = (client: PgClient, schema: string) => async (name: string, at: Date) => {
  await client.query(`UPDATE "${schema}"."asyncresponse_transport_messages_schedules" SET next_slot = $2 WHERE name = $1`, [name, at]);
};

const fixtures: Array<{ name: string; skipReason?: string; create(): Promise<ScheduleHarness> }> = [
  {
    name: 'pglite',
    async create() {
      const schema = newSchema();
      const client = await openPglite('memory://');
      const stores = await open(client, schema);
      return { transport: stores.transport, schedules: stores.schedules!, setNextSlot: setNext(client, schema), close: () => stores.close() };
    },
  },
  {
    name: 'postgres',
    skipReason: PG_SKIP_REASON,
    async create() {
      const schema = newSchema();
      const url = process.env.PG_URL!;
      const client = openPgPool(url, POOL);
      const stores = await open(client, schema);
      const peers: OpenedStores[] = [];
      return {
        transport: stores.transport,
        schedules: stores.schedules!,
        setNextSlot: setNext(client, schema),
        openPeer: async () => {
          const peer = await open(openPgPool(url, POOL), schema);
          peers.push(peer);
          return { transport: peer.transport, schedules: peer.schedules! };
        },
        close: async () => {
          for (const p of peers) await p.close();
          await client.query(`DROP SCHEMA "${schema}" CASCADE`);
          await stores.close();
        },
      };
    },
  },
];

const def = (name: string, over: Partial<ScheduleDefinition> = {}): ScheduleDefinition => ({
  name,
  target: { kind: 'queue', name: 'worker' },
  cron: '0 0 * * * *',
  timeZone: 'UTC',
  payloadJson: '{"n":9007199254740993}',
  headers: { tenant: 'a' },
  paused: false,
  misfire: { policy: 'skip' },
  ...over,
});

async function drain(store: TransportStore, queue: string) {
  const out: Array<{ id: string; payloadJson: string; headers: Record<string, string> }> = [];
  for (;;) {
    const batch = await store.claim(queue, 50, LOCK);
    if (batch.length === 0) return out;
    out.push(...batch.map((c) => ({ id: c.id, payloadJson: c.payloadJson, headers: c.headers })));
    await store.ack(batch);
  }
}

function service(store: ScheduleStore, inserted: string[] = []): ScheduleService {
  return createScheduleService({
    store,
    maxMessageBytes: 256 * 1024,
    targetProblem: (t) => (t.kind === 'queue' && t.name === 'worker') || (t.kind === 'topic' && t.name === 'news') ? null : `no ${t.kind} '${t.name}'`,
    jobsInserted: (queues) => inserted.push(...queues),
    logger: silentLogger,
  });
}

for (const fixture of fixtures) {
  describe.skipIf(fixture.skipReason !== undefined)(`schedules contract: ${fixture.name}${fixture.skipReason ? ` (skipped: ${fixture.skipReason})` : ''}`, () => {
    const h = openForDescribe(() => fixture.create());

    it('upsert creates, re-applying the same definition changes nothing, a payload change keeps the next slot, a cron change moves it', async () => {
      const now = await h.schedules.now();
      const first = new Date(Math.ceil(now.getTime() / 3600_000) * 3600_000);
      const created = await h.schedules.upsert(def('u1'), first);
      expect(created).toMatchObject({ created: true, changed: true });
      expect(created.row).toMatchObject({ name: 'u1', target: { kind: 'queue', name: 'worker' }, payloadJson: '{"n":9007199254740993}', headers: { tenant: 'a' }, paused: false, lastSlot: null });
      expect(created.row.nextSlot?.toISOString()).toBe(first.toISOString());

      const again = await h.schedules.upsert(def('u1'), new Date(first.getTime() + 3600_000));
      expect(again).toMatchObject({ created: false, changed: false });
      expect(again.row.nextSlot?.toISOString()).toBe(first.toISOString());
      expect(again.row.updatedAt.getTime()).toBe(created.row.updatedAt.getTime());

      const payload = await h.schedules.upsert(def('u1', { payloadJson: '{"n":2}' }), new Date(first.getTime() + 3600_000));
      expect(payload).toMatchObject({ created: false, changed: true });
      expect(payload.row.payloadJson).toBe('{"n":2}');
      expect(payload.row.nextSlot?.toISOString()).toBe(first.toISOString());

      const moved = new Date(first.getTime() + 1800_000);
      const cron = await h.schedules.upsert(def('u1', { cron: '0 30 * * * *' }), moved);
      expect(cron.changed).toBe(true);
      expect(cron.row.nextSlot?.toISOString()).toBe(moved.toISOString());

      // names compare exactly: case and trailing spaces make other schedules
      expect((await h.schedules.upsert(def('U1'), first)).created).toBe(true);
      expect(await h.schedules.get('u1 ')).toBeNull();
      expect((await h.schedules.get('U1'))?.name).toBe('U1');
    });

    it('due: only unpaused schedules whose next slot has come, soonest first; soonest reads the earliest', async () => {
      const now = await h.schedules.now();
      await h.schedules.upsert(def('d-later'), new Date(now.getTime() + 3600_000));
      await h.schedules.upsert(def('d-b'), new Date(now.getTime() - 2000));
      await h.schedules.upsert(def('d-a'), new Date(now.getTime() - 5000));
      await h.schedules.upsert(def('d-paused', { paused: true }), new Date(now.getTime() - 9000));
      const due = await h.schedules.due(100);
      const names = due.rows.map((r) => r.name).filter((n) => n.startsWith('d-'));
      expect(names).toEqual(['d-a', 'd-b']);
      expect(due.now.getTime()).toBeGreaterThanOrEqual(now.getTime());
      const soonest = await h.schedules.soonest();
      expect(soonest.nextSlot!.getTime()).toBeLessThanOrEqual(now.getTime() - 5000);
      for (const n of ['d-later', 'd-b', 'd-a', 'd-paused']) expect(await h.schedules.delete(n)).toBe(true);
      expect(await h.schedules.delete('d-a')).toBe(false);
    });

    it('a firing is a compare-and-set: the second of two with one expected slot advances nothing and inserts nothing', async () => {
      const now = await h.schedules.now();
      const slot = new Date(Math.floor(now.getTime() / 1000) * 1000 - 1000);
      await h.schedules.upsert(def('cas', { target: { kind: 'queue', name: 'cas-q' } }), slot);
      const job = { id: occurrenceId('cas', slot), payloadJson: '{"n":9007199254740993}', headers: { [SCHEDULE_SLOT_HEADER]: slot.toISOString() } };
      const firing = { name: 'cas', expectedNext: slot, lastSlot: slot, nextSlot: new Date(slot.getTime() + 3600_000), target: { kind: 'queue' as const, name: 'cas-q' }, jobs: [job] };
      expect(await h.schedules.fire(firing)).toEqual({ advanced: true, queues: ['cas-q'], inserted: 1 });
      expect(await h.schedules.fire(firing)).toEqual({ advanced: false, queues: [], inserted: 0 });
      const row = await h.schedules.get('cas');
      expect(row?.lastSlot?.toISOString()).toBe(slot.toISOString());
      expect(row?.nextSlot?.toISOString()).toBe(new Date(slot.getTime() + 3600_000).toISOString());
      const jobs = await drain(h.transport, 'cas-q');
      expect(jobs).toEqual([{ id: job.id, payloadJson: '{"n":9007199254740993}', headers: job.headers }]);
      // the job consumed (its row deleted), a stale evaluator's firing still inserts nothing: the row moved on
      expect(await h.schedules.fire(firing)).toMatchObject({ advanced: false, inserted: 0 });
      expect(await drain(h.transport, 'cas-q')).toEqual([]);
    });

    it('a paused schedule is not advanced; resume sets a fresh next slot; pause keeps the one it had', async () => {
      const now = await h.schedules.now();
      const slot = new Date(now.getTime() - 1000);
      await h.schedules.upsert(def('p'), slot);
      const paused = await h.schedules.setPaused('p', true, null);
      expect(paused).toMatchObject({ paused: true });
      expect(paused?.nextSlot?.toISOString()).toBe(slot.toISOString());
      const firing = { name: 'p', expectedNext: slot, lastSlot: slot, nextSlot: null, target: { kind: 'queue' as const, name: 'p-q' }, jobs: [{ id: occurrenceId('p', slot), payloadJson: '1', headers: {} }] };
      expect((await h.schedules.fire(firing)).advanced).toBe(false);
      expect(await drain(h.transport, 'p-q')).toEqual([]);
      const fresh = new Date(now.getTime() + 60_000);
      const resumed = await h.schedules.setPaused('p', false, fresh);
      expect(resumed).toMatchObject({ paused: false });
      expect(resumed?.nextSlot?.toISOString()).toBe(fresh.toISOString());
      expect(await h.schedules.setPaused('absent', true, null)).toBeNull();
    });

    it('a topic target fans each slot out to every recorded subscription, once', async () => {
      await h.transport.recordSubscriptions([{ topic: 'news', subscription: 's1' }, { topic: 'news', subscription: 's2' }]);
      const now = await h.schedules.now();
      const slot = new Date(now.getTime() - 500);
      await h.schedules.upsert(def('topical', { target: { kind: 'topic', name: 'news' } }), slot);
      const id = occurrenceId('topical', slot);
      const firing = { name: 'topical', expectedNext: slot, lastSlot: slot, nextSlot: null, target: { kind: 'topic' as const, name: 'news' }, jobs: [{ id, payloadJson: '"hi"', headers: {} }] };
      const outcome = await h.schedules.fire(firing);
      expect(outcome).toMatchObject({ advanced: true, inserted: 2 });
      expect(outcome.queues.sort()).toEqual(['news:s1', 'news:s2']);
      expect((await drain(h.transport, 'news:s1')).map((j) => j.id)).toEqual([topicCopyId(id, 'news:s1')]);
      expect((await drain(h.transport, 'news:s2')).map((j) => j.id)).toEqual([topicCopyId(id, 'news:s2')]);
    });

    it('list: by name, with the definition and the slots', async () => {
      const names = (await h.schedules.list(1000)).map((r) => r.name);
      expect(names).toEqual([...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      expect(names).toEqual(expect.arrayContaining(['U1', 'cas', 'p', 'topical', 'u1']));
      expect((await h.schedules.list(2)).length).toBe(2);
    });

    it('the service: evaluations fire each due slot once, per the misfire policy, with the schedule headers', async () => {
      const inserted: string[] = [];
      const s = service(h.schedules, inserted);
      const put = await s.put('svc', { queue: 'worker', cron: '*/1 * * * * *', payload: { a: 1 }, headers: { x: 'y' }, correlationId: 'c-1', misfire: { catchUp: 3 } });
      expect(put.created).toBe(true);
      // five slots ago: the catch-up of 3 runs the three newest of the missed slots, the on-time ones all run
      const now = await h.schedules.now();
      const base = new Date(Math.floor(now.getTime() / 1000) * 1000 - 120_000);
      await h.setNextSlot('svc', base);
      const report = await s.evaluateDue();
      expect(report.advanced).toBe(1);
      const jobs = await drain(h.transport, 'worker');
      const slots = jobs.map((j) => j.headers[SCHEDULE_SLOT_HEADER]!);
      expect(new Set(slots).size).toBe(jobs.length);
      const late = slots.filter((x) => now.getTime() - new Date(x).getTime() > 60_000);
      expect(late).toHaveLength(3);
      expect(jobs.length).toBeGreaterThanOrEqual(3 + 59);
      expect(jobs.every((j) => j.id === occurrenceId('svc', new Date(j.headers[SCHEDULE_SLOT_HEADER]!)))).toBe(true);
      expect(jobs[0]).toMatchObject({ payloadJson: '{"a":1}', headers: { x: 'y', 'AR-Correlation-Id': 'c-1', 'AR-Schedule': 'svc' } });
      expect(inserted).toContain('worker');
      // evaluated again at once: no slot fires twice (a slot of this every-second schedule may have come due since)
      const latest = Math.max(...slots.map((x) => new Date(x).getTime()));
      const again = await s.evaluateDue();
      const more = await drain(h.transport, 'worker');
      expect(more).toHaveLength(again.jobs);
      expect(more.every((j) => new Date(j.headers[SCHEDULE_SLOT_HEADER]!).getTime() > latest)).toBe(true);
      expect((await s.get('svc'))?.nextSlot!.getTime()).toBeGreaterThan(now.getTime());
      await s.delete('svc');
    });

    it('the service refuses bad input with field errors and touches nothing', async () => {
      const s = service(h.schedules);
      const bad = async (input: unknown) => {
        try {
          await s.put('bad', input);
        } catch (err) {
          return (err as { errors: Array<{ field: string }> }).errors.map((e) => e.field);
        }
        throw new Error('accepted');
      };
      expect(await bad({ queue: 'worker', cron: '61 * * * * *' })).toEqual(['cron']);
      expect(await bad({ queue: 'worker', cron: '0 * * * * *', timeZone: 'Nowhere/Atlantis' })).toEqual(['timeZone']);
      expect(await bad({ queue: 'nope', cron: '0 * * * * *' })).toEqual(['queue']);
      expect(await bad({ topic: 'nope', cron: '0 * * * * *' })).toEqual(['topic']);
      expect(await bad({ queue: 'worker', topic: 'news', cron: '0 * * * * *' })).toEqual(['queue']);
      expect(await bad({ queue: 'worker', cron: '0 * * * * *', misfire: { catchUp: 0 }, headers: { 'AR-X': '1' }, extra: 1 })).toEqual(expect.arrayContaining(['misfire', 'headers.AR-X', 'extra']));
      expect(await s.get('bad')).toBeNull();
    });

    it.skipIf(fixture.name === 'pglite')('evaluators on separate connections racing over the same slots: one job per slot (PostgreSQL server only: PGlite is one session)', async () => {
      const peers = await Promise.all([h.openPeer!(), h.openPeer!(), h.openPeer!()]);
      const services = [h.schedules, ...peers.map((p) => p.schedules)].map((st) => service(st));
      const now = await h.schedules.now();
      await h.schedules.upsert(def('race', { target: { kind: 'queue', name: 'race-q' }, cron: '*/1 * * * * *', misfire: { policy: 'catchUp', max: 50 } }), new Date(now.getTime() - 30_000));
      await h.setNextSlot('race', new Date(Math.floor(now.getTime() / 1000) * 1000 - 30_000));
      for (let round = 0; round < 5; round++) {
        const reports = await Promise.all(services.map((s) => s.evaluateDue()));
        expect(reports.filter((r) => r.advanced > 0).length).toBeLessThanOrEqual(1);
      }
      const jobs = await drain(h.transport, 'race-q');
      const slots = jobs.map((j) => j.headers[SCHEDULE_SLOT_HEADER]);
      expect(jobs.length).toBeGreaterThanOrEqual(30);
      expect(new Set(slots).size).toBe(jobs.length);
    });
  });
}
