// Job lookup and history (issue 16 §2): an ack into history moves the fenced rows into the history table in one
// statement; a job is found by id in whichever state it is (waiting, leased, dead-lettered, completed); the
// history is searched by queue or correlation id, newest first, a page at a time; the prune removes a queue's
// rows older than its retention and nothing else.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openForDescribe } from '../support/lifecycle';
import { message, sleep } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures } from './fixtures';
import { CORRELATION_ID_HEADER, DEAD_LETTER_REASON_HEADER, DEAD_LETTER_SOURCE_HEADER, type ClaimedMessage, type TransportStore } from '../../shared/transport/types';

const DLQ = 'deadletter';

async function completeOne(store: TransportStore, queue: string, headers: Record<string, string> = {}): Promise<ClaimedMessage> {
  await store.publish([message(queue, { q: queue }, { headers })]);
  const [claimed] = await store.claim(queue, 1, 60_000);
  expect(await store.ackToHistory([claimed!])).toBe(1);
  return claimed!;
}

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] job history`, () => {
    const h = openForDescribe(() => fixture.create());

    it('without the claim statement (its lock id set on the row): the move, the lookup, both searches and the prune', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'outputFunctionOfDeleted');
      const q = 'history-no-claim';
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const m = message(q, { i }, { headers: { [CORRELATION_ID_HEADER]: 'nc-1' } });
        await h.store.publish([m]);
        ids.push(m.id);
        await sleep(3);
      }
      const lockId = randomUUID();
      for (const id of ids) await h.raw.setLockId(id, lockId);
      expect(await h.store.ackToHistory([{ id: ids[0]!, lockId: randomUUID() }])).toBe(0);
      expect(await h.store.ackToHistory(ids.map((id) => ({ id, lockId })))).toBe(3);
      expect(await h.raw.countQueue(q)).toBe(0);
      expect(await h.store.findJob(ids[1]!, DLQ)).toMatchObject({ id: ids[1], state: 'completed', queue: q, correlationId: 'nc-1' });
      const first = await h.store.searchHistory({ queue: q, top: 2 });
      expect(first.items).toHaveLength(2);
      const second = await h.store.searchHistory({ queue: q, top: 2, after: first.next });
      expect([...first.items, ...second.items].map((i) => i.id).sort()).toEqual([...ids].sort());
      expect(second.next).toBeUndefined();
      expect((await h.store.searchHistory({ correlationId: 'nc-1', top: 10 })).items).toHaveLength(3);
      expect(await h.store.pruneHistoryBatch(q, 3_600_000)).toBe(0);
      await sleep(1_200);
      expect(await h.store.pruneHistoryBatch(q, 1_000)).toBe(3);
      expect(await h.store.findJob(ids[0]!, DLQ)).toBeNull();
    });

    it('an ack into history moves the row: gone from the queue, found as completed with its attempts and times', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'history-move';
      const before = await h.store.now();
      const done = await completeOne(h.store, q, { [CORRELATION_ID_HEADER]: 'order-17' });
      const after = await h.store.now();
      expect(await h.raw.countQueue(q)).toBe(0);
      const job = await h.store.findJob(done.id, DLQ);
      expect(job).toMatchObject({ id: done.id, state: 'completed', queue: q, attempts: 1, correlationId: 'order-17', lastError: null });
      expect(job!.completedAt!.getTime()).toBeGreaterThanOrEqual(before.getTime() - 1);
      expect(job!.completedAt!.getTime()).toBeLessThanOrEqual(after.getTime() + 1);
      expect(job!.createdAt.getTime()).toBeLessThanOrEqual(job!.completedAt!.getTime());
      expect(job!.availableAt!.getTime()).toBeLessThanOrEqual(job!.completedAt!.getTime());
    });

    it("history keeps the job's priority and ordering key: the lookup and both searches show them; an unkeyed job shows priority 0 and no key", async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'history-fields';
      const keyed = message(q, { k: 1 }, { priority: 7, orderingKey: 'acct-9', headers: { [CORRELATION_ID_HEADER]: 'hf-1' } });
      const plain = message(q, { k: 2 });
      await h.store.publish([keyed, plain]);
      const claimed = await h.store.claim(q, 10, 60_000);
      expect(claimed.map((c) => c.id)).toEqual([keyed.id, plain.id]);
      expect(await h.store.ackToHistory(claimed)).toBe(2);
      expect(await h.store.findJob(keyed.id, DLQ)).toMatchObject({ state: 'completed', priority: 7, orderingKey: 'acct-9' });
      const unkeyed = await h.store.findJob(plain.id, DLQ);
      expect(unkeyed).toMatchObject({ state: 'completed', priority: 0 });
      expect(unkeyed).not.toHaveProperty('orderingKey');
      const byQueue = await h.store.searchHistory({ queue: q, top: 10 });
      expect(byQueue.items.find((i) => i.id === keyed.id)).toMatchObject({ priority: 7, orderingKey: 'acct-9' });
      expect(byQueue.items.find((i) => i.id === plain.id)).toMatchObject({ priority: 0 });
      expect((await h.store.searchHistory({ correlationId: 'hf-1', top: 10 })).items).toMatchObject([{ id: keyed.id, priority: 7, orderingKey: 'acct-9' }]);
    });

    it('the move is fenced like the ack: a stale lock id moves nothing; the plain ack keeps no history', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'history-fence';
      await h.store.publish([message(q), message(q)]);
      const [a, b] = await h.store.claim(q, 2, 60_000);
      expect(await h.store.ackToHistory([{ id: a!.id, lockId: randomUUID() }])).toBe(0);
      expect(await h.raw.countQueue(q)).toBe(2);
      expect((await h.store.findJob(a!.id, DLQ))?.state).toBe('leased');
      expect(await h.store.ack([b!])).toBe(1);
      expect(await h.store.findJob(b!.id, DLQ)).toBeNull();
      expect(await h.store.ackToHistory([a!, a!])).toBe(1);
      expect((await h.store.findJob(a!.id, DLQ))?.state).toBe('completed');
    });

    it('finds a waiting, delayed, leased or dead-lettered job by id; an unknown id is null', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'history-states';
      const ready = message(q, { n: 1 }, { headers: { [CORRELATION_ID_HEADER]: 'c-ready' } });
      const delayed = message(q, { n: 2 }, { delayMs: 600_000 });
      await h.store.publish([ready]);
      await h.store.publish([delayed]);
      expect(await h.store.findJob(ready.id, DLQ)).toMatchObject({ state: 'ready', queue: q, attempts: 0, correlationId: 'c-ready', completedAt: null });
      const d = await h.store.findJob(delayed.id, DLQ);
      expect(d).toMatchObject({ state: 'delayed', attempts: 0 });
      expect(d!.availableAt!.getTime()).toBeGreaterThan(Date.now() + 500_000);
      const [claimed] = await h.store.claim(q, 1, 60_000);
      expect(claimed!.id).toBe(ready.id);
      expect(await h.store.findJob(ready.id, DLQ)).toMatchObject({ state: 'leased', attempts: 1 });
      const moved = await h.store.deadLetter({
        source: claimed!,
        newId: claimed!.id,
        deadLetterQueue: DLQ,
        payloadJson: claimed!.payloadJson,
        headers: { ...claimed!.headers, [DEAD_LETTER_REASON_HEADER]: 'boom', [DEAD_LETTER_SOURCE_HEADER]: q },
        reason: 'boom',
      });
      expect(moved).toBe(true);
      expect(await h.store.findJob(ready.id, DLQ)).toMatchObject({ state: 'dead-lettered', queue: q, attempts: 1, lastError: 'boom', availableAt: null });
      expect(await h.store.findJob('00000000-0000-4000-8000-000000000000', DLQ)).toBeNull();
    });

    it('a dead letter whose reason is expired reads as expired', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'history-expired';
      await h.store.publish([message(q)]);
      const [claimed] = await h.store.claim(q, 1, 60_000);
      await h.store.deadLetter({
        source: claimed!,
        newId: claimed!.id,
        deadLetterQueue: DLQ,
        payloadJson: claimed!.payloadJson,
        headers: { [DEAD_LETTER_REASON_HEADER]: 'expired', [DEAD_LETTER_SOURCE_HEADER]: q },
        reason: 'expired',
      });
      expect(await h.store.findJob(claimed!.id, DLQ)).toMatchObject({ state: 'expired', queue: q, lastError: 'expired' });
    });

    it('an id published again after it completed: the live row wins, then the newest completion', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'history-again';
      const m = message(q);
      await h.store.publish([m]);
      const [first] = await h.store.claim(q, 1, 60_000);
      await h.store.ackToHistory([first!]);
      await h.store.publish([{ ...m, payloadJson: '{"again":true}' }]);
      expect((await h.store.findJob(m.id, DLQ))?.state).toBe('ready');
      await sleep(5);
      const [second] = await h.store.claim(q, 1, 60_000);
      expect(await h.store.ackToHistory([second!])).toBe(1);
      const page = await h.store.searchHistory({ queue: q, top: 10 });
      expect(page.items.map((i) => i.id)).toEqual([m.id, m.id]);
      const job = await h.store.findJob(m.id, DLQ);
      expect(job?.completedAt?.getTime()).toBe(page.items[0]!.completedAt.getTime());
    });

    it('search by queue: exactly the queue, newest first, a page at a time with the cursor, within since/until', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'history-search';
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push((await completeOne(h.store, q)).id);
        await sleep(3);
      }
      await completeOne(h.store, `${q}-other`);
      const newestFirst = [...ids].reverse();
      const first = await h.store.searchHistory({ queue: q, top: 2 });
      expect(first.items.map((i) => i.id)).toEqual(newestFirst.slice(0, 2));
      expect(first.next).toBeDefined();
      const second = await h.store.searchHistory({ queue: q, top: 2, after: first.next });
      expect(second.items.map((i) => i.id)).toEqual(newestFirst.slice(2, 4));
      const third = await h.store.searchHistory({ queue: q, top: 2, after: second.next });
      expect(third.items.map((i) => i.id)).toEqual(newestFirst.slice(4));
      expect(third.next).toBeUndefined();
      expect((await h.store.searchHistory({ queue: `${q} `, top: 10 })).items).toEqual([]);
      expect((await h.store.searchHistory({ queue: q.toUpperCase(), top: 10 })).items).toEqual([]);
      const all = (await h.store.searchHistory({ queue: q, top: 10 })).items;
      const mid = all[2]!.completedAt;
      const since = await h.store.searchHistory({ queue: q, top: 10, since: mid });
      expect(since.items.map((i) => i.id)).toEqual(newestFirst.slice(0, 3));
      const until = await h.store.searchHistory({ queue: q, top: 10, until: mid });
      expect(until.items.map((i) => i.id)).toEqual(newestFirst.slice(3));
      expect((await h.store.searchHistory({ queue: q, state: 'completed', top: 1 })).items.map((i) => i.id)).toEqual([newestFirst[0]]);
    });

    it('search by correlation id across queues, and by queue and correlation id together', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const a = await completeOne(h.store, 'history-corr-a', { [CORRELATION_ID_HEADER]: 'conv-9' });
      await sleep(3);
      const b = await completeOne(h.store, 'history-corr-b', { [CORRELATION_ID_HEADER]: 'conv-9' });
      await completeOne(h.store, 'history-corr-a', { [CORRELATION_ID_HEADER]: 'conv-10' });
      const page = await h.store.searchHistory({ correlationId: 'conv-9', top: 10 });
      expect(page.items.map((i) => [i.id, i.queue, i.correlationId])).toEqual([
        [b.id, 'history-corr-b', 'conv-9'],
        [a.id, 'history-corr-a', 'conv-9'],
      ]);
      expect((await h.store.searchHistory({ correlationId: 'CONV-9', top: 10 })).items).toEqual([]);
    });

    it('the prune deletes only the queue rows older than the retention', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const q = 'history-prune';
      const old = await completeOne(h.store, q);
      const other = await completeOne(h.store, `${q}-kept`);
      expect(await h.store.pruneHistoryBatch(q, 3_600_000)).toBe(0);
      await sleep(2_000);
      const fresh = await completeOne(h.store, q);
      expect(await h.store.pruneHistoryBatch(q, 1_500)).toBe(1);
      expect(await h.store.findJob(old.id, DLQ)).toBeNull();
      expect((await h.store.findJob(fresh.id, DLQ))?.state).toBe('completed');
      expect((await h.store.findJob(other.id, DLQ))?.state).toBe('completed');
    });
  });
}
