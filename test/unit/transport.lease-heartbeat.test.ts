import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../shared/log';
import { startHeartbeat } from '../../shared/transport/lease-heartbeat';

const s = { id: 'a', lockId: 'b' };

describe('lease heartbeat', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('renews every third of the lock timeout while running, and stops cleanly', async () => {
    const renew = vi.fn(async () => true);
    const hb = startHeartbeat(renew, s, 30_000, silentLogger, 'job');
    await vi.advanceTimersByTimeAsync(9_999);
    expect(renew).toHaveBeenCalledTimes(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(renew).toHaveBeenCalledWith(s, 30_000);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(renew).toHaveBeenCalledTimes(3);
    hb.stop();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(renew).toHaveBeenCalledTimes(3);
  });

  it('a fast handler causes no renewal at all', async () => {
    const renew = vi.fn(async () => true);
    const hb = startHeartbeat(renew, s, 30_000, silentLogger, 'job');
    await vi.advanceTimersByTimeAsync(5);
    hb.stop();
    await vi.advanceTimersByTimeAsync(100_000);
    expect(renew).not.toHaveBeenCalled();
  });

  it('retries a failed renewal on a short backoff, so it lands before the lease ends', async () => {
    let calls = 0;
    const renew = vi.fn(async () => {
      calls++;
      if (calls <= 3) throw new Error('transient');
      return true;
    });
    const hb = startHeartbeat(renew, s, 30_000, silentLogger, 'job');
    await vi.advanceTimersByTimeAsync(10_000); // first beat fails
    await vi.advanceTimersByTimeAsync(8_000); // retries at ~0.5-1 s, ~1-2 s, ~2-4 s
    expect(calls).toBe(4);
    hb.stop();
  });

  it('stops renewing once the lease is lost (a peer re-claimed the row)', async () => {
    const renew = vi.fn(async () => false);
    const hb = startHeartbeat(renew, s, 30_000, silentLogger, 'job');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(renew).toHaveBeenCalledTimes(1);
    expect(hb.lost).toBe(true);
  });
});
