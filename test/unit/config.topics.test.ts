// TOPICS and TOPIC__<key>__SUBSCRIPTIONS: subscription queues become worker queues with routes; bad settings fail start-up.
import { describe, expect, it } from 'vitest';
import { ConfigError, engineOptions, loadConfig } from '../../shared/settings';
import { silentLogger } from '../../shared/log';

const base = { PGLITE_DATA_DIR: 'memory://' };
const problems = (env: Record<string, string>): string[] => {
  try {
    loadConfig({ ...base, ...env });
    return [];
  } catch (e) {
    return (e as ConfigError).problems;
  }
};

describe('topic settings', () => {
  it('subscription queues are worker queues with their own per-queue settings, passed to the engine with the topics', () => {
    const c = loadConfig({ ...base, QUEUES: 'worker', TOPICS: 'orders,quiet', TOPIC__orders__SUBSCRIPTIONS: 'billing, shipping', QUEUE__orders_billing__MAX_DELIVERY_ATTEMPTS: '9' });
    expect(c.topics).toEqual({ orders: ['billing', 'shipping'], quiet: [] });
    expect(c.queues).toEqual(['worker', 'orders:billing', 'orders:shipping']);
    expect(c.routes['orders:billing']!.policy.maxDeliveryAttempts).toBe(9);
    const o = engineOptions(c, { store: { kind: 'pglite', dataDir: 'memory://' }, handlers: { get: () => undefined }, logger: silentLogger });
    expect(o.topics).toEqual(c.topics);
    expect(Object.keys(o.queues)).toEqual(c.queues);
  });

  it('refuses an unknown topic key, bad names, a clash with a configured queue and names over the queue limit', () => {
    expect(problems({ TOPICS: 'orders', TOPIC__invoices__SUBSCRIPTIONS: 'a' }).join('\n')).toMatch(/TOPIC__invoices__SUBSCRIPTIONS names no topic/);
    expect(problems({ TOPICS: 'orders', TOPIC__orders__SUBSCRIPTONS: 'a' }).join('\n')).toMatch(/is not a topic setting/);
    expect(problems({ TOPICS: 'or:ders' }).join('\n')).toMatch(/topic 'or:ders': name must not contain ':'/);
    expect(problems({ TOPICS: 'orders', TOPIC__orders__SUBSCRIPTIONS: 'a:b' }).join('\n')).toMatch(/subscription 'a:b'/);
    expect(problems({ QUEUES: 'worker,orders:billing', TOPICS: 'orders', TOPIC__orders__SUBSCRIPTIONS: 'billing' }).join('\n')).toMatch(/its queue 'orders:billing' is also a configured queue/);
    expect(problems({ TOPICS: 'orders', TOPIC__orders__SUBSCRIPTIONS: 's'.repeat(194) }).join('\n')).toMatch(/is 201 characters; at most 200/);
    expect(problems({ TOPICS: 'orders', TOPIC__orders__SUBSCRIPTIONS: 'a,a' }).join('\n')).toMatch(/lists a subscription twice/);
    expect(problems({ TOPICS: 'a.b,a_b', TOPIC__a_b__SUBSCRIPTIONS: 'x' }).join('\n')).toMatch(/is ambiguous/);
  });
});
