import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import { AckBatcher } from '../../shared/transport/ack-batcher';
import { dispatchDelivery, type DispatchDeps } from '../../shared/transport/dispatcher';
import { deadLetterHeaders } from '../../shared/transport/headers';
import type { TransportStore } from '../../shared/transport/types';
import { openForDescribe } from '../support/lifecycle';
import { message } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures } from './fixtures';

const LOCK = 30_000;

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] dead letters`, () => {
    const h = openForDescribe(() => fixture.create());

    async function bury(queue: string, dlq: string, reason = 'failed') {
      const m = message(queue, { from: queue });
      await h.store.publish([m]);
      const [c] = await h.store.claim(queue, 1, LOCK);
      const newId = randomUUID();
      expect(
        await h.store.deadLetter({
          source: c!,
          newId,
          deadLetterQueue: dlq,
          payloadJson: c!.payloadJson,
          headers: deadLetterHeaders(c!.headers, reason, queue),
          reason,
        }),
      ).toBe(true);
      return newId;
    }

    function deps(store: TransportStore, dlq: string, max = 3): DispatchDeps {
      return {
        store,
        acks: new AckBatcher((b) => store.ack(b), 16, silentLogger),
        policy: { maxDeliveryAttempts: max, redeliveryDelayMs: 0, redeliveryMaxDelayMs: 0 },
        lockTimeoutMs: LOCK,
        deadLetterQueue: dlq,
        logger: silentLogger,
      };
    }

    it('hasMessage finds a dead letter on exactly its queue, and nothing for an unknown id', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const id = await bury('hmsrc', 'hm_dlq');
      expect(await h.store.hasMessage('hm_dlq', id)).toBe(true);
      expect(await h.store.hasMessage('hmsrc', id)).toBe(false);
      expect(await h.store.hasMessage('hm_dlq ', id)).toBe(false);
      expect(await h.store.hasMessage('HM_DLQ', id)).toBe(false);
      expect(await h.store.hasMessage('hm_dlq', randomUUID())).toBe(false);
    });

    it('the prune deletes only its own queue’s old rows, in bounded batches', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const oldOwn = await bury('prsrc', 'pr_dlq');
      const youngOwn = await bury('prsrc', 'pr_dlq');
      const paddedOld = randomUUID();
      await h.raw.insert(paddedOld, 'pr_dlq ');
      const otherOld = await bury('prsrc', 'pr_other');
      for (const id of [oldOwn, paddedOld, otherOld]) await h.raw.ageCreated(id, 3_600_000);
      const deleted = await h.store.pruneDeadLetterBatch('pr_dlq', 60_000);
      expect(deleted).toBe(1);
      expect(await h.raw.row(oldOwn)).toBeUndefined();
      expect(await h.raw.row(youngOwn)).toBeDefined();
      expect(await h.raw.row(paddedOld)).toBeDefined();
      expect(await h.raw.row(otherOld)).toBeDefined();
    });

    it('stats count ready, delayed, leased and dead-lettered rows of exactly one queue', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      await h.store.publish([message('st'), message('st'), message('st', {}, { delayMs: 600_000 })]);
      await h.store.publish([message('st2')]);
      await h.store.claim('st', 1, LOCK);
      await bury('st', 'st_dlq');
      await bury('st2', 'st_dlq');
      const stats = await h.store.queueStats('st', 'st_dlq');
      expect(stats).toMatchObject({ queue: 'st', ready: 1, delayed: 1, leased: 1, deadLettered: 1 });
      expect(stats.oldestReadyAgeSeconds).toBeGreaterThanOrEqual(0);
      const empty = await h.store.queueStats('st_none', 'st_dlq');
      expect(empty).toMatchObject({ ready: 0, delayed: 0, leased: 0, deadLettered: 0, oldestReadyAgeSeconds: null });
    });

    it('lists, requeues (attempts reset, dead-letter headers removed) and deletes by source queue', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const first = await bury('rq', 'rq_dlq', 'first failure');
      const second = await bury('rq', 'rq_dlq', 'second failure');
      const foreign = await bury('rq_other', 'rq_dlq');
      const listed = await h.store.listDeadLetters('rq_dlq', 'rq', 10);
      expect(listed.map((d) => d.id).sort()).toEqual([first, second].sort());
      expect(listed.find((d) => d.id === first)).toMatchObject({ sourceQueue: 'rq', reason: 'first failure' });
      expect(JSON.parse(listed[0]!.payloadJson)).toEqual({ from: 'rq' });

      expect(await h.store.requeueDeadLetter('rq_dlq', 'rq', foreign)).toBe(false); // wrong source queue
      expect(await h.store.requeueDeadLetter('rq_dlq', 'rq', first)).toBe(true);
      expect(await h.store.requeueDeadLetter('rq_dlq', 'rq', first)).toBe(false); // already moved
      const [again] = await h.store.claim('rq', 1, LOCK);
      expect(again).toMatchObject({ id: first, attempt: 1, queue: 'rq' });
      expect(again!.headers['AR-DeadLetter-Reason']).toBeUndefined();
      expect(again!.headers['AR-DeadLetter-Source-Queue']).toBeUndefined();

      expect(await h.store.deleteDeadLetter('rq_dlq', 'rq', second)).toBe(true);
      expect(await h.store.deleteDeadLetter('rq_dlq', 'rq', second)).toBe(false);
      expect(await h.store.listDeadLetters('rq_dlq', 'rq', 10)).toEqual([]);
      expect(await h.store.listDeadLetters('rq_dlq', 'rq_other', 10)).toHaveLength(1);
    });

    it('a delivery past the cap is dead-lettered without running the handler', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const m = message('cap');
      await h.store.publish([m]);
      for (let i = 0; i < 3; i++) {
        const [c] = await h.store.claim('cap', 1, LOCK);
        await h.store.release(c!, 0);
      }
      const [fourth] = await h.store.claim('cap', 1, LOCK);
      expect(fourth!.attempt).toBe(4);
      let ran = 0;
      const outcome = await dispatchDelivery(fourth!, async () => ++ran, deps(h.store, 'cap_dlq', 3));
      expect(outcome).toBe('dead-lettered');
      expect(ran).toBe(0);
      const [dead] = await h.store.listDeadLetters('cap_dlq', 'cap', 5);
      expect(dead!.reason).toBe('Message exceeded 3 delivery attempts without settling (attempt 4).');
    });

    it('a failing handler is NAKed, then dead-lettered on its last attempt', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const m = message('fail');
      await h.store.publish([m]);
      const d = deps(h.store, 'fail_dlq', 2);
      const boom = async () => {
        throw new Error('handler exploded');
      };
      const [c1] = await h.store.claim('fail', 1, LOCK);
      expect(await dispatchDelivery(c1!, boom, d)).toBe('retried');
      expect(await h.raw.row(m.id)).toMatchObject({ attempts: 1, lockId: null });
      const [c2] = await h.store.claim('fail', 1, LOCK);
      expect(await dispatchDelivery(c2!, boom, d)).toBe('dead-lettered');
      // the dead letter keeps the job's id and its deliveries: the row is now on the dead-letter queue, no lease
      expect(await h.raw.row(m.id)).toEqual({ queue: 'fail_dlq', attempts: 2, lockId: null });
      expect(await h.raw.countQueue('fail')).toBe(0);
      const [dead] = await h.store.listDeadLetters('fail_dlq', 'fail', 5);
      expect(dead).toMatchObject({ id: m.id, reason: 'handler exploded', sourceQueue: 'fail' });
      expect(dead!.headers['AR-DeadLetter-Reason']).toBe('handler exploded');
    });

    it('keeps the payload text byte for byte: publish, claim, handler, dead-letter move, list, requeue', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const text = ' {"a":9007199254740993, "b":1e999,"c":123456789012345678901234567890,"d":0.10000000000000000000001,"s":"№ \\u00e9 😀"} ';
      const m = message('exact', null, { payloadJson: text });
      await h.store.publish([m]);
      const seen: string[] = [];
      const [c] = await h.store.claim('exact', 1, LOCK);
      expect(c!.payloadJson).toBe(text);
      const failing = async (job: { payloadJson: string }) => {
        seen.push(job.payloadJson);
        throw new Error('no');
      };
      expect(await dispatchDelivery(c!, failing, deps(h.store, 'exact_dlq', 1))).toBe('dead-lettered');
      expect(seen).toEqual([text.trim()]); // the handler gets the text, trimmed at its ends only
      const [dead] = await h.store.listDeadLetters('exact_dlq', 'exact', 5);
      expect(dead!.payloadJson).toBe(text);
      expect(await h.store.requeueDeadLetter('exact_dlq', 'exact', m.id)).toBe(true);
      const [again] = await h.store.claim('exact', 1, LOCK);
      expect(again!.payloadJson).toBe(text);
    });

    it('a successful handler is acked through the batcher', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const m = message('okq');
      await h.store.publish([m]);
      const d = deps(h.store, 'ok_dlq');
      const [c] = await h.store.claim('okq', 1, LOCK);
      expect(await dispatchDelivery(c!, async (job) => job.payload, d)).toBe('completed');
      await d.acks.drain();
      expect(d.acks.acked).toBe(1);
      expect(await h.raw.row(m.id)).toBeUndefined();
    });

    // U+0000 and lone surrogates: PostgreSQL's jsonb refuses both, and the dead-letter queries read headers as JSON
    it.for([
      ['a NUL', 'nul', '\u0000', '\u0000'],
      ['lone surrogates', 'sur', '\ud800', '\udc00'],
    ] as const)('%s in a failure reason or header are stored as U+FFFD, and the list and the stats keep working', async ([_what, queue, inHeader, inReason], ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      await skipOnGap(fixture.name, ctx, 'jsonEscapes');
      const m = message(queue, {}, { headers: { odd: `a${inHeader}b` } });
      await h.store.publish([m]);
      const [c] = await h.store.claim(queue, 1, LOCK);
      const reason = `boom${inReason}here`;
      const dlq = `${queue}_dlq`;
      expect(
        await h.store.deadLetter({ source: c!, newId: randomUUID(), deadLetterQueue: dlq, payloadJson: c!.payloadJson, headers: deadLetterHeaders(c!.headers, reason, queue), reason }),
      ).toBe(true);
      const [dead] = await h.store.listDeadLetters(dlq, queue, 5);
      expect(dead!.headers).toMatchObject({ 'AR-DeadLetter-Reason': 'boom\uFFFDhere', odd: 'a\uFFFDb' });
      expect((await h.store.queueStats(queue, dlq)).deadLettered).toBe(1);
    });

    it('a row written straight into the table with unreadable header escapes cannot break the stats or the list of any queue', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'jsonEscapes');
      await h.store.ensureSchema(); // the table, also when this test runs first
      const src = '"AR-DeadLetter-Source-Queue":"rawsrc"';
      await h.raw.insert(randomUUID(), 'raw_dlq', `{${src},"x":"\\ud800"}`); // a lone surrogate escape: jsonb refuses it
      await h.raw.insert(randomUUID(), 'raw_dlq', `{${src},"x":"\\u0000"}`); // a NUL escape: jsonb refuses it too
      const pathLike = randomUUID();
      await h.raw.insert(pathLike, 'raw_dlq', `{${src},"x":"C:\\\\u0000dir"}`); // an escaped backslash: the text \u0000, harmless
      const stats = await h.store.queueStats('rawsrc', 'raw_dlq');
      const listed = await h.store.listDeadLetters('raw_dlq', 'rawsrc', 10);
      expect(listed.map((d) => d.id)).toContain(pathLike);
      expect(listed.find((d) => d.id === pathLike)!.headers.x).toBe('C:\\u0000dir');
      // PostgreSQL reads the two unreadable rows as having no source; SQL Server's JSON_VALUE reads them
      expect(stats.deadLettered).toBe(listed.length);
      expect((await h.store.queueStats('other', 'raw_dlq')).deadLettered).toBe(0);
    });
  });
}
