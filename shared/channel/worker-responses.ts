import { correlationIdProblem } from '../correlation-id';
import type { Logger } from '../log';
import { noopMetrics, type Metrics } from '../telemetry/metrics';
import type { DispatchDeps } from '../transport/dispatcher';
import { getHeader } from '../transport/headers';
import { CORRELATION_ID_HEADER } from '../transport/types';
import { carrierOf } from '../tracing/publish-trace';
import { parseTraceparent, TRACEPARENT_HEADER, TRACESTATE_HEADER } from '../tracing/trace-context';
import { derivedUuid } from './ids';
import type { Delivery, ResponseChannel } from './response-channel';

/**
 * Worker jobs published with a correlation id answer through the channel: the handler's return value becomes
 * the response (id = the job id, so a re-run after a lapsed lease stores nothing twice), and a job that is
 * dead-lettered for good publishes an error response so its caller is not left waiting.
 */
export function workerResponseHooks(channel: ResponseChannel, logger: Logger, metrics: Metrics = noopMetrics): Pick<DispatchDeps, 'onCompleted' | 'onDeadLettered'> {
  const published = (r: { delivery: Delivery; duplicate: boolean }) => {
    if (!r.duplicate) metrics.responsePublished(r.delivery, 'worker');
  };
  const usable = (id: string | undefined, log: Logger = logger): id is string => {
    if (id === undefined) return false;
    const why = correlationIdProblem(id);
    if (why) log.warn(`a job's correlation id ${why}; no response is published`);
    return why === null;
  };
  return {
    // not async: a job without a correlation id (most) gets no promise to wait on
    onCompleted: (job, result, settle) => {
      if (!usable(job.correlationId, settle.logger)) return undefined;
      return channel
        .publishResponse(
          { correlationId: job.correlationId, id: job.id, payload: result ?? null, final: true, ...carrierOf(settle.trace) },
          { confirm: false, deadline: settle.deadline, logger: settle.logger },
        )
        .then(published);
    },
    onDeadLettered: async (job, message, reason, settle) => {
      const correlationId = job?.correlationId ?? getHeader(message.headers, CORRELATION_ID_HEADER);
      if (!usable(correlationId, settle.logger)) return;
      published(
        await channel.publishResponse(
          {
            correlationId,
            id: derivedUuid(`dead-letter:${message.id}`),
            payload: null,
            error: reason,
            final: true,
            ...carrierOf(parseTraceparent(message.headers[TRACEPARENT_HEADER], message.headers[TRACESTATE_HEADER])),
          },
          { confirm: false, deadline: settle.deadline, logger: settle.logger },
        ),
      );
    },
  };
}
