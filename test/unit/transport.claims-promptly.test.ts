// WakeSignal.claimsPromptly: whether a drain loop of this process would claim a row published now at once (it has
// room to claim into), so a publish of such a row needs no NOTIFY for other processes (stores/postgres/carried-
// jobs.ts). The drain loop reports its room each turn and withdraws it when it ends, whichever way it ends.
import { describe, expect, it } from 'vitest';
import { drainQueue } from '../../shared/transport/drain-loop';
import { WakeSignal } from '../../shared/transport/wake';
import { drainOptions } from '../support/drain-options';
import { MemoryStore } from '../support/memory-store';
import { message } from '../support/messages';

const until = async (cond: () => boolean, what: string) => {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > 5_000) throw new Error(`not ${what} after 5 s`);
    await new Promise((r) => setTimeout(r, 2));
  }
};

describe('claims promptly (a drain of this process has room for the queue)', () => {
  it('a waiter, or a loop that reported room, claims promptly; room withdrawn, nobody does', () => {
    const w = new WakeSignal();
    expect(w.claimsPromptly('q')).toBe(false);
    const loop = {};
    w.room('q', loop, true);
    expect(w.claimsPromptly('q')).toBe(true);
    expect(w.claimsPromptly('other')).toBe(false);
    w.room('q', loop, false);
    expect(w.claimsPromptly('q')).toBe(false);
    void w.wait('q', 50);
    expect(w.claimsPromptly('q')).toBe(true);
  });

  it('a drain reports room while it has some, none while every slot is busy, and none once it ended', async () => {
    const store = new MemoryStore();
    const wake = new WakeSignal();
    const release: Array<() => void> = [];
    const stop = new AbortController();
    const drain = drainQueue(
      drainOptions(store, {
        wake,
        concurrency: 2,
        batchSize: 2,
        idleGraceMs: 60_000,
        stopping: stop.signal,
        handler: () => new Promise<undefined>((r) => release.push(() => r(undefined))),
      }),
    );
    await until(() => wake.claimsPromptly('q'), 'reporting room while idle');
    await store.publish([message('q', { n: 1 }), message('q', { n: 2 })]);
    wake.notify('q');
    await until(() => release.length === 2, 'running both jobs');
    await until(() => !wake.claimsPromptly('q'), 'withdrawing room with both slots busy');
    release.shift()!();
    await until(() => wake.claimsPromptly('q'), 'reporting room again once a handler ended');
    release.shift()!();
    stop.abort();
    await drain;
    expect(wake.claimsPromptly('q')).toBe(false);
  });
});

describe('a drain does not go idle with a wake pending', () => {
  it('a row published (and woken) while its empty claim was in flight is claimed, not left to the next drain', async () => {
    const store = new MemoryStore();
    const wake = new WakeSignal();
    const ran: unknown[] = [];
    let first = true;
    const claim = store.claim.bind(store);
    store.claim = async (...args: Parameters<MemoryStore['claim']>) => {
      const batch = await claim(...args);
      if (first) {
        first = false;
        // while this empty claim answers, a publisher commits a row and wakes the queue: no loop waits right now
        await store.publish([message('q', { n: 1 })]);
        wake.notify('q');
        expect(wake.pendingFor('q')).toBe(true);
      }
      return batch;
    };
    const report = await drainQueue(drainOptions(store, { wake, idleGraceMs: 0, emptyPollDelayMs: 60_000, handler: async (job) => void ran.push(job.payload) }));
    expect(ran).toEqual([{ n: 1 }]);
    expect(report.stoppedBy).toBe('idle');
    expect(wake.pendingFor('q')).toBe(false);
  });
});
