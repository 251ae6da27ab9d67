// The one seam where work becomes claimable: the store ports. Every write that makes a row claimable (a publish of
// any path — HTTP, batch, topic, the response and callback queues, the jobs a flow-state write carries —, a retry's
// release with backoff, claims handed back unstarted, a requeued dead letter, callbacks routed from the channel)
// announces its queue to the drain requests after it committed; a stored response announces a channel sweep for when
// it becomes overdue. What no write announces (rows from SQL, leases a crashed instance left) the engine finds after
// its drains and at start-up (claimOutlook, create-engine.ts).

import type { ChannelStore } from '../channel/types';
import type { CarriedJob } from '../flows/jobs';
import type { FlowStateStore } from '../flows/store';
import { CALLBACK_QUEUE } from '../queue-names';
import type { Stores } from '../stores/open';
import type { ClaimedMessage, Settlement, TransportStore } from '../transport/types';
import { SWEEP_TARGET } from './message';
import type { DrainAnnouncer } from './sender';

/** A view of `target` whose listed methods are replaced; everything else is the target's own (bound to it). */
function override<T extends object>(target: T, methods: Partial<T>): T {
  return new Proxy(target, {
    get(t, prop) {
      if (Object.prototype.hasOwnProperty.call(methods, prop)) return (methods as Record<PropertyKey, unknown>)[prop];
      const value: unknown = Reflect.get(t, prop, t);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
}

/** The drain loop settles the claimed messages themselves, so a settlement carries its queue. */
function queueOf(s: Settlement): string | undefined {
  return (s as Partial<ClaimedMessage>).queue;
}

export function announcingStores(stores: Stores, announcer: DrainAnnouncer, sweepAfterMs: number): Stores {
  const t = stores.transport;
  const transport = override<TransportStore>(t, {
    async publish(messages) {
      const outcomes = await t.publish(messages);
      const seen = new Set<string>();
      messages.forEach((m, i) => {
        if (!outcomes[i]?.inserted) return;
        const key = `${m.queue}@${m.delayMs > 0 ? m.delayMs : 0}`;
        if (seen.has(key)) return;
        seen.add(key);
        announcer.announce(m.queue, m.delayMs);
      });
      return outcomes;
    },
    async publishToTopic(topic, messages) {
      const outcomes = await t.publishToTopic(topic, messages);
      const seen = new Set<string>();
      outcomes.forEach((o, i) => {
        const delayMs = Math.max(0, messages[i]?.delayMs ?? 0);
        for (const c of o.copies) {
          const key = `${c.queue}@${delayMs}`;
          if (!c.inserted || seen.has(key)) continue;
          seen.add(key);
          announcer.announce(c.queue, delayMs);
        }
      });
      return outcomes;
    },
    async release(settlement, delayMs) {
      const released = await t.release(settlement, delayMs);
      const queue = queueOf(settlement);
      if (released && queue !== undefined) announcer.announce(queue, delayMs);
      return released;
    },
    async releaseUnstarted(settlements) {
      const n = await t.releaseUnstarted(settlements);
      if (n > 0) for (const q of new Set(settlements.map(queueOf))) if (q !== undefined) announcer.announce(q, 0);
      return n;
    },
    async releaseLostClaim(queue, lockId) {
      const n = await t.releaseLostClaim(queue, lockId);
      if (n > 0) announcer.announce(queue, 0);
      return n;
    },
    async requeueDeadLetter(deadLetterQueue, sourceQueue, id) {
      const requeued = await t.requeueDeadLetter(deadLetterQueue, sourceQueue, id);
      if (requeued) announcer.announce(sourceQueue, 0);
      return requeued;
    },
  });
  const c = stores.channel;
  const channel = override<ChannelStore>(c, {
    async insertMessage(id, correlationId, envelopeJson, retentionMs) {
      const stored = await c.insertMessage(id, correlationId, envelopeJson, retentionMs);
      // unacked once the confirmation timeout passes: the sweep routes it to its callbacks then
      if (stored.inserted) announcer.announce(SWEEP_TARGET, sweepAfterMs);
      return stored;
    },
    async routeToCallbacks(id, correlationId, final) {
      const jobs = await c.routeToCallbacks(id, correlationId, final);
      if (jobs !== null && jobs > 0) announcer.announce(CALLBACK_QUEUE, 0);
      return jobs;
    },
  });
  // a flow-state write that carries jobs (the start job, an awaited step's request) publishes them: announced alike
  const f = stores.flows;
  const announceCarried = (carry: readonly CarriedJob[] | undefined) => {
    const seen = new Set<string>();
    for (const j of carry ?? []) {
      const delayMs = Math.max(0, j.delayMs);
      const key = `${j.queue}@${delayMs}`;
      if (seen.has(key)) continue;
      seen.add(key);
      announcer.announce(j.queue, delayMs);
    }
  };
  const flows = override<FlowStateStore>(f, {
    async tryCreate(state, ttlMs, carry) {
      const created = await f.tryCreate(state, ttlMs, carry);
      if (created) announceCarried(carry);
      return created;
    },
    async tryUpdate(state, expectedRevision, ttlMs, leaseId, lease, carry) {
      const updated = await f.tryUpdate(state, expectedRevision, ttlMs, leaseId, lease, carry);
      if (updated) announceCarried(carry);
      return updated;
    },
  });
  // schedules announce their own jobs and next slots (shared/schedules/service.ts)
  return { transport, channel, flows, ...(stores.schedules ? { schedules: stores.schedules } : {}), close: () => stores.close() };
}
