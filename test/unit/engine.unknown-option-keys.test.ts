// Issue 18: a misspelled engine option (`policy: { maxDeliveryAtempts: 1 }`) was ignored and the default ran.
// createEngine refuses every unknown key, at every level, naming its path and the nearest valid key; the options
// the app builds from its settings (shared/settings) have none.
import { describe, expect, it } from 'vitest';
import { createEngine, EngineOptionsError, HandlerRegistry, silentLogger, type EngineOptions } from '../../shared';
import { engineOptions, loadConfig } from '../../shared/settings';
import { nearestKey } from '../../shared/engine/option-keys';

const store = { kind: 'pglite', dataDir: 'memory://' } as const;

async function problemsOf(options: unknown): Promise<string[]> {
  const err = await createEngine({ logger: silentLogger, ...(options as EngineOptions) }).then(
    async (engine) => {
      await engine.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EngineOptionsError);
  return (err as EngineOptionsError).problems;
}

describe('unknown engine option keys', () => {
  it('refuses a misspelled policy key, naming its path and the key meant', async () => {
    const problems = await problemsOf({ store, queues: { q1: { handler: { kind: 'echo' }, policy: { maxDeliveryAtempts: 1 } } } });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^queues\.q1\.policy\.maxDeliveryAtempts is not a known option \(did you mean maxDeliveryAttempts\?\)/);
  });

  it('checks every level: top, store, pool, queue route, handler, policy, defaults, built-in policies, retry, channel, wake', async () => {
    const problems = await problemsOf({
      store: { ...store, dataDri: 'x', pool: { maxx: 3 } },
      queues: { q1: { handler: { kind: 'forward', url: 'http://x', timeout: 5 }, polcy: {}, policy: { handlerConcurrency: 2 } } },
      defaults: { redeliveryDelaySeconds: 0 },
      builtInPolicies: { respons: {}, callbacks: { lockTimeoutSeconds: 30 } },
      retry: { lock: { baseMs: 1, maxMs: 2, cap: 3 }, failovr: { baseMs: 1, maxMs: 2 } },
      channel: { maxWaitSecond: 3 },
      wake: { notfy: false },
      topic: {},
    });
    const paths = problems.map((p) => p.slice(0, p.indexOf(' ')));
    expect(paths.sort()).toEqual(
      [
        'store.dataDri',
        'store.pool.maxx',
        'queues.q1.handler.timeout',
        'queues.q1.polcy',
        'queues.q1.policy.handlerConcurrency',
        'defaults.redeliveryDelaySeconds',
        'builtInPolicies.respons',
        'builtInPolicies.callbacks.lockTimeoutSeconds',
        'retry.lock.cap',
        'retry.failovr',
        'channel.maxWaitSecond',
        'wake.notfy',
        'topic',
      ].sort(),
    );
    const text = problems.join('\n');
    for (const hint of [
      'store.dataDri is not a known option (did you mean dataDir?)',
      'queues.q1.handler.timeout is not a known option (did you mean timeoutMs?)',
      'queues.q1.policy.handlerConcurrency is not a known option (did you mean concurrency?)',
      'defaults.redeliveryDelaySeconds is not a known option (did you mean redeliveryDelayMs?)',
      'builtInPolicies.callbacks.lockTimeoutSeconds is not a known option (did you mean lockTimeoutMs?)',
      'topic is not a known option (did you mean topics?)',
      'wake.notfy is not a known option (did you mean notify?)',
    ])
      expect(text).toContain(hint);
    expect(text).toContain('the valid keys there are maxDeliveryAttempts, redeliveryDelayMs');
  });

  it('checks an injected store too', async () => {
    const problems = await problemsOf({ store: { stores: {}, notifyURL: 'postgres://x' }, queues: { q1: { handler: { kind: 'echo' } } } });
    expect(problems).toEqual([expect.stringMatching(/^store\.notifyURL is not a known option \(did you mean notifyUrl\?\)/)]);
  });

  it('suggests nothing for a word unlike every valid key', () => {
    expect(nearestKey('colour', ['maxDeliveryAttempts', 'batchSize'])).toBeUndefined();
    expect(nearestKey('batchsize', ['maxDeliveryAttempts', 'batchSize'])).toBe('batchSize');
  });

  it('the options built from the app settings have no unknown key', async () => {
    const cfg = loadConfig({
      QUEUES: 'worker,flaky',
      TOPICS: 'orders',
      TOPIC__orders__SUBSCRIPTIONS: 'billing',
      QUEUE__flaky__MAX_DELIVERY_ATTEMPTS: '2',
      CALLBACK_SIGNING_SECRET: '@Microsoft.KeyVault(SecretUri=https://v/secrets/s)',
      PGLITE_DATA_DIR: 'memory://',
    });
    const options = engineOptions(cfg, { store, handlers: new HandlerRegistry(), logger: silentLogger });
    const engine = await createEngine(options);
    await engine.close();
    expect(engine.queues).toEqual(['worker', 'flaky', 'orders:billing']);
  });

  it('refuses a top-level switch that is not a boolean (a string "false" would read as true)', async () => {
    const problems = await problemsOf({ store, queues: { q1: { handler: { kind: 'echo' } } }, durableClaimsAndAcks: 'false', autoCreateSchema: 1 });
    expect(problems).toEqual(['autoCreateSchema must be true or false', 'durableClaimsAndAcks must be true or false']);
  });
});
