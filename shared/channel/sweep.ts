import type { Logger } from '../log';
import { isTransientError } from '../sql/transient';
import { drainPrune } from '../transport/prune';
import type { ResponseChannel } from './response-channel';
import type { ChannelTable } from './types';

export interface SweepReport {
  overdue: number;
  routed: number;
  failed: number;
  /** The breaker tripped (the first wave all failed transiently) or the routing budget ran out: the rest waits. */
  cutShort: boolean;
  pruned: Record<ChannelTable, number> | null;
  durationMs: number;
}

const OVERDUE_BATCH = 100;
const PARALLEL = 8;
/** How long one run may spend routing (its retries included): below the 5 s default schedule. */
export const SWEEP_ROUTING_BUDGET_MS = 4_000;
let lastPruneAt = 0;
let lastSlowWarningAt = 0;

/**
 * One sweep-channel run: responses still unacked after DeliveryConfirmationTimeout that have callback
 * registrations are claimed for recovery (the race guard keeps a late live waiter and the callback from both
 * owning one) and enqueued as callbacks; expired rows of the three tables are pruned in bounded batches at
 * most once per PruneInterval. One id's failure never stops the others, but when the first wave of 8 all fail
 * transiently (the database is down or throttling) the rest of the pass is skipped (the spec's breaker), and no
 * routing retry waits past the run's routing budget; the next run picks up what is left.
 */
export async function sweepChannel(
  channel: ResponseChannel,
  options: { deliveryConfirmationTimeoutMs: number; pruneIntervalMs: number; routingBudgetMs?: number },
  logger: Logger,
  now: () => number = Date.now,
): Promise<SweepReport> {
  const started = now();
  const deadline = started + (options.routingBudgetMs ?? SWEEP_ROUTING_BUDGET_MS);
  const overdue = await channel.store.findOverdueWithRegistrations(options.deliveryConfirmationTimeoutMs, OVERDUE_BATCH);
  let routed = 0;
  let failed = 0;
  let cutShort = false;
  for (let i = 0; i < overdue.length; i += PARALLEL) {
    if (now() >= deadline) {
      cutShort = true;
      logger.warn(`the channel sweep spent its routing budget; ${overdue.length - i} overdue response(s) wait for the next run`);
      break;
    }
    const wave = await Promise.all(
      overdue.slice(i, i + PARALLEL).map(async (m) => {
        try {
          if ((await channel.routeToRecovery(m.id, m.correlationId, m.envelopeJson, { deadline, logger })) === 'routed') routed++;
          return undefined;
        } catch (err) {
          failed++;
          return { m, err };
        }
      }),
    );
    const failures = wave.filter((f) => f !== undefined);
    if (i === 0 && failures.length === wave.length && failures.every((f) => isTransientError(f.err))) {
      cutShort = true;
      logger.error(
        `the channel sweep's first ${wave.length} routings all failed transiently; skipping the other ${overdue.length - wave.length} until the next run. First failures: ` +
          failures
            .slice(0, 3)
            .map((f) => `${f.m.id}: ${(f.err as Error)?.message ?? String(f.err)}`)
            .join('; '),
        failures[0]!.err,
      );
      break;
    }
    for (const f of failures) logger.error(`routing response ${f.m.id} of '${f.m.correlationId}' to recovery failed; the next sweep retries`, f.err);
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
  return { overdue: overdue.length, routed, failed, cutShort, pruned, durationMs };
}
