// One execution of a flow run, as the flows queue's handler runs it (durable-flows.md §1.3): take the run's
// lease, load, count the attempt, run the body from the top, then act on the outcome. Returning = the job is
// acknowledged; throwing = the queue redelivers it with backoff and finally dead-letters it ("the run is stuck").

import { randomBytes } from 'node:crypto';
import type { Logger } from '../log';
import { toJson } from './canonical-json';
import type { FlowClock } from './clock';
import { FlowRun, type RunDeps } from './context';
import { FlowFailedError, FlowInterrupt } from './errors';
import { timerWakeJobId, wakeJobId, type FlowJob, type FlowJobQueue } from './jobs';
import type { FlowRegistry } from './registry';
import { isTerminal } from './retention';
import { mutateRun } from './mutate';
import { parseFlowState, type FlowState } from './state';
import type { FlowEvents } from './events';
import type { FlowAcquired } from './store';

export interface ExecutorDeps extends RunDeps {
  registry: FlowRegistry;
  jobs: FlowJobQueue;
  events: FlowEvents;
  logger: Logger;
}

/** How long a redelivered job waits for its own earlier attempt's lease to lapse before it is retried. */
const OWN_LEASE_POLL_MS = 2_000;

export class FlowExecutor {
  constructor(private readonly deps: ExecutorDeps) {}

  /** The flows queue's job: a start (create-if-absent and execute, in the lease's statement) or a wake-up. */
  async handle(jobId: string, job: FlowJob, log: Logger = this.deps.logger, jobSignal?: AbortSignal, budgetEndsAt?: number): Promise<void> {
    // a start's state may be written already: by the starter, an earlier delivery, or another start of the id
    const create = job.kind === 'start' ? { state: parseFlowState(job.flowId, job.stateJson, 0), ttlMs: this.deps.options.stateExpiryMs } : undefined;
    await this.execute(job.flowId, jobId, log, jobSignal, create, budgetEndsAt);
  }

  async execute(flowId: string, jobId: string, log: Logger, jobSignal?: AbortSignal, create?: { state: FlowState; ttlMs: number }, budgetEndsAt?: number): Promise<void> {
    const { clock } = this.deps;
    const jobPrefix = jobId.replace(/-/g, '');
    const leaseId = `${jobPrefix}.${randomBytes(6).toString('hex')}`;
    const got = await this.acquire(flowId, leaseId, jobPrefix, jobSignal, create);
    if (got === 'duplicate' || got === 'missing') {
      if (got === 'missing') log.warn(`flow run '${flowId}' has no state (it expired or was deleted); its job is acknowledged`);
      return;
    }
    const lost = new AbortController();
    const stopRenewal = new AbortController();
    const unlink = jobSignal ? linkAbort(jobSignal, lost) : () => undefined;
    const renewal = this.renew(flowId, leaseId, stopRenewal.signal, lost, log);
    let released = false;
    let runRef: FlowRun | undefined;
    const stopRenewing = async () => {
      stopRenewal.abort();
      await renewal;
    };
    const release = async () => {
      await stopRenewing();
      released = true;
      await this.deps.store.releaseLease(flowId, leaseId);
    };
    try {
      const state = got.state; // returned by the lease's statement: no reload
      // a repeated start's job (the run was written by an earlier start): the run's own jobs drive it
      if (create && state.startNonce !== create.state.startNonce) return;
      if (state.status !== 'Running') {
        // a wake-up of a run that ended or was suspended: re-send what its end owes (a crash may have lost it)
        if (isTerminal(state)) await this.notifyParent(state);
        return;
      }
      const flow = this.deps.registry.get(state.flowName);
      if (!flow) throw new Error(`flow run '${flowId}' needs the flow '${state.flowName}', which this deployment does not register`);
      const offset = got.now.getTime() - clock.now();
      const run = new FlowRun(state, this.deps, leaseId, offset, lost.signal, log, budgetEndsAt);
      runRef = run;
      let outcome: { ok: true; value: unknown } | { ok: false; err: unknown };
      try {
        outcome = { ok: true, value: await flow(run, JSON.parse(state.inputJson)) };
      } catch (err) {
        outcome = { ok: false, err };
      }
      await run.settle();
      if (run.interrupt) {
        if (run.interrupt.reason === 'parked') {
          await run.flush().catch((e: unknown) => log.warn(`flow run '${flowId}': writing a response taken in process failed; its publisher stored it`, e));
          await this.park(run, release, log);
        }
        return;
      }
      if (!outcome.ok && !(outcome.err instanceof FlowFailedError)) {
        const message = `attempt ${run.attempt} failed: ${errorText(outcome.err)}`;
        await stopRenewing();
        await run
          .save(
            (s) => {
              s.lastMessage = message;
            },
            { release: true },
          )
          .then(() => (released = true))
          .catch((e: unknown) => log.warn(`could not record the failure of flow run '${flowId}'`, e));
        throw outcome.err;
      }
      const ended = outcome;
      // the end: the final state and the lease's release in one statement
      await stopRenewing();
      await run.save(
        (s) => {
          if (ended.ok) {
            s.status = 'Succeeded';
            s.resultJson = toJson(ended.value);
            s.lastMessage = 'Succeeded';
          } else {
            const e = ended.err as Error;
            s.status = 'Failed';
            s.error = { name: e.name, message: e.message };
            s.lastMessage = `Failed: ${e.message}`;
          }
        },
        { release: true },
      );
      released = true;
      await this.dropStaleTimers(run, log);
      this.deps.metrics.runEnded(run.state.flowName, ended.ok ? 'succeeded' : 'failed');
      this.deps.events.ended(flowId);
      await this.notifyParent(run.state);
    } catch (err) {
      if (err instanceof FlowInterrupt) return; // suspended or ended by an operator under this execution
      throw err;
    } finally {
      unlink();
      runRef?.abandon(new Error('the execution ended without writing'));
      if (!released) await release().catch((e: unknown) => log.warn(`releasing the lease of flow run '${flowId}' failed; it lapses on its own`, e));
    }
  }

  /**
   * Takes the run's lease, with its state (one statement). A lease another job's execution holds means that
   * execution (or, if it crashed, its own redelivered job) runs the body again and sees whatever woke this job:
   * every waker writes its evidence before it publishes, and a parking execution looks for evidence after it
   * released (park), so this job is acknowledged. A lease this very job's earlier attempt holds (a redelivery
   * before the flow lease lapsed) is waited out.
   */
  private async acquire(
    flowId: string,
    leaseId: string,
    jobPrefix: string,
    signal: AbortSignal | undefined,
    create: { state: FlowState; ttlMs: number } | undefined,
  ): Promise<FlowAcquired | 'duplicate' | 'missing'> {
    const { store, options, clock } = this.deps;
    const giveUpAt = clock.now() + 2 * options.leaseDurationMs + options.leaseRenewIntervalMs;
    for (let round = 0; ; round++) {
      const got = await store.acquire(flowId, leaseId, options.leaseDurationMs, create);
      if (got) return got;
      const held = await store.observeLease(flowId);
      if (held === 'unheld') {
        if (!(await store.load(flowId))) return 'missing';
        if (round < 3) continue; // released between the two calls
        throw new Error(`flow run '${flowId}': its lease reads unheld but cannot be taken`);
      }
      if (!held.leaseId.startsWith(`${jobPrefix}.`)) return 'duplicate';
      if (clock.now() >= giveUpAt) throw new Error(`flow run '${flowId}': an earlier attempt of this job still holds its lease`);
      const lapseIn = held.expiresAt.getTime() - (await store.now()).getTime();
      await clock.sleep(Math.max(10, Math.min(OWN_LEASE_POLL_MS, lapseIn + 10)), signal);
    }
  }

  private async renew(flowId: string, leaseId: string, stop: AbortSignal, lost: AbortController, log: Logger): Promise<void> {
    const { store, options, clock } = this.deps;
    while (!stop.aborted) {
      try {
        await clock.sleep(options.leaseRenewIntervalMs, stop);
      } catch {
        return;
      }
      try {
        if (!(await store.tryRenewLease(flowId, leaseId, options.leaseDurationMs))) {
          log.warn(`flow run '${flowId}' lost its lease; this execution stops`);
          lost.abort(new Error('lease lost'));
          return;
        }
      } catch (err) {
        log.warn(`renewing the lease of flow run '${flowId}' failed; retrying at the next interval`, err);
      }
    }
  }

  /**
   * A parked execution: raise the ancestors' retention floor, release the lease, then publish the timer wake-up
   * (after the release, so it can never find this execution's lease), then look for evidence that arrived while
   * the lease was held (a response checkpointed, a child ended) and wake the run for it. A failure here throws: the
   * job is redelivered and the replay parks again (the ledger already holds every wait).
   */
  private async park(run: FlowRun, release: () => Promise<void>, log: Logger): Promise<void> {
    const { store, jobs, clock, options } = this.deps;
    const flowId = run.flowId;
    const w = run.waits;
    if (w.wakeAt !== null && run.state.parentFlowId) await this.raiseAncestors(run.state, w.wakeAt + options.stateExpiryMs, log);
    await release();
    if (w.wakeAt !== null) {
      await jobs.publish({ id: timerWakeJobId(flowId, w.wakeAt), job: { kind: 'wake', flowId, reason: 'timer' }, delayMs: Math.max(0, w.wakeAt - run.now()) });
    }
    await this.dropStaleTimers(run, log);
    const fresh = await store.load(flowId);
    if (fresh?.status === 'Running' && fresh.revision !== run.state.revision) {
      // changed while this execution held it (an operator's resume or restart, a response checkpointed by the
      // recovery path): a wake-up that came meanwhile found the lease held and was acknowledged, so wake it again
      await jobs.publish({ id: wakeJobId(flowId, `changed:${fresh.revision}`), job: { kind: 'wake', flowId, reason: 'changed' }, delayMs: 0 });
    } else if (fresh?.status === 'Running') {
      const received = [...w.awaits].map((n) => fresh.steps[n]?.received?.[0]).find((r) => r !== undefined);
      if (received) await jobs.publish({ id: wakeJobId(flowId, `response:${received.id}`), job: { kind: 'wake', flowId, reason: 'response' }, delayMs: 0 });
      for (const childId of w.children) {
        const child = await store.load(childId);
        if (child && !isTerminal(child)) continue;
        await jobs.publish({ id: wakeJobId(flowId, `child:${childId}`), job: { kind: 'wake', flowId, reason: 'child' }, delayMs: 0 });
        break;
      }
    }
    const on = w.awaits.size > 0 ? 'response' : w.children.size > 0 ? 'child' : 'timer';
    this.deps.metrics.runParked(run.flowName, on);
    log.debug?.(`flow run '${flowId}' parked on ${on}${w.wakeAt !== null ? ` until ${new Date(w.wakeAt).toISOString()}` : ''} (${clock.now()})`);
  }

  /**
   * An awaited step a response settled leaves the timer wake-up of its deadline waiting (days, by default): delete
   * it unless the run still waits for that instant. Best effort: a wake-up left behind only runs a no-op execution.
   */
  private async dropStaleTimers(run: FlowRun, log: Logger): Promise<void> {
    for (const deadline of run.waits.settledDeadlines) {
      if (deadline === run.waits.wakeAt || deadline <= run.now()) continue;
      await this.deps.jobs.cancel(timerWakeJobId(run.flowId, deadline)).catch((e: unknown) =>
        log.warn(`flow run '${run.flowId}': deleting the stale timer wake-up for ${new Date(deadline).toISOString()} failed; it runs as a no-op`, e),
      );
    }
  }

  /** Keeps every Running ancestor's state until `until` (a descendant sleeps or waits that long). */
  private async raiseAncestors(state: FlowState, until: number, log: Logger): Promise<void> {
    const seen = new Set<string>([state.flowId]);
    let parentId = state.parentFlowId;
    for (let depth = 0; parentId && depth < 256 && !seen.has(parentId); depth++) {
      seen.add(parentId);
      const r = await mutateRun(this.deps.store, this.deps.clock, this.deps.options.stateExpiryMs, parentId, (p) => {
        if (isTerminal(p) || (p.retainUntil && Date.parse(p.retainUntil) >= until)) return false;
        p.retainUntil = new Date(until).toISOString();
        return true;
      });
      if (!r) return log.warn(`flow run '${state.flowId}': its ancestor '${parentId}' has no state`);
      parentId = r.state.parentFlowId;
    }
  }

  /** A child run ended: wake its parent (idempotent per child while the wake-up exists). */
  async notifyParent(child: FlowState): Promise<void> {
    if (!child.parentFlowId) return;
    await this.deps.jobs.publish({ id: wakeJobId(child.parentFlowId, `child:${child.flowId}`), job: { kind: 'wake', flowId: child.parentFlowId, reason: 'child' }, delayMs: 0 });
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function linkAbort(from: AbortSignal, to: AbortController): () => void {
  const f = () => to.abort(from.reason);
  if (from.aborted) f();
  else from.addEventListener('abort', f, { once: true });
  return () => from.removeEventListener('abort', f);
}

