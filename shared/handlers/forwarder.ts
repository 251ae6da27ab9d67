import { RawJson, stringifyJson } from '../json/raw-json';
import type { JobHandler } from '../transport/job';
import { encodeHeaderValue } from './header-value';

/**
 * POSTs each job to an HTTP endpoint: 2xx = success (a JSON answer becomes the result, as its text), anything
 * else = failure whose reason carries the status, so retries and dead letters say what the target answered.
 * The body carries the payload as it was published; the correlation id header is encoded (header-value.ts).
 */
export function forwardingHandler(url: string, timeoutMs: number, fetchImpl: typeof fetch = fetch): JobHandler {
  return async (job, ctx) => {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = AbortSignal.any([timeout, ctx.signal]);
    let res: Response;
    try {
      res = await fetchImpl(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-asyncresponse-job-id': job.id,
          'x-asyncresponse-attempt': String(job.attempt),
          ...(job.correlationId ? { 'x-asyncresponse-correlation-id': encodeHeaderValue(job.correlationId) } : {}),
        },
        body: stringifyJson({
          id: job.id,
          queue: job.queue,
          attempt: job.attempt,
          correlationId: job.correlationId,
          headers: job.headers,
          payload: new RawJson(job.payloadJson),
        }),
        signal,
      });
    } catch (err) {
      if (timeout.aborted) throw new Error(`forward to ${url} timed out after ${timeoutMs} ms`);
      throw new Error(`forward to ${url} failed: ${(err as Error).message}`);
    }
    const text = await res.text();
    if (res.status < 200 || res.status > 299) {
      throw new Error(`forward to ${url} answered ${res.status} ${res.statusText}: ${text.slice(0, 200)}`);
    }
    if (text === '') return null;
    try {
      return RawJson.parse(text);
    } catch {
      return text;
    }
  };
}
