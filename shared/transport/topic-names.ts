import { createHash } from 'node:crypto';

// Topics (spec 003): a message published to a topic is copied, in one statement, onto one logical queue per
// durable subscription. That queue is an ordinary queue (route, policy, statistics, dead letters, metrics), named
// `{topic}:{subscription}`; subscribers compete within a subscription, never across.

export const SUBSCRIPTION_SEPARATOR = ':';

/** The logical queue holding a subscription's copies. */
export function subscriptionQueue(topic: string, subscription: string): string {
  return `${topic}${SUBSCRIPTION_SEPARATOR}${subscription}`;
}

/**
 * The id of a message's copy on one subscription queue: deterministic, so republishing the same message id
 * creates no second copy anywhere, and distinct per subscription. UUID version 8 (RFC 9562, custom) made from the
 * first 16 bytes of SHA-256 over the UTF-8 text `{messageId lower-cased}\n{subscription queue}`. The SQL
 * publish procedure/function computes the same value in the database (stores/*: outbox), so an HTTP publish and
 * a SQL publish of one message id agree.
 */
export function topicCopyId(messageId: string, queue: string): string {
  const h = createHash('sha256').update(`${messageId.toLowerCase()}\n${queue}`, 'utf8').digest();
  h[6] = (h[6]! & 0x0f) | 0x80;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}
