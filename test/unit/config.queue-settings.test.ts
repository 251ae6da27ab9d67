// Per-queue settings QUEUE__<key>__<SETTING>: the key mapping, the precedence over the global settings, and every
// mistake reported at start-up together with the other bad settings.
import { describe, expect, it } from 'vitest';
import { ConfigError, engineOptions, loadConfig, SETTINGS, type Env } from '../../shared/settings';
import { DEFAULT_CHANNEL, DEFAULT_POOL } from '../../shared/engine/options';
import { DEFAULT_QUEUE_POLICY } from '../../shared/engine/policy';
import { HandlerRegistry } from '../../shared/handlers/registry';
import { silentLogger } from '../../shared/log';
import { queueSettingKey, queueSettingName } from '../../shared/settings/per-queue';

function problems(env: Env, options = {}): string[] {
  try {
    loadConfig(env, options);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe('per-queue settings', () => {
  it('without any, every queue has the global settings (existing configurations are unchanged)', () => {
    const c = loadConfig({ QUEUES: 'a,b', MAX_DELIVERY_ATTEMPTS: '7', BATCH_SIZE: '4', WORKER_FORWARD_URL: 'http://h:1/x', DEAD_LETTER_ENABLED: 'false' });
    for (const q of ['a', 'b']) {
      expect(c.routes[q]).toEqual({
        handler: { kind: 'forward', url: 'http://h:1/x', timeoutMs: 30_000 },
        policy: { maxDeliveryAttempts: 7, redeliveryDelayMs: 5000, redeliveryMaxDelayMs: 300_000, lockTimeoutMs: 30_000, batchSize: 4, prefetch: 16, concurrency: 16, deadLetter: false, historyRetentionMs: 0 },
      });
    }
    expect(c.routes.response).toMatchObject({ handler: { kind: 'built-in' }, policy: { maxDeliveryAttempts: 7 } });
    expect(Object.keys(c.routes)).toEqual(['a', 'b', 'response', 'callbacks']);
  });

  it('JOB_HISTORY_RETENTION_DAYS: off by default, a global default (fractions allowed), a per-queue override, and its bounds', () => {
    expect(loadConfig({ QUEUES: 'a' }).routes.a?.policy.historyRetentionMs).toBe(0);
    const c = loadConfig({ QUEUES: 'a,b', JOB_HISTORY_RETENTION_DAYS: '0.5', QUEUE__b__JOB_HISTORY_RETENTION_DAYS: '0' });
    expect(c.routes.a?.policy.historyRetentionMs).toBe(43_200_000);
    expect(c.routes.b?.policy.historyRetentionMs).toBe(0);
    expect(c.routes.response?.policy.historyRetentionMs).toBe(43_200_000);
    expect(() => loadConfig({ QUEUES: 'a', QUEUE__a__JOB_HISTORY_RETENTION_DAYS: '3651' })).toThrow(/QUEUE__a__JOB_HISTORY_RETENTION_DAYS/);
    expect(() => loadConfig({ JOB_HISTORY_RETENTION_DAYS: '-1' })).toThrow(/JOB_HISTORY_RETENTION_DAYS/);
  });

  it('limits across instances: a global default, per-queue overrides, 0 turns one off, a burst needs a rate', () => {
    const c = loadConfig({
      QUEUES: 'a,b,c',
      CONCURRENCY_LIMIT: '10',
      QUEUE__b__CONCURRENCY_LIMIT: '0',
      QUEUE__b__RATE_LIMIT_PER_SECOND: '2.5',
      QUEUE__c__RATE_LIMIT_PER_SECOND: '50',
      QUEUE__c__RATE_LIMIT_BURST: '5',
    });
    expect(c.routes.a?.policy).toMatchObject({ concurrencyLimit: 10 });
    expect(c.routes.a?.policy.rateLimitPerSecond).toBeUndefined();
    expect(c.routes.b?.policy.concurrencyLimit).toBeUndefined();
    expect(c.routes.b?.policy).toMatchObject({ rateLimitPerSecond: 2.5 });
    expect(c.routes.c?.policy).toMatchObject({ concurrencyLimit: 10, rateLimitPerSecond: 50, rateLimitBurst: 5 });
    expect(loadConfig({ QUEUES: 'a' }).routes.a?.policy.concurrencyLimit).toBeUndefined(); // no limit by default
    expect(problems({ QUEUES: 'a', QUEUE__a__CONCURRENCY_LIMIT: '1.5' })).toEqual([expect.stringMatching(/QUEUE__a__CONCURRENCY_LIMIT='1.5' must be an integer/)]);
    expect(problems({ QUEUES: 'a', QUEUE__a__RATE_LIMIT_BURST: '3' })).toEqual([expect.stringMatching(/QUEUE__a__RATE_LIMIT_BURST sets a burst without a rate/)]);
  });

  it('PREFETCH: a global default, a per-queue override, and its bounds', () => {
    const c = loadConfig({ QUEUES: 'a,b', PREFETCH: '64', QUEUE__b__PREFETCH: '0' });
    expect(c.routes.a?.policy.prefetch).toBe(64);
    expect(c.routes.b?.policy.prefetch).toBe(0);
    expect(() => loadConfig({ QUEUES: 'a', QUEUE__a__PREFETCH: '5001' })).toThrow(/QUEUE__a__PREFETCH/);
    expect(() => loadConfig({ PREFETCH: '-1' })).toThrow(/PREFETCH/);
  });

  it('the defaults of the settings are the engine defaults', () => {
    const c = loadConfig({});
    expect(c.routes.worker).toEqual({ handler: { kind: 'echo' }, policy: DEFAULT_QUEUE_POLICY });
    expect(c.channel).toEqual(DEFAULT_CHANNEL);
    expect(c.pool).toEqual(DEFAULT_POOL);
  });

  it('maps a queue name to its key (non-alphanumerics → _) and matches the key in any case', () => {
    expect(queueSettingKey('orders.eu-1')).toBe('orders_eu_1');
    expect(queueSettingName('orders.eu-1', 'MAX_DELIVERY_ATTEMPTS')).toBe('QUEUE__orders_eu_1__MAX_DELIVERY_ATTEMPTS');
    const c = loadConfig({
      QUEUES: 'orders.eu-1,mail',
      QUEUE__ORDERS_EU_1__MAX_DELIVERY_ATTEMPTS: '2',
      QUEUE__orders_eu_1__FORWARD_URL: 'https://orders.example/jobs?code=s3cret',
      QUEUE__mail__HANDLER_CONCURRENCY: '1',
      QUEUE__mail__DEAD_LETTER_ENABLED: 'false',
      QUEUE__callbacks__MAX_DELIVERY_ATTEMPTS: '9',
    });
    expect(c.routes['orders.eu-1']).toMatchObject({ handler: { kind: 'forward', url: 'https://orders.example/jobs?code=s3cret' }, policy: { maxDeliveryAttempts: 2, concurrency: 16 } });
    expect(c.routes.mail).toMatchObject({ handler: { kind: 'echo' }, policy: { maxDeliveryAttempts: 5, concurrency: 1, deadLetter: false } });
    expect(c.routes.callbacks!.policy.maxDeliveryAttempts).toBe(9);
  });

  it('a per-queue setting wins over the global one; the handler follows HANDLER, then its own URL, then the global choice', () => {
    const c = loadConfig({
      QUEUES: 'a,b,c',
      WORKER_FORWARD_URL: 'http://global:1/',
      WORKER_FORWARD_TIMEOUT_SECONDS: '20',
      REDELIVERY_DELAY_SECONDS: '1',
      QUEUE__a__HANDLER: 'echo',
      QUEUE__b__FORWARD_TIMEOUT_SECONDS: '3',
      QUEUE__b__REDELIVERY_DELAY_SECONDS: '0',
    });
    expect(c.routes.a!.handler).toEqual({ kind: 'echo' });
    expect(c.routes.b!.handler).toEqual({ kind: 'forward', url: 'http://global:1/', timeoutMs: 3000 });
    expect(c.routes.b!.policy.redeliveryDelayMs).toBe(0);
    expect(c.routes.c).toMatchObject({ handler: { kind: 'forward', url: 'http://global:1/', timeoutMs: 20_000 }, policy: { redeliveryDelayMs: 1000 } });
    expect(loadConfig({ QUEUES: 'a', QUEUE__a__FORWARD_URL: 'http://own:2/' }).routes.a!.handler).toMatchObject({ kind: 'forward', url: 'http://own:2/' });
  });

  it('reports unknown queues, bad names, bad values, shared keys and built-in handler overrides with every other bad setting', () => {
    const found = problems({
      QUEUES: 'a-b,a_b,ok',
      BATCH_SIZE: '0',
      QUEUE__nope__BATCH_SIZE: '4',
      QUEUE__ok__COLOUR: 'blue',
      QUEUE__ok__MAX_DELIVERY_ATTEMPTS: 'many',
      QUEUE__ok__DEAD_LETTER_ENABLED: 'perhaps',
      QUEUE__ok__FORWARD_URL: 'ftp://x',
      QUEUE__A_B__HANDLER_CONCURRENCY: '2',
      QUEUE__response__HANDLER: 'echo',
      QUEUE__ok__HANDLER: 'magic',
    }).join('\n');
    for (const bit of [
      "BATCH_SIZE='0'",
      "QUEUE__nope__BATCH_SIZE names no queue: 'nope' is not the key of any queue (a-b → a_b, a_b → a_b, ok → ok, response → response, callbacks → callbacks)",
      'QUEUE__ok__COLOUR is not a per-queue setting',
      "QUEUE__ok__MAX_DELIVERY_ATTEMPTS='many' must be an integer",
      "QUEUE__ok__DEAD_LETTER_ENABLED='perhaps' must be true or false",
      "QUEUE__ok__FORWARD_URL='ftp://x' is not an http(s) URL",
      "QUEUE__A_B__HANDLER_CONCURRENCY is ambiguous: queues 'a-b' and 'a_b' share the key a_b",
      "QUEUE__response__HANDLER: 'response' is a built-in queue",
      "QUEUE__ok__HANDLER='magic' must be echo, forward or code",
    ]) {
      expect(found).toContain(bit);
    }
  });

  it('two queues sharing a key are fine while no setting names that key', () => {
    expect(problems({ QUEUES: 'a-b,a_b' })).toEqual([]);
  });

  it('HANDLER=code needs a registered handler; the engine options carry it as the queue handler', () => {
    const env = { QUEUES: 'worker,orders', QUEUE__orders__HANDLER: 'code', QUEUE__orders__MAX_DELIVERY_ATTEMPTS: '2' };
    expect(problems(env, { codeHandlers: [] }).join('\n')).toContain("QUEUE__orders__HANDLER=code: no handler is registered for queue 'orders'");
    const registry = new HandlerRegistry();
    const orders = async () => 'ok';
    registry.register('orders', orders);
    const c = loadConfig(env, { codeHandlers: registry.names() });
    const o = engineOptions(c, { store: { kind: 'pglite', dataDir: 'memory://' }, handlers: registry, logger: silentLogger });
    expect(o.queues.orders).toEqual({ handler: orders, policy: { ...DEFAULT_QUEUE_POLICY, maxDeliveryAttempts: 2 } });
    expect(o.queues.worker!.handler).toEqual({ kind: 'echo' });
    expect(o.builtInPolicies).toEqual({ response: DEFAULT_QUEUE_POLICY, callbacks: DEFAULT_QUEUE_POLICY });
  });

  it('a queue runs the handler registered under its name without HANDLER=code; its own HANDLER or FORWARD_URL wins (issue 27)', () => {
    const codeHandlers = ['orders'];
    const handler = (env: Record<string, string>) => loadConfig(env, { codeHandlers }).routes.orders!.handler;
    expect(handler({ QUEUES: 'worker,orders' })).toEqual({ kind: 'code' });
    expect(handler({ QUEUES: 'worker,orders', WORKER_HANDLER: 'forward', WORKER_FORWARD_URL: 'http://x/' })).toEqual({ kind: 'code' });
    expect(handler({ QUEUES: 'worker,orders', QUEUE__orders__HANDLER: 'echo' })).toEqual({ kind: 'echo' });
    expect(handler({ QUEUES: 'worker,orders', QUEUE__orders__FORWARD_URL: 'http://x/' })).toMatchObject({ kind: 'forward', url: 'http://x/' });
    expect(loadConfig({ QUEUES: 'worker,orders' }, { codeHandlers }).routes.worker!.handler).toEqual({ kind: 'echo' });
  });

  it('a per-queue forward timeout counts toward the invocation limit', () => {
    expect(problems({ QUEUES: 'slow', DRAIN_BUDGET_SECONDS: '500', QUEUE__slow__FORWARD_URL: 'http://x/', QUEUE__slow__FORWARD_TIMEOUT_SECONDS: '60' }).join('\n')).toMatch(
      /DRAIN_BUDGET_SECONDS \(500\) plus the longest handler timeout \(60 s/,
    );
  });

  it('SETTINGS declares the per-queue family with a pattern the names match', () => {
    const family = SETTINGS.find((s) => s.name === 'QUEUE__<key>__<SETTING>');
    expect(family?.pattern?.test('QUEUE__orders_eu_1__MAX_DELIVERY_ATTEMPTS')).toBe(true);
    expect(family?.pattern?.test('QUEUE__orders__COLOUR')).toBe(false);
    expect(family?.pattern?.test('QUEUES')).toBe(false);
  });
});
