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
});
