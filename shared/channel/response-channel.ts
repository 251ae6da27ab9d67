import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { ChannelConfig } from './options';
import { CALLBACK_QUEUE } from '../queue-names';
import type { Logger } from '../log';
import { payloadText, payloadValue, stringifyJson } from '../json/raw-json';
import { DEFAULT_RETRY_CLASSES, sleep, withRetry, type ClassifiedRetryOptions, type RetryPolicy } from '../sql/retry';
import { isTransientError } from '../sql/transient';
import type { WakeSignal } from '../transport/wake';
import { onAbort } from './abort-fanout';
import { buildEnvelope, readEnvelope, type ResponseBody } from './envelope';
import { derivedUuid } from './ids';
import { LocalWaiters } from './local-waiters';
import type { ChannelMessage, ChannelStore, SubscriptionStart } from './types';

export type Delivery = 'live' | 'stored' | 'recovery';

export interface DeliveredResponse {
  correlationId: string;
  id: string;
  /** The payload parsed, for reading fields (numbers beyond a double are rounded here). */
  payload: unknown;
  /** The payload's JSON text as it was published: what goes out to callers. */
  payloadJson: string;
  final: boolean;
  error?: string;
  createdAt: Date;
}

export interface PublishResponseInput extends ResponseBody {
  correlationId: string;
  id?: string;
}

/** A response offered to an in-process taker (the payload as its JSON text). */
export interface HandedOffResponse {
  id: string;
  correlationId: string;
  payloadJson: string;
  final: boolean;
  error?: string;
}

export type ResponseHandoff = (response: HandedOffResponse) => Promise<boolean>;

/** What a callback registration stores (state_json). */
export interface RegistrationState {
  SchemaVersion: 1;
  RegistrationId: string;
  CorrelationId: string;
  CallbackUrl: string;
}

/**
 * A registration whose recovery goes to a target inside this app instead of an HTTP callback (the flows layer's
 * awaited steps): the callbacks queue's job hands the response to the target registered under `Target` with
 * `Data`, with the same retries and dead letters. The channel knows no target's meaning.
 */
export interface InternalRegistrationState {
  SchemaVersion: 1;
  RegistrationId: string;
  CorrelationId: string;
  Target: string;
  Data: unknown;
}

/**
 * The payload of a job on the internal callbacks queue: a reference, written by the database (routeToCallbacks'
 * INSERT … SELECT), so routing costs the same whatever the payload size and however many registrations there
 * are. The sender reads the response from the message row when it sends (holdForCallback).
 */
export interface CallbackJob {
  messageId: string;
  correlationId: string;
  registrationId: string;
  /** The registration's stored state_json (a RegistrationState), as a string. */
  registration: string;
}

/** A job enqueued by an earlier version: it carries its own copy of the response, which is what is sent. */
export interface LegacyCallbackJob {
  callbackUrl: string;
  registrationId: string;
  response: { correlationId: string; id: string; payload: unknown; final: boolean; error?: string };
}

const PAGE = 64;
/** A watermark no acknowledgement passes: reads unacknowledged rows only. */
const NO_WATERMARK: SubscriptionStart = { startedAt: '9999-12-31T23:59:59.000Z', startedSeq: '0' };
/** How often an in-process taker reads what another process stored for its id (PostgreSQL's NOTIFY is at once). */
const HANDOFF_POLL_MS = 1000;
const PAGES_PER_POLL = 16;

/**
 * The correlated response channel for a serverless host: a waiter is one long-poll request; responses are
 * rows; a response nobody takes within DeliveryConfirmationTimeout goes to the correlation id's callback
 * registrations through the transport's callbacks queue (retries and dead letters included).
 */
export class ResponseChannel {
  readonly local = new LocalWaiters();
  private readonly handoffs = new Map<string, ResponseHandoff>();
  /** At most 150 characters: the subscriber table's instance_id is nvarchar(200), and host names can be long. */
  readonly instanceId = `${hostname().slice(0, 100)}-${process.pid}-${randomUUID().replace(/-/g, '')}`;

  constructor(
    readonly store: ChannelStore,
    /** Wakes this process's callbacks drain when routing enqueued jobs (other processes: NOTIFY or their poll). */
    private readonly wake: Pick<WakeSignal, 'notify'>,
    private readonly config: ChannelConfig,
    private readonly logger: Logger,
    private readonly retryClasses: RetryPolicy = DEFAULT_RETRY_CLASSES,
  ) {}

  /** The response insert and the recovery claim: 3 attempts, each transient fault waiting as its class asks. */
  private retry(deadline: number | undefined, logger: Logger): ClassifiedRetryOptions {
    return {
      maxAttempts: 3,
      policy: this.retryClasses,
      deadline,
      onRetry: (err, attempt, delay, cls) => logger.warn(`channel store call failed transiently (${cls}); retry ${attempt} in ${Math.round(delay)} ms`, err),
    };
  }

  /**
   * Waits up to waitMs for the next response this waiter may receive (unacked ones; acked ones only when
   * acked after it registered), claims its delivery and returns it; null when nothing arrived in time.
   */
  async waitForResponse(correlationId: string, waitMs: number, signal?: AbortSignal, logger: Logger = this.logger): Promise<DeliveredResponse | null> {
    const watermark = await this.store.subscriptionStart();
    const registrationId = randomUUID();
    await this.store.upsertSubscriber(correlationId, registrationId, this.instanceId, this.config.heartbeatTimeoutMs);
    let wake: (() => void) | undefined;
    let signalled = false; // a publish landed while we were scanning: scan again instead of sleeping
    const unregister = this.local.add(correlationId, () => {
      signalled = true;
      wake?.();
    });
    const seen = new Set<string>();
    const deadline = Date.now() + waitMs;
    let lastBeat = Date.now();
    try {
      for (;;) {
        signalled = false;
        const found = await this.findNext(correlationId, watermark, seen);
        if (found) return found;
        const now = Date.now();
        if (now >= deadline || signal?.aborted) return null;
        if (signalled) continue;
        if (now - lastBeat >= this.config.heartbeatIntervalMs) {
          lastBeat = now;
          await this.store
            .heartbeatSubscribers(this.instanceId, [{ correlationId, registrationId }], this.config.heartbeatTimeoutMs)
            .catch((err) => logger.warn(`waiter heartbeat for '${correlationId}' failed`, err));
        }
        if (signalled) continue;
        await new Promise<void>((resolve) => {
          let unwatch: (() => void) | undefined;
          const timer = setTimeout(done, Math.min(this.config.activePollIntervalMs, deadline - now));
          if (signal?.aborted) return done(); // aborted during the heartbeat: a listener added now would never fire
          // one shared listener per signal, not one per waiter (no MaxListenersExceededWarning with many waiters)
          if (signal) unwatch = onAbort(signal, done);
          wake = done;
          function done() {
            clearTimeout(timer);
            unwatch?.();
            wake = undefined;
            resolve();
          }
        });
      }
    } finally {
      unregister();
      await this.store
        .deleteSubscriber(correlationId, registrationId)
        .catch((err) => logger.warn(`could not delete the waiter row of '${correlationId}'; it expires on its own`, err));
    }
  }

  private async findNext(correlationId: string, watermark: SubscriptionStart, seen: Set<string>): Promise<DeliveredResponse | null> {
    let after: { createdAtExact: string; id: string } | undefined;
    for (let page = 0; page < PAGES_PER_POLL; page++) {
      const rows = await this.store.loadPending(correlationId, watermark, PAGE, after);
      for (const row of rows) {
        if (seen.has(row.id)) continue;
        seen.add(row.id);
        // Acked rows (fan-out: another waiter took it first) come header-only; their body is read before the claim
        // so the claim is the last database step before the answer.
        const full = row.envelopeJson === null ? (await this.store.loadMessagesById(correlationId, [row.id]))[0] : row;
        if (!full?.envelopeJson) continue; // expired since the page was read
        if (!(await this.store.claimForDelivery(row.id, watermark))) continue; // recovery owns it, or it is history
        this.local.delivered(row.id);
        return toDelivered(full);
      }
      if (rows.length < PAGE) return null;
      const last = rows[rows.length - 1]!;
      after = { createdAtExact: last.createdAtExact, id: last.id };
    }
    return null;
  }

  /**
   * Stores a response (insert-if-absent, so a retried publish with the same id never replays it), wakes local
   * waiters, and answers how it was delivered. With `confirm`, it waits up to DeliveryConfirmationTimeout for
   * a live waiter to take it before routing it to the callback registrations; without, an unacked response is
   * left to the sweep, which routes it once it is older than that timeout.
   */
  async publishResponse(
    input: PublishResponseInput,
    options: { confirm: boolean; deadline?: number; signal?: AbortSignal; logger?: Logger } = { confirm: true },
  ): Promise<{ id: string; delivery: Delivery; duplicate: boolean }> {
    // the invocation's logger when given, so these lines correlate with it in Application Insights
    const log = options.logger ?? this.logger;
    const id = (input.id ?? randomUUID()).toLowerCase();
    const corr = input.correlationId;
    const envelope = buildEnvelope(input);
    const handoff = this.handoffs.get(corr);
    if (handoff && (await this.offer(handoff, id, corr, envelope, log))) return { id, delivery: 'live', duplicate: false };
    const live = this.local.has(corr) || (await this.store.countActiveSubscribers(corr)) > 0;
    const stored = await withRetry(() => this.store.insertMessage(id, corr, envelope, this.config.messageRetentionMs), this.retry(options.deadline, log));
    if (!stored.inserted && stored.correlationId !== corr) throw new ResponseIdConflictError(id, stored.correlationId);
    if (stored.ackedAt !== null) return { id, delivery: 'live', duplicate: !stored.inserted };
    // A repeat of an id already stored is never routed again (its callbacks may have been sent and their jobs
    // deleted, so re-enqueueing would send them twice); if the first attempt died before routing, the sweep
    // routes the stored row.
    if (!stored.inserted) return { id, delivery: 'stored', duplicate: true };
    this.local.notify(corr);
    // The response is committed: from here on a failure must not fail the publish (a worker job would be
    // re-run or dead-lettered after answering). The sweep routes a stored, unacked row with registrations.
    try {
      if (live) {
        if (!options.confirm) return { id, delivery: 'live', duplicate: false };
        if (await this.confirmDelivery(id, options.signal)) return { id, delivery: 'live', duplicate: false };
      }
      const outcome = await this.routeToRecovery(id, corr, envelope, { deadline: options.deadline, logger: log });
      return { id, delivery: DELIVERY_OF_ROUTE[outcome], duplicate: false };
    } catch (err) {
      log.warn(`response ${id} for '${corr}' is stored, but routing it failed; the channel sweep routes it`, err);
      return { id, delivery: 'stored', duplicate: false };
    }
  }

  /** Offers a response to this process's taker of its correlation id; true = taken durably (nothing to store). */
  private async offer(handoff: ResponseHandoff, id: string, correlationId: string, envelope: string, log: Logger): Promise<boolean> {
    const body = readEnvelope(envelope);
    try {
      return await handoff({
        id,
        correlationId,
        payloadJson: body.payload === null ? 'null' : payloadText(body.payload),
        final: body.final,
        ...(body.error !== undefined ? { error: body.error } : {}),
      });
    } catch (err) {
      log.warn(`the in-process taker of '${correlationId}' failed; response ${id} is stored instead`, err);
      return false;
    }
  }

  /**
   * Takes responses for a correlation id in this process before the store does (a flow run waiting in process,
   * holding its lease): `take` resolves true once it recorded the response durably itself. One taker per id.
   */
  handOff(correlationId: string, take: ResponseHandoff): () => void {
    this.handoffs.set(correlationId, take);
    // Published by another process: stored without a waiter. PostgreSQL's NOTIFY wakes this at once (the local
    // waiters' listener); elsewhere a poll every HANDOFF_POLL_MS reads what was stored for the id.
    let stopped = false;
    let checking = false;
    let again = false;
    const check = async () => {
      if (stopped) return;
      if (checking) {
        again = true;
        return;
      }
      checking = true;
      try {
        do {
          again = false;
          await this.takeStored(correlationId, take);
        } while (again && !stopped);
      } catch (err) {
        this.logger.warn(`reading the stored responses of '${correlationId}' for its in-process taker failed; the next poll retries`, err);
      } finally {
        checking = false;
      }
    };
    const unwake = this.local.observe(correlationId, () => void check());
    const timer = setInterval(() => void check(), HANDOFF_POLL_MS);
    timer.unref?.();
    return () => {
      stopped = true;
      clearInterval(timer);
      unwake();
      if (this.handoffs.get(correlationId) === take) this.handoffs.delete(correlationId);
    };
  }

  /** Offers the unacknowledged responses stored for the id to its taker; a taken one is then marked delivered. */
  private async takeStored(correlationId: string, take: ResponseHandoff): Promise<void> {
    const rows = await this.store.loadPending(correlationId, NO_WATERMARK, PAGE);
    for (const row of rows) {
      if (row.envelopeJson === null || row.ackedAt !== null) continue;
      if (this.handoffs.get(correlationId) !== take) return;
      if (!(await this.offer(take, row.id, correlationId, row.envelopeJson, this.logger))) continue;
      // recorded by the taker; acknowledging it keeps the sweep from routing it later (best effort: it has no registration)
      await this.store.claimForDelivery(row.id, NO_WATERMARK).catch((err: unknown) => this.logger.warn(`response ${row.id} was taken in process but could not be marked delivered`, err));
    }
  }

  /**
   * Routes the unacknowledged responses stored for a correlation id to its registrations now (a registration made
   * after they were stored; the sweep would route them later). One statement when there are none.
   */
  async routeStored(correlationId: string, logger: Logger = this.logger): Promise<void> {
    const rows = await this.store.loadPending(correlationId, NO_WATERMARK, PAGE);
    for (const row of rows) {
      if (row.envelopeJson === null || row.ackedAt !== null) continue;
      await this.routeToRecovery(row.id, correlationId, row.envelopeJson, { logger });
    }
  }

  /** Waits for a live waiter (this process: at once; others: the acked_at poll) until the confirmation timeout. */
  private async confirmDelivery(id: string, signal?: AbortSignal): Promise<boolean> {
    let delivered = false;
    const stop = this.local.onDelivered(id, () => (delivered = true));
    const deadline = Date.now() + this.config.deliveryConfirmationTimeoutMs;
    try {
      while (!delivered && Date.now() < deadline && !signal?.aborted) {
        try {
          if (await this.store.isAcknowledged(id)) return true;
        } catch (err) {
          if (!isTransientError(err)) throw err; // a transient fault reads as "not yet"
        }
        await sleep(Math.min(this.config.deliveryConfirmationPollMs, Math.max(0, deadline - Date.now())));
      }
      return delivered;
    } finally {
      stop();
    }
  }

  /**
   * Routes a response nobody took to its callback registrations, claim first: one database transaction takes
   * the race guard (recovery_claimed = 1 WHERE acked_at IS NULL AND NOT recovery_claimed) and only then enqueues
   * one reference job per registration (INSERT … SELECT, so no payload copy travels per registration) and, for
   * a final response, consumes those registrations. A router that loses the claim (the sweep and a confirming
   * publisher can both get here, or a retry whose first attempt committed) enqueues nothing, so no callback is
   * sent twice; a crash cannot leave a claim without its jobs.
   */
  async routeToRecovery(id: string, correlationId: string, envelopeJson: string, options: { deadline?: number; logger?: Logger } = {}): Promise<RouteOutcome> {
    const log = options.logger ?? this.logger;
    const { final } = readEnvelope(envelopeJson);
    const jobs = await withRetry(() => this.store.routeToCallbacks(id, correlationId, final), this.retry(options.deadline, log));
    if (jobs === null) return this.whyNotRouted(id, correlationId);
    this.wake.notify(CALLBACK_QUEUE);
    log.info(`response ${id} for '${correlationId}' routed to ${jobs} callback registration(s)`);
    return 'routed';
  }

  private async whyNotRouted(id: string, correlationId: string): Promise<RouteOutcome> {
    const [row] = await this.store.loadMessagesById(correlationId, [id]);
    if (!row) return 'gone';
    if (row.ackedAt !== null) return 'acknowledged';
    if (row.recoveryClaimed) return 'already-routed';
    return 'no-registrations';
  }

  /**
   * Registers (upserts: the same target and data give the same registration id) an internal recovery target for
   * a correlation id: a response that reaches no live waiter is routed at once to the target's handler.
   */
  async registerInternal(correlationId: string, target: string, data: unknown, ttlMs: number): Promise<{ registrationId: string; expiresAt: Date }> {
    const registrationId = derivedUuid(`internal:${target}:${correlationId}:${JSON.stringify(data)}`);
    const state: InternalRegistrationState = { SchemaVersion: 1, RegistrationId: registrationId, CorrelationId: correlationId, Target: target, Data: data };
    const max = this.config.maxRegistrationsPerCorrelationId;
    const expiresAt = await this.store.saveRegistration(correlationId, registrationId, JSON.stringify(state), ttlMs, max);
    if (expiresAt === null) throw new RegistrationLimitError(correlationId, max);
    return { registrationId, expiresAt };
  }

  async registerCallback(correlationId: string, callbackUrl: string, ttlMs: number): Promise<{ registrationId: string; expiresAt: Date }> {
    const registrationId = randomUUID();
    const state: RegistrationState = { SchemaVersion: 1, RegistrationId: registrationId, CorrelationId: correlationId, CallbackUrl: callbackUrl };
    const max = this.config.maxRegistrationsPerCorrelationId;
    const expiresAt = await this.store.saveRegistration(correlationId, registrationId, JSON.stringify(state), ttlMs, max);
    if (expiresAt === null) throw new RegistrationLimitError(correlationId, max);
    return { registrationId, expiresAt };
  }
}

/** The correlation id already has MAX_REGISTRATIONS_PER_CORRELATION_ID unexpired registrations: nothing stored (HTTP 409). */
export class RegistrationLimitError extends Error {
  constructor(
    readonly correlationId: string,
    readonly max: number,
  ) {
    super(
      `correlation id '${correlationId}' already has ${max} unexpired callback registration(s), the maximum (MAX_REGISTRATIONS_PER_CORRELATION_ID); ` +
        'nothing was stored. Delete one (DELETE /api/waiters/{registrationId}) or let one expire.',
    );
    this.name = 'RegistrationLimitError';
  }
}

/** A response id already stored under another correlation id: nothing was written (HTTP 409). */
export class ResponseIdConflictError extends Error {
  constructor(
    readonly id: string,
    readonly storedCorrelationId: string,
  ) {
    super(`a response with id ${id} is already stored under another correlation id; nothing was published`);
    this.name = 'ResponseIdConflictError';
  }
}

/**
 * What routeToRecovery did: `routed` (recovery claimed and callback jobs enqueued, together), `already-routed`
 * (an earlier route owns it), `acknowledged` (a live waiter took it first), `no-registrations` (none left),
 * `gone` (expired).
 */
export type RouteOutcome = 'routed' | 'already-routed' | 'acknowledged' | 'no-registrations' | 'gone';

const DELIVERY_OF_ROUTE: Record<RouteOutcome, Delivery> = {
  routed: 'recovery',
  'already-routed': 'recovery',
  acknowledged: 'live',
  'no-registrations': 'stored',
  gone: 'stored',
};

function toDelivered(row: ChannelMessage): DeliveredResponse {
  const body = readEnvelope(row.envelopeJson!);
  return {
    correlationId: row.correlationId,
    id: row.id,
    payload: payloadValue(body.payload),
    payloadJson: payloadText(body.payload),
    final: body.final,
    ...(body.error !== undefined ? { error: body.error } : {}),
    createdAt: row.createdAt,
  };
}
