// Job expiry in the drain (issue 16 §3): a claimed job whose AR-Expires-At has passed is not run; it is
// dead-lettered with reason `expired` (or dropped where dead-lettering is off) and its failure follow-up runs.
// Handled in the dispatcher, before the handler starts, so the claim statement is unchanged.

import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import { AckBatcher } from '../../shared/transport/ack-batcher';
import { EXPIRED_REASON, EXPIRES_AT_HEADER } from '../../shared/transport/dedup';
import { dispatchDelivery, type DispatchDeps } from '../../shared/transport/dispatcher';
import { DEAD_LETTER_REASON_HEADER, type ClaimedMessage, type TransportStore } from '../../shared/transport/types';
import { MemoryStore } from '../support/memory-store';
import { message } from '../support/messages';

const NOW = Date.parse('2026-12-02T10:00:00.000Z');

function deps(store: MemoryStore, failed: string[], deadLetter = true): DispatchDeps {
  const s = store as unknown as TransportStore;
  return {
    store: s,
    acks: new AckBatcher((b) => s.ack(b), 16, silentLogger),
    policy: { maxDeliveryAttempts: 5, redeliveryDelayMs: 0, redeliveryMaxDelayMs: 0, deadLetter },
    lockTimeoutMs: 30_000,
    deadLetterQueue: 'dlq',
    logger: silentLogger,
    onDeadLettered: async (job, msg, reason) => void failed.push(`${msg.id}: ${reason} (job ${job === undefined ? 'unrun' : 'ran'})`),
    now: () => NOW,
  };
}

async function claimWith(store: MemoryStore, expiresAt: string | undefined): Promise<ClaimedMessage> {
  await store.publish([message('q', { n: 1 }, { headers: expiresAt === undefined ? {} : { [EXPIRES_AT_HEADER]: expiresAt } })]);
  const [c] = await store.claim('q', 1, 30_000);
  return c!;
}

describe('expired jobs', () => {
  it('a job past its expiry is dead-lettered with reason expired, its handler never called', async () => {
    const store = new MemoryStore();
    const failed: string[] = [];
    let ran = 0;
    const c = await claimWith(store, '2026-12-02T09:59:59.999Z');
    expect(await dispatchDelivery(c, async () => void ran++, deps(store, failed))).toBe('dead-lettered');
    expect(ran).toBe(0);
    const [dead] = store.inQueue('dlq');
    expect(dead!.headers[DEAD_LETTER_REASON_HEADER]).toBe(EXPIRED_REASON);
    expect(dead!.headers[EXPIRES_AT_HEADER]).toBe('2026-12-02T09:59:59.999Z');
    expect(store.inQueue('q')).toEqual([]);
    expect(failed).toEqual([`${c.id}: expired (job unrun)`]);
  });

  it('where dead-lettering is off the expired job is dropped (deleted, fenced), still unrun', async () => {
    const store = new MemoryStore();
    const failed: string[] = [];
    let ran = 0;
    const c = await claimWith(store, '2026-12-02T10:00:00.000Z'); // exactly now: expired
    expect(await dispatchDelivery(c, async () => void ran++, deps(store, failed, false))).toBe('dropped');
    expect([ran, store.inQueue('q').length, store.inQueue('dlq').length, store.calls.deadLetter]).toEqual([0, 0, 0, 0]);
    expect(failed).toEqual([`${c.id}: expired (job unrun)`]);
  });

  it('a job before its expiry, without one, or with an unreadable one runs as usual', async () => {
    for (const at of ['2026-12-02T10:00:00.001Z', undefined, 'not a time']) {
      const store = new MemoryStore();
      const failed: string[] = [];
      let ran = 0;
      const c = await claimWith(store, at);
      expect(await dispatchDelivery(c, async () => void ran++, deps(store, failed)), String(at)).toBe('completed');
      expect(ran, String(at)).toBe(1);
      expect(failed).toEqual([]);
    }
  });
});
