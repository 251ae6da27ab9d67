import { extractCorrelationId } from '../channel/correlation-extractor';
import type { ResponseChannel } from '../channel/response-channel';
import { correlationIdProblem } from '../correlation-id';
import { RawJson } from '../json/raw-json';
import { noopMetrics, type Metrics } from '../telemetry/metrics';
import { carrierOf } from '../tracing/publish-trace';
import { PermanentJobError, type JobHandler } from '../transport/job';

/**
 * The `response` queue's handler: raw response JSON dropped in by any system (over HTTP or straight into the
 * table) is published to the channel under its correlation id, with the job id as the response id so a
 * redelivered job never stores it twice. A message without a usable id is dead-lettered at once.
 */
export function responseIngressHandler(channel: ResponseChannel, jsonPaths: readonly string[], metrics: Metrics = noopMetrics): JobHandler {
  return async (job, ctx) => {
    // the raw response as it was dropped in, not re-serialised (a numeric correlation id keeps its digits too)
    const payload = new RawJson(job.payloadJson, { value: job.payload });
    const correlationId = extractCorrelationId(job.headers, payload, jsonPaths);
    if (correlationId === undefined) {
      throw new PermanentJobError(`the response has no correlation id: no AR-Correlation-Id header and none at ${jsonPaths.join(', ')}`);
    }
    const why = correlationIdProblem(correlationId);
    if (why) throw new PermanentJobError(`the response's correlation id ${why}`);
    const final = !(job.payload && typeof job.payload === 'object' && (job.payload as Record<string, unknown>).Final === false);
    const published = await channel.publishResponse({ correlationId, id: job.id, payload, final, ...carrierOf(ctx.trace) }, { confirm: false, logger: ctx.log });
    if (!published.duplicate) metrics.responsePublished(published.delivery, 'ingress');
    return undefined;
  };
}
