// The drain loop over the real SQL Server store and tedious client, with faults injected into claims and acks.

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_CLASSES } from '../../shared/sql/retry';
import type { SqlServerTransportStore } from '../../shared/stores/sqlserver/store';
import { drainQueue, type DrainOptions } from '../../shared/transport/drain-loop';
import { WakeSignal } from '../../shared/transport/wake';
import { fail, ok, reset, type Reply, type SqlRequest } from '../tds/fault-server';
import {
  affected,
  capturingLogger,
  catalogSets,
  claimAnswer,
  FAST_CLASSES,
  faultScope,
  idsIn,
  statementOf,
  type ClaimedRow,
} from './harness';

const faults = faultScope();

/** A queue holding `jobs` (handed out by the first successful claim) with scripted faults per statement. */
function scripted(jobs: ClaimedRow[], faults: { claim?: Reply[]; ack?: Reply[] } = {}) {
  let handedOut = false;
  return (request: SqlRequest): Reply => {
    switch (statementOf(request)) {
      case 'catalog':
        return ok(...catalogSets());
      case 'claim': {
        const fault = faults.claim?.shift();
        if (fault) return fault;
        const rows = handedOut ? [] : jobs;
        handedOut = true;
        return ok(...claimAnswer(rows));
      }
      case 'ack': {
        const fault = faults.ack?.shift();
        if (fault) return fault;
        return ok(...affected(idsIn(request).length));
      }
      case 'release':
      case 'renew':
        return ok(...affected(1));
      default:
        return ok();
    }
  };
}

function drainOptions(s: SqlServerTransportStore, logger: ReturnType<typeof capturingLogger>, extra: Partial<DrainOptions> = {}): DrainOptions {
  return {
    store: s,
    queue: 'worker',
    handler: async () => undefined,
    policy: { maxDeliveryAttempts: 5, redeliveryDelayMs: 0, redeliveryMaxDelayMs: 0 },
    deadLetterQueue: 'worker.dlq',
    lockTimeoutMs: 30_000,
    batchSize: 8,
    concurrency: 8,
    budgetMs: 3_000,
    idleGraceMs: 30,
    emptyPollDelayMs: 10,
    wake: new WakeSignal(),
    logger,
    claimRetry: FAST_CLASSES,
    ...extra,
  };
}

describe('drain loop under injected faults (real tedious client)', () => {
  it('a connection reset during the ack: the fenced ack is resent once, and nothing is released or dead-lettered', async () => {
    const job = { id: randomUUID(), lockId: randomUUID() };
    const { server, logger, store } = await faults.start({ onRequest: scripted([job], { ack: [reset()] }) });
    let handled = 0;

    const report = await drainQueue(drainOptions(store, logger, { handler: async () => void handled++ }));

    expect(handled).toBe(1);
    expect(report).toMatchObject({ claimed: 1, completed: 1, ackFailures: 0, released: 0, deadLettered: 0 });
    const byStatement = (s: string) => server.requests.filter((r) => statementOf(r) === s);
    // the first ack was lost with its connection; the resend carries the same fence, so it cannot delete twice
    expect(byStatement('ack')).toHaveLength(2);
    for (const ack of byStatement('ack')) expect(ack.text).toContain(job.lockId);
    expect(byStatement('release')).toHaveLength(0);
    expect(byStatement('dead-letter')).toHaveLength(0);
    expect(logger.logs.some((l) => l.level === 'warn' && /ack of 1 jobs failed transiently/.test(l.message))).toBe(true);
  });

  it('acks that keep failing are resent ten times, then logged and left to lapse: nothing released, dead-lettered or acked an eleventh time', async () => {
    const job = { id: randomUUID(), lockId: randomUUID() };
    const { server, logger, store } = await faults.start({ onRequest: scripted([job], { ack: Array.from({ length: 10 }, () => reset()) }) });

    const report = await drainQueue(drainOptions(store, logger));

    expect(report).toMatchObject({ claimed: 1, completed: 1, ackFailures: 1, released: 0, deadLettered: 0 });
    const byStatement = (s: string) => server.requests.filter((r) => statementOf(r) === s);
    expect(byStatement('ack')).toHaveLength(10);
    expect(byStatement('release')).toHaveLength(0);
    expect(byStatement('dead-letter')).toHaveLength(0);
    expect(logger.logs.some((l) => l.level === 'error' && /failed to ack 1 jobs; their leases will lapse/.test(l.message))).toBe(true);
  });

  it('throttled and deadlocked claims back off per class and the drain carries on', async () => {
    const job = { id: randomUUID(), lockId: randomUUID() };
    const { logger, store } = await faults.start({
      onRequest: scripted([job], { claim: [fail(40501, 16, 'The service is currently busy.'), fail(1205, 13), fail(40613)] }),
    });

    const report = await drainQueue(drainOptions(store, logger));

    expect(report).toMatchObject({ claimFailures: 3, claimed: 1, completed: 1, ackFailures: 0, stoppedBy: 'idle' });
    const classes = logger.logs.flatMap((l) => /claiming from 'worker' failed transiently \((\w+)\)/.exec(l.message)?.[1] ?? []);
    expect(classes).toEqual(['throttling', 'lock', 'failover']);
  });

  it('with the default classes a throttled claim never waits past the budget: the drain stops and the next run retries', async () => {
    const { logger, store } = await faults.start({ onRequest: scripted([], { claim: [fail(40501)] }) });
    const started = Date.now();

    // 5–10 s is the first throttling wait; 2 s of budget cannot hold it
    const report = await drainQueue(drainOptions(store, logger, { budgetMs: 2_000, claimRetry: DEFAULT_RETRY_CLASSES }));

    expect(Date.now() - started).toBeLessThan(1_000);
    expect(report).toMatchObject({ claimFailures: 1, claimed: 0, stoppedBy: 'error' });
    expect(logger.logs.some((l) => l.level === 'error' && /transient: throttling; the next run retries/.test(l.message))).toBe(true);
  });

  it('a permanent claim error (e.g. 208 invalid object) stops the drain at once without retrying', async () => {
    const { server, logger, store } = await faults.start({ onRequest: scripted([], { claim: [fail(208, 16, "Invalid object name 'x'.")] }) });
    const report = await drainQueue(drainOptions(store, logger));
    expect(report).toMatchObject({ claimFailures: 1, stoppedBy: 'error' });
    expect(server.requests.filter((r) => statementOf(r) === 'claim')).toHaveLength(1);
  });
});
