// The store decorators that record SQL dependencies: every port method, success and failure, errors rethrown,
// and when the runtime wraps at all.

import { describe, expect, it, vi } from 'vitest';
import type { FlowStateStore } from '../../shared/flows/store';
import type { ChannelStore } from '../../shared/channel/types';
import type { ScheduleStore } from '../../shared/schedules/types';
import type { Stores } from '../../shared/stores/open';
import {
  dependencyTarget,
  failureCode,
  instrumentChannelStore,
  instrumentStores,
  instrumentTransportStore,
  type DependencyCall,
} from '../../shared/telemetry/dependencies';
import type { TransportStore } from '../../shared/transport/types';

const TRANSPORT = ['ensureSchema', 'publish', 'publishToTopic', 'recordSubscriptions', 'topicSubscriptions', 'claim', 'claimLimited', 'backOffQueue', 'ack', 'ackToHistory', 'findJob', 'searchHistory', 'pruneHistoryBatch', 'release', 'releaseUnstarted', 'releaseLostClaim', 'renew', 'cancel', 'reschedule', 'setQueuePaused', 'queueState', 'deadLetter', 'pruneDedupKeys', 'pruneDeadLetterBatch', 'queueStats', 'queueNames', 'listWaiting', 'claimOutlook', 'listDeadLetters', 'requeueDeadLetter', 'deleteDeadLetter', 'hasMessage', 'now', 'close'] as const;
const FLOWS = ['tryCreate', 'load', 'tryUpdate', 'acquire', 'tryAcquireLease', 'tryRenewLease', 'releaseLease', 'observeLease', 'tryDelete', 'prune', 'now', 'list', 'countByStatus'] as const;
const SCHEDULES = ['upsert', 'get', 'list', 'delete', 'setPaused', 'due', 'soonest', 'fire', 'now'] as const;
const CHANNEL = [
  'ensureSchema',
  'saveRegistration',
  'loadRegistrations',
  'deleteRegistration',
  'insertMessage',
  'loadPending',
  'loadMessagesById',
  'claimForDelivery',
  'claimForRecovery',
  'routeToCallbacks',
  'holdForCallback',
  'isAcknowledged',
  'subscriptionStart',
  'findOverdueWithRegistrations',
  'upsertSubscriber',
  'heartbeatSubscribers',
  'deleteSubscriber',
  'countActiveSubscribers',
  'pruneExpiredBatch',
  'channelStats',
  'close',
] as const;

function fakeTransport() {
  const store: Record<string, unknown> & { kind: string } = { kind: 'sqlserver' };
  for (const m of TRANSPORT) store[m] = vi.fn(async function (this: unknown, ...args: unknown[]) {
    return { method: m, args, self: this };
  });
  return store as unknown as TransportStore & Record<(typeof TRANSPORT)[number], ReturnType<typeof vi.fn>>;
}

function recorder() {
  const calls: DependencyCall[] = [];
  return { calls, record: (c: DependencyCall) => void calls.push(c) };
}

describe('instrumentTransportStore', () => {
  it('wraps every port method: same result, same `this`, one dependency each', async () => {
    const store = fakeTransport();
    const { calls, record } = recorder();
    const wrapped = instrumentTransportStore(store, { record, target: 'srv.database.windows.net/db' });
    expect(wrapped.kind).toBe('sqlserver');
    for (const m of TRANSPORT) {
      const result = await (wrapped[m] as (...a: unknown[]) => Promise<unknown>)('a', 1);
      expect(result).toEqual({ method: m, args: ['a', 1], self: store });
    }
    expect(calls.map((c) => c.name)).toEqual(TRANSPORT.map((m) => `transport.${m}`));
    for (const c of calls) {
      expect(c).toMatchObject({ target: 'srv.database.windows.net/db', success: true, resultCode: '0' });
      expect(c.data).toBe(c.name.slice('transport.'.length));
      expect(c.durationMs).toBeGreaterThanOrEqual(0);
      expect(c.startedAt).toBeInstanceOf(Date);
    }
  });

  it('records a failure with its code and rethrows the same error', async () => {
    const store = fakeTransport();
    const deadlock = Object.assign(new Error('deadlocked'), { number: 1205, code: 'EREQUEST' });
    store.claim.mockRejectedValueOnce(deadlock);
    const { calls, record } = recorder();
    const wrapped = instrumentTransportStore(store, { record, target: 'pglite' });
    await expect(wrapped.claim('worker', 16, 30_000)).rejects.toBe(deadlock);
    expect(calls).toEqual([expect.objectContaining({ name: 'transport.claim', data: 'claim', target: 'pglite', success: false, resultCode: '1205' })]);
  });

  it('a synchronous throw is a rejected call, recorded as a failure', async () => {
    const store = fakeTransport();
    store.now.mockImplementationOnce(() => {
      throw new RangeError('boom');
    });
    const { calls, record } = recorder();
    const wrapped = instrumentTransportStore(store, { record, target: 't' });
    await expect(wrapped.now()).rejects.toThrow('boom');
    expect(calls[0]).toMatchObject({ success: false, resultCode: 'RangeError' });
  });

  it('a throwing recorder never breaks the store call', async () => {
    const store = fakeTransport();
    const wrapped = instrumentTransportStore(store, {
      record: () => {
        throw new TypeError('telemetry broke');
      },
      target: 't',
    });
    await expect(wrapped.ack([])).resolves.toMatchObject({ method: 'ack' });
    store.ack.mockRejectedValueOnce(new Error('real failure'));
    await expect(wrapped.ack([])).rejects.toThrow('real failure');
  });
});

describe('instrumentChannelStore', () => {
  it('wraps every port method', async () => {
    const store: Record<string, unknown> = {};
    for (const m of CHANNEL) store[m] = async () => m;
    const { calls, record } = recorder();
    const wrapped = instrumentChannelStore(store as unknown as ChannelStore, { record, target: 'x/y' });
    for (const m of CHANNEL) expect(await (wrapped as unknown as Record<string, () => Promise<unknown>>)[m]!()).toBe(m);
    expect(calls.map((c) => c.name)).toEqual(CHANNEL.map((m) => `channel.${m}`));
  });

  it('refuses a store missing a port method (the method lists follow the ports)', () => {
    expect(() => instrumentChannelStore({} as ChannelStore, { record: () => {}, target: 't' })).toThrow(/no method 'ensureSchema'/);
  });
});

describe('instrumentStores (the runtime seam)', () => {
  const stores = (): Stores => {
    const channel: Record<string, unknown> = {};
    for (const m of CHANNEL) channel[m] = async () => undefined;
    const flows: Record<string, unknown> = { validateCreate: vi.fn() };
    for (const m of FLOWS) flows[m] = async () => m;
    const schedules: Record<string, unknown> = {};
    for (const m of SCHEDULES) schedules[m] = async () => m;
    return {
      transport: fakeTransport(),
      channel: channel as unknown as ChannelStore,
      flows: flows as unknown as FlowStateStore,
      schedules: schedules as unknown as ScheduleStore,
      close: vi.fn(async () => {}),
    };
  };

  it('leaves the stores alone when telemetry is off', async () => {
    const s = stores();
    expect(await instrumentStores(s, { kind: 'pglite', dataDir: 'memory://' }, undefined)).toBe(s);
  });

  it('leaves PostgreSQL to the distro, whose pg instrumentation already reports every query', async () => {
    const s = stores();
    expect(await instrumentStores(s, { kind: 'postgres', url: 'postgres://x' }, () => {})).toBe(s);
  });

  it('wraps every store for SQL Server (transport, channel, flows, schedules) and closes the same pool', async () => {
    const s = stores();
    const { calls, record } = recorder();
    const wrapped = await instrumentStores(s, { kind: 'sqlserver', server: 'tcp:srv.database.windows.net', database: 'db' }, record);
    expect(wrapped.transport).not.toBe(s.transport);
    await wrapped.transport.now();
    await wrapped.channel.isAcknowledged('id');
    for (const m of FLOWS) expect(await (wrapped.flows[m] as () => Promise<unknown>)()).toBe(m);
    for (const m of SCHEDULES) expect(await (wrapped.schedules![m] as () => Promise<unknown>)()).toBe(m);
    wrapped.flows.validateCreate({} as never); // synchronous and I/O-free: passed through, no dependency
    expect(s.flows.validateCreate).toHaveBeenCalledOnce();
    await wrapped.close();
    expect(s.close).toHaveBeenCalledOnce();
    expect(calls.map((c) => [c.name, c.target])).toEqual([
      ['transport.now', 'srv.database.windows.net/db'],
      ['channel.isAcknowledged', 'srv.database.windows.net/db'],
      ...FLOWS.map((m) => [`flows.${m}`, 'srv.database.windows.net/db']),
      ...SCHEDULES.map((m) => [`schedules.${m}`, 'srv.database.windows.net/db']),
    ]);
  });

  it('a flow store that carries jobs (PGlite) still does once wrapped, and its writes get the carried jobs', async () => {
    const s = stores();
    const seen: unknown[][] = [];
    Object.assign(s.flows, { carriesJobs: true, tryCreate: async (...args: unknown[]) => (seen.push(args), true) });
    const { record } = recorder();
    const wrapped = await instrumentStores(s, { kind: 'pglite', dataDir: 'memory://' }, record);
    expect(wrapped.flows).not.toBe(s.flows);
    expect(wrapped.flows.carriesJobs).toBe(true);
    const job = { id: 'j', queue: 'flows', payloadJson: '{}', headersJson: '{}', delayMs: 0, priority: 0 };
    expect(await wrapped.flows.tryCreate({} as never, 1000, [job])).toBe(true);
    expect(seen).toEqual([[{}, 1000, [job]]]);
    // a store that does not carry stays so
    expect((await instrumentStores(stores(), { kind: 'pglite', dataDir: 'memory://' }, record)).flows.carriesJobs).toBeUndefined();
  });
});

describe('dependency target', () => {
  it('is <server>/<database> for SQL Server, from the connection string first', async () => {
    expect(await dependencyTarget({ kind: 'sqlserver', connectionString: 'Server=tcp:a.database.windows.net,1433;Initial Catalog=orders;Authentication=Active Directory Default' })).toBe(
      'a.database.windows.net/orders',
    );
    expect(await dependencyTarget({ kind: 'sqlserver', server: 'b.database.windows.net', database: 'jobs' })).toBe('b.database.windows.net/jobs');
    expect(await dependencyTarget({ kind: 'sqlserver', connectionString: 'Server=c;', database: 'd' })).toBe('c/d');
    expect(await dependencyTarget({ kind: 'sqlserver', connectionString: 'not a connection string at all' })).toBe('sqlserver');
  });

  it('is the store kind otherwise', async () => {
    expect(await dependencyTarget({ kind: 'pglite', dataDir: 'memory://' })).toBe('pglite');
    expect(await dependencyTarget({ kind: 'postgres', url: 'postgres://u@h/db' })).toBe('postgres');
  });
});

describe('failureCode', () => {
  it('prefers the SQL Server error number, then the driver code, then the error name', () => {
    expect(failureCode(Object.assign(new Error(), { number: 40613, code: 'EREQUEST' }))).toBe('40613');
    expect(failureCode(Object.assign(new Error(), { code: 'ETIMEOUT' }))).toBe('ETIMEOUT');
    expect(failureCode(Object.assign(new Error(), { code: '40001' }))).toBe('40001');
    expect(failureCode(new TypeError('x'))).toBe('TypeError');
    expect(failureCode('a string')).toBe('error');
    expect(failureCode(null)).toBe('error');
  });
});
