// The durable-flow state store contract (durable-flows.md §4: the shared contract and the custom-store
// checklist) on every store: PGlite always, PostgreSQL with PG_URL, SQL Server with MSSQL_CONNECTION_STRING.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FLOW_STATE_SCHEMA_VERSION, FlowStateTooLargeError, FlowStateUnreadableError, type FlowState, type FlowStepState } from '../../shared/flows/state';
import { FLOW_HEAD_WITH_ROWS_VERSION } from '../../shared/flows/step-rows';
import { skipOnGap } from './engine-gaps';
import { announce } from './fixtures';
import { closeSharedFlowPglite, flowFixtures, type FlowHarness } from './flow-fixtures';

afterAll(() => closeSharedFlowPglite());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MIN = 60_000;

function state(flowId: string, patch: Partial<FlowState> = {}): FlowState {
  const at = new Date().toISOString();
  return {
    schemaVersion: FLOW_STATE_SCHEMA_VERSION,
    revision: 0,
    flowId,
    flowName: 'contract-flow',
    inputJson: '{"n":1}',
    status: 'Running',
    createdAt: at,
    updatedAt: at,
    attempts: 0,
    steps: {},
    values: {},
    ...patch,
  };
}

const fid = () => `flow-${randomUUID()}`;

/** A state as loads report it: createdAt and updatedAt are the row's (the database clock), so they are compared apart. */
function untimed(s: FlowState | null | undefined): Omit<FlowState, 'createdAt' | 'updatedAt'> | null | undefined {
  if (!s) return s;
  const { createdAt: _c, updatedAt: _u, ...rest } = s;
  return rest;
}

/** A load's times are the database's: valid instants near this process's clock (same machine or close by). */
function expectDbTimes(s: FlowState | null) {
  expect(s).not.toBeNull();
  for (const t of [s!.createdAt, s!.updatedAt]) expect(Math.abs(Date.parse(t) - Date.now())).toBeLessThan(5 * MIN);
}

for (const fixture of flowFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] flow state store`, { timeout: 60_000 }, () => {
    let h: FlowHarness | undefined;
    const open = async (options?: { maxStateBytes?: number }) => (h = await fixture.create(options));
    afterEach(async () => {
      await h?.close();
      h = undefined;
    });

    it('create → load round-trips status and a completed step; CAS 0→1 succeeds and shows on load', async () => {
      const { store } = await open();
      const id = fid();
      const s = state(id, { steps: { reserve: { completed: true, resultJson: '{"reserved":"x"}', completedAt: new Date().toISOString() } } });
      expect(await store.tryCreate(s, 10 * MIN)).toBe(true);
      const loaded = await store.load(id);
      expect(untimed(loaded)).toEqual(untimed(s));
      expectDbTimes(loaded);
      const next = { ...s, revision: 1, status: 'Succeeded' as const, resultJson: '42', lastMessage: 'done' };
      expect(await store.tryUpdate(next, 0, 10 * MIN)).toBe(true);
      expect(untimed(await store.load(id))).toEqual(untimed(next));
      expect((await h!.raw(id))?.revision).toBe(1);
      expect((await h!.raw(id))?.status).toBe('Succeeded');
    });

    it('a 1 ms TTL loads null after a short wait; re-creating over the expired id succeeds and clears its lease; delete is true', async () => {
      const { store } = await open();
      const id = fid();
      expect(await store.tryCreate(state(id), 1)).toBe(true);
      await sleep(20);
      expect(await store.load(id)).toBeNull();
      expect(await store.tryCreate(state(id, { lastMessage: 'second' }), 10 * MIN)).toBe(true);
      expect((await store.load(id))?.lastMessage).toBe('second');
      expect(await store.observeLease(id)).toBe('unheld');
      expect(await store.tryDelete(id)).toBe(true);
    });

    it('an expired row that held a lease is replaced with the lease cleared', async () => {
      const { store } = await open();
      const id = fid();
      expect(await store.tryCreate(state(id), 10 * MIN)).toBe(true);
      expect(await store.tryAcquireLease(id, 'A', 10 * MIN)).toBe(true);
      await h!.expire(id);
      expect(await store.tryCreate(state(id, { attempts: 3 }), 10 * MIN)).toBe(true);
      expect(await store.observeLease(id)).toBe('unheld');
      expect((await store.load(id))?.attempts).toBe(3);
      expect((await h!.raw(id))?.revision).toBe(0);
    });

    it('creating a live id again is false and leaves the row alone', async () => {
      const { store } = await open();
      const id = fid();
      expect(await store.tryCreate(state(id, { inputJson: '"first"' }), 10 * MIN)).toBe(true);
      expect(await store.tryCreate(state(id, { inputJson: '"second"' }), 10 * MIN)).toBe(false);
      expect((await store.load(id))?.inputJson).toBe('"first"');
    });

    it(`16 concurrent creates of one id: exactly one true, row at revision 0${fixture.concurrent ? '' : ' (one session: they serialize)'}`, async () => {
      const { store } = await open();
      const id = fid();
      const results = await Promise.all(Array.from({ length: 16 }, (_, i) => store.tryCreate(state(id, { attempts: i }), 10 * MIN)));
      expect(results.filter((r) => r)).toHaveLength(1);
      const winner = results.indexOf(true);
      expect((await store.load(id))?.attempts).toBe(winner);
      expect((await h!.raw(id))?.revision).toBe(0);
    });

    it('leases: acquire, foreign writes refused, stale revision refused, renew and release only for the owner', async () => {
      const { store } = await open();
      const id = fid();
      const s0 = state(id);
      expect(await store.tryCreate(s0, 10 * MIN)).toBe(true);
      expect(await store.tryAcquireLease(id, 'A', MIN)).toBe(true);
      expect(await store.tryAcquireLease(id, 'B', MIN)).toBe(false);
      expect(await store.tryAcquireLease(id, 'A', MIN)).toBe(true); // already ours
      const s1 = { ...s0, revision: 1, attempts: 1 };
      expect(await store.tryUpdate(s1, 0, 10 * MIN, 'B')).toBe(false);
      expect(await store.tryUpdate(s1, 0, 10 * MIN, 'A')).toBe(true);
      expect(await store.tryUpdate(s1, 0, 10 * MIN, 'A')).toBe(false); // stale expected revision
      expect((await h!.raw(id))?.revision).toBe(1);
      expect(await store.tryRenewLease(id, 'B', MIN)).toBe(false);
      expect(await store.tryRenewLease(id, 'A', MIN)).toBe(true);
      await store.releaseLease(id, 'B'); // a no-op
      expect(await store.tryAcquireLease(id, 'B', MIN)).toBe(false);
      await store.releaseLease(id, 'A');
      expect(await store.tryAcquireLease(id, 'B', MIN)).toBe(true);
      // the lease-less compare-and-swap (recovery, operator edits) writes while B holds the lease
      expect(await store.tryUpdate({ ...s1, revision: 2, status: 'Suspended' }, 1, 10 * MIN)).toBe(true);
      expect(await store.tryUpdate({ ...s1, revision: 3 }, 2, 10 * MIN, 'A')).toBe(false);
      expect(await store.tryDelete(id)).toBe(true);
      expect(await store.load(id)).toBeNull();
      expect(await store.tryDelete(id)).toBe(false);
    });

    it('lease expiry: a 250 ms lease becomes stealable; the dead owner cannot renew and its release is a no-op', async () => {
      const { store } = await open();
      const id = fid();
      expect(await store.tryCreate(state(id), 10 * MIN)).toBe(true);
      expect(await store.tryAcquireLease(id, 'dead', 250)).toBe(true);
      expect(await store.tryAcquireLease(id, 'next', MIN)).toBe(false);
      const until = Date.now() + 15_000;
      let stolen = false;
      while (!stolen && Date.now() < until) {
        await sleep(50);
        stolen = await store.tryAcquireLease(id, 'next', MIN);
      }
      expect(stolen).toBe(true);
      expect(await store.tryRenewLease(id, 'dead', MIN)).toBe(false);
      await store.releaseLease(id, 'dead');
      expect(await store.observeLease(id)).toMatchObject({ leaseId: 'next' });
    });

    it('a lapsed lease cannot write a checkpoint, though its owner still shows until someone takes over', async () => {
      const { store } = await open();
      const id = fid();
      expect(await store.tryCreate(state(id), 10 * MIN)).toBe(true);
      expect(await store.tryAcquireLease(id, 'A', 100)).toBe(true);
      await sleep(300);
      expect(await store.tryUpdate(state(id, { revision: 1 }), 0, 10 * MIN, 'A')).toBe(false);
      const seen = await store.observeLease(id);
      expect(seen).not.toBe('unheld');
      if (seen === 'unheld') return;
      expect(seen.leaseId).toBe('A');
      expect(seen.expiresAt.getTime()).toBeLessThan((await store.now()).getTime());
    });

    it('missing flow: load is null; delete, acquire, renew and update are false; release does not throw; observe is unheld', async () => {
      const { store } = await open();
      const id = fid();
      expect(await store.load(id)).toBeNull();
      expect(await store.tryDelete(id)).toBe(false);
      expect(await store.tryAcquireLease(id, 'A', MIN)).toBe(false);
      expect(await store.tryRenewLease(id, 'A', MIN)).toBe(false);
      expect(await store.tryUpdate(state(id, { revision: 1 }), 0, MIN)).toBe(false);
      await expect(store.releaseLease(id, 'A')).resolves.toBeUndefined();
      expect(await store.observeLease(id)).toBe('unheld');
    });

    it('a large state (64 steps × 512 B plus 64 values, about 64 KiB) round-trips untruncated', async () => {
      const { store } = await open();
      const id = fid();
      const steps: FlowState['steps'] = {};
      const values: FlowState['values'] = {};
      for (let i = 0; i < 64; i++) {
        steps[`step-${i}`] = { completed: true, resultJson: JSON.stringify('é'.repeat(250) + String(i).padStart(262, '0')) };
        values[`key-${i}`] = JSON.stringify('v'.repeat(500) + i);
      }
      const s = state(id, { steps, values });
      expect(JSON.stringify(s).length).toBeGreaterThan(64 * 1024);
      expect(await store.tryCreate(s, 10 * MIN)).toBe(true);
      expect(untimed(await store.load(id))).toEqual(untimed(s));
    });

    it('acquire takes the lease and returns the state and the database time in one call; with create, a start inserts if absent', async () => {
      const { store } = await open();
      const id = fid();
      expect(await store.acquire(id, 'lease-a', MIN)).toBeNull(); // no run
      const s = state(id, { startNonce: 'first' });
      const got = await store.acquire(id, 'lease-a', MIN, { state: s, ttlMs: 10 * MIN });
      expect(untimed(got?.state)).toEqual(untimed(s));
      expectDbTimes(got!.state);
      expect(Math.abs(got!.now.getTime() - Date.now())).toBeLessThan(5 * MIN);
      expect(await store.observeLease(id)).toMatchObject({ leaseId: 'lease-a' });
      // another start's job finds the live row: it is not overwritten, and the lease is held
      expect(await store.acquire(id, 'lease-b', MIN, { state: state(id, { startNonce: 'second' }), ttlMs: 10 * MIN })).toBeNull();
      expect(await store.acquire(id, 'lease-b', MIN)).toBeNull();
      // the holder may take it again (extended); its state comes back as stored
      const again = await store.acquire(id, 'lease-a', MIN, { state: state(id, { startNonce: 'second' }), ttlMs: 10 * MIN });
      expect(again?.state.startNonce).toBe('first');
      await store.releaseLease(id, 'lease-a');
      const b = await store.acquire(id, 'lease-b', MIN);
      expect(b?.state.revision).toBe(0);
      expect(await store.observeLease(id)).toMatchObject({ leaseId: 'lease-b' });
    });

    it('acquire with create replaces an expired row (revision 0, its lease cleared and taken anew)', async () => {
      const { store } = await open();
      const id = fid();
      expect(await store.tryCreate(state(id, { startNonce: 'old' }), 1)).toBe(true);
      // past its 1 ms TTL on the database clock (a prepared create and the next call can fit inside that millisecond)
      await sleep(20);
      expect(await store.tryAcquireLease(id, 'lease-old', MIN)).toBe(false); // expired: no lease on a dead row
      const got = await store.acquire(id, 'lease-new', MIN, { state: state(id, { startNonce: 'new' }), ttlMs: 10 * MIN });
      expect(got?.state.startNonce).toBe('new');
      expect(got?.state.revision).toBe(0);
      expect(await store.observeLease(id)).toMatchObject({ leaseId: 'lease-new' });
    });

    it('a lease-fenced checkpoint extends the lease, or releases it, in the same call; a stale lease writes nothing', async () => {
      const { store } = await open();
      const id = fid();
      const got = await store.acquire(id, 'lease-a', 10_000, { state: state(id), ttlMs: 10 * MIN });
      const before = (await store.observeLease(id)) as { expiresAt: Date };
      const one = { ...got!.state, revision: 1, steps: { a: { completed: true, resultJson: '1' } } };
      expect(await store.tryUpdate(one, 0, 10 * MIN, 'lease-b', { extendMs: MIN })).toBe(false);
      expect(await store.tryUpdate(one, 0, 10 * MIN, 'lease-a', { extendMs: MIN })).toBe(true);
      const extended = (await store.observeLease(id)) as { leaseId: string; expiresAt: Date };
      expect(extended.leaseId).toBe('lease-a');
      expect(extended.expiresAt.getTime()).toBeGreaterThan(before.expiresAt.getTime() + 30_000);
      const two = { ...one, revision: 2, status: 'Succeeded' as const };
      expect(await store.tryUpdate(two, 1, 10 * MIN, 'lease-a', { release: true })).toBe(true);
      expect(await store.observeLease(id)).toBe('unheld');
      expect((await store.load(id))?.status).toBe('Succeeded');
      // released: a further fenced write with that lease is refused
      expect(await store.tryUpdate({ ...two, revision: 3 }, 2, 10 * MIN, 'lease-a', { extendMs: MIN })).toBe(false);
    });

    it('schema version: a write of a future version throws RangeError; a seeded future-version row is refused on load', async () => {
      const { store } = await open();
      const id = fid();
      const future = state(id, { schemaVersion: FLOW_STATE_SCHEMA_VERSION + 1 });
      await expect(store.tryCreate(future, MIN)).rejects.toThrow(RangeError);
      expect(() => store.validateCreate(future)).toThrow(RangeError);
      expect(await store.tryCreate(state(id), MIN)).toBe(true);
      await expect(store.tryUpdate({ ...future, revision: 1 }, 0, MIN)).rejects.toThrow(RangeError);
      expect((await h!.raw(id))?.revision).toBe(0);
      const seeded = fid();
      await h!.seed(seeded, JSON.stringify({ ...state(seeded), schemaVersion: FLOW_HEAD_WITH_ROWS_VERSION + 1 }), 0);
      await expect(store.load(seeded)).rejects.toThrow(FlowStateUnreadableError);
      await expect(store.load(seeded)).rejects.toThrow(/schema version 3 is unknown to this release \(it reads 1..2\)/);
    });

    const done = (resultJson: string): FlowStepState => ({ completed: true, resultJson, completedAt: new Date().toISOString() });

    it('step rows: a write stores the completed prefix as rows and sends only the steps completed since the last write', async () => {
      const { store } = await open();
      const id = fid();
      const s0 = state(id);
      expect(await store.tryCreate(s0, 10 * MIN)).toBe(true);
      // a, b completed; c waits; d completed after c: only a and b can be rows (the ledger's order is kept)
      const s1: FlowState = { ...s0, revision: 1, steps: { a: done('1'), b: done('"two"'), c: { startedAt: new Date().toISOString(), pendingCorrelationId: 'k' }, d: done('4') } };
      expect(await store.tryUpdate(s1, 0, 10 * MIN)).toBe(true);
      expect((await h!.stepRows(id)).map((r) => [r.seq, r.name, r.revision])).toEqual([[1, 'a', 1], [2, 'b', 1]]);
      const head1 = JSON.parse((await h!.raw(id))!.stateJson) as FlowState;
      expect(Object.keys(head1.steps)).toEqual(['c', 'd']);
      expect(head1).toMatchObject({ schemaVersion: FLOW_HEAD_WITH_ROWS_VERSION, stepRows: 2, lastStepRow: 'b' });
      const loaded1 = await store.load(id);
      expect(Object.keys(loaded1!.steps)).toEqual(['a', 'b', 'c', 'd']);
      expect(loaded1!.steps.b!.resultJson).toBe('"two"');
      expect(loaded1!.schemaVersion).toBe(FLOW_STATE_SCHEMA_VERSION);
      // c completes: c and d become rows 3 and 4, a and b are not written again (their revision stays 1)
      const s2: FlowState = { ...loaded1!, revision: 2, steps: { ...loaded1!.steps, c: done('3'), e: { startedAt: new Date().toISOString() } } };
      expect(await store.tryUpdate(s2, 1, 10 * MIN)).toBe(true);
      expect((await h!.stepRows(id)).map((r) => [r.seq, r.name, r.revision])).toEqual([[1, 'a', 1], [2, 'b', 1], [3, 'c', 2], [4, 'd', 2]]);
      expect(Object.keys((JSON.parse((await h!.raw(id))!.stateJson) as FlowState).steps)).toEqual(['e']);
      expect(Object.keys((await store.load(id))!.steps)).toEqual(['a', 'b', 'c', 'd', 'e']);
      // a lost compare-and-swap writes no row
      const lost: FlowState = { ...s2, revision: 2, steps: { ...s2.steps, e: done('5') } };
      expect(await store.tryUpdate(lost, 1, 10 * MIN)).toBe(false);
      expect((await h!.stepRows(id)).length).toBe(4);
    });

    it('step rows: a cut prefix (an operator restart) rewrites the rows, drops the stale ones, and steps settle again', async () => {
      const { store } = await open();
      const id = fid();
      expect(await store.tryCreate(state(id), 10 * MIN)).toBe(true);
      const four = { a: done('1'), b: done('2'), c: done('3'), d: done('4') };
      expect(await store.tryUpdate({ ...state(id), revision: 1, steps: four }, 0, 10 * MIN)).toBe(true);
      const loaded = (await store.load(id))!;
      const { c: _c, d: _d, ...kept } = loaded.steps;
      const cut: FlowState = { ...loaded, revision: 2, steps: kept };
      expect(await store.tryUpdate(cut, 1, 10 * MIN)).toBe(true);
      expect((await h!.stepRows(id)).map((r) => r.name)).toEqual(['a', 'b']);
      expect(Object.keys((await store.load(id))!.steps)).toEqual(['a', 'b']);
      const again: FlowState = { ...cut, revision: 3, steps: { ...cut.steps, c: done('"new"') } };
      expect(await store.tryUpdate(again, 2, 10 * MIN)).toBe(true);
      const after = (await store.load(id))!;
      expect(Object.keys(after.steps)).toEqual(['a', 'b', 'c']);
      expect(after.steps.c!.resultJson).toBe('"new"');
    });

    it("step rows: an earlier release's whole ledger (version 1) loads as it is; its next write moves its completed prefix into rows", async () => {
      const { store } = await open();
      const id = fid();
      await h!.seed(id, JSON.stringify(state(id, { steps: { a: done('1'), b: { startedAt: new Date().toISOString() } } })), 0);
      const v1 = (await store.load(id))!;
      expect(Object.keys(v1.steps)).toEqual(['a', 'b']);
      expect(await store.tryUpdate({ ...v1, revision: 1 }, 0, 10 * MIN)).toBe(true);
      expect((await h!.stepRows(id)).map((r) => r.name)).toEqual(['a']);
      expect(Object.keys((await store.load(id))!.steps)).toEqual(['a', 'b']);
    });

    it('step rows: a head that names rows the table does not hold is unreadable, never a run without those steps', async () => {
      const { store } = await open();
      const id = fid();
      await h!.seed(id, JSON.stringify({ ...state(id), schemaVersion: FLOW_HEAD_WITH_ROWS_VERSION, stepRows: 2, lastStepRow: 'b' }), 0);
      await expect(store.load(id)).rejects.toThrow(FlowStateUnreadableError);
      await expect(store.load(id)).rejects.toThrow(/step row 1 is missing/);
    });

    it(`step rows: 12 concurrent writes from one revision, each with its own completed steps: one wins, and only its rows are stored${fixture.concurrent ? '' : ' (one session: they serialize)'}`, async () => {
      const { store } = await open();
      const id = fid();
      expect(await store.tryCreate(state(id), 10 * MIN)).toBe(true);
      expect(await store.tryUpdate({ ...state(id), revision: 1, steps: { a: done('1') } }, 0, 10 * MIN)).toBe(true);
      const base = (await store.load(id))!;
      const writers = Array.from({ length: 12 }, (_, w) => ({ ...base, revision: 2, steps: { ...base.steps, [`w${w}-x`]: done(`${w}`), [`w${w}-y`]: done(`${w}`) } }));
      const won = await Promise.all(writers.map((s) => store.tryUpdate(s, 1, 10 * MIN)));
      expect(won.filter(Boolean)).toHaveLength(1);
      const w = won.indexOf(true);
      expect((await h!.stepRows(id)).map((r) => [r.seq, r.name, r.revision])).toEqual([[1, 'a', 1], [2, `w${w}-x`, 2], [3, `w${w}-y`, 2]]);
      expect(Object.keys((await store.load(id))!.steps)).toEqual(['a', `w${w}-x`, `w${w}-y`]);
    });

    it('step rows: a deleted or pruned run takes its step rows with it', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'foreignKeyBin2');
      const { store } = await open();
      const [a, b] = [fid(), fid()];
      for (const id of [a, b]) {
        expect(await store.tryCreate(state(id), 10 * MIN)).toBe(true);
        expect(await store.tryUpdate({ ...state(id), revision: 1, steps: { x: done('1'), y: done('2') } }, 0, 10 * MIN)).toBe(true);
        expect((await h!.stepRows(id)).length).toBe(2);
      }
      expect(await store.tryDelete(a)).toBe(true);
      expect(await h!.stepRows(a)).toEqual([]);
      await h!.expire(b);
      expect(await store.prune()).toBeGreaterThanOrEqual(1);
      expect(await h!.stepRows(b)).toEqual([]);
    });

    it('step rows: the bytes a checkpoint stores stay flat as the steps grow (200 steps, one a write)', async () => {
      const { store } = await open();
      const id = fid();
      let s = state(id);
      expect(await store.tryCreate(s, 10 * MIN)).toBe(true);
      const headBytes: number[] = [];
      for (let i = 0; i < 200; i++) {
        const next: FlowState = { ...s, revision: s.revision + 1, steps: { ...s.steps, [`step-${i}`]: done(JSON.stringify({ i, ok: true })) } };
        expect(await store.tryUpdate(next, s.revision, 10 * MIN, undefined)).toBe(true);
        s = next;
        headBytes.push(Buffer.byteLength((await h!.raw(id))!.stateJson, 'utf8'));
      }
      // the head holds no completed step: its size does not grow with them (it did: ~60 B more per step)
      expect(headBytes[199]! - headBytes[9]!).toBeLessThanOrEqual(8);
      const rows = await h!.stepRows(id);
      expect(rows.length).toBe(200);
      // each row was written once, by the write that completed its step
      expect(rows.every((r) => r.revision === r.seq)).toBe(true);
      const loaded = (await store.load(id))!;
      expect(Object.keys(loaded.steps)).toEqual(Array.from({ length: 200 }, (_, i) => `step-${i}`));
    });

    it('malformed JSON, a revision mismatch and an id mismatch all throw FlowStateUnreadableError (never null)', async () => {
      const { store } = await open();
      const [a, b, c] = [fid(), fid(), fid()];
      await h!.seed(a, '{"schemaVersion":1,', 0);
      await h!.seed(b, JSON.stringify(state(b, { revision: 4 })), 5);
      await h!.seed(c, JSON.stringify(state('someone-else')), 0);
      await expect(store.load(a)).rejects.toThrow(/malformed JSON/);
      await expect(store.load(b)).rejects.toThrow(/revision 4 differs from the row's 5/);
      await expect(store.load(c)).rejects.toThrow(/names flow id 'someone-else'/);
      for (const id of [a, b, c]) await expect(store.load(id)).rejects.toBeInstanceOf(FlowStateUnreadableError);
    });

    it('the TTL given is the TTL stamped (create and update), on the database clock; listing columns follow the state', async () => {
      const { store } = await open();
      const id = fid();
      expect(await store.tryCreate(state(id), 90_000)).toBe(true);
      expect(Math.abs((await h!.raw(id))!.ttlMs - 90_000)).toBeLessThan(50);
      expect(await store.tryUpdate(state(id, { revision: 1, status: 'Suspended', flowName: 'renamed' }), 0, 3 * 24 * 3600_000)).toBe(true);
      const row = (await h!.raw(id))!;
      expect(Math.abs(row.ttlMs - 3 * 24 * 3600_000)).toBeLessThan(50);
      expect(row).toMatchObject({ status: 'Suspended', flowName: 'renamed' });
      // clamped at 3650 days
      expect(await store.tryUpdate(state(id, { revision: 2 }), 1, 10 * 3650 * 24 * 3600_000)).toBe(true);
      expect(Math.abs((await h!.raw(id))!.ttlMs - 3650 * 24 * 3600_000)).toBeLessThan(50);
    });

    it('case-variant ids CASE-FLOW and case-flow are two runs', async () => {
      const { store } = await open();
      const suffix = randomUUID();
      const upper = `CASE-FLOW-${suffix.toUpperCase()}`;
      const lower = `case-flow-${suffix}`;
      expect(await store.tryCreate(state(upper, { inputJson: '"upper"' }), MIN)).toBe(true);
      expect(await store.tryCreate(state(lower, { inputJson: '"lower"' }), MIN)).toBe(true);
      expect((await store.load(upper))?.inputJson).toBe('"upper"');
      expect((await store.load(lower))?.inputJson).toBe('"lower"');
      expect(await store.tryAcquireLease(upper, 'A', MIN)).toBe(true);
      expect(await store.tryAcquireLease(lower, 'B', MIN)).toBe(true);
      // and accents: e + combining acute is not é
      expect(await store.tryCreate(state('caf\u00e9'), MIN)).toBe(true);
      expect(await store.tryCreate(state('cafe\u0301'), MIN)).toBe(true);
    });

    it('observeLease: unheld before any acquire and after release; a strictly later expiry after each renew', async () => {
      const { store } = await open();
      const id = fid();
      expect(await store.tryCreate(state(id), 10 * MIN)).toBe(true);
      expect(await store.observeLease(id)).toBe('unheld');
      expect(await store.tryAcquireLease(id, 'A', 1000)).toBe(true);
      const first = await store.observeLease(id);
      expect(first).toMatchObject({ leaseId: 'A' });
      let previous = (first as { expiresAt: Date }).expiresAt.getTime();
      for (let i = 0; i < 2; i++) {
        await sleep(15);
        expect(await store.tryRenewLease(id, 'A', 1000)).toBe(true);
        const seen = (await store.observeLease(id)) as { leaseId: string; expiresAt: Date };
        expect(seen.leaseId).toBe('A');
        expect(seen.expiresAt.getTime()).toBeGreaterThan(previous);
        previous = seen.expiresAt.getTime();
      }
      await store.releaseLease(id, 'A');
      expect(await store.observeLease(id)).toBe('unheld');
    });

    it('validateCreate enforces the size limit without I/O; tryCreate refuses the same state; no limit by default', async () => {
      const { store } = await open({ maxStateBytes: 2048 });
      const id = fid();
      const big = state(id, { inputJson: JSON.stringify('x'.repeat(4096)) });
      expect(() => store.validateCreate(big)).toThrow(FlowStateTooLargeError);
      await expect(store.tryCreate(big, MIN)).rejects.toThrow(/over the limit of 2048/);
      expect(await store.load(id)).toBeNull();
      expect(() => store.validateCreate(state(id))).not.toThrow();
      expect(() => store.validateCreate(state(id, { revision: 1 }))).toThrow(RangeError);
    });

    it('prune deletes expired rows only and reports how many; the first tryCreate of a store prunes opportunistically', async () => {
      const { store } = await open();
      const old = [fid(), fid(), fid()];
      for (const id of old) {
        await h!.seed(id, JSON.stringify(state(id)), 0);
        await h!.expire(id);
      }
      const live = fid();
      expect(await store.tryCreate(state(live), 10 * MIN)).toBe(true); // this store's first create: it prunes
      for (const id of old) expect(await h!.raw(id)).toBeUndefined();
      const dead = Array.from({ length: 5 }, fid);
      for (const id of dead) {
        expect(await store.tryCreate(state(id), 10 * MIN)).toBe(true); // within 5 minutes: no prune
        await h!.expire(id);
      }
      for (const id of dead) expect(await h!.raw(id)).toBeDefined();
      expect(await store.prune()).toBe(5);
      expect(await store.prune()).toBe(0);
      for (const id of dead) expect(await h!.raw(id)).toBeUndefined();
      expect(await h!.raw(live)).toBeDefined();
    });

    it('list: newest first, filtered by status and flow name, paged by cursor; countByStatus counts live runs', async () => {
      const { store } = await open();
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const id = `list-${i}-${randomUUID()}`;
        ids.push(id);
        expect(await store.tryCreate(state(id, { flowName: i % 2 === 0 ? 'even' : 'odd', lastMessage: `m${i}` }), 10 * MIN)).toBe(true);
        await sleep(3);
      }
      for (const id of ids.slice(0, 2)) expect(await store.tryUpdate(state(id, { revision: 1, status: 'Succeeded', flowName: 'even' }), 0, 10 * MIN)).toBe(true);
      const expired = fid();
      expect(await store.tryCreate(state(expired), 10 * MIN)).toBe(true);
      await h!.expire(expired);

      expect(await store.countByStatus()).toEqual({ Running: 5, Succeeded: 2, Failed: 0, Suspended: 0 });
      const running = await store.list({ status: 'Running', limit: 10 });
      expect(running.items.map((i) => i.flowId)).toEqual(ids.slice(2).reverse());
      expect(running.cursor).toBeUndefined();
      expect(running.items[0]).toMatchObject({ flowName: 'even', status: 'Running', lastMessage: 'm6' });
      expect(Date.parse(running.items[0]!.createdAt)).not.toBeNaN();

      const page1 = await store.list({ limit: 3 });
      expect(page1.items.map((i) => i.flowId)).toEqual([ids[1], ids[0], ids[6]]); // the two updated last come first
      const page2 = await store.list({ limit: 3, cursor: page1.cursor });
      expect(page2.items.map((i) => i.flowId)).toEqual([ids[5], ids[4], ids[3]]);
      const page3 = await store.list({ limit: 3, cursor: page2.cursor });
      expect(page3.items.map((i) => i.flowId)).toEqual([ids[2]]);
      expect(page3.cursor).toBeUndefined();

      const oddRunning = await store.list({ status: 'Running', flowName: 'odd', limit: 10 });
      expect(oddRunning.items.map((i) => i.flowId)).toEqual([ids[5], ids[3]]);
      const even = await store.list({ flowName: 'even', limit: 10 });
      expect(even.items.map((i) => i.flowId)).toEqual([ids[1], ids[0], ids[6], ids[4], ids[2]]);
      await expect(store.list({ limit: 0 })).rejects.toThrow(RangeError);
      await expect(store.list({ limit: 5, cursor: 'not-a-cursor' })).rejects.toThrow(/cursor/);
    });

    it('now() is the database clock', async () => {
      const { store } = await open();
      const now = await store.now();
      expect(Math.abs(now.getTime() - Date.now())).toBeLessThan(5 * MIN);
    });
  });
}
