import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import { drainQueue } from '../../shared/transport/drain-loop';
import type { TransportStore } from '../../shared/transport/types';
import { WakeSignal } from '../../shared/transport/wake';
import { openForDescribe } from '../support/lifecycle';
import { message } from '../support/messages';
import { skipOnGap } from './engine-gaps';
import { announce, storeFixtures } from './fixtures';

const LOCK = 30_000;

async function publishMany(store: TransportStore, queue: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 100) {
    const batch = Array.from({ length: Math.min(100, n - i) }, (_, k) => message(queue, { i: i + k }));
    await store.publish(batch);
    ids.push(...batch.map((m) => m.id));
  }
  return ids;
}

for (const fixture of storeFixtures().filter((f) => f.concurrent)) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] competing consumers (real sessions)`, () => {
    const h = openForDescribe(() => fixture.create());

    it('2,000 jobs claimed by 4 consumers on their own connections: each exactly once, none lost', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      await skipOnGap(fixture.name, ctx, 'readPast');
      const ids = await publishMany(h.store, 'compete', 2000);
      const peers = await Promise.all([1, 2, 3, 4].map(() => h.openPeer()));
      const seen = new Map<string, number>();
      await Promise.all(
        peers.map(async (store) => {
          for (;;) {
            const batch = await store.claim('compete', 16, LOCK);
            if (batch.length === 0) return;
            for (const c of batch) seen.set(c.id, (seen.get(c.id) ?? 0) + 1);
            expect(await store.ack(batch)).toBe(batch.length);
          }
        }),
      );
      expect(seen.size).toBe(2000);
      expect([...seen.values()].every((n) => n === 1)).toBe(true);
      expect(new Set(ids)).toEqual(new Set(seen.keys()));
      expect(await h.raw.countQueue('compete')).toBe(0);
    });

    it('two drain loops on separate pools run every handler exactly once', async (ctx) => {
      await skipOnGap(fixture.name, ctx, 'updateThroughCte');
      await skipOnGap(fixture.name, ctx, 'readPast');
      await publishMany(h.store, 'drains', 500);
      const runs = new Map<string, number>();
      const [a, b] = await Promise.all([h.openPeer(), h.openPeer()]);
      const drain = (store: TransportStore) =>
        drainQueue({
          store,
          queue: 'drains',
          handler: async (job) => {
            runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
          },
          policy: { maxDeliveryAttempts: 5, redeliveryDelayMs: 0, redeliveryMaxDelayMs: 0 },
          deadLetterQueue: 'drains_dlq',
          lockTimeoutMs: LOCK,
          batchSize: 16,
          concurrency: 8,
          budgetMs: 20_000,
          idleGraceMs: 200,
          emptyPollDelayMs: 50,
          wake: new WakeSignal(),
          logger: silentLogger,
        });
      const [ra, rb] = await Promise.all([drain(a!), drain(b!)]);
      expect(ra.completed + rb.completed).toBe(500);
      expect(ra.completed).toBeGreaterThan(0);
      expect(rb.completed).toBeGreaterThan(0);
      expect(runs.size).toBe(500);
      expect([...runs.values()].every((n) => n === 1)).toBe(true);
      expect(await h.raw.countQueue('drains')).toBe(0);
    });
  });
}
