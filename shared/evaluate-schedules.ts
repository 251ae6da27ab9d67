import type { Logger } from './log';
import type { Runtime } from './runtime';
import type { EvaluationReport } from './schedules/service';

/**
 * One evaluation of the due schedules from a function (the drain-worker timer, a schedule drain request). A failure
 * is logged, never thrown: the drain beside it must not fail for it, and the next timer evaluates again.
 */
export async function evaluateSchedules(rt: Runtime, logger: Logger): Promise<EvaluationReport | undefined> {
  try {
    const report = await rt.track(rt.engine.schedules.evaluateDue(logger));
    if (report.jobs > 0) logger.info(`schedules: fired ${report.jobs} job(s) for ${report.advanced} schedule(s)`);
    return report;
  } catch (err) {
    logger.warn('evaluating the due schedules failed; the next timer (or drain request) evaluates again', err);
    return undefined;
  }
}
