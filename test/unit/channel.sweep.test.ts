// The sweep's routing pass: counting, the first-wave breaker, and the routing budget (spec: "Sweep failures").
import { describe, expect, it } from 'vitest';
import type { ResponseChannel, RouteOutcome } from '../../shared/channel/response-channel';
import { sweepChannel } from '../../shared/channel/sweep';
import type { OverdueMessage } from '../../shared/channel/types';
import type { Logger } from '../../shared/log';

const overdue = (n: number): OverdueMessage[] => Array.from({ length: n }, (_, i) => ({ id: `m${i}`, correlationId: `c${i}`, envelopeJson: '{}' }));
const throttled = () => Object.assign(new Error('Resource ID : 1. The request limit for the database is 30 and has been reached.'), { number: 10928 });
const permanent = () => Object.assign(new Error("Invalid column name 'x'."), { number: 207 });

function fakeChannel(rows: OverdueMessage[], route: (id: string) => Promise<RouteOutcome>) {
  const calls: string[] = [];
  const channel = {
    store: {
      findOverdueWithRegistrations: async () => rows,
      pruneExpiredBatch: async () => 0,
    },
    routeToRecovery: async (id: string) => {
      calls.push(id);
      return route(id);
    },
  } as unknown as ResponseChannel;
  return { channel, calls };
}

function capture(): { logger: Logger; errors: string[] } {
  const errors: string[] = [];
  const logger = { info: () => undefined, warn: () => undefined, error: (m: string) => errors.push(m), debug: () => undefined } as unknown as Logger;
  return { logger, errors };
}

const options = { deliveryConfirmationTimeoutMs: 5000, pruneIntervalMs: 3_600_000 };

describe('channel sweep routing', () => {
  it('counts only responses it routed itself', async () => {
    const outcomes: RouteOutcome[] = ['routed', 'already-routed', 'acknowledged', 'routed', 'no-registrations'];
    const { channel, calls } = fakeChannel(overdue(5), async (id) => outcomes[Number(id.slice(1))]!);
    const report = await sweepChannel(channel, options, capture().logger);
    expect(calls).toHaveLength(5);
    expect(report).toMatchObject({ overdue: 5, routed: 2, failed: 0, cutShort: false });
  });

  it('skips the rest of the pass when the whole first wave fails transiently, naming the first failures', async () => {
    const { channel, calls } = fakeChannel(overdue(40), async () => {
      throw throttled();
    });
    const { logger, errors } = capture();
    const report = await sweepChannel(channel, options, logger);
    expect(calls).toHaveLength(8);
    expect(report).toMatchObject({ overdue: 40, routed: 0, failed: 8, cutShort: true });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/first 8 routings all failed transiently; skipping the other 32/);
    expect(errors[0]!.match(/m\d+: Resource ID/g)).toHaveLength(3);
  });

  it('goes on past a first wave with one success, or with permanent failures', async () => {
    const some = fakeChannel(overdue(20), async (id) => {
      if (id === 'm3') return 'routed';
      throw throttled();
    });
    expect(await sweepChannel(some.channel, options, capture().logger)).toMatchObject({ routed: 1, failed: 19, cutShort: false });
    expect(some.calls).toHaveLength(20);
    const bad = fakeChannel(overdue(12), async () => {
      throw permanent();
    });
    expect(await sweepChannel(bad.channel, options, capture().logger)).toMatchObject({ failed: 12, cutShort: false });
    expect(bad.calls).toHaveLength(12);
  });

  it('starts no new wave once the routing budget is spent', async () => {
    let clock = 0;
    const { channel, calls } = fakeChannel(overdue(30), async () => {
      clock += 600; // each routing takes 600 ms of the fake clock
      return 'routed';
    });
    const report = await sweepChannel(channel, { ...options, routingBudgetMs: 4000 }, capture().logger, () => clock);
    // waves of 8 run in parallel on the fake clock: 4,800 ms after the first wave, so only one wave runs
    expect(calls).toHaveLength(8);
    expect(report).toMatchObject({ overdue: 30, routed: 8, cutShort: true });
  });
});
