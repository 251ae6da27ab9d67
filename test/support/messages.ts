import { randomUUID } from 'node:crypto';
import type { OutgoingMessage } from '../../shared/transport/types';

export function message(queue: string, payload: unknown = { n: 1 }, extra: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return { id: randomUUID(), queue, payloadJson: JSON.stringify(payload), headers: {}, delayMs: 0, ...extra };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until check() returns a truthy value or the timeout passes (then fails with the label). */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, label: string, timeoutMs = 10_000, everyMs = 50): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${label}${last ? `: ${String(last)}` : ''}`);
    await sleep(everyMs);
  }
}
