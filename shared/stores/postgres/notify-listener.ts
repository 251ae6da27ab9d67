// Cross-process wake on PostgreSQL: one dedicated session per process LISTENs for the NOTIFYs that publishes
// and response inserts send at commit, and wakes this process's drain loops and waiters at once. Without it
// they still find the rows at their next poll; the listener only shortens the wait, so every failure here
// is logged and retried, never fatal.

import type * as Pg from 'pg';
import { requirePeer } from '../../peer';
import type { Logger } from '../../log';
import { backoffDelay } from '../../sql/retry';
import { trackOpen } from '../open-handles';
import { CHANNEL_NOTIFY_CHANNEL } from './channel-statements';
import { TRANSPORT_NOTIFY_CHANNEL } from './statements';

export interface NotifyTargets {
  /** "schema.table:" prefix of transport notifications meant for this app, and what to do with the queue. */
  transport: { prefix: string; wake(queue: string): void };
  channel: { prefix: string; wake(correlationId: string): void };
}

export interface NotifyListener {
  /** Resolves once the first LISTEN is in place (tests and benches wait for it; the app need not). */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

export function startNotifyListener(url: string, targets: NotifyTargets, logger: Logger): NotifyListener {
  const release = trackOpen('pg notify listener');
  const { Client } = requirePeer<typeof Pg>('pg');
  let client: Pg.Client | undefined;
  let closed = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  const dispatch = (channel: string, payload: string | undefined) => {
    if (payload === undefined) return;
    if (channel === TRANSPORT_NOTIFY_CHANNEL && payload.startsWith(targets.transport.prefix)) {
      targets.transport.wake(payload.slice(targets.transport.prefix.length));
    } else if (channel === CHANNEL_NOTIFY_CHANNEL && payload.startsWith(targets.channel.prefix)) {
      targets.channel.wake(payload.slice(targets.channel.prefix.length));
    }
  };

  const connect = async (): Promise<void> => {
    if (closed) return;
    const c = new Client({ connectionString: url });
    client = c;
    c.on('notification', (n) => dispatch(n.channel, n.payload));
    c.on('error', (err) => {
      logger.warn('PostgreSQL LISTEN connection failed; reconnecting', err);
      reconnect(c);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${TRANSPORT_NOTIFY_CHANNEL}`);
      await c.query(`LISTEN ${CHANNEL_NOTIFY_CHANNEL}`);
      failures = 0;
      markReady();
    } catch (err) {
      logger.warn('PostgreSQL LISTEN could not start; peers are found by polling until it does', err);
      reconnect(c);
    }
  };

  const reconnect = (failed: Pg.Client) => {
    if (closed || client !== failed) return;
    client = undefined;
    failed.end().catch(() => undefined);
    failures++;
    const delay = backoffDelay(failures, { baseMs: 100, maxMs: 5000 });
    retryTimer = setTimeout(() => void connect(), delay);
    retryTimer.unref?.();
  };

  void connect();
  return {
    ready,
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      const c = client;
      client = undefined;
      release();
      await c?.end().catch(() => undefined);
    },
  };
}
