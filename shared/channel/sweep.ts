import type { Logger } from '../log';
import { drainPrune } from '../transport/prune';
import type { ResponseChannel } from './response-channel';
import type { ChannelTable } from './types';

export interface SweepReport {
  overdue: number;
  routed: number;
  failed: number;
  pruned: Record<ChannelTable, number> | null;
  durationMs: number;
}

const OVERDUE_BATCH = 100;
const PARALLEL = 8;
let lastPruneAt = 0;
let lastSlowWarningAt = 0;

/**
 * One sweep-channel run: responses still unacked after DeliveryConfirmationTimeout that have callback
 * registrations are claimed for recovery (the race guard keeps a late live waiter and the callback from both
 * owning one) and enqueued as callbacks; expired rows of the three tables are pruned in bounded batches at
 * most once per PruneInterval. One id's failure never stops the others.
 */
export async function sweepChannel(
  channel: ResponseChannel,
  options: { deliveryConfirmationTimeoutMs: number; pruneIntervalMs: number },
  logger: Logger,
  now: () => number = Date.now,
): Promise<SweepReport> {
  const started = now();
  const overdue = await channel.store.findOverdueWithRegistrations(options.deliveryConfirmationTimeoutMs, OVERDUE_BATCH);
  let routed = 0;
  let failed = 0;
  for (let i = 0; i < overdue.length; i += PARALLEL) {
    await Promise.all(
      overdue.slice(i, i + PARALLEL).map(async (m) => {
        try {
          if (await channel.routeToRecovery(m.id, m.correlationId, m.envelopeJson)) routed++;
        } catch (err) {
          failed++;
          logger.error(`routing response ${m.id} of '${m.correlationId}' to recovery failed; the next sweep retries`, err);
        }
      }),
    );
  }
  let pruned: SweepReport['pruned'] = null;
  if (now() - lastPruneAt >= options.pruneIntervalMs) {
    lastPruneAt = now();
    pruned = { messages: 0, subscribers: 0, recovery: 0 };
    for (const table of ['messages', 'subscribers', 'recovery'] as const) {
      pruned[table] = (await drainPrune(() => channel.store.pruneExpiredBatch(table), logger, `expired ${table} prune`)).deleted;
    }
  }
  const durationMs = now() - started;
  if (durationMs > options.deliveryConfirmationTimeoutMs / 2 && now() - lastSlowWarningAt > 60_000) {
    lastSlowWarningAt = now();
    logger.warn(
      `the channel sweep took ${durationMs} ms, over half of DELIVERY_CONFIRMATION_TIMEOUT_MS: responses only the sweep routes may reach their callbacks late`,
    );
  }
  return { overdue: overdue.length, routed, failed, pruned, durationMs };
}
