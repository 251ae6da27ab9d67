import { callbackUrlProblem } from '../channel/callback-url';
import { readEnvelope } from '../channel/envelope';
import type { CallbackJob, InternalRegistrationState, LegacyCallbackJob, RegistrationState } from '../channel/response-channel';
import { payloadText } from '../json/raw-json';
import { SIGNATURE_HEADER, signBody } from '../channel/signature';
import type { ChannelStore } from '../channel/types';
import { rawJsonAt, stringifyJson } from '../json/raw-json';
import type { DispatchDeps } from '../transport/dispatcher';
import { PermanentJobError, type JobHandler } from '../transport/job';
import { outgoingCall } from '../tracing/otel';
import { parseTraceparent, traceHeaders, type TraceContext } from '../tracing/trace-context';
import { encodeHeaderValue } from './header-value';

/**
 * The internal `callbacks` queue's handler: POSTs a routed response to its registration's URL, signed with
 * HMAC-SHA256 (X-Signature: sha256=<hex>), with the response's `traceparent` (a new span id under the trace of
 * the job that answered, stored in the envelope; docs/tracing.md). 2xx = done; anything else fails the job, so the transport's
 * redelivery backoff and dead letters apply. The allowlist is checked again at send time, and the race guard
 * (claim for recovery) is taken again before sending: a response a live waiter acknowledged is not sent.
 *
 * The job is a reference (CallbackJob): the response is read from its message row when sending, and that read
 * also keeps the row for at least `holdMs` more, so while its callback is being retried prune leaves the row
 * alone (the next attempt comes within REDELIVERY_MAX_DELAY; holdMs covers that and more); a dead-lettered
 * callback keeps its row as long as the dead letter is kept (callbackDeadLetterHold), so a requeue still
 * sends it. Should the row be gone anyway, the job is dead-lettered with that reason, never acked silently.
 * A job enqueued by an earlier version carries its own copy of the response (LegacyCallbackJob), sent when
 * the row is gone, as before.
 */
export function callbackSender(
  options: { allowedHosts: readonly string[]; secret?: string; timeoutMs: number; holdMs: number },
  channel: Pick<ChannelStore, 'holdForCallback' | 'isAcknowledged'>,
  fetchImpl: typeof fetch = fetch,
  internalTargets: Readonly<Record<string, InternalTarget>> = {},
): JobHandler {
  return async (job, ctx) => {
    const internal = internalOf(job.payload);
    if (internal) return deliverInternally(internal, internalTargets, channel, options.holdMs, ctx.log);
    const cb = callbackOf(job.payload);
    const why = callbackUrlProblem(cb.callbackUrl, options.allowedHosts);
    if (why) throw new PermanentJobError(`callback URL ${why}`);
    const callbackUrl = cb.callbackUrl as string;
    if (!options.secret) throw new Error('CALLBACK_SIGNING_SECRET is not set: callbacks cannot be signed');
    let response: CallbackBody;
    let trace = ctx.trace; // the response's own trace (stored with it) wins below: the worker job's that answered
    const envelope = await channel.holdForCallback(cb.messageId, options.holdMs);
    if (envelope !== null) {
      const body = readEnvelope(envelope);
      trace = parseTraceparent(body.traceparent, body.tracestate) ?? trace;
      response = { correlationId: cb.correlationId, id: cb.messageId, payload: body.payload, final: body.final, ...(body.error !== undefined ? { error: body.error } : {}) };
    } else if (await channel.isAcknowledged(cb.messageId)) {
      ctx.log.info(`response ${cb.messageId} of '${cb.correlationId}' was delivered live; callback not sent`);
      return undefined;
    } else if (cb.copy) {
      ctx.log.warn(`response ${cb.messageId} of '${cb.correlationId}' expired before its callback was sent; sending the copy the callback job carries`);
      response = cb.copy;
    } else {
      throw new PermanentJobError(
        `response ${cb.messageId} of '${cb.correlationId}' is no longer stored (its row was pruned, or it expired after a live waiter took it); the callback cannot be sent`,
      );
    }
    // The payload goes out as stored (readEnvelope keeps it as its text); a carried copy goes out as routed.
    const body = response === cb.copy ? (rawJsonAt(job.payloadJson, ['response'])?.text ?? JSON.stringify(response)) : stringifyJson(response);
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      [SIGNATURE_HEADER]: signBody(options.secret, body),
      'X-AsyncResponse-Delivery-Id': job.id,
      'X-AsyncResponse-Correlation-Id': encodeHeaderValue(response.correlationId),
    };
    const send = (sent: TraceContext | undefined) =>
      fetchImpl(callbackUrl, { method: 'POST', headers: sent ? { ...headers, ...traceHeaders(sent) } : headers, body, signal: AbortSignal.any([timeout, ctx.signal]), redirect: 'manual' });
    let res: Response;
    try {
      res = await outgoingCall('callback POST', trace, { 'http.request.method': 'POST', 'url.full': callbackUrl }, send);
    } catch (err) {
      throw new Error(timeout.aborted ? `callback to ${callbackUrl} timed out after ${options.timeoutMs} ms` : `callback to ${callbackUrl} failed: ${(err as Error).message}`);
    }
    await res.arrayBuffer().catch(() => undefined);
    if (res.status < 200 || res.status > 299) throw new Error(`callback to ${callbackUrl} answered ${res.status}`);
    return undefined;
  };
}

type CallbackBody = LegacyCallbackJob['response'];

/** A response handed to an internal target (the payload as its JSON text, as stored). */
export interface InternalDelivery {
  id: string;
  correlationId: string;
  payloadJson: string;
  final: boolean;
  error?: string;
}

/** Receives the routed responses of registrations made with registerInternal(…, target, data). Throw = retry. */
export type InternalTarget = (data: unknown, response: InternalDelivery, log: JobContextLog) => Promise<unknown>;
type JobContextLog = Parameters<JobHandler>[1]['log'];

function internalOf(payload: unknown): { messageId: string; correlationId: string; state: InternalRegistrationState } | null {
  const p = (payload ?? {}) as Partial<CallbackJob>;
  if (typeof p.messageId !== 'string' || typeof p.correlationId !== 'string' || typeof p.registration !== 'string') return null;
  let state: Partial<InternalRegistrationState>;
  try {
    state = JSON.parse(p.registration) as Partial<InternalRegistrationState>;
  } catch {
    return null; // callbackOf reports it
  }
  return typeof state?.Target === 'string' ? { messageId: p.messageId, correlationId: p.correlationId, state: state as InternalRegistrationState } : null;
}

async function deliverInternally(
  job: { messageId: string; correlationId: string; state: InternalRegistrationState },
  targets: Readonly<Record<string, InternalTarget>>,
  channel: Pick<ChannelStore, 'holdForCallback' | 'isAcknowledged'>,
  holdMs: number,
  log: JobContextLog,
): Promise<undefined> {
  const target = targets[job.state.Target];
  // a deployment that no longer (or not yet) has the target: retried, then dead-lettered (requeue it later)
  if (!target) throw new Error(`no internal recovery target '${job.state.Target}' is registered in this app`);
  const envelope = await channel.holdForCallback(job.messageId, holdMs);
  if (envelope === null) {
    if (await channel.isAcknowledged(job.messageId)) {
      log.info(`response ${job.messageId} of '${job.correlationId}' was delivered live; not handed to '${job.state.Target}'`);
      return undefined;
    }
    throw new PermanentJobError(`response ${job.messageId} of '${job.correlationId}' is no longer stored; it cannot be handed to '${job.state.Target}'`);
  }
  const body = readEnvelope(envelope);
  await target(job.state.Data, {
    id: job.messageId,
    correlationId: job.correlationId,
    payloadJson: body.payload === null ? 'null' : payloadText(body.payload),
    final: body.final,
    ...(body.error !== undefined ? { error: body.error } : {}),
  }, log);
  return undefined;
}

/** What a job asks for, from either job shape; a job no version wrote is a permanent failure (dead letter). */
function callbackOf(payload: unknown): { callbackUrl: unknown; messageId: string; correlationId: string; copy?: CallbackBody } {
  const p = (payload ?? {}) as Partial<CallbackJob & LegacyCallbackJob>;
  if (typeof p.messageId === 'string' && typeof p.correlationId === 'string' && typeof p.registration === 'string') {
    let state: Partial<RegistrationState>;
    try {
      state = JSON.parse(p.registration) as Partial<RegistrationState>;
    } catch {
      throw new PermanentJobError(`callback registration ${String(p.registrationId)} of '${p.correlationId}' is unreadable (state_json is not JSON)`);
    }
    return { callbackUrl: state?.CallbackUrl, messageId: p.messageId, correlationId: p.correlationId };
  }
  const r = p.response;
  if (r && typeof r.id === 'string' && typeof r.correlationId === 'string') return { callbackUrl: p.callbackUrl, messageId: r.id, correlationId: r.correlationId, copy: r };
  throw new PermanentJobError('the callback job is neither a reference (messageId, correlationId, registration) nor a copy (callbackUrl, response)');
}

/**
 * The callbacks queue's dead-letter follow-up: keeps the response row as long as the dead letter is kept
 * (DEAD_LETTER_RETENTION_DAYS; 0 = the 3650-day maximum), so requeueing the callback later still sends it.
 */
export function callbackDeadLetterHold(channel: Pick<ChannelStore, 'holdForCallback'>, holdMs: number): Pick<DispatchDeps, 'onDeadLettered'> {
  return {
    onDeadLettered: async (job) => {
      const p = (job?.payload ?? {}) as Partial<CallbackJob>;
      if (typeof p.messageId === 'string') await channel.holdForCallback(p.messageId, holdMs);
    },
  };
}

/** The longest a row is held for a callback (the stores' 3650-day maximum duration). */
export const MAX_CALLBACK_ROW_HOLD_MS = 3650 * 86_400_000;

/**
 * How long each callback attempt keeps its response row: past the next attempt (REDELIVERY_MAX_DELAY plus a
 * lapsed lease) by a whole MESSAGE_RETENTION, so a drain that pauses for less than the retention loses nothing.
 */
export function callbackRowHoldMs(config: { redeliveryMaxDelayMs: number; lockTimeoutMs: number; channel: { messageRetentionMs: number } }): number {
  return Math.min(MAX_CALLBACK_ROW_HOLD_MS, config.redeliveryMaxDelayMs + config.lockTimeoutMs + config.channel.messageRetentionMs);
}
