import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openForDescribe } from '../support/lifecycle';
import { sleep } from '../support/messages';
import { channelFixtures } from './channel-fixtures';
import { skipOnGap } from './engine-gaps';
import { announce } from './fixtures';

const HOUR = 3_600_000;
/** A waiter registered before everything these tests insert. */
const EARLY = { startedAt: '1970-01-01T00:00:00Z', startedSeq: '0' };

for (const fixture of channelFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] channel store`, () => {
    const h = openForDescribe(() => fixture.create());

    it('a duplicate insert returns the original row’s created_at and settlement columns', async () => {
      const id = randomUUID();
      const first = await h.store.insertMessage(id, 'dup-1', '{"n":1}', HOUR);
      expect(first).toMatchObject({ id, inserted: true, ackedAt: null, ackedSeq: null });
      expect(await h.store.claimForDelivery(id, EARLY)).toBe(true);
      const again = await h.store.insertMessage(id, 'dup-1', '{"n":2}', HOUR);
      expect(again.inserted).toBe(false);
      expect(again.correlationId).toBe('dup-1');
      // the same id under another correlation id: nothing written, the stored row's correlation id reported
      expect(await h.store.insertMessage(id, 'DUP-1', '{"n":3}', HOUR)).toMatchObject({ inserted: false, correlationId: 'dup-1' });
      expect(await h.store.loadMessagesById('DUP-1', [id])).toEqual([]);
      expect(again.createdAt.getTime()).toBe(first.createdAt.getTime());
      expect(again.ackedAt).not.toBeNull();
      expect(BigInt(again.ackedSeq!)).toBeGreaterThan(0n);
      const [row] = await h.store.loadMessagesById('dup-1', [id]);
      expect(row!.envelopeJson).toBe('{"n":1}');
    });

    it('a recovery-claimed message is never delivered; a delivered one is never recovery-claimed', async () => {
      const a = randomUUID();
      const b = randomUUID();
      await h.store.insertMessage(a, 'race', '{}', HOUR);
      await h.store.insertMessage(b, 'race', '{}', HOUR);
      expect(await h.store.claimForRecovery(a)).toBe(true);
      expect(await h.store.claimForDelivery(a, EARLY)).toBe(false);
      expect(await h.store.isAcknowledged(a)).toBe(false);
      expect(await h.store.claimForDelivery(b, EARLY)).toBe(true);
      expect(await h.store.claimForRecovery(b)).toBe(false);
      expect(await h.store.isAcknowledged(b)).toBe(true);
      // fan-out: a second delivery claim of an acked row still answers true and keeps the first stamp
      const [before] = await h.store.loadMessagesById('race', [b]);
      expect(await h.store.claimForDelivery(b, EARLY)).toBe(true);
      const [after] = await h.store.loadMessagesById('race', [b]);
      expect(after!.ackedSeq).toBe(before!.ackedSeq);
      expect(after!.ackedAt!.getTime()).toBe(before!.ackedAt!.getTime());
      // pending excludes recovery-claimed rows and returns acked rows header-only
      const pending = await h.store.loadPending('race', { startedAt: '1970-01-01T00:00:00Z', startedSeq: '0' }, 10);
      expect(pending.map((m) => [m.id, m.envelopeJson])).toEqual([[b, null]]);
    });

    it('pages 70 messages 16 at a time by (created_at, id): 70 distinct', async () => {
      const ids = new Set<string>();
      for (let i = 0; i < 70; i++) {
        const id = randomUUID();
        ids.add(id);
        await h.store.insertMessage(id, 'paging', `{"i":${i}}`, HOUR);
      }
      const seen: string[] = [];
      let after: { createdAtExact: string; id: string } | undefined;
      for (;;) {
        const page = await h.store.loadPending('paging', { startedAt: '1970-01-01T00:00:00Z', startedSeq: '0' }, 16, after);
        if (page.length === 0) break;
        seen.push(...page.map((m) => m.id));
        const last = page[page.length - 1]!;
        after = { createdAtExact: last.createdAtExact, id: last.id };
      }
      expect(seen).toHaveLength(70);
      expect(new Set(seen)).toEqual(ids);
    });

    it('loadPending hides rows acknowledged before the given watermark', async () => {
      const early = randomUUID();
      await h.store.insertMessage(early, 'wm', '{}', HOUR);
      await h.store.claimForDelivery(early, EARLY);
      const start = await h.store.subscriptionStart();
      const late = randomUUID();
      await h.store.insertMessage(late, 'wm', '{"late":1}', HOUR);
      const pending = await h.store.loadPending('wm', start, 10);
      expect(pending.map((m) => m.id)).toEqual([late]);
      expect(pending[0]!.envelopeJson).toBe('{"late":1}');
    });

    it('watermark: timestamps first, the ack sequence breaks a same-tick tie; history is never replayed', async () => {
      const w = await h.store.subscriptionStart();
      const seq = BigInt(w.startedSeq);
      const cases: Array<[string, number, bigint, boolean]> = [
        ['same tick, sequence drawn before the waiter registered', 0, seq - 1n, false],
        ['same tick, sequence drawn after', 0, seq + 1n, true],
        ['acked 5 s after, lower sequence (timestamps stay primary)', 5000, seq - 10n, true],
        ['acked 5 s before, higher sequence', -5000, seq + 10n, false],
      ];
      const ids = new Map<string, string>();
      for (const [label, offset, s, _] of cases) {
        const id = randomUUID();
        ids.set(id, label);
        await h.store.insertMessage(id, 'tie', '{}', HOUR);
        await h.forceAck(id, w.startedAt, offset, s.toString());
      }
      const unacked = randomUUID();
      await h.store.insertMessage(unacked, 'tie', '{}', HOUR);
      const seen = new Set((await h.store.loadPending('tie', w, 50)).map((m) => ids.get(m.id) ?? 'unacked'));
      for (const [label, , , included] of cases) expect(seen.has(label), label).toBe(included);
      expect(seen.has('unacked')).toBe(true);
    });

    it('a delivery claim re-checks the watermark: a row acked before the waiter registered is history', async () => {
      const id = randomUUID();
      await h.store.insertMessage(id, 'wm-claim', '{}', HOUR);
      const w = await h.store.subscriptionStart();
      await h.forceAck(id, w.startedAt, -5000, (BigInt(w.startedSeq) + 10n).toString()); // acked before w registered
      expect(await h.store.claimForDelivery(id, w)).toBe(false);
      const later = randomUUID();
      await h.store.insertMessage(later, 'wm-claim', '{}', HOUR);
      await h.forceAck(later, w.startedAt, 5000, (BigInt(w.startedSeq) - 1n).toString()); // acked after: fan-out
      expect(await h.store.claimForDelivery(later, w)).toBe(true);
    });

    it('subscription starts draw increasing sequence values from the ack sequence', async () => {
      const a = await h.store.subscriptionStart();
      const id = randomUUID();
      await h.store.insertMessage(id, 'seq', '{}', HOUR);
      await h.store.claimForDelivery(id, EARLY);
      const b = await h.store.subscriptionStart();
      const [row] = await h.store.loadMessagesById('seq', [id]);
      expect(BigInt(row!.ackedSeq!)).toBeGreaterThan(BigInt(a.startedSeq));
      expect(BigInt(b.startedSeq)).toBeGreaterThan(BigInt(row!.ackedSeq!));
      expect(Date.parse(b.startedAt)).toBeGreaterThanOrEqual(Date.parse(a.startedAt));
    });

    it('expired rows are invisible to reads and claims, then pruned in bounded batches', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'merge');
      const id = randomUUID();
      await h.store.insertMessage(id, 'exp', '{}', 1);
      await h.store.upsertSubscriber('exp', randomUUID(), 'inst', 1);
      await h.store.saveRegistration('exp', randomUUID(), '{}', 1, 32);
      await sleep(30);
      expect(await h.store.loadPending('exp', { startedAt: '1970-01-01T00:00:00Z', startedSeq: '0' }, 10)).toEqual([]);
      expect(await h.store.loadMessagesById('exp', [id])).toEqual([]);
      expect(await h.store.claimForDelivery(id, EARLY)).toBe(false);
      expect(await h.store.countActiveSubscribers('exp')).toBe(0);
      expect(await h.store.loadRegistrations('exp')).toEqual([]);
      expect(await h.store.pruneExpiredBatch('messages')).toBeGreaterThanOrEqual(1);
      expect(await h.store.pruneExpiredBatch('subscribers')).toBeGreaterThanOrEqual(1);
      expect(await h.store.pruneExpiredBatch('recovery')).toBeGreaterThanOrEqual(1);
      expect(await h.store.pruneExpiredBatch('messages')).toBe(0);
    });

    it('subscribers: count, delete, and a heartbeat re-creates a deleted row', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'merge');
      const reg = randomUUID();
      await h.store.upsertSubscriber('sub', reg, 'inst-a', 30_000);
      expect(await h.store.countActiveSubscribers('sub')).toBe(1);
      await h.store.deleteSubscriber('sub', reg);
      expect(await h.store.countActiveSubscribers('sub')).toBe(0);
      await h.store.heartbeatSubscribers('inst-a', [{ correlationId: 'sub', registrationId: reg }], 30_000);
      expect(await h.store.countActiveSubscribers('sub')).toBe(1);
      await h.store.heartbeatSubscribers('inst-a', [], 30_000);
      expect(await h.store.countActiveSubscribers('sub')).toBe(1);
    });

    it('registrations: one row per (correlation id, registration id), oldest first, deleted by key', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'merge');
      const r1 = randomUUID();
      const r2 = randomUUID();
      await h.store.saveRegistration('reg', r1, '{"a":1}', HOUR, 32);
      await sleep(5);
      const expiresAt = await h.store.saveRegistration('reg', r2, '{"b":2}', HOUR, 32);
      expect(expiresAt!.getTime()).toBeGreaterThan(Date.now() + HOUR - 60_000);
      await sleep(5); // a later registered_at than r2's (PGlite's clock can put both in one millisecond)
      await h.store.saveRegistration('reg', r1, '{"a":3}', HOUR, 32); // update keeps one row, moves it last
      const regs = await h.store.loadRegistrations('reg');
      expect(regs.map((r) => [r.registrationId, r.stateJson])).toEqual([
        [r2, '{"b":2}'],
        [r1, '{"a":3}'],
      ]);
      expect(await h.store.deleteRegistration('reg', r1)).toBe(true);
      expect(await h.store.deleteRegistration('reg', r1)).toBe(false);
      expect((await h.store.loadRegistrations('reg')).map((r) => r.registrationId)).toEqual([r2]);
    });

    it('correlation ids differing only in case stay separate', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'merge');
      await h.store.insertMessage(randomUUID(), 'Case-Id', '{"upper":true}', HOUR);
      await h.store.saveRegistration('case-id', randomUUID(), '{}', HOUR, 32);
      expect(await h.store.loadPending('case-id', { startedAt: '1970-01-01T00:00:00Z', startedSeq: '0' }, 10)).toEqual([]);
      expect(await h.store.loadPending('Case-Id', { startedAt: '1970-01-01T00:00:00Z', startedSeq: '0' }, 10)).toHaveLength(1);
      expect(await h.store.loadRegistrations('CASE-ID')).toEqual([]);
    });

    it('finds overdue unacked messages only where a registration exists', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'merge');
      const withReg = randomUUID();
      const noReg = randomUUID();
      const acked = randomUUID();
      await h.store.saveRegistration('od-1', randomUUID(), '{}', HOUR, 32);
      await h.store.insertMessage(withReg, 'od-1', '{"x":1}', HOUR);
      await h.store.insertMessage(acked, 'od-1', '{}', HOUR);
      await h.store.claimForDelivery(acked, EARLY);
      await h.store.insertMessage(noReg, 'od-2', '{}', HOUR);
      expect((await h.store.findOverdueWithRegistrations(60_000, 10)).map((m) => m.id)).not.toContain(withReg);
      await sleep(60);
      const overdue = await h.store.findOverdueWithRegistrations(20, 100);
      const ids = overdue.map((m) => m.id);
      expect(ids).toContain(withReg);
      expect(ids).not.toContain(noReg);
      expect(ids).not.toContain(acked);
      expect(overdue.find((m) => m.id === withReg)).toMatchObject({ correlationId: 'od-1', envelopeJson: '{"x":1}' });
    });
  });
}
