import { describe, expect, it } from 'vitest';
import { workerResponseHooks } from '../../shared/channel/worker-responses';
import type { ResponseChannel } from '../../shared/channel/response-channel';
import type { Job } from '../../shared/transport/job';
import type { Logger } from '../../shared/log';

const job = (correlationId?: string): Job => ({ id: 'j1', queue: 'worker', payload: { n: 1 }, payloadJson: '{"n":1}', headers: {}, attempt: 1, correlationId, createdAt: new Date(0) });

function fakes() {
  const published: unknown[] = [];
  const warnings: string[] = [];
  const channel = {
    publishResponse: async (input: unknown) => {
      published.push(input);
      return { id: 'j1', delivery: 'stored' as const, duplicate: false };
    },
  } as unknown as ResponseChannel;
  const logger: Logger = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} } as unknown as Logger;
  return { published, warnings, hooks: workerResponseHooks(channel, logger) };
}

describe('worker response hooks: a completed job', () => {
  it('without a correlation id gets no promise and publishes nothing', () => {
    const { published, hooks } = fakes();
    expect(hooks.onCompleted!(job(), { ok: true }, {})).toBeUndefined();
    expect(published).toEqual([]);
  });

  it('with a correlation id publishes its result as the final response, and the promise waits for it', async () => {
    const { published, hooks } = fakes();
    const after = hooks.onCompleted!(job('order-7'), { total: 42 }, {});
    expect(after).toBeInstanceOf(Promise);
    await after;
    expect(published).toEqual([{ correlationId: 'order-7', id: 'j1', payload: { total: 42 }, final: true }]);
  });

  it('with an unusable correlation id warns and publishes nothing', () => {
    const { published, warnings, hooks } = fakes();
    expect(hooks.onCompleted!(job(' padded '), null, {})).toBeUndefined();
    expect(published).toEqual([]);
    expect(warnings.join('\n')).toMatch(/correlation id must not begin or end with whitespace/);
  });
});
