import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../shared/log';
import { HeartbeatGroup } from '../../shared/transport/lease-heartbeat';

const s = (id: string) => ({ id, lockId: 'lock' });

describe('heartbeat group (one timer per drain)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('a job that runs past a beat is first renewed within a beat and a quarter, then every beat', async () => {
    const group = new HeartbeatGroup(30_000);
    const renew = vi.fn(async () => true);
    const hb = group.start(renew, s('a'), silentLogger, 'job a');
    await vi.advanceTimersByTimeAsync(9_999);
    expect(renew).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(2_501); // 12.5 s after the start
    expect(renew).toHaveBeenCalledTimes(1);
    expect(renew).toHaveBeenCalledWith(s('a'), 30_000);
    expect(hb.renewals).toBe(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(renew).toHaveBeenCalledTimes(2);
    hb.stop();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(renew).toHaveBeenCalledTimes(2);
  });

  it('jobs that end before a beat are never renewed, and the group leaves no timer behind', async () => {
    const group = new HeartbeatGroup(30_000);
    const renew = vi.fn(async () => true);
    for (let i = 0; i < 100; i++) group.start(renew, s(`j${i}`), silentLogger, 'job').stop();
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(7_500); // the tick finds nothing waiting and does not re-arm
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(100_000);
    expect(renew).not.toHaveBeenCalled();
  });

  it('renews only the jobs still running, each on its own schedule from its start', async () => {
    const group = new HeartbeatGroup(30_000);
    const renewed: string[] = [];
    const renew = vi.fn(async (x: { id: string }) => (renewed.push(x.id), true));
    const a = group.start(renew, s('a'), silentLogger, 'a');
    await vi.advanceTimersByTimeAsync(5_000);
    const b = group.start(renew, s('b'), silentLogger, 'b');
    const c = group.start(renew, s('c'), silentLogger, 'c');
    c.stop();
    await vi.advanceTimersByTimeAsync(7_500); // 12.5 s after a: a renewed, b (7.5 s) not yet
    expect(renewed).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(5_000); // 12.5 s after b
    expect(renewed).toEqual(['a', 'b']);
    a.stop();
    b.stop();
  });

  it('a renewal answering false marks the lease lost', async () => {
    const group = new HeartbeatGroup(3_000);
    const hb = group.start(async () => false, s('a'), silentLogger, 'a');
    expect(hb.lost).toBe(false);
    await vi.advanceTimersByTimeAsync(1_250);
    expect(hb.lost).toBe(true);
    hb.stop();
  });
});
