import { describe, expect, it } from 'vitest';
import { LazyAbort } from '../../shared/transport/lazy-abort';

describe('LazyAbort', () => {
  it('a signal read before the abort is aborted by it, with its reason, and fires abort once', () => {
    const lease = new LazyAbort();
    const signal = lease.signal;
    let fired = 0;
    signal.addEventListener('abort', () => fired++);
    expect(signal.aborted).toBe(false);
    const reason = new Error('lease lost');
    lease.abort(reason);
    lease.abort(new Error('second'));
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    expect(fired).toBe(1);
    expect(lease.signal).toBe(signal);
  });

  it('a signal first read after the abort is already aborted with the first reason', () => {
    const lease = new LazyAbort();
    const first = new Error('cancelled');
    lease.abort(first);
    lease.abort(new Error('later'));
    expect(lease.aborted).toBe(true);
    expect(lease.signal.aborted).toBe(true);
    expect(lease.signal.reason).toBe(first);
  });

  it('not aborted: the signal stays live', () => {
    const lease = new LazyAbort();
    expect(lease.aborted).toBe(false);
    expect(lease.signal.aborted).toBe(false);
  });
});
