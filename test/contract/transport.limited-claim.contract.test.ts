// Limits across instances on every store (issue 17 §2): the limited claim takes at most the room a queue's
// concurrency limit and token bucket leave, honours pause and a forward backoff, carries the caller's lock id (so a
// lost claim is handed back), and the limited outlook says when room may appear. On the PostgreSQL server (real
// sessions) many concurrent claimers never hold more than the limit, and claims over ~2 s stay within R·t + burst.

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ClaimedMessage, TransportStore } from '../../shared/transport/types';
import { openForDescribe } from '../support/lifecycle';
import { message } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures } from './fixtures';

const LOCK = 30_000;

async function publishMany(store: TransportStore, queue: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 100) {
    await store.publish(Array.from({ length: Math.min(100, n - i) }, (_, k) => message(queue, { n: i + k })));
  }
}

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] limited claim`, { timeout: 60_000 }, () => {
    const h = openForDescribe(() => fixture.create());

    it('the concurrency limit counts leased rows: claims stop at the limit, an ack or a lapsed lease makes room', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'lim-conc';
      await publishMany(h.store, q, 10);
      const limits = { concurrency: 3 };
      const first = await h.store.claimLimited(q, 2, LOCK, randomUUID(), limits);
      expect(first.messages).toHaveLength(2);
      expect(first.limitedBy).toBeNull();
      const second = await h.store.claimLimited(q, 5, LOCK, randomUUID(), limits);
      expect(second.messages).toHaveLength(1);
      expect(second.limitedBy).toBe('concurrency');
      const full = await h.store.claimLimited(q, 5, LOCK, randomUUID(), limits);
      expect(full.messages).toHaveLength(0);
      expect(full.limitedBy).toBe('concurrency');
      // the earliest lease lapses within the lock timeout: that is when room appears at the latest
      expect(full.retryInMs).toBeGreaterThan(LOCK - 10_000);
      expect(full.retryInMs).toBeLessThanOrEqual(LOCK);
      expect(await h.store.claimOutlook(q, limits)).toMatchObject({ due: false });
      expect((await h.store.claimOutlook(q)).due).toBe(true); // the unlimited outlook does not know the limit

      expect(await h.store.ack([first.messages[0]!])).toBe(1);
      expect((await h.store.claimOutlook(q, limits)).due).toBe(true);
      const afterAck = await h.store.claimLimited(q, 5, LOCK, randomUUID(), limits);
      expect(afterAck.messages).toHaveLength(1);
      await h.raw.expireLease(first.messages[1]!.id);
      expect((await h.store.claimLimited(q, 5, LOCK, randomUUID(), limits)).messages).toHaveLength(1);
    });

    it('the live leases count: a hand-back or a lapse frees the slot, a renewal keeps it, a re-claimed job counts once, an ack frees its slot', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'lim-roster';
      await publishMany(h.store, q, 8);
      const limits = { concurrency: 4 };
      const c = await h.store.claimLimited(q, 4, LOCK, randomUUID(), limits);
      expect(c.messages).toHaveLength(4);
      expect(c.leased).toBe(4);
      expect((await h.store.claimLimited(q, 4, LOCK, randomUUID(), limits)).messages).toHaveLength(0);
      // a renewal keeps its lease (and its slot); an unstarted hand-back frees its slot
      const [a, b, cc, d] = c.messages as [ClaimedMessage, ClaimedMessage, ClaimedMessage, ClaimedMessage];
      expect(await h.store.renew(a, LOCK)).toBe(true);
      await h.store.releaseUnstarted([b]);
      const afterRelease = await h.store.claimLimited(q, 4, LOCK, randomUUID(), limits);
      expect(afterRelease.messages).toHaveLength(1);
      expect(afterRelease.leased).toBe(4);
      // a lapsed lease frees its slot; the job claimed again holds one slot, under its new lock id
      await h.raw.expireLease(cc.id);
      const again = await h.store.claimLimited(q, 4, LOCK, randomUUID(), limits);
      expect(again.messages).toHaveLength(1);
      expect(again.leased).toBe(4);
      // acks free their slots
      expect(await h.store.ack([a, d, ...afterRelease.messages, ...again.messages])).toBe(4);
      const last = await h.store.claimLimited(q, 4, LOCK, randomUUID(), limits);
      expect(last.messages).toHaveLength(4);
      expect(last.leased).toBe(4);
    });

    it('a lapsed lease whose slot went to another job cannot be renewed: the limit holds under a lapse (review M2)', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'lim-lapse';
      const limits = { concurrency: 1 };
      await h.store.publish([message(q, { job: 'a' })]);
      const [a] = (await h.store.claimLimited(q, 1, LOCK, randomUUID(), limits)).messages;
      expect(a).toBeDefined();
      // a higher-priority job arrives, then A's owner stalls past its lease
      await h.store.publish([message(q, { job: 'b' }, { priority: 10 })]);
      await h.raw.expireLease(a!.id);
      const b = await h.store.claimLimited(q, 1, LOCK, randomUUID(), limits);
      expect(b.messages.map((m) => JSON.parse(m.payloadJson).job)).toEqual(['b']);
      expect(b.leased).toBe(1);
      // the stalled owner's heartbeat: the lease lapsed, so it is not renewed (the owner aborts its handler)
      expect(await h.store.renew(a!, LOCK)).toBe(false);
      // and the lapsed job does not come back past the limit either: the queue holds one live lease
      const next = await h.store.claimLimited(q, 1, LOCK, randomUUID(), limits);
      expect(next.messages).toHaveLength(0);
      expect(next.limitedBy).toBe('concurrency');
      await h.store.ack(b.messages);
      const c = await h.store.claimLimited(q, 1, LOCK, randomUUID(), limits);
      expect(c.messages.map((m) => JSON.parse(m.payloadJson).job)).toEqual(['a']);
    });

    it('rows of one limited claim carry the caller lock id; releaseLostClaim hands them back with their attempt', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'lim-lost';
      await publishMany(h.store, q, 4);
      const lockId = randomUUID();
      const c = await h.store.claimLimited(q, 4, LOCK, lockId, { concurrency: 2 });
      expect(c.messages.map((m) => m.lockId)).toEqual([lockId, lockId]);
      expect(c.messages.map((m) => m.attempt)).toEqual([1, 1]);
      expect(await h.store.releaseLostClaim(q, lockId)).toBe(2);
      expect((await h.raw.row(c.messages[0]!.id))?.attempts).toBe(0);
      expect((await h.store.claimLimited(q, 4, LOCK, randomUUID(), { concurrency: 2 })).messages).toHaveLength(2);
    });

    it('the rate limit spends a token bucket that starts full and refills on the database clock', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'lim-rate';
      await publishMany(h.store, q, 40);
      const limits = { ratePerSecond: 10, burst: 3 };
      const first = await h.store.claimLimited(q, 10, LOCK, randomUUID(), limits);
      expect(first.messages).toHaveLength(3); // the burst
      expect(first.limitedBy).toBe('rate');
      expect(first.retryInMs).toBeGreaterThan(0);
      expect(first.retryInMs).toBeLessThanOrEqual(100);
      const empty = await h.store.claimLimited(q, 10, LOCK, randomUUID(), limits);
      expect(empty.messages.length).toBeLessThanOrEqual(1);
      expect(empty.limitedBy).toBe('rate');
      const outlook = await h.store.claimOutlook(q, limits);
      if (!outlook.due) expect(outlook.resumesInMs).toBeLessThanOrEqual(100);
      await new Promise((r) => setTimeout(r, 350));
      const refilled = await h.store.claimLimited(q, 10, LOCK, randomUUID(), limits);
      expect(refilled.messages).toHaveLength(3); // capped by the bucket's size, not 3.5 s of tokens
    });

    it('a pause and a backoff hold limited and unlimited claims; the backoff keeps the later end and shows in the state', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'merge');
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'lim-held';
      await publishMany(h.store, q, 3);
      await h.store.setQueuePaused(q, true);
      expect((await h.store.claimLimited(q, 3, LOCK, randomUUID(), { concurrency: 5 })).messages).toHaveLength(0);
      expect((await h.store.claimOutlook(q, { concurrency: 5 })).due).toBe(false);
      await h.store.setQueuePaused(q, false);

      const until = await h.store.backOffQueue(q, 2_000);
      const shorter = await h.store.backOffQueue(q, 100);
      expect(shorter.getTime()).toBe(until.getTime());
      expect((await h.store.queueState(q)).backoffUntil?.getTime()).toBe(until.getTime());
      expect(await h.store.claim(q, 3, LOCK)).toHaveLength(0);
      const held = await h.store.claimLimited(q, 3, LOCK, randomUUID(), { concurrency: 5 });
      expect(held).toMatchObject({ messages: [], limitedBy: 'backoff' });
      expect(held.retryInMs).toBeGreaterThan(1_000);
      expect(held.retryInMs).toBeLessThanOrEqual(2_000);
      const outlook = await h.store.claimOutlook(q);
      expect(outlook.due).toBe(false);
      expect(outlook.resumesInMs).toBeGreaterThan(1_000);
      expect((await h.store.claimOutlook(q, { concurrency: 5 })).resumesInMs).toBeGreaterThan(1_000);
      // another queue is not held
      await publishMany(h.store, 'lim-free', 1);
      expect(await h.store.claim('lim-free', 1, LOCK)).toHaveLength(1);

      await h.store.backOffQueue(q, 0); // a shorter backoff never shortens the stored one
      expect((await h.store.queueState(q)).backoffUntil).not.toBeNull();
      const left = until.getTime() - (await h.store.now()).getTime();
      await new Promise((r) => setTimeout(r, left + 50));
      expect((await h.store.queueState(q)).backoffUntil).toBeNull();
      expect((await h.store.claimOutlook(q)).due).toBe(true);
      expect(await h.store.claim(q, 3, LOCK)).toHaveLength(3);
    });

    it.skipIf(!fixture.concurrent)('many concurrent claimers on their own sessions never hold more than the limit', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      await skipOnGap(fixture.name, ctx, 'readPast');
      await skipOnGap(fixture.name, ctx, 'indexNames');
      const q = 'lim-race';
      const limit = 5;
      await publishMany(h.store, q, 300);
      const peers = await Promise.all(Array.from({ length: 6 }, () => h.openPeer()));
      const held = new Map<string, { id: string; lockId: string }>();
      let maxHeld = 0;
      let done = 0;
      // the peers' pools close with the harness
      await Promise.all(
          peers.flatMap((peer) =>
            Array.from({ length: 2 }, async () => {
              for (;;) {
                const c = await peer.claimLimited(q, 4, LOCK, randomUUID(), { concurrency: limit });
                for (const m of c.messages) held.set(m.id, m);
                maxHeld = Math.max(maxHeld, held.size);
                if (c.messages.length === 0 && done >= 300) return;
                // hold the jobs a moment, then ack them (the count must see the acks committed)
                await new Promise((r) => setTimeout(r, 2 + Math.random() * 5));
                if (c.messages.length > 0) {
                  // forgotten before the ack is sent: a claim that sees room saw the ack committed, so what is
                  // held here is always a subset of what the database counts as leased
                  for (const m of c.messages) held.delete(m.id);
                  await peer.ack(c.messages);
                  done += c.messages.length;
                } else await new Promise((r) => setTimeout(r, 3));
              }
            }),
          ),
      );
      console.log(`[${fixture.name}] 12 claimers on 6 sessions, limit ${limit}: at most ${maxHeld} held at once, ${done} jobs`);
      expect(done).toBe(300);
      expect(maxHeld).toBeLessThanOrEqual(limit);
      expect(maxHeld).toBe(limit);
    });

    it.skipIf(!fixture.concurrent)('concurrent claimers over ~2 s start at most R·t + burst jobs', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      await skipOnGap(fixture.name, ctx, 'readPast');
      await skipOnGap(fixture.name, ctx, 'indexNames');
      const q = 'lim-rate-race';
      const rate = 25;
      const burst = 3;
      await publishMany(h.store, q, 400);
      const peers = await Promise.all(Array.from({ length: 4 }, () => h.openPeer()));
      let claimed = 0;
      const started = Date.now();
      await Promise.all(
          peers.map(async (peer) => {
            while (Date.now() - started < 2_000) {
              const c = await peer.claimLimited(q, 8, LOCK, randomUUID(), { ratePerSecond: rate, burst });
              claimed += c.messages.length;
              await new Promise((r) => setTimeout(r, Math.min(20, c.retryInMs ?? 5)));
            }
          }),
      );
      const seconds = (Date.now() - started) / 1000;
      console.log(`[${fixture.name}] rate ${rate}/s burst ${burst}: ${claimed} claims in ${seconds.toFixed(2)} s (bound ${(rate * seconds + burst).toFixed(1)})`);
      expect(claimed).toBeLessThanOrEqual(Math.floor(rate * seconds + burst));
      // and the bucket does not starve them: a loose floor, as the claimers' own round trips are slow on a loaded
      // machine (43 of 45 once under CI); the 10 % rate bound is queue-limits.e2e's, across three hosts
      expect(claimed).toBeGreaterThanOrEqual(Math.floor(rate * 2 * 0.75));
    });
  });
}
