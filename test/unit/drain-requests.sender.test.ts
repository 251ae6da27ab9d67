// The drain-request sender: one immediate request per queue per coalescing window, delayed requests that surface
// when the work is due (one per queue and due second), a bounded fan-out, and a storage queue that is down never
// failing the caller.
import { describe, expect, it } from 'vitest';
import { SWEEP_TARGET, parseRequest } from '../../shared/drain-requests/message';
import { DrainRequestSender, MAX_VISIBILITY_SECONDS, type RequestQueue } from '../../shared/drain-requests/sender';
import type { Logger } from '../../shared/log';

function memoryQueue(opts: { fail?: boolean; pending?: number } = {}) {
  const sent: { body: unknown; visibility: number }[] = [];
  const queue: RequestQueue = {
    async send(text, visibility) {
      if (opts.fail) throw new Error('storage is down');
      sent.push({ body: JSON.parse(Buffer.from(text, 'base64').toString('utf8')), visibility });
    },
    async approximateCount() {
      return opts.pending ?? sent.length;
    },
  };
  return { queue, sent };
}

function logger() {
  const warnings: string[] = [];
  const log: Logger = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} } as unknown as Logger;
  return { log, warnings };
}

describe('drain-request sender', () => {
  it('sends one immediate request per queue per coalescing window, base64 JSON naming the queue', async () => {
    let now = 1_000_000;
    const { queue, sent } = memoryQueue();
    const s = new DrainRequestSender(queue, { coalesceMs: 1000, fanOut: 2, maxPending: 32, logger: logger().log, now: () => now });
    for (let i = 0; i < 50; i++) s.announce('worker', 0);
    s.announce('other', 0);
    now += 999;
    s.announce('worker', 0);
    now += 1;
    s.announce('worker', 0);
    await s.settle(1000);
    expect(sent).toEqual([
      { body: { queues: ['worker'] }, visibility: 0 },
      { body: { queues: ['other'] }, visibility: 0 },
      { body: { queues: ['worker'] }, visibility: 0 },
    ]);
    expect(s.counts).toEqual({ sent: 3, coalesced: 50, failed: 0 });
  });

  it('keeps at most one outstanding lease-lapse request per queue: a new one only when it surfaces earlier', async () => {
    let now = 7_000_000;
    const { queue, sent } = memoryQueue();
    const s = new DrainRequestSender(queue, { coalesceMs: 1000, fanOut: 2, maxPending: 32, logger: logger().log, now: () => now });
    s.announceLeaseLapse('worker', 20_000); // surfaces in 20 s
    for (let i = 0; i < 20; i++) s.announceLeaseLapse('worker', 25_000 + i); // later: the first one covers them
    s.announceLeaseLapse('worker', 20_000); // the same due second
    s.announceLeaseLapse('worker', 12_400); // earlier: sent (13 s, rounded up so the lease has lapsed)
    s.announceLeaseLapse('other', 3000); // per queue
    s.announceLeaseLapse('other', 0); // lapsing now: still a second, never before the lapse
    now += 13_000; // the 13 s request has surfaced: it no longer covers anything
    s.announceLeaseLapse('worker', 30_000);
    await s.settle(1000);
    expect(sent).toEqual([
      { body: { queues: ['worker'] }, visibility: 20 },
      { body: { queues: ['worker'] }, visibility: 13 },
      { body: { queues: ['other'] }, visibility: 3 },
      { body: { queues: ['other'] }, visibility: 1 },
      { body: { queues: ['worker'] }, visibility: 30 },
    ]);
    expect(s.counts).toEqual({ sent: 5, coalesced: 21, failed: 0 });
  });

  it('gives delayed work a request that becomes visible when it is due, one per queue and due second', async () => {
    const now = 5_000_000;
    const { queue, sent } = memoryQueue();
    const s = new DrainRequestSender(queue, { coalesceMs: 1000, fanOut: 2, maxPending: 32, logger: logger().log, now: () => now });
    s.announce('worker', 2500);
    s.announce('worker', 2900); // the same due second (rounded up to 3 s)
    s.announce('worker', 10_000);
    s.announce(SWEEP_TARGET, 6000);
    s.announce('worker', 30 * 86_400_000); // beyond Storage's 7 days: capped (the timers cover it)
    await s.settle(1000);
    expect(sent).toEqual([
      { body: { queues: ['worker'] }, visibility: 3 },
      { body: { queues: ['worker'] }, visibility: 10 },
      { body: { queues: [], sweep: true }, visibility: 6 },
      { body: { queues: ['worker'] }, visibility: MAX_VISIBILITY_SECONDS },
    ]);
  });

  it('fans out by DRAIN_FANOUT, and by one continuation once the request queue holds maxPending', async () => {
    const a = memoryQueue({ pending: 3 });
    const s = new DrainRequestSender(a.queue, { coalesceMs: 1000, fanOut: 3, maxPending: 4, logger: logger().log });
    expect(await s.fanOut('worker')).toBe(3);
    const b = memoryQueue({ pending: 4 });
    const t = new DrainRequestSender(b.queue, { coalesceMs: 1000, fanOut: 3, maxPending: 4, logger: logger().log });
    expect(await t.fanOut('worker')).toBe(1);
    expect(a.sent).toHaveLength(3);
    expect(b.sent).toHaveLength(1);
  });

  it('never throws when the storage queue is down, and logs it once a minute', async () => {
    const { queue } = memoryQueue({ fail: true });
    const { log, warnings } = logger();
    let now = 0;
    const s = new DrainRequestSender(queue, { coalesceMs: 10, fanOut: 2, maxPending: 32, logger: log, now: () => now });
    for (let i = 0; i < 5; i++) {
      expect(() => s.announce('worker', 0)).not.toThrow();
      now += 20;
      await s.settle(1000);
    }
    await expect(s.fanOut('worker')).resolves.toBe(2);
    expect(s.counts.failed).toBe(5 + 2); // five announcements, two fan-out sends
    expect(warnings).toHaveLength(1);
  });
});

describe('drain-request message', () => {
  it('accepts what the host passes (the parsed object or its JSON text) and refuses anything else', () => {
    expect(parseRequest({ queues: ['worker'] })).toEqual({ queues: ['worker'] });
    expect(parseRequest('{"queues":[],"sweep":true}')).toEqual({ queues: [], sweep: true });
    expect(parseRequest('hello')).toBe('the message is not JSON');
    expect(parseRequest({ queues: 'worker' })).toMatch(/array/);
    expect(parseRequest({ queues: [], sweep: 'yes' })).toMatch(/sweep/);
  });
});

describe('drain-request sender: a storage queue that cannot be reached (issue 18)', () => {
  it('logs one line saying what to set, without the error dump, once per minute however many sends fail', async () => {
    const lines: unknown[][] = [];
    const log = { debug() {}, info() {}, warn: (...a: unknown[]) => void lines.push(a), error() {} } as unknown as Logger;
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:10001'), { name: 'RestError', code: 'ECONNREFUSED', request: { url: 'x' } });
    const queue: RequestQueue = {
      send: () => Promise.reject(refused),
      approximateCount: () => Promise.reject(refused),
    };
    let now = 1_000_000;
    const s = new DrainRequestSender(queue, { coalesceMs: 1000, fanOut: 2, maxPending: 100, logger: log, now: () => now });
    for (let i = 0; i < 5; i++) {
      s.announce(`q${i}`, 0);
      await s.settle(1000);
    }
    expect(s.counts.failed).toBe(5);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toHaveLength(1); // the message only: no error object for the logger to dump
    const line = lines[0]![0] as string;
    expect(line).not.toContain('\n');
    expect(line).toContain('connect ECONNREFUSED 127.0.0.1:10001');
    expect(line).toContain('AzureWebJobsStorage');
    expect(line).toContain('DRAIN_TRIGGER=timer');
    now += 61_000;
    s.announce('q9', 0);
    await s.settle(1000);
    expect(lines).toHaveLength(2);
    expect(lines[1]![0]).toContain('(6 so far)');
  });
});
