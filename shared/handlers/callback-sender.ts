import { callbackUrlProblem } from '../channel/callback-url';
import type { CallbackJob } from '../channel/response-channel';
import { SIGNATURE_HEADER, signBody } from '../channel/signature';
import type { ChannelStore } from '../channel/types';
import { PermanentJobError, type JobHandler } from '../transport/job';

/**
 * The internal `callbacks` queue's handler: POSTs a routed response to its registration's URL, signed with
 * HMAC-SHA256 (X-Signature: sha256=<hex>). 2xx = done; anything else fails the job, so the transport's
 * redelivery backoff and dead letters apply. The allowlist is checked again at send time, and the race guard
 * (claim for recovery) is taken again before sending: a response a live waiter acknowledged is not sent.
 */
export function callbackSender(
  options: { allowedHosts: readonly string[]; secret?: string; timeoutMs: number },
  channel: Pick<ChannelStore, 'claimForRecovery'>,
  fetchImpl: typeof fetch = fetch,
): JobHandler {
  return async (job, ctx) => {
    const cb = job.payload as CallbackJob;
    const why = callbackUrlProblem(cb?.callbackUrl, options.allowedHosts);
    if (why) throw new PermanentJobError(`callback URL ${why}`);
    if (!options.secret) throw new Error('CALLBACK_SIGNING_SECRET is not set: callbacks cannot be signed');
    if (!(await channel.claimForRecovery(cb.response.id))) {
      ctx.log.info(`response ${cb.response.id} of '${cb.response.correlationId}' was delivered live (or has expired); callback not sent`);
      return undefined;
    }
    const body = JSON.stringify(cb.response);
    const timeout = AbortSignal.timeout(options.timeoutMs);
    let res: Response;
    try {
      res = await fetchImpl(cb.callbackUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [SIGNATURE_HEADER]: signBody(options.secret, body),
          'X-AsyncResponse-Delivery-Id': job.id,
          'X-AsyncResponse-Correlation-Id': cb.response.correlationId,
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
