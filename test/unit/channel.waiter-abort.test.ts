// A long-poll waiter stops promptly when the process shuts down, also when the stop lands during its heartbeat.
import { describe, expect, it } from 'vitest';
import { ResponseChannel } from '../../shared/channel/response-channel';
import type { ChannelStore } from '../../shared/channel/types';
import { loadConfig } from '../../shared/settings';
import { silentLogger } from '../../shared/log';
import { WakeSignal } from '../../shared/transport/wake';

describe('long-poll waiter and the stopping signal', () => {
  it('an abort that lands while the heartbeat runs ends the wait at once, not after the next poll interval', async () => {
    const stop = new AbortController();
    let heartbeats = 0;
    const deleted: string[] = [];
    const store = {
      subscriptionStart: async () => ({ startedAt: '2030-01-01 00:00:00.0000000', startedSeq: '1' }),
      upsertSubscriber: async () => undefined,
      loadPending: async () => [],
      heartbeatSubscribers: async () => {
        heartbeats++;
        stop.abort(); // shutdown begins while the heartbeat is in flight
        await new Promise((r) => setTimeout(r, 20));
      },
      deleteSubscriber: async (correlationId: string) => {
        deleted.push(correlationId);
      },
    } as unknown as ChannelStore;
    const config = { ...loadConfig({}).channel, heartbeatIntervalMs: 0, activePollIntervalMs: 20_000 };
    const channel = new ResponseChannel(store, new WakeSignal(), config, silentLogger);
    const started = Date.now();
    expect(await channel.waitForResponse('c-1', 60_000, stop.signal)).toBeNull();
    expect(heartbeats).toBe(1);
    expect(Date.now() - started).toBeLessThan(10_000); // before the fix: the full 20 s poll interval
    expect(deleted).toEqual(['c-1']);
  });

  it('50 concurrent waiters on the one stopping signal emit no MaxListenersExceededWarning and all stop on abort', async () => {
    const stop = new AbortController();
    const store = {
      subscriptionStart: async () => ({ startedAt: '2030-01-01 00:00:00.0000000', startedSeq: '1' }),
      upsertSubscriber: async () => undefined,
      loadPending: async () => [],
      heartbeatSubscribers: async () => undefined,
      deleteSubscriber: async () => undefined,
    } as unknown as ChannelStore;
    const config = { ...loadConfig({}).channel, heartbeatIntervalMs: 60_000, activePollIntervalMs: 5 };
    const channel = new ResponseChannel(store, new WakeSignal(), config, silentLogger);
    const warnings: Error[] = [];
    const onWarning = (w: Error) => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      const waiting = Array.from({ length: 50 }, (_, i) => channel.waitForResponse(`c-${i}`, 60_000, stop.signal));
      await new Promise((r) => setTimeout(r, 300)); // many poll sleeps each, all 50 asleep at once most of the time
      stop.abort();
      expect(await Promise.all(waiting)).toEqual(Array(50).fill(null));
      await new Promise((r) => setImmediate(r)); // process warnings are emitted on a later tick
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });
});
