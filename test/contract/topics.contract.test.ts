// Topics (spec 003) on PGlite and the PostgreSQL server: the fan-out reads the subscriptions table in its one
// statement, copies get deterministic per-subscription ids, a republish adds no copy anywhere, a subscription
// recorded later gets only what is published after it, and consumers compete within a subscription, never across.

import { describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { silentLogger } from '../../shared/log';
import { channelNames } from '../../shared/sql/identifiers';
import { openPgPool, openPglite } from '../../shared/stores/postgres/connect';
import { openPostgresStoresOn, type OpenedStores } from '../../shared/stores/open';
import type { PgClient } from '../../shared/stores/postgres/client';
import { subscriptionQueue, topicCopyId } from '../../shared/transport/topic-names';
import type { TransportStore } from '../../shared/transport/types';
import { openForDescribe } from '../support/lifecycle';
import { message } from '../support/messages';
import { newSchema, PG_SKIP_REASON } from './fixtures';

const LOCK = 30_000;
const POOL = { max: 4, min: 0, connectTimeoutMs: 5000, requestTimeoutMs: 30_000 };

interface TopicHarness {
  store: TransportStore;
  /** Another store set on its own connections (PostgreSQL server only; PGlite has one session). */
  openPeer?: () => Promise<TransportStore>;
  close(): Promise<void>;
}

async function open(client: PgClient, schema: string): Promise<OpenedStores> {
  const stores = await openPostgresStoresOn(
    client,
    { schema, table: 'asyncresponse_transport_messages', autoCreateSchema: true, logger: silentLogger },
    { names: channelNames(schema, DEFAULT_CHANNEL_TABLES, 'postgres'), autoCreateSchema: true, logger: silentLogger },
  );
  await stores.transport.ensureSchema();
  return stores;
}

const fixtures: Array<{ name: string; skipReason?: string; create(): Promise<TopicHarness> }> = [
  {
    name: 'pglite',
    async create() {
      const stores = await open(await openPglite('memory://'), newSchema());
      return { store: stores.transport, close: () => stores.close() };
    },
  },
  {
    name: 'postgres',
    skipReason: PG_SKIP_REASON,
    async create() {
      const schema = newSchema();
      const url = process.env.PG_URL!;
      const stores = await open(openPgPool(url, POOL), schema);
      const peers: OpenedStores[] = [];
      return {
        store: stores.transport,
        openPeer: async () => {
          const peer = await open(openPgPool(url, POOL), schema);
          peers.push(peer);
          return peer.transport;
        },
        close: async () => {
          for (const p of peers) await p.close();
          const admin = openPgPool(url, POOL);
          await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
          await admin.close();
          await stores.close();
        },
      };
    },
  },
];

async function drainAll(store: TransportStore, queue: string): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const batch = await store.claim(queue, 50, LOCK);
    if (batch.length === 0) return ids;
    ids.push(...batch.map((c) => c.id));
    expect(await store.ack(batch)).toBe(batch.length);
  }
}

for (const f of fixtures) {
  describe.skipIf(f.skipReason !== undefined)(`[${f.name}] topics${f.skipReason ? ` (skipped: ${f.skipReason})` : ''}`, () => {
    if (f.skipReason) console.log(`topics contract on ${f.name} skipped: ${f.skipReason}`);
    const h = openForDescribe(() => f.create());

    it('every copy takes the message priority: claimed before lower-priority jobs of its queue', async () => {
      await h.store.recordSubscriptions([{ topic: 'prio', subscription: 'a' }, { topic: 'prio', subscription: 'b' }]);
      await h.store.publish([message('prio:a', { n: 'plain' })]);
      const [out] = await h.store.publishToTopic('prio', [message('prio', { n: 'urgent' }, { priority: 4 })]);
      expect(out!.copies.map((c) => c.queue)).toEqual(['prio:a', 'prio:b']);
      for (const q of ['prio:a', 'prio:b']) {
        const [first] = await h.store.claim(q, 1, LOCK);
        expect([first?.payloadJson, first?.priority]).toEqual(['{"n":"urgent"}', 4]);
        await h.store.ack([first!]);
      }
      expect((await h.store.claim('prio:a', 5, LOCK)).map((c) => [c.payloadJson, c.priority])).toEqual([['{"n":"plain"}', 0]]);
    });

    it('records subscriptions insert-if-absent and lists them by topic', async () => {
      expect(await h.store.recordSubscriptions([{ topic: 'rec', subscription: 'b' }, { topic: 'rec', subscription: 'a' }, { topic: 'other', subscription: 'a' }])).toBe(3);
      expect(await h.store.recordSubscriptions([{ topic: 'rec', subscription: 'a' }, { topic: 'rec', subscription: 'c' }])).toBe(1);
      expect(await h.store.topicSubscriptions('rec')).toEqual(['a', 'b', 'c'].map((subscription) => ({ topic: 'rec', subscription })));
      expect(await h.store.topicSubscriptions('REC')).toEqual([]);
    });

    it('fans every message out to each subscription once, with the copy ids of topicCopyId and the same payload and headers', async () => {
      await h.store.recordSubscriptions([{ topic: 'fan', subscription: 'billing' }, { topic: 'fan', subscription: 'shipping' }]);
      const msgs = Array.from({ length: 5 }, (_, i) => message('fan', { i }, { headers: { h: `v${i}` } }));
      const out = await h.store.publishToTopic('fan', msgs);
      expect(out.map((o) => o.id)).toEqual(msgs.map((m) => m.id));
      for (const [i, o] of out.entries()) {
        expect(o.copies.map((c) => [c.queue, c.id, c.inserted])).toEqual(
          ['fan:billing', 'fan:shipping'].map((q) => [q, topicCopyId(msgs[i]!.id, q), true]),
        );
        expect(o.copies.every((c) => c.availableAt instanceof Date)).toBe(true);
      }
      for (const q of ['fan:billing', 'fan:shipping']) {
        const claimed = await h.store.claim(q, 50, LOCK);
        expect(claimed.map((c) => c.id)).toEqual(msgs.map((m) => topicCopyId(m.id, q))); // publish order
        expect(claimed.map((c) => [c.payloadJson, c.headers])).toEqual(msgs.map((m) => [m.payloadJson, m.headers]));
        await h.store.ack(claimed);
      }
    });

    it('republishing a message id creates no second copy anywhere and reports the copies as existing', async () => {
      await h.store.recordSubscriptions([{ topic: 'again', subscription: 'x' }, { topic: 'again', subscription: 'y' }]);
      const m = message('again');
      await h.store.publishToTopic('again', [m]);
      const [second] = await h.store.publishToTopic('again', [{ ...m, payloadJson: '"changed"' }]);
      expect(second!.copies.map((c) => [c.queue, c.inserted])).toEqual([['again:x', false], ['again:y', false]]);
      for (const q of ['again:x', 'again:y']) {
        const ids = await drainAll(h.store, q);
        expect(ids).toEqual([topicCopyId(m.id, q)]);
      }
    });

    it('a topic without subscriptions drops the message; a subscription recorded later gets only what is published after it', async () => {
      const early = message('late');
      expect(await h.store.publishToTopic('late', [early])).toEqual([{ id: early.id, copies: [] }]);
      await h.store.recordSubscriptions([{ topic: 'late', subscription: 'first' }]);
      const before = message('late');
      await h.store.publishToTopic('late', [before]);
      await h.store.recordSubscriptions([{ topic: 'late', subscription: 'second' }]);
      const after = message('late');
      const [o] = await h.store.publishToTopic('late', [after]);
      expect(o!.copies.map((c) => c.queue)).toEqual(['late:first', 'late:second']);
      expect(await drainAll(h.store, 'late:first')).toEqual([before, after].map((m) => topicCopyId(m.id, 'late:first')));
      expect(await drainAll(h.store, 'late:second')).toEqual([topicCopyId(after.id, 'late:second')]);
    });

    it('consumers compete within a subscription, never across: each subscription sees every message exactly once', async () => {
      await h.store.recordSubscriptions([{ topic: 'comp', subscription: 'a' }, { topic: 'comp', subscription: 'b' }]);
      const msgs = Array.from({ length: 200 }, (_, i) => message('comp', { i }));
      for (let i = 0; i < msgs.length; i += 100) await h.store.publishToTopic('comp', msgs.slice(i, i + 100));
      const consumers = h.openPeer ? await Promise.all([h.openPeer(), h.openPeer(), h.store]) : [h.store, h.store, h.store];
      for (const sub of ['a', 'b']) {
        const q = subscriptionQueue('comp', sub);
        const seen = new Map<string, number>();
        await Promise.all(
          consumers.map(async (store) => {
            for (;;) {
              const batch = await store.claim(q, 8, LOCK);
              if (batch.length === 0) return;
              for (const c of batch) {
                expect(c.queue).toBe(q);
                seen.set(c.id, (seen.get(c.id) ?? 0) + 1);
              }
              await store.ack(batch);
            }
          }),
        );
        expect(new Set(seen.keys())).toEqual(new Set(msgs.map((m) => topicCopyId(m.id, q))));
        expect([...seen.values()].every((n) => n === 1)).toBe(true);
      }
    });

    it('skips a recorded subscription whose queue name would exceed 200 characters', async () => {
      await h.store.recordSubscriptions([{ topic: 'long', subscription: 'ok' }, { topic: 'long', subscription: 's'.repeat(196) }]);
      const [o] = await h.store.publishToTopic('long', [message('long')]);
      expect(o!.copies.map((c) => c.queue)).toEqual(['long:ok']);
    });
  });
}
