import { randomUUID } from 'node:crypto';
import type { FlowClock } from '../../shared/flows/clock';
import type { CarriedJob } from '../../shared/flows/jobs';
import { FLOW_STATUSES, parseFlowState, serializeFlowState, type FlowState, type FlowStatus } from '../../shared/flows/state';
import type { FlowAcquired, FlowCheckpointLease, FlowLease, FlowListQuery, FlowStateStore, FlowSummary } from '../../shared/flows/store';

interface Row {
  stateJson: string;
  revision: number;
  expiresAt: number;
  updatedAt: number;
  createdAt: number;
  leaseId: string | null;
  leaseExpiresAt: number | null;
}

/**
 * The flow store contract (shared/flows/store.ts) in memory, on a given (virtual) clock, for unit tests of the
 * flows layer: revision compare-and-swap, the renewable lease, idle expiry. Rows round-trip through the ledger
 * codec as the SQL stores do, so an unreadable row throws here too. The SQL behaviour itself is the contract
 * suite's (test/contract).
 */
export class MemoryFlowStore implements FlowStateStore {
  readonly rows = new Map<string, Row>();
  /** Statements issued, by operation. */
  readonly calls: Record<string, number> = {};
  /** When set, called before every operation (a test injects faults or races there). */
  beforeCall?: (op: string, flowId?: string) => void | Promise<void>;
  /** Set: creates and lease-fenced updates take jobs to insert with them (flows/store.ts carriesJobs). */
  carriesJobs?: boolean;
  /** The jobs a write that took carried, in order (the transport's insert, as the SQL stores do it in the write). */
  onCarried?: (jobs: readonly CarriedJob[]) => void;

  constructor(
    private readonly clock: FlowClock,
    readonly maxStateBytes?: number,
  ) {}

  private async enter(op: string, flowId?: string) {
    this.calls[op] = (this.calls[op] ?? 0) + 1;
    await this.beforeCall?.(op, flowId);
  }

  private live(flowId: string): Row | undefined {
    const r = this.rows.get(flowId);
    return r && r.expiresAt > this.clock.now() ? r : undefined;
  }

  validateCreate(state: FlowState): void {
    if (this.maxStateBytes === undefined) return;
    const bytes = Buffer.byteLength(serializeFlowState(state), 'utf8');
    if (bytes > this.maxStateBytes) throw new RangeError(`state of '${state.flowId}' is ${bytes} bytes`);
  }

  private carry(carry: readonly CarriedJob[] | undefined): void {
    if (!carry || carry.length === 0) return;
    if (!this.carriesJobs) throw new Error('this flow store does not carry jobs');
    this.onCarried?.(carry);
    for (const c of carry) c.inserted ??= true;
  }

  async tryCreate(state: FlowState, ttlMs: number, carry?: readonly CarriedJob[]): Promise<boolean> {
    await this.enter('tryCreate', state.flowId);
    if (state.revision !== 0) throw new RangeError('a created state has revision 0');
    const json = serializeFlowState(state);
    if (this.live(state.flowId)) return false;
    const now = this.clock.now();
    this.rows.set(state.flowId, { stateJson: json, revision: 0, expiresAt: now + ttlMs, updatedAt: now, createdAt: now, leaseId: null, leaseExpiresAt: null });
    this.carry(carry);
    return true;
  }

  async load(flowId: string): Promise<FlowState | null> {
    await this.enter('load', flowId);
    const r = this.live(flowId);
    return r ? this.read(flowId, r) : null;
  }

  async acquire(flowId: string, leaseId: string, durationMs: number, create?: { state: FlowState; ttlMs: number }): Promise<FlowAcquired | null> {
    await this.enter('acquire', flowId);
    if (create && !this.live(flowId)) {
      if (create.state.revision !== 0) throw new RangeError('a created state has revision 0');
      const now = this.clock.now();
      this.rows.set(flowId, { stateJson: serializeFlowState(create.state), revision: 0, expiresAt: now + create.ttlMs, updatedAt: now, createdAt: now, leaseId: null, leaseExpiresAt: null });
    }
    const r = this.live(flowId);
    const now = this.clock.now();
    if (!r || !(r.leaseId === null || (r.leaseExpiresAt ?? 0) <= now || r.leaseId === leaseId)) return null;
    r.leaseId = leaseId;
    r.leaseExpiresAt = now + durationMs;
    return { state: this.read(flowId, r), now: new Date(now) };
  }

  private read(flowId: string, r: Row): FlowState {
    const s = parseFlowState(flowId, r.stateJson, r.revision);
    s.createdAt = new Date(r.createdAt).toISOString();
    s.updatedAt = new Date(r.updatedAt).toISOString();
    return s;
  }

  async tryUpdate(state: FlowState, expectedRevision: number, ttlMs: number, leaseId?: string, lease?: FlowCheckpointLease, carry?: readonly CarriedJob[]): Promise<boolean> {
    await this.enter('tryUpdate', state.flowId);
    if (state.revision !== expectedRevision + 1) throw new RangeError(`revision ${state.revision} is not ${expectedRevision} + 1`);
    const json = serializeFlowState(state);
    const r = this.live(state.flowId);
    const now = this.clock.now();
    if (!r || r.revision !== expectedRevision) return false;
    if (leaseId !== undefined && !(r.leaseId === leaseId && (r.leaseExpiresAt ?? 0) > now)) return false;
    Object.assign(r, { stateJson: json, revision: state.revision, expiresAt: now + ttlMs, updatedAt: now });
    if (leaseId !== undefined && lease?.release) Object.assign(r, { leaseId: null, leaseExpiresAt: null });
    else if (leaseId !== undefined && lease?.extendMs !== undefined) r.leaseExpiresAt = now + lease.extendMs;
    this.carry(carry);
    return true;
  }

  async tryAcquireLease(flowId: string, leaseId: string, durationMs: number): Promise<boolean> {
    await this.enter('tryAcquireLease', flowId);
    const r = this.live(flowId);
    const now = this.clock.now();
    if (!r || !(r.leaseId === null || (r.leaseExpiresAt ?? 0) <= now || r.leaseId === leaseId)) return false;
    r.leaseId = leaseId;
    r.leaseExpiresAt = now + durationMs;
    return true;
  }

  async tryRenewLease(flowId: string, leaseId: string, durationMs: number): Promise<boolean> {
    await this.enter('tryRenewLease', flowId);
    const r = this.live(flowId);
    const now = this.clock.now();
    if (!r || r.leaseId !== leaseId || (r.leaseExpiresAt ?? 0) <= now) return false;
    r.leaseExpiresAt = now + durationMs;
    return true;
  }

  async releaseLease(flowId: string, leaseId: string): Promise<void> {
    await this.enter('releaseLease', flowId);
    const r = this.rows.get(flowId);
    if (r && r.leaseId === leaseId) Object.assign(r, { leaseId: null, leaseExpiresAt: null });
  }

  async observeLease(flowId: string): Promise<FlowLease | 'unheld'> {
    await this.enter('observeLease', flowId);
    const r = this.rows.get(flowId);
    if (!r || r.leaseId === null) return 'unheld';
    return { leaseId: r.leaseId, expiresAt: new Date(r.leaseExpiresAt!) };
  }

  async tryDelete(flowId: string): Promise<boolean> {
    await this.enter('tryDelete', flowId);
    return this.rows.delete(flowId);
  }

  async prune(): Promise<number> {
    await this.enter('prune');
    let n = 0;
    for (const [id, r] of this.rows) if (r.expiresAt <= this.clock.now() && this.rows.delete(id)) n++;
    return n;
  }

  async now(): Promise<Date> {
    await this.enter('now');
    return new Date(this.clock.now());
  }

  async list(query: FlowListQuery): Promise<{ items: FlowSummary[]; cursor?: string }> {
    await this.enter('list');
    const all = [...this.rows.entries()]
      .filter(([, r]) => r.expiresAt > this.clock.now())
      .map(([id, r]) => ({ id, r, s: parseFlowState(id, r.stateJson, r.revision) }))
      .filter(({ s }) => (!query.status || s.status === query.status) && (!query.flowName || s.flowName === query.flowName))
      .sort((a, b) => b.r.updatedAt - a.r.updatedAt || (a.id < b.id ? 1 : -1));
    const start = query.cursor ? all.findIndex((x) => x.id === query.cursor) + 1 : 0;
    const page = all.slice(start, start + query.limit);
    const items = page.map(({ s }) => ({
      flowId: s.flowId,
      flowName: s.flowName,
      status: s.status,
      createdAt: s.createdAt,
      updatedAt: s.updatedAt,
      ...(s.lastMessage !== undefined ? { lastMessage: s.lastMessage } : {}),
    }));
    return start + query.limit < all.length ? { items, cursor: page[page.length - 1]!.id } : { items };
  }

  async countByStatus(): Promise<Record<FlowStatus, number>> {
    await this.enter('countByStatus');
    const counts = Object.fromEntries(FLOW_STATUSES.map((s) => [s, 0])) as Record<FlowStatus, number>;
    for (const [id, r] of this.rows) if (r.expiresAt > this.clock.now()) counts[parseFlowState(id, r.stateJson, r.revision).status]++;
    return counts;
  }

  /** Test helper: the lease as stored. */
  leaseOf(flowId: string): { leaseId: string | null; expiresAt: number | null } | undefined {
    const r = this.rows.get(flowId);
    return r && { leaseId: r.leaseId, expiresAt: r.leaseExpiresAt };
  }

  /** Test helper: a lease held by some other execution (e.g. one that crashed). */
  seizeLease(flowId: string, durationMs: number, leaseId = `${randomUUID().replace(/-/g, '')}.dead`): string {
    const r = this.rows.get(flowId)!;
    r.leaseId = leaseId;
    r.leaseExpiresAt = this.clock.now() + durationMs;
    return leaseId;
  }
}
