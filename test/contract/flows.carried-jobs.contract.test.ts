// Jobs a flow-state write carries, on every store opened beside the transport (PGlite, the PostgreSQL server with
// PG_URL, SQL Server with MSSQL_CONNECTION_STRING): a run's create inserts its start job, and an awaited step's
// breadcrumb checkpoint its request, in the same statement or transaction, both or neither; an id already there is
// left alone, and the write says which jobs it inserted (CarriedJob.inserted). Seen through the stores' own APIs;
// postgres.flow-carried-jobs.contract.test.ts pins PostgreSQL's rows and NOTIFY.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { job, LEASE, state, TTL } from './carried-job-fixtures';
import { sleep } from '../support/messages';
import { announce } from './fixtures';
import { closeSharedFlowPglite, flowFixtures, type FlowHarness } from './flow-fixtures';

afterAll(() => closeSharedFlowPglite());


for (const fixture of flowFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] flow-state writes carry jobs`, { timeout: 60_000 }, () => {
    let h: FlowHarness | undefined;
    afterEach(async () => {
      await h?.close();
      h = undefined;
    });
    const open = async () => {
      h = await fixture.create();
      await h.transport.ensureSchema(); // the table the writes carry their jobs into (the app's stores create both)
      return h;
    };
    const claimIds = async (queue: string) => (await h!.transport.claim(queue, 10, LEASE)).map((c) => c.id.toLowerCase());

    it('a create inserts its jobs with the run: one claimable at once, one scheduled; a repeated create inserts neither', async () => {
      const { store, transport } = await open();
      expect(store.carriesJobs).toBe(true);
      const now = job('carry_now', { priority: 3 });
      const later = job('carry_now', { delayMs: 60_000 });
      const id = `run-${randomUUID()}`;
      expect(await store.tryCreate(state(id), TTL, [now, later])).toBe(true);
      expect([now.inserted, later.inserted]).toEqual([true, true]);
      expect((await store.load(id))?.status).toBe('Running');
      const claimed = await transport.claim('carry_now', 10, LEASE);
      expect(claimed.map((c) => c.id.toLowerCase())).toEqual([now.id]);
      expect(claimed[0]).toMatchObject({ payloadJson: '{"n":1}', headers: { h: 'v' }, priority: 3 });
      expect(await transport.queueStats('carry_now', 'carry_now_dlq')).toMatchObject({ ready: 0, delayed: 1, leased: 1 });

      const again = job('carry_now');
      expect(await store.tryCreate(state(id, { inputJson: '{"other":1}' }), TTL, [again])).toBe(false);
      expect(again.inserted).toBe(false);
      expect(await transport.hasMessage('carry_now', again.id)).toBe(false);
      expect((await store.load(id))?.inputJson).toBe('{}'); // the live run is left as it was
    });

    it('an id already there is left alone, and reported as not inserted', async () => {
      const { store, transport } = await open();
      const existing = job('carry_dup');
      await transport.publish([{ id: existing.id, queue: 'carry_dup', payloadJson: '{"existing":true}', headers: {}, delayMs: 0 }]);
      const again = { ...existing, id: existing.id.toUpperCase(), payloadJson: '{"existing":false}' };
      const fresh = job('carry_dup');
      expect(await store.tryCreate(state(`run-${randomUUID()}`), TTL, [again, fresh])).toBe(true);
      expect([again.inserted, fresh.inserted]).toEqual([false, true]);
      const claimed = await transport.claim('carry_dup', 10, LEASE);
      expect(claimed.map((c) => c.id.toLowerCase()).sort()).toEqual([existing.id, fresh.id].sort());
      expect(claimed.find((c) => c.id.toLowerCase() === existing.id)?.payloadJson).toBe('{"existing":true}');
    });

    it('a checkpoint carries its jobs only when it takes: a stale revision or a lost lease inserts none', async () => {
      const { store } = await open();
      const id = `run-${randomUUID()}`;
      expect(await store.tryCreate(state(id), TTL)).toBe(true);
      const lease = randomUUID();
      const taken = await store.acquire(id, lease, LEASE);
      expect(taken).not.toBeNull();
      const next = (rev: number) => ({ ...taken!.state, revision: rev, lastMessage: `rev ${rev}` });
      const stale = job('carry_cp');
      expect(await store.tryUpdate(next(5), 4, TTL, lease, { extendMs: LEASE }, [stale])).toBe(false);
      const other = job('carry_cp');
      expect(await store.tryUpdate(next(1), 0, TTL, randomUUID(), { extendMs: LEASE }, [other])).toBe(false);
      expect([stale.inserted, other.inserted]).toEqual([false, false]);
      expect(await claimIds('carry_cp')).toEqual([]);
      const took = job('carry_cp');
      expect(await store.tryUpdate(next(1), 0, TTL, lease, { extendMs: LEASE }, [took])).toBe(true);
      expect(took.inserted).toBe(true);
      expect(await claimIds('carry_cp')).toEqual([took.id]);
      expect((await store.load(id))?.revision).toBe(1);
      // a lease-less compare-and-swap carries nothing
      await expect(store.tryUpdate(next(2), 1, TTL, undefined, undefined, [job('carry_cp')])).rejects.toThrow(/lease-fenced/);
    });

    it('a create replacing an expired run carries its jobs', async () => {
      const { store } = await open();
      const id = `run-${randomUUID()}`;
      expect(await store.tryCreate(state(id), 1)).toBe(true);
      await sleep(5);
      const start = job('carry_expired');
      expect(await store.tryCreate(state(id), TTL, [start])).toBe(true);
      expect(start.inserted).toBe(true);
      expect(await claimIds('carry_expired')).toEqual([start.id]);
    });
  });
}
