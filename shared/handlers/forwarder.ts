import { RawJson, stringifyJson } from '../json/raw-json';
import { BackOffError, type Job, type JobHandler } from '../transport/job';
import { retryAfterMs } from './retry-after';
import { encodeHeaderValue } from './header-value';
import { outgoingCall } from '../tracing/otel';
import { formatTraceparent, TRACEPARENT_HEADER, TRACESTATE_HEADER, type TraceContext } from '../tracing/trace-context';
import { httpPost, type HttpPost, type PostAnswer } from './http-post';

/**
 * POSTs each job to an HTTP endpoint: 2xx = success (a JSON answer becomes the result, as its text), anything
 * else = failure whose reason carries the status, so retries and dead letters say what the target answered.
 * The body carries the payload as it was published; the correlation id header is encoded (header-value.ts). A job
 * with a trace context sends `traceparent` (and tracestate): a new span id under the job's trace.
 * A redirect is an answer like any other (a failure), as for callbacks: a job is never re-sent somewhere else.
 * A 429 or 503 with Retry-After (seconds or an HTTP date) is a BackOffError: the job and its queue wait that long.
 */
export function forwardingHandler(url: string, timeoutMs: number, post: HttpPost = httpPost): JobHandler {
  const target = new URL(url);
  const spanAttributes = { 'http.request.method': 'POST', 'url.full': target.href, 'server.address': target.hostname };
  return async (job, ctx) => {
    // One controller per job, aborted by the timer or the lease (AbortSignal.timeout + AbortSignal.any cost more
    // CPU per job than the rest of the forward's own code).
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort(new Error('timeout'));
    }, timeoutMs);
    const onLeaseLost = () => abort.abort(ctx.signal.reason);
    if (ctx.signal.aborted) onLeaseLost();
    else ctx.signal.addEventListener('abort', onLeaseLost, { once: true });
    let answer: PostAnswer;
    try {
      // a job published without a trace context skips the span work (one property read)
      answer =
        ctx.trace === undefined
          ? await postJob(post, target, job, undefined, abort.signal)
          : await outgoingCall('forward POST', ctx.trace, spanAttributes, (sent) => postJob(post, target, job, sent, abort.signal));
    } catch (err) {
      if (timedOut) throw new Error(`forward to ${url} timed out after ${timeoutMs} ms`);
      throw new Error(`forward to ${url} failed: ${(err as Error)?.message ?? String(err)}`);
    } finally {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onLeaseLost);
    }
    const { status, statusText, text } = answer;
    if (status === 429 || status === 503) {
      // the target asks for a pause: the job waits that long, and so does its queue (dispatcher.ts)
      const delayMs = retryAfterMs(answer.retryAfter);
      if (delayMs !== undefined) throw new BackOffError(`forward to ${url} answered ${status} ${statusText} with Retry-After ${answer.retryAfter}: ${text.slice(0, 200)}`, delayMs);
    }
    if (status < 200 || status > 299) {
      throw new Error(`forward to ${url} answered ${status} ${statusText}: ${text.slice(0, 200)}`);
    }
    if (text === '') return null;
    try {
      return RawJson.parse(text);
    } catch {
      return text;
    }
  };
}

function postJob(post: HttpPost, target: URL, job: Job, trace: TraceContext | undefined, signal: AbortSignal): Promise<PostAnswer> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-asyncresponse-job-id': job.id,
    'x-asyncresponse-attempt': String(job.attempt),
  };
  if (job.correlationId) headers['x-asyncresponse-correlation-id'] = encodeHeaderValue(job.correlationId);
  if (trace) {
    headers[TRACEPARENT_HEADER] = formatTraceparent(trace);
    if (trace.traceState !== undefined) headers[TRACESTATE_HEADER] = trace.traceState;
  }
  const body = stringifyJson({
    id: job.id,
    queue: job.queue,
    attempt: job.attempt,
    correlationId: job.correlationId,
    headers: job.headers,
    payload: new RawJson(job.payloadJson),
  });
  return post(target, headers, body, signal);
}
