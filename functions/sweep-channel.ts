import { app, type InvocationContext, type Timer } from '@azure/functions';
import { sweepChannel, type SweepReport } from '../shared/channel/sweep';
import type { ChannelTable } from '../shared/channel/types';
import { appConfig, getRuntime } from '../shared/runtime';

/** Timer: routes overdue unacked responses to their callbacks and prunes expired channel rows. */
export async function sweepChannelTimer(_timer: Timer, context: InvocationContext): Promise<SweepReport> {
  const rt = await getRuntime();
  const report = await rt.track(sweepChannel(rt.channel, rt.config.channel, context));
  rt.metrics.sweepFinished(report);
  for (const [table, deleted] of Object.entries(report.pruned ?? {})) rt.metrics.pruned(table as ChannelTable, deleted);
  if (report.routed > 0 || report.failed > 0 || report.cutShort) {
    context.info(
      `sweep: ${report.overdue} overdue, ${report.routed} routed to callbacks, ${report.failed} failed in ${report.durationMs} ms${report.cutShort ? ' (cut short; the next run goes on)' : ''}`,
    );
  }
  return report;
}

app.timer('sweep-channel', { schedule: appConfig().channel.sweepSchedule, handler: sweepChannelTimer });
