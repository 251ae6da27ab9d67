import { randomUUID } from 'node:crypto';
import type { ClaimedMessage, DeadLetterMove, OutgoingMessage, Settlement, TransportStore } from '../../shared/transport/types';
import { bucketSize, limitedRoom, nextTokenInMs, refill, type LimitedClaim, type QueueLimits } from '../../shared/transport/limits';

interface Row {
  id: string;
  queue: string;
  payloadJson: string;
  orderingKey?: string;
  headers: Record<string, string>;
  availableAt: number;
  lockedUntil: number | null;
  lockId: string | null;
  attempts: number;
  createdAt: number;
}

/**
 * An in-memory stand-in with the transport's semantics, for unit tests of loops that take an injected store.
 * (Every SQL behaviour itself is tested by the contract suite against real databases.)
 */
export class MemoryStore implements Pick<TransportStore, 'publish' | 'claim' | 'ack' | 'release' | 'releaseUnstarted' | 'releaseLostClaim' | 'renew' | 'deadLetter' | 'hasMessage'> {
  rows = new Map<string, Row>();
  calls = { claim: 0, ack: 0, release: [] as Array<{ id: string; delayMs: number }>, releaseUnstarted: [] as string[], releaseLostClaim: [] as string[], renew: 0, deadLetter: 0 };
  failClaims = 0;
  /** The next claims commit and then fail with claimError (the answer lost with the connection). */
  loseClaimAnswers = 0;
  /** The next hand-backs fail with claimError before committing. */
  failReleases = 0;
  /** The next acks fail with claimError before committing. */
  failAcks = 0;
  claimError: Error = Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
  /**
   * Scripted faults of the next dead-letter moves: 'before' fails without committing; 'after' commits and then
   * fails (the connection broke before the answer arrived).
   */
  deadLetterFaults: Array<'before' | 'after'> = [];
  /** The same for the next publishes. */
  publishFaults: Array<'before' | 'after'> = [];

  async publish(messages: readonly OutgoingMessage[]) {
    const fault = this.publishFaults.shift();
    if (fault === 'before') throw this.claimError;
    const outcomes = this.insert(messages);
    if (fault === 'after') throw this.claimError;
    return outcomes;
  }

  private insert(messages: readonly OutgoingMessage[]) {
    return messages.map((m) => {
      const existing = this.rows.get(m.id);
      if (existing) return { id: m.id, inserted: false, availableAt: new Date(existing.availableAt), existingQueue: existing.queue };
      const now = Date.now();
      this.rows.set(m.id, { ...m, availableAt: now + Math.max(0, m.delayMs), lockedUntil: null, lockId: null, attempts: 0, createdAt: now });
      return { id: m.id, inserted: true, availableAt: new Date(now + Math.max(0, m.delayMs)) };
    });
  }

  async claim(queue: string, max: number, lockTimeoutMs: number, lockId: string = randomUUID()): Promise<ClaimedMessage[]> {
    this.calls.claim++;
    if (this.failClaims > 0) {
      this.failClaims--;
      throw this.claimError;
    }
    const now = Date.now();
    const ready = [...this.rows.values()]
      .filter((r) => r.queue === queue && r.availableAt <= now && (r.lockedUntil === null || r.lockedUntil <= now))
      .sort((a, b) => a.availableAt - b.availableAt || a.createdAt - b.createdAt)
      .slice(0, max);
    const claimed = ready.map((r) => {
      r.attempts++;
      r.lockedUntil = now + lockTimeoutMs;
      r.lockId = lockId;
      return { id: r.id, lockId, queue, payloadJson: r.payloadJson, headers: r.headers, attempt: r.attempts, createdAt: new Date(r.createdAt), ...(r.orderingKey ? { orderingKey: r.orderingKey } : {}) };
    });
    if (this.loseClaimAnswers > 0) {
      this.loseClaimAnswers--;
      throw this.claimError;
    }
    return claimed;
  }

  /** Token buckets and backoffs by queue (the queue-state row's columns). */
  buckets = new Map<string, { tokens: number; at: number }>();
  backoffUntil = new Map<string, number>();
  calls2 = { claimLimited: 0 };

  /** The limited claim with the stores' arithmetic (transport/limits.ts), one claimer at a time like the row lock. */
  async claimLimited(queue: string, max: number, lockTimeoutMs: number, lockId: string, limits: QueueLimits): Promise<LimitedClaim<ClaimedMessage>> {
    this.calls2.claimLimited++;
    const now = Date.now();
    const backoff = this.backoffUntil.get(queue) ?? 0;
    const leasedNow = () => (limits.concurrency === undefined ? null : [...this.rows.values()].filter((r) => r.queue === queue && r.lockedUntil !== null && r.lockedUntil > Date.now()).length);
    if (backoff > now) return { messages: [], limitedBy: 'backoff', retryInMs: backoff - now, leased: leasedNow() };
    const leased = [...this.rows.values()].filter((r) => r.queue === queue && r.lockedUntil !== null && r.lockedUntil > now).length;
    const size = bucketSize(limits);
    const b = this.buckets.get(queue);
    const tokens = size === null ? null : refill(b ? b.tokens : null, b ? now - b.at : 0, limits.ratePerSecond!, size);
    const room = limitedRoom(max, limits, leased, tokens);
    const messages = await this.claim(queue, room, lockTimeoutMs, lockId);
    if (tokens !== null) this.buckets.set(queue, { tokens: tokens - messages.length, at: now });
    const after = leasedNow();
    if (messages.length >= max) return { messages, limitedBy: null, retryInMs: null, leased: after };
    if (limits.concurrency !== undefined && leased + messages.length >= limits.concurrency) return { messages, limitedBy: 'concurrency', retryInMs: lockTimeoutMs, leased: after };
    if (tokens !== null && tokens - messages.length < 1) return { messages, limitedBy: 'rate', retryInMs: nextTokenInMs(tokens - messages.length, limits.ratePerSecond!), leased: after };
    return { messages, limitedBy: null, retryInMs: null, leased: after };
  }

  async releaseLostClaim(queue: string, lockId: string) {
    this.calls.releaseLostClaim.push(lockId);
    const now = Date.now();
    let n = 0;
    for (const r of this.rows.values()) {
      if (r.queue !== queue || r.lockId !== lockId || r.lockedUntil === null || r.lockedUntil <= now) continue;
      Object.assign(r, { attempts: Math.max(0, r.attempts - 1), lockedUntil: null, lockId: null });
      n++;
    }
    return n;
  }

  private fenced(s: Settlement): Row | undefined {
    const r = this.rows.get(s.id);
    return r && r.lockId === s.lockId ? r : undefined;
  }

  async ack(settlements: readonly Settlement[]) {
    this.calls.ack++;
    if (this.failAcks > 0) {
      this.failAcks--;
      throw this.claimError;
    }
    let n = 0;
    for (const s of settlements) if (this.fenced(s) && this.rows.delete(s.id)) n++;
    return n;
  }

  async release(s: Settlement, delayMs: number) {
    this.calls.release.push({ id: s.id, delayMs });
    const r = this.fenced(s);
    if (!r) return false;
    Object.assign(r, { availableAt: Date.now() + delayMs, lockedUntil: null, lockId: null });
    return true;
  }

  async releaseUnstarted(settlements: readonly Settlement[]) {
    if (this.failReleases > 0) {
      this.failReleases--;
      throw this.claimError;
    }
    let n = 0;
    for (const s of settlements) {
      this.calls.releaseUnstarted.push(s.id);
      const r = this.fenced(s);
      if (!r) continue;
      Object.assign(r, { attempts: Math.max(0, r.attempts - 1), lockedUntil: null, lockId: null });
      n++;
    }
    return n;
  }

  async renew(s: Settlement, lockTimeoutMs: number) {
    this.calls.renew++;
    const r = this.fenced(s);
    if (!r) return false;
    r.lockedUntil = Date.now() + lockTimeoutMs;
    return true;
  }

  async deadLetter(move: DeadLetterMove) {
    this.calls.deadLetter++;
    const fault = this.deadLetterFaults.shift();
    if (fault === 'before') throw this.claimError;
    if (!this.fenced(move.source)) return false;
    this.rows.delete(move.source.id);
    const now = Date.now();
    this.rows.set(move.newId, {
      id: move.newId,
      queue: move.deadLetterQueue,
      payloadJson: move.payloadJson,
      headers: move.headers,
      availableAt: now,
      lockedUntil: null,
      lockId: null,
      attempts: 0,
      createdAt: now,
    });
    if (fault === 'after') throw this.claimError;
    return true;
  }

  async hasMessage(queue: string, id: string) {
    return this.rows.get(id)?.queue === queue;
  }

  inQueue(queue: string): Row[] {
    return [...this.rows.values()].filter((r) => r.queue === queue);
  }
}
