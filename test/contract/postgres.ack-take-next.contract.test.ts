// Ack-and-take-next (issue 25): an ack of an ordering key's head leases the key's next job to the acking drain in
// the ack's statement (stores/postgres/ready-set.ts pgHandOver), instead of promoting it for the next claim. These
// pin when it is taken and when it is only promoted: FIFO per key, the concurrency limit's count, pause and backoff,
// claim order (priority), a crashed or lost-answer drain's taken job, and the drain loop around it (two drains, a
// limit, and the claims it saves, counted at the wire). PostgreSQL and PGlite; SQL Server has no handover.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { countWire } from '../../bench/wire-count';
import { silentLogger } from '../../shared/log';
import { drainQueue, type DrainOptions } from '../../shared/transport/drain-loop';
import type { HandoverRequest, Settlement, TransportStore } from '../../shared/transport/types';
import { WakeSignal } from '../../shared/transport/wake';
import { openForDescribe } from '../support/lifecycle';
import { message, sleep } from '../support/messages';
import { announce, storeFixtures } from './fixtures';

const LOCK = 30_000;
type Job = { k: string; n: number };
const keyed = (queue: string, k: string, n: number, extra = {}) => message(queue, { k, n }, { orderingKey: k, ...extra });
const job = (c: { payloadJson: string }) => JSON.parse(c.payloadJson) as Job;
const tag = (c: { payloadJson: string }) => `${job(c).k}${job(c).n}`;

for (const fixture of storeFixtures().filter((f) => f.name !== 'sqlserver')) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] ack-and-take-next`, { timeout: 120_000 }, () => {
    const h = openForDescribe(() => fixture.create());
    const take = (queue: string, max: number, extra: Partial<HandoverRequest> = {}): HandoverRequest => ({ queue, max, lockTimeoutMs: LOCK, lockId: randomUUID(), ...extra });
    const ackTake = (batch: readonly Settlement[], req: HandoverRequest) => h.store.ackAndTakeNext!(batch, req);

    it('takes each acked head\'s next job with a claim\'s lease, in claim order; the key\'s later jobs stay behind it', async () => {
      const q = 'atn_fifo';
      await h.store.publish([keyed(q, 'a', 1), keyed(q, 'b', 1), keyed(q, 'a', 2), keyed(q, 'b', 2), keyed(q, 'a', 3)]);
      const heads = await h.store.claim(q, 10, LOCK);
      expect(heads.map(tag)).toEqual(['a1', 'b1']);
      const req = take(q, 10);
      const r = await ackTake(heads, req);
      expect(r.acked).toBe(2);
      expect(r.left).toBe(0);
      expect(r.taken.map(tag)).toEqual(['a2', 'b2']);
      for (const t of r.taken) {
        expect(t.lockId).toBe(req.lockId);
        expect(t.attempt).toBe(1);
        expect(await h.raw.row(t.id)).toEqual({ queue: q, attempts: 1, lockId: req.lockId });
      }
      // another drain's claim finds nothing: a2 and b2 are leased, a3 waits behind a2
      expect(await h.store.claim(q, 10, LOCK)).toEqual([]);
      const second = await ackTake(r.taken, take(q, 10));
      expect(second.taken.map(tag)).toEqual(['a3']); // b has no job left
      expect(second.left).toBe(0);
      expect((await ackTake(second.taken, take(q, 10))).taken).toEqual([]);
      expect(await h.raw.countQueue(q)).toBe(0);
    });

    it('a taken job NAKed stays its key\'s head: the retry runs before the key\'s next job, whoever claims it', async () => {
      const q = 'atn_retry';
      await h.store.publish([keyed(q, 'a', 1), keyed(q, 'a', 2), keyed(q, 'a', 3)]);
      const [a1] = await h.store.claim(q, 10, LOCK);
      const [a2] = (await ackTake([a1!], take(q, 10))).taken;
      expect(tag(a2!)).toBe('a2');
      expect(await h.store.release(a2!, 0)).toBe(true);
      const again = await h.store.claim(q, 10, LOCK);
      expect(again.map(tag)).toEqual(['a2']);
      expect(again[0]!.attempt).toBe(2);
      expect((await ackTake(again, take(q, 10))).taken.map(tag)).toEqual(['a3']);
    });

    it('takes at most max, in claim order; the others are promoted for the next claim', async () => {
      const q = 'atn_max';
      await h.store.publish([keyed(q, 'a', 1), keyed(q, 'b', 1), keyed(q, 'c', 1), keyed(q, 'a', 2), keyed(q, 'b', 2), keyed(q, 'c', 2)]);
      const heads = await h.store.claim(q, 10, LOCK);
      const r = await ackTake(heads, take(q, 1));
      expect(r.taken.map(tag)).toEqual(['a2']);
      expect(r.left).toBe(2);
      expect((await h.store.claim(q, 10, LOCK)).map(tag)).toEqual(['b2', 'c2']);
      // max 0 is the plain ack: every successor promoted
      await h.store.publish([keyed(q, 'd', 1), keyed(q, 'd', 2)]);
      const d1 = await h.store.claim(q, 10, LOCK);
      expect((await ackTake(d1, take(q, 0))).taken).toEqual([]);
      expect((await h.store.claim(q, 10, LOCK)).map(tag)).toEqual(['d2']);
    });

    it('only the drain\'s own queue, and only due successors: a delayed next job is scheduled, not taken', async () => {
      const q = 'atn_due';
      await h.store.publish([keyed(q, 'a', 1), keyed(q, 'a', 2, { delayMs: 60_000 }), keyed(q, 'b', 1), keyed(q, 'b', 2)]);
      const heads = await h.store.claim(q, 10, LOCK);
      const r = await ackTake(heads, take('some_other_queue', 10));
      expect(r.taken).toEqual([]); // b2 is on another queue than the one asked for: promoted
      expect(r.left).toBe(2); // a2 scheduled, b2 ready
      expect((await h.store.claim(q, 10, LOCK)).map(tag)).toEqual(['b2']);
    });

    it('the concurrency limit stays exact: a taken job replaces its live head one for one, a lapsed head\'s successor is not taken', async () => {
      const q = 'atn_limit';
      const limits = { concurrency: 2 };
      await h.store.publish([keyed(q, 'a', 1), keyed(q, 'b', 1), keyed(q, 'a', 2), keyed(q, 'b', 2), keyed(q, 'c', 1)]);
      const first = await h.store.claimLimited(q, 10, LOCK, randomUUID(), limits);
      expect(first.messages.map(tag)).toEqual(['a1', 'b1']);
      expect(first.leased).toBe(2);
      const [a1, b1] = first.messages;
      const r = await ackTake([a1!], take(q, 10));
      expect(r.taken.map(tag)).toEqual(['a2']);
      const full = await h.store.claimLimited(q, 10, LOCK, randomUUID(), limits);
      expect(full.messages).toEqual([]);
      expect(full.limitedBy).toBe('concurrency');
      expect(full.leased).toBe(2); // b1 and the taken a2: the count the limit holds did not grow
      // b1's lease lapsed: a limited claim may already have given its slot away, so its successor is not taken
      await h.raw.expireLease(b1!.id);
      const lapsed = await ackTake([b1!], take(q, 10));
      expect(lapsed.acked).toBe(1);
      expect(lapsed.taken).toEqual([]);
      expect(lapsed.left).toBe(1);
      const next = await h.store.claimLimited(q, 10, LOCK, randomUUID(), limits);
      expect(next.messages.map(tag)).toEqual(['b2']); // one slot (a2 holds the other): b2 comes first in claim order
      expect(next.leased).toBe(2);
    });

    it('a paused or backed-off queue takes nothing: the successor waits in the ready set for the resume', async () => {
      const q = 'atn_pause';
      await h.store.publish([keyed(q, 'a', 1), keyed(q, 'a', 2), keyed(q, 'a', 3), keyed(q, 'b', 1), keyed(q, 'b', 2)]);
      const heads = await h.store.claim(q, 10, LOCK);
      const [a1, b1] = heads;
      await h.store.setQueuePaused(q, true);
      const paused = await ackTake([a1!], take(q, 10));
      expect(paused.taken).toEqual([]);
      expect(paused.left).toBe(1);
      expect(await h.store.claim(q, 10, LOCK)).toEqual([]);
      await h.store.setQueuePaused(q, false);
      await h.store.backOffQueue(q, 60_000);
      const backedOff = await ackTake([b1!], take(q, 10));
      expect(backedOff.taken).toEqual([]);
      expect(await h.store.claim(q, 10, LOCK)).toEqual([]);
      const state = await h.store.queueState(q);
      expect(state.backoffUntil).not.toBeNull();
    });

    it('claim order holds: a ready job of higher priority, or an older one of the same priority, keeps the successor in the ready set', async () => {
      const q = 'atn_prio';
      await h.store.publish([keyed(q, 'a', 1), keyed(q, 'a', 2), keyed(q, 'a', 3)]);
      const [a1] = await h.store.claim(q, 1, LOCK);
      await h.store.publish([message(q, { k: 'p', n: 9 }, { priority: 5 })]);
      const blocked = await ackTake([a1!], take(q, 10));
      expect(blocked.taken).toEqual([]);
      expect(blocked.left).toBe(1);
      const next = await h.store.claim(q, 10, LOCK);
      expect(next.map(tag)).toEqual(['p9', 'a2']); // what a claim takes first
      const p9 = next.find((c) => tag(c) === 'p9')!;
      const a2 = next.find((c) => tag(c) === 'a2')!;
      await h.store.ack([p9]);
      // a ready job of the same priority published after a3: a3 precedes it and is taken
      await h.store.publish([message(q, { k: 'p', n: 10 })]);
      expect((await ackTake([a2], take(q, 10))).taken.map(tag)).toEqual(['a3']);
      // and an older ready job of the same priority blocks: x was published before b2 and is still ready
      await h.store.publish([keyed(q, 'b', 1)]);
      await h.store.publish([message(q, { k: 'x', n: 1 })]);
      await h.store.publish([keyed(q, 'b', 2)]);
      const mid = await h.store.claim(q, 2, LOCK); // p10 and b1; x stays ready
      expect(mid.map(tag)).toEqual(['p10', 'b1']);
      const older = await ackTake([mid[1]!], take(q, 10));
      expect(older.taken).toEqual([]);
      expect((await h.store.claim(q, 10, LOCK)).map(tag)).toEqual(['x1', 'b2']);
    });

    it('a taken job whose drain crashed is claimed again once its lease lapses; a lost answer is handed back by its lock id', async () => {
      const q = 'atn_crash';
      await h.store.publish([keyed(q, 'a', 1), keyed(q, 'a', 2), keyed(q, 'a', 3), keyed(q, 'b', 1), keyed(q, 'b', 2)]);
      const heads = await h.store.claim(q, 10, LOCK);
      const [a1, b1] = heads;
      // the crashed drain: took a2 under a short lease and never ran it
      const crashed = await ackTake([a1!], take(q, 10, { lockTimeoutMs: 300 }));
      expect(crashed.taken.map(tag)).toEqual(['a2']);
      expect(await h.store.claim(q, 10, LOCK)).toEqual([]);
      await sleep(500);
      const redelivered = await h.store.claim(q, 10, LOCK);
      expect(redelivered.map(tag)).toEqual(['a2']); // not a3: a2 is still its key's head
      expect(redelivered[0]!.attempt).toBe(2);
      // the lost answer: the drain hands back whatever its lock id took (attempt returned)
      const lost = take(q, 10);
      expect((await ackTake([b1!], lost)).taken.map(tag)).toEqual(['b2']);
      expect(await h.store.releaseLostClaim(q, lost.lockId)).toBe(1);
      const back = await h.store.claim(q, 10, LOCK);
      expect(back.map(tag)).toEqual(['b2']);
      expect(back[0]!.attempt).toBe(1);
    });

    describe('in the drain loop', () => {
      const drainOptions = (store: TransportStore, queue: string, handler: DrainOptions['handler'], extra: Partial<DrainOptions> = {}): DrainOptions => ({
        store,
        queue,
        handler,
        policy: { maxDeliveryAttempts: 5, redeliveryDelayMs: 0, redeliveryMaxDelayMs: 0 },
        deadLetterQueue: `${queue}_dlq`,
        lockTimeoutMs: LOCK,
        batchSize: 16,
        concurrency: 4,
        prefetch: 16,
        budgetMs: 60_000,
        idleGraceMs: 300,
        emptyPollDelayMs: 50,
        wake: new WakeSignal(),
        logger: silentLogger,
        ...extra,
      });
      const publishKeys = async (store: TransportStore, queue: string, keys: number, perKey: number) => {
        const all = [];
        for (let n = 1; n <= perKey; n++) for (let k = 0; k < keys; k++) all.push(keyed(queue, `k${k}`, n));
        for (let i = 0; i < all.length; i += 100) await store.publish(all.slice(i, i + 100));
      };

      it('two drains: every key\'s jobs run one at a time in publish order, each once, under a concurrency limit that holds', async () => {
        const q = 'atn_drains';
        const KEYS = 12;
        const PER_KEY = 15;
        const LIMIT = 5;
        await publishKeys(h.store, q, KEYS, PER_KEY);
        const order = new Map<string, number[]>();
        const running = new Set<string>();
        let runningNow = 0;
        let mostRunning = 0;
        const handler: DrainOptions['handler'] = async (j) => {
          const { k, n } = JSON.parse(j.payloadJson) as Job;
          expect(running.has(k)).toBe(false); // one job of a key at a time
          running.add(k);
          mostRunning = Math.max(mostRunning, ++runningNow);
          await sleep(2);
          order.set(k, [...(order.get(k) ?? []), n]);
          running.delete(k);
          runningNow--;
        };
        const peers = fixture.concurrent ? await Promise.all([h.openPeer(), h.openPeer()]) : [h.store, h.store];
        const reports = await Promise.all(peers.map((s) => drainQueue(drainOptions(s, q, handler, { limits: { concurrency: LIMIT } }))));
        expect(reports.reduce((a, r) => a + r.completed, 0)).toBe(KEYS * PER_KEY);
        expect(order.size).toBe(KEYS);
        for (const [, ns] of order) expect(ns).toEqual(Array.from({ length: PER_KEY }, (_, i) => i + 1));
        expect(mostRunning).toBeLessThanOrEqual(LIMIT);
        expect(await h.raw.countQueue(q)).toBe(0);
      });

      it('a drain stopped while acks take successors hands every taken job back unstarted', async () => {
        const q = 'atn_stop';
        await publishKeys(h.store, q, 8, 10);
        const stop = new AbortController();
        let ran = 0;
        const report = await drainQueue(
          drainOptions(h.store, q, async () => {
            if (++ran === 20) stop.abort();
          }, { stopping: stop.signal }),
        );
        expect(report.stoppedBy).toBe('shutdown');
        // nothing of the queue is left leased: what was not run went back (its attempt returned)
        const leased = await h.store.queueStats(q, `${q}_dlq`);
        expect(leased.leased).toBe(0);
        expect(leased.ready + leased.delayed).toBeGreaterThan(0);
        expect(report.completed + (await h.raw.countQueue(q))).toBe(80);
      });

      it('statements per keyed job at the wire: the successors come with the acks, not with claims', async () => {
        const q = 'atn_cost';
        const KEYS = 10;
        const PER_KEY = 20;
        const JOBS = KEYS * PER_KEY;
        await publishKeys(h.store, q, KEYS, PER_KEY);
        // every store call the drain makes is one statement at the wire; counted here by method (and, on the
        // PostgreSQL server, at the driver too: the two counts agree)
        const calls = new Map<string, number>();
        let claimsWithRows = 0;
        const counted = new Proxy(h.store, {
          get(t, prop) {
            const v = Reflect.get(t, prop, t) as unknown;
            if (typeof v !== 'function') return v;
            return (...args: unknown[]) => {
              calls.set(String(prop), (calls.get(String(prop)) ?? 0) + 1);
              const r = (v as (...a: unknown[]) => unknown).apply(t, args);
              if (prop === 'claim') void (r as Promise<unknown[]>).then((rows) => rows.length > 0 && claimsWithRows++);
              return r;
            };
          },
        });
        const wire = countWire();
        let report;
        try {
          report = await drainQueue(drainOptions(counted, q, async () => undefined, { concurrency: 8 }));
        } finally {
          wire.stop();
        }
        expect(report.completed).toBe(JOBS);
        const statements = [...calls.values()].reduce((a, n) => a + n, 0);
        console.info(`[${fixture.name}] ${JOBS} keyed jobs, ${KEYS} keys: ${statements} statements (${(statements / JOBS).toFixed(3)} a job; wire ${wire.total()}), ${claimsWithRows} claims took rows`, Object.fromEntries(calls));
        if (fixture.name === 'postgres') expect(wire.total()).toBe(statements);
        // A claim takes at most one job per key (a key's next job is claimable only after its head's ack), so
        // without the handover every round of heads costs a claim: on the code before it this drain made 47 claims,
        // 20 of them taking rows, and 20 acks: 0.335 statements a job (both targets, twice). Now each key's next job
        // comes with its head's ack: one claim takes rows, the rest are the empty-queue polls (0.145-0.155 a job).
        expect(claimsWithRows).toBeLessThanOrEqual(2);
        expect(statements / JOBS).toBeLessThan(0.25);
      });
    });
  });
}

