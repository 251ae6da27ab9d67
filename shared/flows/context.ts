// One execution of a flow run: the context its body sees. The body re-runs from the top on every execution;
// each named step checks its checkpoint in the ledger and returns the memo when it completed before. A step that
// must wait longer than an execution may (a long sleep, an awaited response, a running child) parks: it records
// what it waits for and throws the sticky FlowInterrupt; the executor publishes the wake-ups and releases the run.

import { randomUUID } from 'node:crypto';
import type { Logger } from '../log';
import { toJson } from './canonical-json';
import type { FlowClock } from './clock';
import { AwaitedResponseError, ChildFlowFailedError, FlowFailedError, FlowInterrupt, FlowLeaseLostError, FlowStepTimeoutError } from './errors';
import { flowIdProblem } from './flow-id';
import type { CarriedJob, FlowCarriedPublisher, FlowPublisher, FlowPublishInput } from './jobs';
import type { FlowMetrics, FlowStepKind } from './metrics';
import type { FlowOptions } from './options';
import type { FlowHandoff, FlowResponse, FlowResponseChannel } from './responses';
import { effectiveTtlMs } from './retention';
import type { FlowState, FlowStepState } from './state';
import type { FlowStateStore } from './store';

export interface AwaitOptions<T = unknown> {
  /** Decides whether a response ends the wait (default: a final one does); false = a progress response. */
  until?: (response: FlowResponse<T>) => boolean | Promise<boolean>;
  /** The wait's window from the first execution that triggered it (default: the flows' defaultAwaitTimeoutMs). */
  timeoutMs?: number;
}

/** A step's retry policy: in process, within one execution. */
export interface StepOptions {
  /** Attempts of fn in all, the first included (default 1: no retry in process). */
  maxAttempts?: number;
  /**
   * The wait before retry n (1 = the first retry): milliseconds, a function of n, or exponential growth
   * (`{ initialMs, factor = 2, maxMs = 60 000 }`). Default `{ initialMs: 100 }`.
   */
  backoff?: number | ((retry: number) => number) | { initialMs: number; factor?: number; maxMs?: number };
}

export function stepRetryDelayMs(backoff: StepOptions['backoff'], retry: number): number {
  if (backoff === undefined) return stepRetryDelayMs({ initialMs: 100 }, retry);
  const ms = typeof backoff === 'number' ? backoff : typeof backoff === 'function' ? backoff(retry) : Math.min(backoff.maxMs ?? 60_000, backoff.initialMs * (backoff.factor ?? 2) ** (retry - 1));
  return Number.isFinite(ms) && ms > 0 ? ms : 0;
}

/** A job an awaited step publishes as its trigger: the wait's correlation id is set on it. */
export interface FlowRequest extends Omit<FlowPublishInput, 'correlationId'> {
  queue: string;
}

export interface FlowContext {
  /** The run id: an idempotency key for side effects. */
  readonly flowId: string;
  readonly flowName: string;
  /** Executions of this run so far, this one included. */
  readonly attempt: number;
  /** Aborted when this execution loses the run's lease (its writes would be refused). */
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** Runs fn once per run; its JSON result is checkpointed and returned again on every later execution. */
  /**
   * Runs fn once per run; its JSON result is checkpointed and returned again on every later execution. With
   * `maxAttempts` (> 1), a throw is retried in process after `backoff`; when the attempts are spent the step is
   * recorded as failed and throws FlowFailedError (the run fails unless the body catches it). Without it, a throw
   * fails the execution and the queue retries the run, as before. A FlowFailedError from fn is never retried.
   */
  step<T>(name: string, fn: () => T | Promise<T>, options?: StepOptions): Promise<T>;
  /**
   * Triggers remote work with a fresh correlation id (publish a job, call a service) and waits durably for the
   * correlated response on the response channel. The id is persisted before `trigger` runs, so a crash on either
   * side of the send re-attaches to the same id and never sends again; a timeout faults the step, which then
   * starts afresh. Resolves to the accepted response's payload; an accepted error response throws
   * AwaitedResponseError. `trigger` may instead be a request `{ queue, payload, … }`: it is published with the
   * correlation id set, in the same statement as the id's checkpoint where the store allows (PostgreSQL, PGlite),
   * else right after it.
   */
  awaitResponse<T = unknown>(name: string, trigger: ((correlationId: string) => unknown) | FlowRequest, options?: AwaitOptions<T>): Promise<T>;
  /** A durable timer: the wake instant is fixed by the first execution that reaches it. */
  sleep(name: string, ms: number): Promise<void>;
  sleepUntil(name: string, at: Date): Promise<void>;
  /** Starts a child run once (id default `{flowId}:{name}`) and waits until it ends; resolves to its result. */
  child<T = unknown>(name: string, flowName: string, input: unknown, options?: { id?: string }): Promise<T>;
  /** Sets the run's last message (written at most once per progressIntervalMs). */
  progress(message: string): Promise<void>;
  get<T = unknown>(key: string): T | undefined;
  set(key: string, value: unknown): Promise<void>;
  /** Publishes a job on a queue (e.g. the request an awaited step triggers). */
  publish(queue: string, message: FlowPublishInput): Promise<{ id: string }>;
}

export interface RunDeps {
  store: FlowStateStore;
  clock: FlowClock;
  options: FlowOptions;
  metrics: FlowMetrics;
  responses: FlowResponseChannel;
  publish: FlowPublisher;
  /** An awaited step's request carried by the breadcrumb's write, in one statement (stores that carry jobs). */
  publishCarried?: FlowCarriedPublisher;
  /** Starts (idempotently) a child run and returns its state now; null when it has none (expired). */
  startChild(parent: FlowState, stepName: string, flowName: string, input: unknown, childId: string): Promise<FlowState | null>;
}

/** What a parked execution waits for: the executor turns it into wake-ups. */
export interface FlowWaits {
  /** Earliest sleep end or await deadline (epoch ms, database clock). */
  wakeAt: number | null;
  children: Set<string>;
  /** Awaited steps' names. */
  awaits: Set<string>;
  timers: number;
  /** Deadlines (epoch ms) of awaited steps a response settled in this execution: their timer wake-ups are stale. */
  settledDeadlines: Set<number>;
}

const iso = (ms: number) => new Date(ms).toISOString();
/** Time kept back from the invocation's budget for a run that waited in process to park. */
export const BUDGET_PARK_MARGIN_MS = 1_000;

/** How long past the in-process window the lease of a run waiting there alone is held (the answer's checkpoint extends it). */
export const IN_PROCESS_LEASE_MARGIN_MS = 5_000;

/** A response taken in process is recorded by the run's next checkpoint, or on its own after this long. */
const FOLD_MS = 20;
/** Kept beyond an awaited step's deadline, so a response just at the deadline still finds its registration. */
const REGISTRATION_MARGIN_MS = 60_000;

export class FlowRun implements FlowContext {
  state: FlowState;
  /** Sticky: once set, every context call throws it and the executor acts on it. */
  interrupt: FlowInterrupt | null = null;
  readonly waits: FlowWaits = { wakeAt: null, children: new Set(), awaits: new Set(), timers: 0, settledDeadlines: new Set() };
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly running = new Set<string>();
  /** The last write held the lease only for an in-process wait's window (awaitResponse). */
  private shortLease = false;
  /** Awaited steps waiting in process right now. */
  private waitingInProcess = 0;
  private saving: Promise<unknown> = Promise.resolve();
  private readonly deferred: Array<(s: FlowState) => void> = [];
  /** Waiting for the commit of deferred changes, oldest first (each waits for the write that includes its change). */
  private readonly durable: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];
  private deferSeq = 0;
  /** Writes deferred changes FOLD_MS after the first of them unless a checkpoint took them first. */
  private backstop: AbortController | undefined;
  /** The newest durable change a started write includes. */
  private coveredSeq = 0;
  private pendingMessage: string | undefined;
  private lastProgressWrite = -Infinity;
  private progressTimer: AbortController | undefined;
  readonly attempt: number;

  constructor(
    state: FlowState,
    private readonly deps: RunDeps,
    private readonly leaseId: string,
    /** database clock − process clock, sampled at the start of the execution */
    private readonly clockOffsetMs: number,
    readonly signal: AbortSignal,
    readonly log: Logger,
    /** epoch ms (the process clock): the invocation's budget, which an in-process wait never outlasts; none for a worker. */
    private readonly budgetEndsAt?: number,
  ) {
    this.state = state;
    this.attempt = state.attempts + 1;
  }

  get flowId(): string {
    return this.state.flowId;
  }

  get flowName(): string {
    return this.state.flowName;
  }

  /** The database clock's now, carried by the process clock. */
  now(): number {
    return this.deps.clock.now() + this.clockOffsetMs;
  }

  // ---- steps ----

  step<T>(name: string, fn: () => T | Promise<T>, options: StepOptions = {}): Promise<T> {
    const maxAttempts = options.maxAttempts ?? 1;
    if (!(Number.isInteger(maxAttempts) && maxAttempts >= 1)) return Promise.reject(new Error(`step '${name}': maxAttempts must be a whole number >= 1`));
    return this.op(name, async () => {
      const memo = this.memo<T>(name);
      if (memo) return memo.value;
      const t0 = this.deps.clock.now();
      // completions still waiting for a checkpoint are written before another step's side effect can start
      await this.flushPending();
      const startedAt = iso(this.now());
      let value: T;
      for (let attempt = 1; ; attempt++) {
        try {
          value = await fn();
          break;
        } catch (err) {
          if (maxAttempts === 1 || err instanceof FlowFailedError || err instanceof FlowInterrupt || this.signal.aborted) throw err;
          if (attempt >= maxAttempts) {
            const message = `failed after ${attempt} attempts: ${(err as Error)?.message ?? String(err)}`;
            await this.complete(name, { error: { name: 'FlowFailedError', message: `step '${name}' ${message}` }, startedAt }, 'step', t0);
            throw new FlowFailedError(`step '${name}' ${message}`);
          }
          this.log.warn(`flow run '${this.flowId}': step '${name}' attempt ${attempt} of ${maxAttempts} failed; retrying`, err);
          await this.deps.clock.sleep(stepRetryDelayMs(options.backoff, attempt), this.signal);
        }
      }
      if (this.signal.aborted) throw new FlowLeaseLostError(this.flowId, 'this execution lost its lease');
      const json = toJson(value);
      // recorded by the run's next checkpoint, which always comes before anything the outside can see (another
      // step's fn, a publish, a trigger, a child's start, a park, the end) or within FOLD_MS: one statement for it
      this.defer((s) => this.completeStep(s, name, { resultJson: json, startedAt }));
      this.deps.metrics.stepCompleted(this.flowName, 'step', this.deps.clock.now() - t0);
      return JSON.parse(json) as T;
    });
  }

  sleep(name: string, ms: number): Promise<void> {
    return this.timer(name, () => this.now() + Math.max(0, ms));
  }

  sleepUntil(name: string, at: Date): Promise<void> {
    return this.timer(name, () => at.getTime());
  }

  private timer(name: string, due: () => number): Promise<void> {
    return this.op(name, async () => {
      if (this.memo(name)) return;
      const t0 = this.deps.clock.now();
      const persisted = this.state.steps[name]?.wakeAt;
      let wakeAt: number;
      if (persisted !== undefined) wakeAt = Date.parse(persisted); // the first execution's instant wins over the argument
      else {
        wakeAt = due();
        if (!Number.isFinite(wakeAt)) throw new FlowFailedError(`sleep '${name}': the wake instant is not a valid time`);
        if (wakeAt <= this.now()) {
          // already due: nothing to wait for and no side effect, so the next checkpoint records it
          const at = iso(this.now());
          this.defer((s) => {
            if (!s.steps[name]?.completed) s.steps[name] = { ...s.steps[name], resultJson: 'null', startedAt: at, completed: true, completedAt: at };
          });
          this.deps.metrics.stepCompleted(this.flowName, 'sleep', this.deps.clock.now() - t0);
          return;
        }
        const message = `Sleeping until ${iso(wakeAt)}`;
        // wakeAt is persisted before any wake-up can exist; the TTL the save stamps covers the sleep
        await this.save((s) => {
          s.steps[name] = { ...s.steps[name], startedAt: iso(this.now()), wakeAt: iso(wakeAt), message };
          s.lastMessage = message;
        });
      }
      const remainder = wakeAt - this.now();
      if (remainder > this.deps.options.timerInProcessThresholdMs) {
        this.waits.timers++;
        throw this.park(wakeAt);
      }
      if (remainder > 0) {
        await this.flushPending();
        await this.deps.clock.sleep(remainder, this.signal);
      }
      await this.complete(name, { resultJson: 'null' }, 'sleep', t0);
    });
  }

  awaitResponse<T = unknown>(name: string, trigger: ((correlationId: string) => unknown) | FlowRequest, options: AwaitOptions<T> = {}): Promise<T> {
    return this.op(name, async () => {
      const memo = this.memo<T>(name);
      if (memo) return memo.value;
      const request = typeof trigger === 'function' ? undefined : trigger;
      if (request !== undefined && (typeof request !== 'object' || request === null || typeof request.queue !== 'string' || request.queue.length === 0)) {
        throw new FlowFailedError(`awaitResponse '${name}': the trigger must be a function of the correlation id or a request { queue, payload }`);
      }
      const t0 = this.deps.clock.now();
      const until = options.until ?? ((r: FlowResponse<T>) => r.final);
      const step = this.state.steps[name];
      if (step?.pendingCorrelationId && !step.faulted) {
        // Re-attach: responses the recovery path checkpointed while nobody listened go to `until` first.
        const armed = Date.parse(step.awaitDeadline ?? '');
        const decided = await this.consumeReceived<T>(name, until, t0);
        if (decided) {
          if (Number.isFinite(armed)) this.waits.settledDeadlines.add(armed);
          return decided.value;
        }
        const deadline = Date.parse(this.state.steps[name]!.awaitDeadline ?? '');
        if (Number.isFinite(deadline) && deadline <= this.now()) {
          await this.save((s) => {
            s.steps[name] = { ...s.steps[name], faulted: true, message: 'timed out; restarts with a new correlation id' };
          });
          throw new FlowStepTimeoutError(name);
        }
        // Upsert: a final response `until` declined consumed the registration; keep the wait armed. Then route what
        // was stored while no registration existed (an execution that died waiting in process registered none).
        await this.deps.responses.watch(step.pendingCorrelationId, { flowId: this.flowId, stepName: name }, this.registrationTtl(deadline));
        await this.deps.responses.routeStored?.(step.pendingCorrelationId);
        this.waits.awaits.add(name);
        throw this.park(Number.isFinite(deadline) ? deadline : null);
      }
      const timeoutMs = options.timeoutMs ?? this.deps.options.defaultAwaitTimeoutMs;
      if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) throw new FlowFailedError(`awaitResponse '${name}': timeoutMs must be a positive number of milliseconds`);
      const correlationId = randomUUID();
      const deadline = this.now() + timeoutMs;
      // never past the invocation's budget (less a second to park in): a Function's drain returns on time
      const budgetLeft = this.budgetEndsAt === undefined ? Infinity : this.budgetEndsAt - BUDGET_PARK_MARGIN_MS - Date.now();
      const window = Math.min(this.deps.options.awaitInProcessMs, deadline - this.now(), budgetLeft);
      const listen = window > 0 && !this.signal.aborted ? this.deps.responses.listen : undefined;
      // The listener first (in process, or the registration when the run cannot wait here), then the breadcrumb,
      // then the send: a breadcrumb implies someone is listening. A crash while waiting in process leaves the
      // breadcrumb without a registration: the replay re-attaches, registers, and routes what arrived meanwhile.
      if (!listen) await this.deps.responses.watch(correlationId, { flowId: this.flowId, stepName: name }, this.registrationTtl(deadline));
      // Waiting in process with nothing else running in this execution, the breadcrumb's write holds the lease only
      // for the window and a margin: if this process dies inside the window, another takes the run over that much
      // sooner (the answer's checkpoint, or the renewal, extends it again; the park releases it).
      const alone = listen !== undefined && this.running.size === 1;
      const breadcrumb = (s: FlowState) => {
        s.steps[name] = { startedAt: iso(this.now()), pendingCorrelationId: correlationId, awaitDeadline: iso(deadline), message: 'waiting for its response' };
      };
      const waitLease = alone ? { extendMs: Math.min(this.deps.options.leaseDurationMs, window + IN_PROCESS_LEASE_MARGIN_MS) } : {};
      // A request (not a function) rides on the breadcrumb's own statement where the store carries jobs: the two
      // commit together, so the send cannot happen without the breadcrumb, nor the breadcrumb without the send.
      const carry = request !== undefined ? this.deps.publishCarried : undefined;
      let written = false; // the breadcrumb committed
      let sent = false; // the request committed (or the function trigger returned)
      if (!carry) {
        await this.save(breadcrumb, waitLease);
        written = true;
      }
      const waiting = listen ? this.waitInProcess<T>(name, correlationId, until, window, t0, listen) : null;
      try {
        if (request === undefined) await (trigger as (correlationId: string) => unknown)(correlationId);
        else {
          const { queue, ...fields } = request;
          const message: FlowPublishInput = { ...fields, correlationId };
          const carried = carry ? await carry(queue, message, (jobs) => this.save(breadcrumb, { ...waitLease, carry: jobs }).then(() => void (written = sent = true))) : null;
          if (carried === null) {
            if (!written) {
              await this.save(breadcrumb, waitLease);
              written = true;
            }
            await this.deps.publish(queue, message);
          }
        }
      } catch (err) {
        waiting?.cancel();
        // Known not sent: the next execution starts the step afresh instead of waiting out the window (a step
        // whose breadcrumb was never written starts afresh anyway). A request that committed with its breadcrumb
        // was sent: the next execution re-attaches to it.
        if (written && !sent) {
          await this.save((s) => {
            s.steps[name] = { ...s.steps[name], faulted: true, message: `trigger failed: ${(err as Error)?.message ?? String(err)}` };
          }).catch(() => undefined);
        }
        throw err;
      }
      if (waiting) {
        const answered = await waiting.result;
        if (answered) return answered.value;
        // the window passed: register, then route what reached neither this listener nor a registration, and park
        await this.deps.responses.watch(correlationId, { flowId: this.flowId, stepName: name }, this.registrationTtl(deadline));
        await this.deps.responses.routeStored?.(correlationId);
      }
      this.waits.awaits.add(name);
      throw this.park(deadline);
    });
  }

  /**
   * A quick answer continues in process: while this execution holds the lease, a response published for the
   * correlation id in this process is offered here first (the channel's in-process handoff); an accepted one is
   * checkpointed into the step (one statement, before the publisher is told it was taken) and the body goes on
   * without parking, a wake-up or a reload. Resolves null when the window passes (or the lease or job ends).
   */
  private waitInProcess<T>(
    name: string,
    correlationId: string,
    until: (r: FlowResponse<T>) => boolean | Promise<boolean>,
    windowMs: number,
    t0: number,
    listen: NonNullable<FlowResponseChannel['listen']>,
  ): { result: Promise<{ value: T } | null>; cancel: () => void } {
    let done = false;
    this.waitingInProcess++;
    let chain: Promise<unknown> = Promise.resolve();
    let settle!: (r: { value: T } | null | Error) => void;
    const result = new Promise<{ value: T } | null>((resolve, reject) => {
      settle = (r) => (r instanceof Error ? reject(r) : resolve(r));
    });
    const stopTimer = new AbortController();
    const finish = (r: { value: T } | null | Error) => {
      if (done) return;
      done = true;
      this.waitingInProcess--;
      unlisten();
      stopTimer.abort();
      this.signal.removeEventListener('abort', onAbort);
      settle(r);
    };
    const handle = async (r: FlowHandoff): Promise<boolean> => {
      if (done) return false;
      const response: FlowResponse<T> = { id: r.id, payload: JSON.parse(r.payloadJson) as T, final: r.final, ...(r.error !== undefined ? { error: r.error } : {}) };
      let accepted: boolean;
      try {
        accepted = await until(response);
      } catch (err) {
        finish(err as Error); // the publisher stores it; the replay hands it to `until` again
        return false;
      }
      if (!accepted) return true; // a progress response, taken live
      // The step's completion rides on the run's next checkpoint (the body goes on at once; when it writes next, or
      // within FOLD_MS, that one statement records both); the publisher is answered only once it committed, and
      // told to store the response itself if it did not.
      const outcome = r.error !== undefined ? { error: { name: 'AwaitedResponseError', message: r.error } } : { resultJson: r.payloadJson };
      const committed = this.deferDurable((s) => this.completeStep(s, name, outcome));
      finish(r.error !== undefined ? new AwaitedResponseError(name, r.error) : { value: response.payload });
      try {
        await committed;
      } catch {
        return false;
      }
      this.deps.metrics.stepCompleted(this.flowName, 'await', this.deps.clock.now() - t0);
      return true;
    };
    const unlisten = listen(correlationId, (r) => {
      const next = chain.then(() => handle(r));
      chain = next.catch(() => undefined);
      return next;
    });
    const timeUp = () => {
      chain = chain.then(() => finish(null));
    };
    const onAbort = () => timeUp();
    if (this.signal.aborted) timeUp();
    else this.signal.addEventListener('abort', onAbort, { once: true });
    this.deps.clock.sleep(windowMs, stopTimer.signal).then(timeUp, () => undefined);
    return { result, cancel: () => finish(null) };
  }

  child<T = unknown>(name: string, flowName: string, input: unknown, options: { id?: string } = {}): Promise<T> {
    return this.op(name, async () => {
      const memo = this.memo<T>(name);
      if (memo) return memo.value;
      const t0 = this.deps.clock.now();
      let childId = this.state.steps[name]?.childFlowId;
      if (childId === undefined) {
        const id = options.id ?? `${this.flowId}:${name}`;
        const why = flowIdProblem(id);
        if (why) throw new FlowFailedError(`child '${name}': its run id ${why}`);
        childId = id;
        await this.save((s) => {
          s.steps[name] = { ...s.steps[name], startedAt: iso(this.now()), childFlowId: id };
        });
      }
      await this.flushPending();
      const child = await this.deps.startChild(this.state, name, flowName, input, childId);
      if (!child) throw new FlowFailedError(`child run '${childId}' has no state (it expired or was deleted)`);
      if (child.status === 'Succeeded') {
        await this.complete(name, { resultJson: child.resultJson ?? 'null' }, 'child', t0);
        return JSON.parse(child.resultJson ?? 'null') as T;
      }
      if (child.status === 'Failed') {
        const error = { name: 'ChildFlowFailedError', message: child.error?.message ?? 'no reason recorded' };
        await this.complete(name, { error }, 'child', t0);
        throw new ChildFlowFailedError(childId, child.error);
      }
      this.waits.children.add(childId);
      throw this.park(null);
    });
  }

  // ---- values and messages ----

  progress(message: string): Promise<void> {
    if (this.interrupt) return Promise.reject(this.interrupt);
    this.pendingMessage = String(message);
    const wait = this.lastProgressWrite + this.deps.options.progressIntervalMs - this.deps.clock.now();
    if (wait <= 0) return this.save(() => undefined);
    if (!this.progressTimer) {
      const timer = (this.progressTimer = new AbortController());
      this.track(
        this.deps.clock.sleep(wait, timer.signal).then(
          () => {
            this.progressTimer = undefined;
            if (this.pendingMessage !== undefined && !this.interrupt) return this.save(() => undefined);
            return undefined;
          },
          () => undefined,
        ),
      ).catch((err: unknown) => this.log.warn(`progress of flow run '${this.flowId}' was not written`, err));
    }
    return Promise.resolve();
  }

  get<T = unknown>(key: string): T | undefined {
    const v = this.state.values[key];
    return v === undefined ? undefined : (JSON.parse(v) as T);
  }

  set(key: string, value: unknown): Promise<void> {
    if (this.interrupt) return Promise.reject(this.interrupt);
    const json = toJson(value);
    return this.track(
      this.save((s) => {
        s.values[key] = json;
      }),
    );
  }

  publish(queue: string, message: FlowPublishInput): Promise<{ id: string }> {
    if (this.interrupt) return Promise.reject(this.interrupt);
    return this.track(this.flushPending().then(() => this.deps.publish(queue, message)));
  }

  // ---- the executor's side ----

  /** Waits for every context call still running (branches of a Promise.all that parked). */
  async settle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.all([...this.inflight]);
    this.progressTimer?.abort();
    await this.saving;
  }

  /**
   * Writes a change under the lease (serialised within the execution): a lost race with a lease-less write
   * (recovery, a child's end, an operator) reloads and re-applies the change; a run no longer Running interrupts
   * the execution; a lease taken by another execution fails it (FlowLeaseLostError, retried by the queue).
   */
  save(change: (s: FlowState) => void, lease: { release?: boolean; extendMs?: number; carry?: readonly CarriedJob[] } = {}): Promise<void> {
    const run = this.saving.then(() =>
      this.saveNow(change, lease.release === true, lease.extendMs, lease.carry).catch((err: unknown) => {
        this.abandon(err as Error); // deferred changes waited for may not be written: their waiters hear so
        throw err;
      }),
    );
    this.saving = run.catch(() => undefined);
    return run;
  }

  /**
   * A change with no side effect behind it (a sleep that was already due): applied to the state at once, written
   * by the next checkpoint (a crash before it only repeats the no-op).
   */
  private defer(change: (s: FlowState) => void): void {
    change(this.state);
    this.deferred.push(change);
    ++this.deferSeq;
    if (this.backstop) return;
    const backstop = (this.backstop = new AbortController());
    this.deps.clock.sleep(FOLD_MS, backstop.signal).then(
      () => {
        if (this.backstop === backstop) this.backstop = undefined;
        if (this.coveredSeq < this.deferSeq && !this.interrupt && !this.signal.aborted) this.save(() => undefined).catch(() => undefined);
      },
      () => undefined,
    );
  }

  /** Writes the deferred changes, if any (before a side effect the outside can see). */
  private async flushPending(): Promise<void> {
    await this.saving;
    if (this.deferred.length > 0) await this.save(() => undefined);
  }

  /**
   * One statement: the change (with this execution's attempt and any deferred change folded in), the lease
   * extended, or released when this is the execution's last write.
   */
  private async saveNow(change: (s: FlowState) => void, release: boolean, extendMs = this.deps.options.leaseDurationMs, carry?: readonly CarriedJob[]): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      if (this.signal.aborted) throw new FlowLeaseLostError(this.flowId, 'this execution lost its lease');
      const base = this.state;
      const next = structuredClone(base);
      const deferred = this.deferred.length;
      const durable = this.durable.length;
      this.coveredSeq = this.deferSeq;
      // this write includes every deferred change: the backstop has nothing left to write
      this.backstop?.abort();
      this.backstop = undefined;
      for (const d of this.deferred) d(next);
      change(next);
      // an execution is counted by its first checkpoint (no write of its own at the start)
      next.attempts = Math.max(next.attempts, this.attempt);
      const message = this.pendingMessage;
      if (message !== undefined) next.lastMessage = message;
      const now = this.now();
      next.revision = base.revision + 1;
      next.updatedAt = iso(now);
      const ttl = effectiveTtlMs(next, now, this.deps.options.stateExpiryMs);
      if (await this.deps.store.tryUpdate(next, base.revision, ttl, this.leaseId, release ? { release: true } : { extendMs }, carry)) {
        this.shortLease = !release && extendMs < this.deps.options.leaseDurationMs;
        this.state = next;
        this.deferred.splice(0, deferred);
        for (const w of this.durable.splice(0, durable)) w.resolve();
        if (message !== undefined && this.pendingMessage === message) {
          this.pendingMessage = undefined;
          this.lastProgressWrite = this.deps.clock.now();
        }
        return;
      }
      const fresh = await this.deps.store.load(this.flowId);
      if (!fresh) throw new FlowLeaseLostError(this.flowId, 'its state is gone');
      if (fresh.status !== 'Running' || (fresh.restarts ?? 0) !== (base.restarts ?? 0)) {
        // ended, suspended, or restarted by an operator under this execution: its work belongs to the old run
        this.interrupt ??= new FlowInterrupt('status-changed');
        throw this.interrupt;
      }
      if (fresh.revision === base.revision) throw new FlowLeaseLostError(this.flowId, 'another execution holds its lease');
      this.state = fresh;
    }
    throw new FlowLeaseLostError(this.flowId, 'its state kept changing under this execution');
  }

  // ---- helpers ----

  private op<T>(name: string, body: () => Promise<T>): Promise<T> {
    if (this.interrupt) return Promise.reject(this.interrupt);
    if (typeof name !== 'string' || name.length === 0 || name.length > 200) return Promise.reject(new Error('a step name must be a string of 1 to 200 characters'));
    if (this.running.has(name)) return Promise.reject(new Error(`step '${name}' is already running in this execution: step names must be unique`));
    this.running.add(name);
    if (this.shortLease && this.waitingInProcess > 0) {
      // another call starts beside a wait that holds the lease only for its window: the full lease first (once the
      // wait ended, its answer's checkpoint comes before any side effect and extends the lease anyway)
      this.shortLease = false;
      const renewed = this.deps.store.tryRenewLease(this.flowId, this.leaseId, this.deps.options.leaseDurationMs).then((held) => {
        if (!held) throw new FlowLeaseLostError(this.flowId, 'its lease lapsed while it waited in process');
      });
      return this.track(renewed.then(body).finally(() => this.running.delete(name)));
    }
    return this.track(body().finally(() => this.running.delete(name)));
  }

  private track<T>(p: Promise<T>): Promise<T> {
    const settled = p.then(
      () => undefined,
      () => undefined,
    );
    this.inflight.add(settled);
    void settled.finally(() => this.inflight.delete(settled));
    return p;
  }

  private park(wakeAt: number | null): FlowInterrupt {
    if (wakeAt !== null) this.waits.wakeAt = Math.min(this.waits.wakeAt ?? Infinity, wakeAt);
    this.interrupt ??= new FlowInterrupt('parked');
    return this.interrupt;
  }

  /** A completed step's memo: its value, or its recorded failure thrown again. */
  private memo<T>(name: string): { value: T } | null {
    const s = this.state.steps[name];
    if (!s?.completed) return null;
    if (s.error) throw stepError(name, s);
    return { value: JSON.parse(s.resultJson ?? 'null') as T };
  }

  private completeStep(s: FlowState, name: string, done: Pick<FlowStepState, 'resultJson' | 'error' | 'startedAt'>): void {
    if (s.steps[name]?.completed) return;
    const { pendingCorrelationId: _p, received: _r, faulted: _f, message: _m, ...kept } = s.steps[name] ?? {};
    s.steps[name] = { ...kept, ...done, completed: true, completedAt: iso(this.now()) };
  }

  /** A deferred change whose commit someone waits for: written by the next checkpoint, or on its own after FOLD_MS. */
  private deferDurable(change: (s: FlowState) => void): Promise<void> {
    const committed = new Promise<void>((resolve, reject) => this.durable.push({ resolve, reject }));
    this.defer(change);
    return committed;
  }

  /** Writes the deferred changes someone waits for (before a park releases the lease). */
  async flush(): Promise<void> {
    await this.flushPending();
  }

  /** The execution ends without writing: whoever waits for a deferred change's commit hears it did not happen. */
  abandon(reason: Error): void {
    for (const w of this.durable.splice(0)) w.reject(reason);
  }

  private async complete(name: string, done: Pick<FlowStepState, 'resultJson' | 'error' | 'startedAt'>, kind: FlowStepKind, t0: number): Promise<void> {
    await this.save((s) => {
      const { pendingCorrelationId: _p, received: _r, faulted: _f, message: _m, ...kept } = s.steps[name] ?? {};
      s.steps[name] = { ...kept, ...done, completed: true, completedAt: iso(this.now()) };
    });
    this.deps.metrics.stepCompleted(this.flowName, kind, this.deps.clock.now() - t0);
  }

  private async consumeReceived<T>(name: string, until: (r: FlowResponse<T>) => boolean | Promise<boolean>, t0: number): Promise<{ value: T } | null> {
    const received = this.state.steps[name]?.received ?? [];
    if (received.length === 0) return null;
    const consumed = new Set<string>();
    for (const r of received) {
      consumed.add(r.id);
      const response: FlowResponse<T> = { id: r.id, payload: JSON.parse(r.payloadJson) as T, final: r.final, ...(r.error !== undefined ? { error: r.error } : {}) };
      if (!(await until(response))) continue;
      if (r.error !== undefined) {
        await this.complete(name, { error: { name: 'AwaitedResponseError', message: r.error } }, 'await', t0);
        throw new AwaitedResponseError(name, r.error);
      }
      await this.complete(name, { resultJson: r.payloadJson }, 'await', t0);
      return { value: response.payload };
    }
    await this.save((s) => {
      const step = s.steps[name];
      if (!step) return;
      step.received = (step.received ?? []).filter((x) => !consumed.has(x.id));
      if (step.received.length === 0) delete step.received;
      step.message = `${consumed.size} progress response(s) received; still waiting`;
    });
    return null;
  }

  private registrationTtl(deadline: number): number {
    return Math.max(1000, (Number.isFinite(deadline) ? deadline - this.now() : this.deps.options.defaultAwaitTimeoutMs) + REGISTRATION_MARGIN_MS);
  }
}

function stepError(name: string, s: FlowStepState): Error {
  const e = s.error!;
  if (e.name === 'ChildFlowFailedError' && s.childFlowId) return new ChildFlowFailedError(s.childFlowId, { name: 'FlowFailedError', message: e.message });
  if (e.name === 'AwaitedResponseError') return new AwaitedResponseError(name, e.message);
  return new FlowFailedError(e.message);
}
