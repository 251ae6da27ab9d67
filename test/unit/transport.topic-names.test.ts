import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { subscriptionQueue, topicCopyId } from '../../shared/transport/topic-names';

describe('topic names and copy ids', () => {
  it('a subscription queue is {topic}:{subscription}', () => {
    expect(subscriptionQueue('orders', 'billing')).toBe('orders:billing');
  });

  it('copy ids are deterministic, distinct per subscription, case-blind in the message id, and shaped as UUID v8', () => {
    const id = '0190A000-0000-7000-8000-0000000000AA';
    const a = topicCopyId(id, 'orders:billing');
    expect(a).toBe(topicCopyId(id.toLowerCase(), 'orders:billing'));
    expect(a).not.toBe(topicCopyId(id, 'orders:shipping'));
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('is SHA-256 of "{id}\\n{queue}" with the version and variant bits set (the SQL twins compute the same)', () => {
    const digest = createHash('sha256').update('0190a000-0000-7000-8000-0000000000aa\norders:billing').digest('hex');
    const id = topicCopyId('0190a000-0000-7000-8000-0000000000aa', 'orders:billing').replace(/-/g, '');
    expect(id.slice(0, 12)).toBe(digest.slice(0, 12));
    expect(id[12]).toBe('8');
    expect(id.slice(13, 16)).toBe(digest.slice(13, 16));
    expect(parseInt(id[16]!, 16)).toBe((parseInt(digest[16]!, 16) & 0x3) | 0x8);
    expect(id.slice(17)).toBe(digest.slice(17, 32));
  });
});
