import { describe, expect, it } from 'vitest';
import { ClaimBuffer } from '../../shared/transport/claim-buffer';
import type { ClaimedMessage } from '../../shared/transport/types';

const row = (id: string): ClaimedMessage => ({ id, lockId: `l-${id}`, queue: 'q', payloadJson: '{}', headers: {}, attempt: 1, createdAt: new Date(0) });

describe('claim buffer', () => {
  it('keeps rows in claim-time order when two claims answer out of order, so the oldest age out first', () => {
    const buffer = new ClaimBuffer(100); // a row may start within 100 ms of its claim
    buffer.add([row('b1'), row('b2')], 1_020); // the later claim answered first
    buffer.add([row('a1')], 1_000);
    expect(buffer.nextStaleAt()).toBe(1_100);
    expect(buffer.takeStale(1_110).map((m) => m.id)).toEqual(['a1']);
    expect(buffer.nextStaleAt()).toBe(1_120);
    const stale: ClaimedMessage[] = [];
    expect(buffer.take(1_110, stale)?.id).toBe('b1');
    expect(stale).toEqual([]);
  });

  it('hands out rows in claim order and moves rows too old to start aside', () => {
    const buffer = new ClaimBuffer(100);
    buffer.add([row('a1'), row('a2')], 1_000);
    buffer.add([row('b1')], 1_050);
    const stale: ClaimedMessage[] = [];
    expect(buffer.take(1_120, stale)?.id).toBe('b1');
    expect(stale.map((m) => m.id)).toEqual(['a1', 'a2']);
    expect(buffer.size).toBe(0);
  });

  it('counts what it holds across partly taken claims, and hands every row back once', () => {
    const buffer = new ClaimBuffer(100);
    buffer.add([row('a1'), row('a2'), row('a3')], 1_000);
    buffer.add([], 1_010);
    buffer.add([row('b1'), row('b2')], 1_020);
    const stale: ClaimedMessage[] = [];
    expect([buffer.take(1_001, stale)?.id, buffer.take(1_001, stale)?.id]).toEqual(['a1', 'a2']);
    expect(buffer.size).toBe(3);
    expect(buffer.takeStale(1_100).map((m) => m.id)).toEqual(['a3']); // a claim's rows age together
    expect(buffer.size).toBe(2);
    expect(buffer.take(1_101, stale)?.id).toBe('b1');
    expect(buffer.takeAll().map((m) => m.id)).toEqual(['b2']);
    expect([buffer.size, buffer.nextStaleAt(), buffer.take(1_101, stale), stale]).toEqual([0, undefined, undefined, []]);
  });
});
