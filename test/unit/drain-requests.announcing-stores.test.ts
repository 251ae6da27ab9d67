// Every store write that makes work claimable announces it (after it committed), once per queue and delay; writes
// that inserted nothing announce nothing. Reads and other methods pass through to the store untouched.
import { describe, expect, it } from 'vitest';
import type { FlowStateStore } from '../../shared/flows/store';
import type { ChannelStore } from '../../shared/channel/types';
import { announcingStores } from '../../shared/drain-requests/announcing-stores';
import { SWEEP_TARGET } from '../../shared/drain-requests/message';
import type { Stores } from '../../shared/stores/open';
import type { TransportStore } from '../../shared/transport/types';

function fakeStores() {
  const transport = {
    kind: 'postgres',
    publish: async (ms: { id: string }[]) => ms.map((m) => ({ id: m.id, inserted: m.id !== 'dup', availableAt: null })),
    release: async () => true,
    releaseUnstarted: async (s: unknown[]) => s.length,
    requeueDeadLetter: async (_dl: string, _q: string, id: string) => id === 'there',
    queueStats: async (queue: string) => ({ queue, ready: 7 }),
    // every subscription gets a copy of each message except 'dup' (a republish: its copies exist)
    publishToTopic: async (topic: string, ms: { id: string }[]) =>
      ms.map((m) => ({ id: m.id, copies: ['a', 'b'].map((sub) => ({ queue: `${topic}:${sub}`, id: `${m.id}-${sub}`, inserted: m.id !== 'dup', availableAt: null })) })),
  } as unknown as TransportStore;
  const channel = {
    insertMessage: async (id: string, correlationId: string) => ({ id, inserted: id !== 'dup', correlationId }),
    routeToCallbacks: async (id: string) => (id === 'none' ? null : 2),
  } as unknown as ChannelStore;
  let closed = 0;
  const stores: Stores = { transport, channel, flows: {} as unknown as FlowStateStore, close: async () => void closed++ };
  return { stores, closed: () => closed };
}

describe('announcing stores', () => {
  it('announces publishes (per queue and delay, inserted rows only), releases, hand-backs, requeues, callbacks and sweeps', async () => {
    const calls: [string, number][] = [];
    const f = fakeStores();
    const s = announcingStores(f.stores, { announce: (t, d) => void calls.push([t, d]) }, 6000);
    const msg = (id: string, queue: string, delayMs: number) => ({ id, queue, delayMs }) as never;
    await s.transport.publish([msg('a', 'worker', 0), msg('b', 'worker', 0), msg('c', 'worker', 5000), msg('dup', 'other', 0), msg('d', 'topic:sub', 0)]);
    await s.transport.release({ id: 'a', lockId: 'l', queue: 'worker' } as never, 4000);
    await s.transport.releaseUnstarted([{ id: 'a', lockId: 'l', queue: 'worker' }, { id: 'b', lockId: 'l', queue: 'worker' }] as never);
    await s.transport.requeueDeadLetter('deadletter', 'worker', 'there');
    await s.transport.requeueDeadLetter('deadletter', 'worker', 'gone');
    await s.channel.insertMessage('r1', 'c1', '{}', 1000);
    await s.channel.insertMessage('dup', 'c1', '{}', 1000);
    await s.channel.routeToCallbacks('r1', 'c1', true);
    await s.channel.routeToCallbacks('none', 'c1', true);
    expect(calls).toEqual([
      ['worker', 0],
      ['worker', 5000],
      ['topic:sub', 0],
      ['worker', 4000],
      ['worker', 0],
      ['worker', 0],
      [SWEEP_TARGET, 6000],
      ['callbacks', 0],
    ]);
  });

  it('announces a topic publish on each subscription queue that got a new copy, once per queue and delay', async () => {
    const calls: [string, number][] = [];
    const f = fakeStores();
    const s = announcingStores(f.stores, { announce: (t, d) => void calls.push([t, d]) }, 6000);
    const msg = (id: string, delayMs: number) => ({ id, queue: 'orders', delayMs }) as never;
    const outcomes = await s.transport.publishToTopic('orders', [msg('m1', 0), msg('m2', 0), msg('m3', 3000), msg('dup', 9000)]);
    expect(outcomes.map((o) => o.id)).toEqual(['m1', 'm2', 'm3', 'dup']); // the store's answer, untouched
    expect(calls).toEqual([
      ['orders:a', 0],
      ['orders:b', 0],
      ['orders:a', 3000],
      ['orders:b', 3000],
    ]);
  });

  it('passes everything else through to the store', async () => {
    const f = fakeStores();
    const s = announcingStores(f.stores, { announce: () => undefined }, 6000);
    expect(s.transport.kind).toBe('postgres');
    expect(await s.transport.queueStats('worker', 'deadletter')).toEqual({ queue: 'worker', ready: 7 });
    await s.close();
    expect(f.closed()).toBe(1);
  });
});

describe('announcing stores: jobs a flow-state write carries', () => {
  it('announces the carried jobs of a create or an update that took (per queue and delay), nothing for one that did not', async () => {
    const calls: [string, number][] = [];
    const f = fakeStores();
    const flows = {
      carriesJobs: true,
      tryCreate: async (state: { flowId: string }) => state.flowId !== 'exists',
      tryUpdate: async (state: { flowId: string }) => state.flowId !== 'stale',
    } as unknown as FlowStateStore;
    const s = announcingStores({ ...f.stores, flows }, { announce: (t, d) => void calls.push([t, d]) }, 6000);
    const job = (queue: string, delayMs = 0) => ({ id: `${queue}-${delayMs}`, queue, payloadJson: '{}', headersJson: '{}', delayMs, priority: 0 });
    const st = (flowId: string) => ({ flowId }) as never;
    expect(s.flows.carriesJobs).toBe(true);
    expect(await s.flows.tryCreate(st('new'), 1000, [job('flows')])).toBe(true);
    expect(await s.flows.tryCreate(st('exists'), 1000, [job('flows-lost')])).toBe(false);
    expect(await s.flows.tryUpdate(st('run'), 1, 1000, 'lease', { extendMs: 1 }, [job('approvals'), job('approvals'), job('approvals', 3000)])).toBe(true);
    expect(await s.flows.tryUpdate(st('stale'), 1, 1000, 'lease', { extendMs: 1 }, [job('approvals-lost')])).toBe(false);
    expect(await s.flows.tryUpdate(st('run'), 2, 1000)).toBe(true);
    expect(calls).toEqual([
      ['flows', 0],
      ['approvals', 0],
      ['approvals', 3000],
    ]);
  });
});
