import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deadLetterHeaders } from '../../shared/transport/headers';
import { openForDescribe } from '../support/lifecycle';
import { message } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures } from './fixtures';

const LOCK = 30_000;

for (const fixture of storeFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] settlement is fenced on (id, lock_id)`, () => {
    const h = openForDescribe(() => fixture.create());

    async function claimOne(queue: string) {
      const m = message(queue);
      await h.store.publish([m]);
      const [c] = await h.store.claim(queue, 1, LOCK);
      expect(c?.id).toBe(m.id);
      return c!;
    }

    it('a batch ack deletes only the rows whose fence still matches', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const a = await claimOne('ack');
      const b = await claimOne('ack');
      await h.raw.setLockId(b.id, randomUUID()); // b was re-claimed by a peer
      expect(await h.store.ack([a, b])).toBe(1);
      expect(await h.raw.row(a.id)).toBeUndefined();
      expect(await h.raw.row(b.id)).toMatchObject({ queue: 'ack', attempts: 1 }); // still there, untouched by the stale ack
    });

    it("an ack of a keyed job's message that does not name its key still deletes it and lets the key go on", async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      // PostgreSQL acks a batch of claimed messages without ordering keys by the DELETE alone (ackUnkeyed), which
      // leaves keyed rows alone: a message that hides its key must still be settled, and its key released.
      const [first, second] = [message('hidden-key', { n: 1 }, { orderingKey: 'k' }), message('hidden-key', { n: 2 }, { orderingKey: 'k' })];
      await h.store.publish([first!, second!]);
      const [head] = await h.store.claim('hidden-key', 10, LOCK);
      expect(head).toMatchObject({ id: first!.id, orderingKey: 'k' });
      const { orderingKey: _hidden, ...unkeyed } = head!;
      const plain = await claimOne('hidden-key-plain');
      expect(await h.store.ack([unkeyed, plain])).toBe(2);
      expect(await h.raw.row(first!.id)).toBeUndefined();
      expect(await h.raw.row(plain.id)).toBeUndefined();
      const [next] = await h.store.claim('hidden-key', 10, LOCK);
      expect(next?.id).toBe(second!.id);
    });

    it('a settlement naming the nil uuid settles no unleased row (PostgreSQL matches the lock id through coalesce)', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const m = message('nil-lock');
      await h.store.publish([m]);
      const nil = { id: m.id, lockId: '00000000-0000-0000-0000-000000000000' };
      expect(await h.store.ack([nil])).toBe(0);
      expect(await h.store.ackToHistory([nil])).toBe(0);
      expect(await h.store.releaseUnstarted([nil])).toBe(0);
      expect(await h.raw.row(m.id)).toMatchObject({ queue: 'nil-lock', attempts: 0, lockId: null });
    });

    it('NAK then re-claim gives attempt 2 with a new lock id; attempts are not decremented', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const c = await claimOne('nak');
      expect(await h.store.release(c, 600_000)).toBe(true);
      expect(await h.store.claim('nak', 1, LOCK)).toHaveLength(0); // invisible for the NAK delay
      expect(await h.raw.row(c.id)).toMatchObject({ attempts: 1, lockId: null });
      await h.raw.makeDue(c.id);
      const [again] = await h.store.claim('nak', 1, LOCK);
      expect(again).toMatchObject({ id: c.id, attempt: 2 });
      expect(again!.lockId).not.toBe(c.lockId);
    });

    it('unstarted claims go back in one fenced statement: attempt given back, place in line kept', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const first = message('unstarted');
      const second = message('unstarted');
      await h.store.publish([first]);
      await h.store.publish([second]);
      const [a, b] = await h.store.claim('unstarted', 2, LOCK);
      expect([a?.id, b?.id]).toEqual([first.id, second.id]);
      await h.raw.setLockId(b!.id, randomUUID()); // b was re-claimed by a peer: its stale fence must not match
      expect(await h.store.releaseUnstarted([a!, b!])).toBe(1);
      expect(await h.raw.row(a!.id)).toMatchObject({ attempts: 0, lockId: null });
      expect(await h.raw.row(b!.id)).toMatchObject({ attempts: 1 });
      expect(await h.store.releaseUnstarted([])).toBe(0);
      const third = message('unstarted');
      await h.store.publish([third]);
      const [again] = await h.store.claim('unstarted', 1, LOCK);
      expect(again).toMatchObject({ id: a!.id, attempt: 1 }); // first in line again, and its first attempt
    });

    it('a claim whose answer was lost is handed back by the lock id the caller chose: only its leased rows of that queue', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const lockId = randomUUID();
      const mine = [message('lost'), message('lost'), message('lost')];
      await h.store.publish(mine);
      await h.store.publish([message('lost-other')]);
      const claimed = await h.store.claim('lost', 3, LOCK, lockId);
      expect(claimed.map((c) => [c.id, c.lockId])).toEqual(mine.map((m) => [m.id, lockId]));
      // the same lock id on another queue's row and a lapsed lease are not this claim's to hand back
      const [other] = await h.store.claim('lost-other', 1, LOCK, lockId);
      await h.raw.expireLease(mine[2]!.id);
      expect(await h.store.releaseLostClaim('lost', randomUUID())).toBe(0);
      expect(await h.store.releaseLostClaim('lost', lockId)).toBe(2);
      for (const m of mine.slice(0, 2)) expect(await h.raw.row(m.id)).toMatchObject({ attempts: 0, lockId: null });
      expect(await h.raw.row(other!.id)).toMatchObject({ attempts: 1, lockId });
      expect(await h.store.releaseLostClaim('lost', lockId)).toBe(0); // a retry after a lost answer no-ops
      const again = new Map((await h.store.claim('lost', 3, LOCK)).map((c) => [c.id, c.attempt]));
      expect(again).toEqual(new Map(mine.map((m, i) => [m.id, i === 2 ? 2 : 1]))); // the handed-back rows spent no attempt
    });

    it('stale settlements (after a re-claim) are no-ops: ack, NAK, renew, dead letter', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const c = await claimOne('stale');
      await h.raw.expireLease(c.id);
      const [peer] = await h.store.claim('stale', 1, LOCK);
      expect(peer).toMatchObject({ id: c.id, attempt: 2 });
      expect(await h.store.renew(c, LOCK)).toBe(false);
      expect(await h.store.release(c, 0)).toBe(false);
      expect(await h.store.ack([c])).toBe(0);
      const moved = await h.store.deadLetter({
        source: c,
        newId: randomUUID(),
        deadLetterQueue: 'stale_dlq',
        payloadJson: c.payloadJson,
        headers: deadLetterHeaders(c.headers, 'boom', 'stale'),
        reason: 'boom',
      });
      expect(moved).toBe(false);
      expect(await h.raw.countQueue('stale_dlq')).toBe(0);
      expect(await h.raw.row(c.id)).toMatchObject({ queue: 'stale', lockId: peer!.lockId });
      expect(await h.store.renew(peer!, LOCK)).toBe(true);
      expect(await h.store.ack([peer!])).toBe(1);
    });

    it('an expired lease makes the job claimable again', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const c = await claimOne('lease');
      expect(await h.store.claim('lease', 1, LOCK)).toHaveLength(0);
      await h.raw.expireLease(c.id);
      const [again] = await h.store.claim('lease', 1, LOCK);
      expect(again).toMatchObject({ id: c.id, attempt: 2 });
    });

    it('a short lease lapses on the database clock without help', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const m = message('lapse');
      await h.store.publish([m]);
      const [c] = await h.store.claim('lapse', 1, 300);
      expect(c).toMatchObject({ id: m.id, attempt: 1 });
      await new Promise((r) => setTimeout(r, 500));
      const [again] = await h.store.claim('lapse', 1, LOCK);
      expect(again).toMatchObject({ id: m.id, attempt: 2 });
    });

    it('dead-lettering moves the row in one step, with reason and source headers (CR/LF become spaces)', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      const m = message('dlsrc', { x: 1 }, { headers: { keep: 'me' } });
      await h.store.publish([m]);
      const [c] = await h.store.claim('dlsrc', 1, LOCK);
      const newId = randomUUID();
      const moved = await h.store.deadLetter({
        source: c!,
        newId,
        deadLetterQueue: 'dlsrc_dlq',
        payloadJson: c!.payloadJson,
        headers: deadLetterHeaders(c!.headers, 'line1\nline2\r\nline3', 'dlsrc'),
        reason: 'line1\nline2\r\nline3',
      });
      expect(moved).toBe(true);
      expect(await h.raw.row(c!.id)).toBeUndefined();
      expect(await h.raw.row(newId)).toMatchObject({ queue: 'dlsrc_dlq', attempts: 1, lockId: null }); // the move keeps the deliveries the job had
      const [dead] = await h.store.claim('dlsrc_dlq', 1, LOCK);
      expect(dead!.headers).toEqual({
        keep: 'me',
        'AR-DeadLetter-Reason': 'line1 line2  line3',
        'AR-DeadLetter-Source-Queue': 'dlsrc',
      });
      expect(JSON.parse(dead!.payloadJson)).toEqual({ x: 1 });
    });
  });
}
