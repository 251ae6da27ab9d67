// Ordering keys (issue 17 §1, the ready set of issue 25): a keyed row is claimed only as the head of its (queue,
// key): the first published of the key's rows left in the table, whatever that row's state (ready, delayed by a NAK,
// leased); the rows behind it wait outside the ready set until it is gone; unkeyed rows are claimed as before.
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

    it('the next claim after an ack takes the successors of the keys it freed; a leased or delayed head still holds its key', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_freed';
      // keys k0..k3 (two jobs each), then x (one job), then d (its head delayed)
      await h.store.publish([0, 1, 2, 3].flatMap((k) => [keyed(q, `k${k}`, 1), keyed(q, `k${k}`, 2)]));
      const heads = await h.store.claim(q, 4, LOCK); // k0..k3's first jobs
      expect(heads.map((c) => `${keyOf(c)}${seqOf(c)}`)).toEqual(['k01', 'k11', 'k21', 'k31']);
      await h.store.publish([keyed(q, 'x', 1)]);
      await h.store.publish([{ ...keyed(q, 'd', 1), delayMs: 60_000 }, keyed(q, 'd', 2)]);
      await h.store.ack(heads.slice(0, 3)); // k0..k2 freed; k3's head still leased
      const next = await h.store.claim(q, 10, LOCK);
      expect(next.map((c) => `${keyOf(c)}${seqOf(c)}`).sort()).toEqual(['k02', 'k12', 'k22', 'x1']);
      expect(await h.store.claim(q, 10, LOCK)).toEqual([]); // k3's head leased, d's head delayed
      await h.store.ack(heads.slice(3));
      const last = await h.store.claim(q, 10, LOCK);
      expect(last.map((c) => `${keyOf(c)}${seqOf(c)}`)).toEqual(['k32']);
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

    it('a key whose next job is not due yet: the ack schedules it, so the queue is not due, and the job runs once due', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_next_later';
      const later = { ...keyed(q, 'a', 2), delayMs: 60_000 };
      await h.store.publish([keyed(q, 'a', 1), later]);
      const [head] = await h.store.claim(q, 10, LOCK);
      expect(seqOf(head!)).toBe(1);
      await h.store.ack([head!]);
      expect((await h.store.claimOutlook(q)).due).toBe(false); // no drain request for a job due in a minute
      expect(await h.store.claim(q, 10, LOCK)).toEqual([]);
      await h.raw.makeDue(later.id);
      const next = await h.store.claim(q, 10, LOCK);
      expect(next.map(seqOf)).toEqual([2]);
    });

    it('a queued job cancelled, a head cancelled, a key emptied and published to again: the key runs in order and nothing is left behind', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'ord_cancel_mix';
      const [a1, a2, a3, a4] = [1, 2, 3, 4].map((i) => keyed(q, 'a', i)) as [ReturnType<typeof keyed>, ReturnType<typeof keyed>, ReturnType<typeof keyed>, ReturnType<typeof keyed>];
      await h.store.publish([a1, a2, a3, a4]);
      expect(await h.store.cancel(q, a3.id, false)).toBe('deleted'); // a queued one
      expect(await h.store.cancel(q, a1.id, false)).toBe('deleted'); // the (waiting) head
      const [c2] = await h.store.claim(q, 10, LOCK);
      expect(seqOf(c2!)).toBe(2);
      await h.store.ack([c2!]);
      const [c4] = await h.store.claim(q, 10, LOCK);
      expect(seqOf(c4!)).toBe(4);
      await h.store.ack([c4!]);
      expect(await h.store.claim(q, 10, LOCK)).toEqual([]);
      // the key has no job left: the next publish is its head at once
      await h.store.publish([keyed(q, 'a', 5)]);
      expect((await h.store.claim(q, 10, LOCK)).map(seqOf)).toEqual([5]);
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

for (const fixture of storeFixtures().filter((f) => f.concurrent)) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] ordering keys under concurrency (real sessions)`, { timeout: 120_000 }, () => {
    const h = openForDescribe(() => fixture.create());

    it('publishers and four consumers race on 20 keys: every job runs once, each key in publish order, one at a time, and no key is left stuck', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      await skipOnGap(fixture.name, ctx, 'readPast');
      const q = 'ord_race';
      const KEYS = 20;
      const PER_KEY = 40;
      const publisher = await h.openPeer();
      const consumers = await Promise.all([1, 2, 3, 4].map(() => h.openPeer()));
      const ran = new Map<string, number[]>();
      const running = new Set<string>();
      let overlap = 0;
      let published = 0;
      // each key's jobs are published in order, in small batches of mixed keys, while consumers claim and ack
      const publishing = (async () => {
        for (let seq = 1; seq <= PER_KEY; seq++) {
          await publisher.publish(Array.from({ length: KEYS }, (_, k) => keyed(q, `k${k}`, seq)));
          published += KEYS;
        }
      })();
      let publishDone = false;
      void publishing.then(() => (publishDone = true));
      await Promise.all(
        consumers.map(async (store) => {
          let idle = 0;
          while (idle < 20) {
            const batch = await store.claim(q, 8, LOCK);
            if (batch.length === 0) {
              idle = publishDone ? idle + 1 : 0;
              await sleep(5);
              continue;
            }
            idle = 0;
            for (const c of batch) {
              const key = keyOf(c)!;
              if (running.has(key)) overlap++;
              running.add(key);
            }
            await sleep(1);
            for (const c of batch) {
              const key = keyOf(c)!;
              ran.set(key, [...(ran.get(key) ?? []), seqOf(c)]);
              running.delete(key);
            }
            expect(await store.ack(batch)).toBe(batch.length);
          }
        }),
      );
      await publishing;
      expect(published).toBe(KEYS * PER_KEY);
      expect(overlap).toBe(0);
      for (let k = 0; k < KEYS; k++) expect(ran.get(`k${k}`), `key k${k}`).toEqual(Array.from({ length: PER_KEY }, (_, i) => i + 1));
      expect(await h.raw.countQueue(q)).toBe(0);
    });
  });
}
