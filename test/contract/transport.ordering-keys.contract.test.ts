// Ordering keys (issue 17 §1): a keyed row is claimed only while it is the oldest row of its (queue, key) left in
// the table, whatever that row's state (ready, delayed by a NAK, leased); unkeyed rows are claimed as before.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ClaimedMessage, TransportStore } from '../../shared/transport/types';
import { openForDescribe } from '../support/lifecycle';
import { message, sleep } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures } from './fixtures';

const LOCK = 30_000;
const DLQ = 'ordered_dlq';

const keyed = (queue: string, key: string, seq: number) => message(queue, { key, seq }, { orderingKey: key });
const seqOf = (c: ClaimedMessage) => (JSON.parse(c.payloadJson) as { seq: number }).seq;
const keyOf = (c: ClaimedMessage) => (JSON.parse(c.payloadJson) as { key?: string }).key;

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] ordering keys`, () => {
    const h = openForDescribe(() => fixture.create());

    it('a leased head holds its key back; other keys and unkeyed rows are claimed; the ack lets the next one run', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_leased';
      await h.store.publish([keyed(q, 'a', 1), keyed(q, 'a', 2), keyed(q, 'a', 3), keyed(q, 'b', 1), message(q, { seq: 0 }), message(q, { seq: 0 })]);
      const first = await h.store.claim(q, 10, LOCK);
      expect(first.map((c) => `${keyOf(c) ?? '-'}${seqOf(c)}`).sort()).toEqual(['-0', '-0', 'a1', 'b1']);
      expect(await h.store.claim(q, 10, LOCK)).toEqual([]);
      await h.store.ack(first.filter((c) => keyOf(c) !== 'a'));
      expect(await h.store.claim(q, 10, LOCK)).toEqual([]); // a1 still leased
      await h.store.ack(first.filter((c) => keyOf(c) === 'a'));
      const next = await h.store.claim(q, 10, LOCK);
      expect(next.map((c) => `${keyOf(c)}${seqOf(c)}`)).toEqual(['a2']);
    });

    it('a claim told the freed keys takes their heads only (a leased or delayed head holds its key), and still gives keys nobody hinted a quarter of the claim', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_hinted';
      // keys k0..k3 (two jobs each), then x (one job) that nobody will hint, then d (its head delayed)
      await h.store.publish([0, 1, 2, 3].flatMap((k) => [keyed(q, `k${k}`, 1), keyed(q, `k${k}`, 2)]));
      const heads = await h.store.claim(q, 4, LOCK); // k0..k3's first jobs
      expect(heads.map((c) => `${keyOf(c)}${seqOf(c)}`)).toEqual(['k01', 'k11', 'k21', 'k31']);
      await sleep(2);
      await h.store.publish([keyed(q, 'x', 1)]);
      await sleep(2);
      await h.store.publish([{ ...keyed(q, 'd', 1), delayMs: 60_000 }, keyed(q, 'd', 2)]);
      await h.store.ack(heads.slice(0, 3)); // k0..k2 freed; k3's head still leased
      // freed keys k0..k2, k3 (head leased), d (head delayed), an unknown key: a claim of 4 takes at most 3 by the
      // hints, and x1 in claim order (the quarter kept for keys nobody hinted)
      const hinted = await h.store.claim(q, 4, LOCK, randomUUID(), { freedKeys: ['k0', 'k1', 'k2', 'k3', 'd', 'nope'] });
      expect(hinted.map((c) => `${keyOf(c)}${seqOf(c)}`).sort()).toEqual(['k02', 'k12', 'k22', 'x1']);
      expect(await h.store.claim(q, 10, LOCK, randomUUID(), { freedKeys: ['k3', 'd'] })).toEqual([]);
      if (fixture.name === 'sqlserver') return; // SQL Server claims as without the hint (the same rows here)
      // the hint's keys come first, up to three quarters of the claim
      await h.store.ack(hinted);
      await h.store.ack(heads.slice(3));
      await h.store.publish([keyed(q, 'y', 1)]); // a younger key nobody hints: it gets the quarter, or waits its turn
      const three = await h.store.claim(q, 4, LOCK, randomUUID(), { freedKeys: ['k3'] });
      expect(three.map((c) => `${keyOf(c)}${seqOf(c)}`).sort()).toEqual(['k32', 'y1']);
    });

    it("a NAK'd head (due later) holds its key back until it runs again and succeeds", async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_nak';
      const [a1] = [keyed(q, 'a', 1)];
      await h.store.publish([a1!, keyed(q, 'a', 2)]);
      const [c1] = await h.store.claim(q, 10, LOCK);
      expect(seqOf(c1!)).toBe(1);
      expect(await h.store.release(c1!, 60_000)).toBe(true);
      expect(await h.store.claim(q, 10, LOCK)).toEqual([]); // a2 is due but behind its delayed head
      await h.raw.makeDue(a1!.id);
      const [again] = await h.store.claim(q, 10, LOCK);
      expect([seqOf(again!), again!.attempt]).toEqual([1, 2]);
      await h.store.ack([again!]);
      expect((await h.store.claim(q, 10, LOCK)).map(seqOf)).toEqual([2]);
    });

    it('a head whose lease lapsed is claimed again, never its successor', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_lapse';
      const a1 = keyed(q, 'a', 1);
      await h.store.publish([a1, keyed(q, 'a', 2)]);
      await h.store.claim(q, 10, LOCK);
      await h.raw.expireLease(a1.id);
      expect((await h.store.claim(q, 10, LOCK)).map(seqOf)).toEqual([1]);
    });

    it('a delayed head holds back a successor that is due now', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_delay';
      await h.store.publish([message(q, { key: 'a', seq: 1 }, { orderingKey: 'a', delayMs: 60_000 })]);
      await h.store.publish([keyed(q, 'a', 2)]);
      expect(await h.store.claim(q, 10, LOCK)).toEqual([]);
    });

    it('a reschedule moves only the due time: a head moved later holds its key, a successor moved earlier cannot overtake', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_resched';
      const a1 = keyed(q, 'a', 1);
      const a2 = keyed(q, 'a', 2);
      await h.store.publish([a1, a2]);
      expect((await h.store.reschedule(q, a1.id, { delayMs: 60_000 })).outcome).toBe('rescheduled');
      expect((await h.store.reschedule(q, a2.id, { delayMs: 0 })).outcome).toBe('rescheduled');
      expect(await h.store.claim(q, 10, LOCK)).toEqual([]); // a2 is due first, but a1 is older
      expect((await h.store.reschedule(q, a1.id, { delayMs: 0 })).outcome).toBe('rescheduled');
      expect((await h.store.claim(q, 10, LOCK)).map(seqOf)).toEqual([1]);
    });

    it('cancelling a waiting head lets its key go on', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_cancel';
      const a1 = keyed(q, 'a', 1);
      await h.store.publish([a1, keyed(q, 'a', 2)]);
      expect(await h.store.cancel(q, a1.id, false)).toBe('deleted');
      expect((await h.store.claim(q, 10, LOCK)).map(seqOf)).toEqual([2]);
    });

    it('a dead-lettered head lets the key go on; its requeue goes to the back of the key', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_dead';
      await h.store.publish([keyed(q, 'a', 1), keyed(q, 'a', 2), keyed(q, 'a', 3)]);
      const [head] = await h.store.claim(q, 10, LOCK);
      const newId = randomUUID();
      expect(
        await h.store.deadLetter({
          source: head!,
          newId,
          deadLetterQueue: DLQ,
          payloadJson: head!.payloadJson,
          headers: { 'AR-DeadLetter-Reason': 'failed', 'AR-DeadLetter-Source-Queue': q },
          reason: 'failed',
        }),
      ).toBe(true);
      const [second] = await h.store.claim(q, 10, LOCK);
      expect(seqOf(second!)).toBe(2);
      // requeued while a2 runs: it joins the key behind a3 and does not run beside a2
      expect(await h.store.requeueDeadLetter(DLQ, q, newId)).toBe(true);
      expect(await h.store.claim(q, 10, LOCK)).toEqual([]);
      await h.store.ack([second!]);
      const third = await h.store.claim(q, 10, LOCK);
      expect(third.map(seqOf)).toEqual([3]);
      await h.store.ack(third);
      const requeued = await h.store.claim(q, 10, LOCK);
      expect(requeued.map((c) => [c.id, seqOf(c)])).toEqual([[newId, 1]]);
    });

    it('one claim takes one row per key; a batch publish keeps its order within a key', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_batch';
      const rows = Array.from({ length: 100 }, (_, i) => keyed(q, i % 2 === 0 ? 'even' : 'odd', i));
      await h.store.publish(rows);
      const seen: number[] = [];
      for (let round = 0; round < 60; round++) {
        const batch = await h.store.claim(q, 100, LOCK);
        if (batch.length === 0) break;
        expect(new Set(batch.map(keyOf)).size).toBe(batch.length);
        seen.push(...batch.map(seqOf));
        await h.store.ack(batch);
      }
      expect(seen.filter((n) => n % 2 === 0)).toEqual(Array.from({ length: 50 }, (_, i) => 2 * i));
      expect(seen.filter((n) => n % 2 === 1)).toEqual(Array.from({ length: 50 }, (_, i) => 2 * i + 1));
    });

    it('the claim outlook calls a queue due only when a head can run: rows behind a running head are not due', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_outlook';
      await h.store.publish([keyed(q, 'a', 1), keyed(q, 'a', 2)]);
      expect((await h.store.claimOutlook(q)).due).toBe(true);
      const [head] = await h.store.claim(q, 10, LOCK);
      const plain = await h.store.claimOutlook(q);
      expect(plain.due).toBe(false); // a drain now would claim nothing, and announce again
      expect(plain.leaseLapsesInMs).toBeGreaterThan(0); // queue mode asks again when the head's lease lapses
      const limited = await h.store.claimOutlook(q, { concurrency: 5 });
      expect(limited.due).toBe(false);
      await h.store.ack([head!]);
      expect((await h.store.claimOutlook(q)).due).toBe(true);
      expect((await h.store.claimOutlook(q, { concurrency: 5 })).due).toBe(true);
    });

    it('a limited claim honours ordering keys too', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_limited';
      await h.store.publish([keyed(q, 'a', 1), keyed(q, 'a', 2), keyed(q, 'b', 1)]);
      const c = await h.store.claimLimited(q, 10, LOCK, randomUUID(), { concurrency: 10 });
      expect(c.messages.map((m) => `${keyOf(m)}${seqOf(m)}`).sort()).toEqual(['a1', 'b1']);
    });

    it('unkeyed rows are unaffected: one claim takes them all; claims take them in availability order', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_plain';
      await h.store.publish(Array.from({ length: 20 }, (_, i) => message(q, { seq: i })));
      expect((await h.store.claim(q, 50, LOCK)).map(seqOf).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      // (within one claim the rows come back sorted to the millisecond only: a batch's rows share it)
      await h.store.publish(Array.from({ length: 10 }, (_, i) => message(`${q}_1`, { seq: i })));
      const one: number[] = [];
      for (let i = 0; i < 10; i++) one.push(...(await h.store.claim(`${q}_1`, 1, LOCK)).map(seqOf));
      expect(one).toEqual(Array.from({ length: 10 }, (_, i) => i));
    });

    it('the ordering key is shown on the waiting list and the job view', async () => {
      const q = 'ord_view';
      const m = keyed(q, 'order-42', 1);
      // two publishes, not one batch: Babelfish keeps microseconds, so a batch's 100 ns steps tie there
      await h.store.publish([m]);
      await h.store.publish([message(q, { seq: 2 })]);
      const waiting = await h.store.listWaiting({ queue: q, state: 'ready', order: 'oldest', top: 10 });
      expect(waiting.map((w) => w.orderingKey)).toEqual(['order-42', undefined]);
      expect((await h.store.findJob(m.id, DLQ))?.orderingKey).toBe('order-42');
    });

    it.skipIf(!fixture.concurrent)('four claimers on their own pools never hold two rows of one key, and each key runs in order', { timeout: 120_000 }, async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      await skipOnGap(fixture.name, ctx, 'readPast');
      const q = 'ord_race';
      const keys = 20;
      const perKey = 30;
      for (let s = 0; s < perKey; s += 5) {
        const rows = [];
        for (let k = 0; k < keys; k++) for (let i = s; i < s + 5; i++) rows.push(keyed(q, `k${k}`, i));
        await h.store.publish(rows);
      }
      const peers: TransportStore[] = await Promise.all([1, 2, 3, 4].map(() => h.openPeer()));
      const held = new Set<string>();
      const done = new Map<string, number>();
      const violations: string[] = [];
      let finished = 0;
      await Promise.all(
        peers.map(async (store) => {
          for (let idle = 0; idle < 40 && finished < keys * perKey; ) {
            const batch = await store.claim(q, 8, LOCK);
            if (batch.length === 0) {
              idle++;
              await sleep(5);
              continue;
            }
            idle = 0;
            for (const c of batch) {
              const key = keyOf(c)!;
              if (held.has(key)) violations.push(`${key} claimed twice at once`);
              if (seqOf(c) !== (done.get(key) ?? -1) + 1) violations.push(`${key}: ${seqOf(c)} after ${done.get(key) ?? -1}`);
              held.add(key);
            }
            await sleep(Math.random() * 3);
            // unmarked before the ack: the successor can only be claimed once the ack committed
            for (const c of batch) {
              held.delete(keyOf(c)!);
              done.set(keyOf(c)!, seqOf(c));
            }
            expect(await store.ack(batch)).toBe(batch.length);
            finished += batch.length;
          }
        }),
      );
      expect(violations).toEqual([]);
      expect(finished).toBe(keys * perKey);
      expect(await h.raw.countQueue(q)).toBe(0);
    });
  });
}
