import { callbackUrlProblem } from '../channel/callback-url';
import type { CallbackJob } from '../channel/response-channel';
import { SIGNATURE_HEADER, signBody } from '../channel/signature';
import type { ChannelStore } from '../channel/types';
import { rawJsonAt } from '../json/raw-json';
import { PermanentJobError, type JobHandler } from '../transport/job';
import { encodeHeaderValue } from './header-value';

/**
 * The internal `callbacks` queue's handler: POSTs a routed response to its registration's URL, signed with
 * HMAC-SHA256 (X-Signature: sha256=<hex>). 2xx = done; anything else fails the job, so the transport's
 * redelivery backoff and dead letters apply. The allowlist is checked again at send time, and the race guard
 * (claim for recovery) is taken again before sending: a response a live waiter acknowledged is not sent.
 * A response row that is gone (its retention ran out while the callback was being retried) can no longer be
 * taken by a waiter, so the copy this job carries is sent: dropping it would lose the response silently.
 */
export function callbackSender(
  options: { allowedHosts: readonly string[]; secret?: string; timeoutMs: number },
  channel: Pick<ChannelStore, 'claimForRecovery' | 'isAcknowledged'>,
  fetchImpl: typeof fetch = fetch,
): JobHandler {
  return async (job, ctx) => {
    const cb = job.payload as CallbackJob;
    const why = callbackUrlProblem(cb?.callbackUrl, options.allowedHosts);
    if (why) throw new PermanentJobError(`callback URL ${why}`);
    if (!options.secret) throw new Error('CALLBACK_SIGNING_SECRET is not set: callbacks cannot be signed');
    if (!(await channel.claimForRecovery(cb.response.id))) {
      // false: acknowledged by a live waiter, or the row has expired / been pruned
      if (await channel.isAcknowledged(cb.response.id)) {
        ctx.log.info(`response ${cb.response.id} of '${cb.response.correlationId}' was delivered live; callback not sent`);
        return undefined;
      }
      ctx.log.warn(`response ${cb.response.id} of '${cb.response.correlationId}' expired before its callback was sent; sending the copy the callback job carries`);
    }
    const body = rawJsonAt(job.payloadJson, ['response'])?.text ?? JSON.stringify(cb.response); // as routed: payload text unchanged
    const timeout = AbortSignal.timeout(options.timeoutMs);
    let res: Response;
    try {
      res = await fetchImpl(cb.callbackUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [SIGNATURE_HEADER]: signBody(options.secret, body),
          'X-AsyncResponse-Delivery-Id': job.id,
          'X-AsyncResponse-Correlation-Id': encodeHeaderValue(cb.response.correlationId),
        },
        body,
        signal: AbortSignal.any([timeout, ctx.signal]),
        redirect: 'manual',
      });
    } catch (err) {
      throw new Error(timeout.aborted ? `callback to ${cb.callbackUrl} timed out after ${options.timeoutMs} ms` : `callback to ${cb.callbackUrl} failed: ${(err as Error).message}`);
    }
    await res.arrayBuffer().catch(() => undefined);
    if (res.status < 200 || res.status > 299) throw new Error(`callback to ${cb.callbackUrl} answered ${res.status}`);
    return undefined;
  };
}
