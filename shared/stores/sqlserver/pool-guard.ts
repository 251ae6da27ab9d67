// After an Azure SQL failover, or once the server stops accepting the credential a pool logs in with, every new
// physical connection the pool makes can be refused at login (18456 "Login failed", "Token is expired", 37396)
// while the pool itself still looks healthy. The guard recognises those rejections, closes the pool, builds a
// fresh one and runs the operation ONE more time. A rejection happens while a connection is being established,
// before the statement reaches the server, so running it again cannot apply it twice.
//
// The pool lives in a PoolHolder so that several stores (transport, channel) can share one pool and one rebuild:
// every user asks the holder for the current pool instead of keeping its own reference. Code that only has the
// raw pool finds its holder with poolHolderFor(pool) (one holder per pool object), so connects, rebuilds and
// closes of a shared pool are coordinated however it was handed around.

import type * as sql from 'mssql';
import type { Logger } from '../../log';
import { sqlServerErrorNumbers } from '../../sql/transient';

/** Server error numbers that mean "this pool's logins are refused", not "this statement failed". */
export const POOL_REJECTION_NUMBERS: readonly number[] = Object.freeze([18456, 37396]);

/**
 * tedious turns a login ERROR token into ConnectionError(message, 'ELOGIN') and drops its number, so an ELOGIN
 * is recognised by the server's wording: "Login failed for user …" (18456), "Token is expired".
 */
const REJECTION_MESSAGES = [/login failed/i, /token is expired/i, /token has expired/i];

type Bag = Record<string, unknown>;

function asBag(value: unknown): Bag | undefined {
  return value !== null && typeof value === 'object' ? (value as Bag) : undefined;
}

/** True when `err` says the server refused this pool's connection (login or token), see POOL_REJECTION_NUMBERS. */
export function isPoolRejection(err: unknown): boolean {
  if (sqlServerErrorNumbers(err).some((n) => POOL_REJECTION_NUMBERS.includes(n))) return true;
  let layer = asBag(err);
  // mssql's ConnectionError keeps tedious's error as originalError
  for (let depth = 0; layer && depth < 3; depth++) {
    if (layer.code === 'ELOGIN') {
      const message = typeof layer.message === 'string' ? layer.message : '';
      if (REJECTION_MESSAGES.some((re) => re.test(message))) return true;
    }
    layer = asBag(layer.originalError);
  }
  return false;
}

/**
 * The pool an operation was waiting on was closed under it: mssql's ENOTOPEN ("Connection is closing" / "not yet
 * open") or tarn's abort of a pending acquire (a plain Error 'aborted'). After a rebuild this is what the other
 * requests queued on the refused pool see; they belong on the fresh pool.
 */
export function isPoolClosedUnderneath(err: unknown): boolean {
  const bag = asBag(err);
  if (!bag) return false;
  if (bag.code === 'ENOTOPEN') return true;
  return err instanceof Error && err.constructor === Error && err.message === 'aborted';
}

export interface PoolHolder {
  /** The pool in use now (possibly not connected yet). Never keep it: it changes on a rebuild. */
  readonly current: sql.ConnectionPool;
  /** How many times the pool has been rebuilt. */
  readonly rebuilds: number;
  /** The current pool, connected (one connect in flight per pool, shared by every caller). */
  get(): Promise<sql.ConnectionPool>;
  /**
   * Replaces `failed` with a fresh pool. A no-op when `failed` is no longer current (a concurrent caller rebuilt
   * it already), so N requests failing together cause one rebuild. The replaced pool closes in the background
   * once its in-flight requests return.
   */
  rebuild(failed: sql.ConnectionPool, reason?: unknown): Promise<void>;
  /** Waits until no connect or in-place rebuild is in flight (mssql refuses to close a connecting pool). */
  settle(): Promise<void>;
  /** Closes the current pool and waits for replaced ones. Idempotent; get() fails afterwards. */
  close(): Promise<void>;
}

/** Every pool a holder manages → that holder. */
const holders = new WeakMap<sql.ConnectionPool, Holder>();

export function isPoolHolder(value: unknown): value is PoolHolder {
  const bag = asBag(value);
  return !!bag && typeof bag.get === 'function' && typeof bag.rebuild === 'function' && 'current' in bag;
}

class Holder implements PoolHolder {
  private pool: sql.ConnectionPool;
  private readonly connecting = new Map<sql.ConnectionPool, Promise<void>>();
  private readonly retiring = new Set<Promise<void>>();
  /** in-place rebuilds (no factory): get() waits for the close to finish before reconnecting. */
  private reopening: Promise<void> | null = null;
  private closed = false;
  rebuilds = 0;

  constructor(
    initial: sql.ConnectionPool,
    private readonly factory: (() => sql.ConnectionPool) | undefined,
    private readonly logger: Logger | undefined,
  ) {
    this.pool = initial;
    holders.set(initial, this);
  }

  get current(): sql.ConnectionPool {
    return this.pool;
  }

  async get(): Promise<sql.ConnectionPool> {
    if (this.reopening) await this.reopening;
    if (this.closed) throw new Error('the SQL Server pool is closed');
    const pool = this.pool;
    if (pool.connected) return pool;
    let connecting = this.connecting.get(pool);
    if (!connecting) {
      connecting = pool.connect().then(
        () => {
          this.connecting.delete(pool);
        },
        (err: unknown) => {
          this.connecting.delete(pool);
          throw err;
        },
      );
      this.connecting.set(pool, connecting);
    }
    await connecting;
    return pool;
  }

  async rebuild(failed: sql.ConnectionPool, reason?: unknown): Promise<void> {
    if (this.closed || failed !== this.pool) return;
    if (this.reopening) return this.reopening; // an in-place rebuild of this very pool is under way
    this.rebuilds++;
    this.logger?.warn(`SQL Server refused the pool's connection; closing the pool and opening a fresh one (rebuild ${this.rebuilds})`, reason);
    if (this.factory) {
      this.pool = this.factory();
      holders.set(this.pool, this);
      const retired = this.closeQuietly(failed).finally(() => this.retiring.delete(retired));
      this.retiring.add(retired);
      return;
    }
    // No factory (a pool handed in by its owner): close this same object and let get() connect it again, so
    // whoever else holds it keeps a working pool. The close waits for the pool's in-flight requests to return.
    const reopening = this.closeQuietly(failed).finally(() => {
      if (this.reopening === reopening) this.reopening = null;
    });
    this.reopening = reopening;
    await reopening;
  }

  async settle(): Promise<void> {
    if (this.reopening) await this.reopening;
    await this.connecting.get(this.pool)?.catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.settle();
    try {
      await this.pool.close();
    } finally {
      await Promise.all([...this.retiring]);
    }
  }

  private async closeQuietly(pool: sql.ConnectionPool): Promise<void> {
    await this.connecting.get(pool)?.catch(() => undefined);
    try {
      await pool.close();
    } catch (err) {
      this.logger?.debug('closing a rebuilt SQL Server pool failed', err);
    }
  }
}

/**
 * A holder over pools made by `factory` (the first one at once; it connects on first use). A rebuild makes a new
 * pool with the same settings: with Entra auth every new physical connection fetches its token afresh from the
 * module-level credential.
 */
export function createPoolHolder(factory: () => sql.ConnectionPool, logger?: Logger): PoolHolder {
  return new Holder(factory(), factory, logger);
}

/**
 * The holder of `pool`: the one that manages it, or (first call) a new one over it. A pool handed in by its
 * owner has no factory, so its rebuild closes and reconnects that same object.
 */
export function poolHolderFor(pool: sql.ConnectionPool, logger?: Logger): PoolHolder {
  return holders.get(pool) ?? new Holder(pool, undefined, logger);
}

/** The holder managing `pool`, if any (does not create one). */
export function existingPoolHolder(pool: sql.ConnectionPool): PoolHolder | undefined {
  return holders.get(pool);
}

/**
 * Runs `op` on the holder's connected pool. When the pool's connection is refused (isPoolRejection), the pool is
 * rebuilt and `op` runs once more on the fresh pool; whatever that second run throws propagates. An operation
 * whose pool was rebuilt by someone else while it waited (and so was closed under it) also runs once more on the
 * fresh pool. Any other error propagates at once (transient faults are retried with backoff by the callers).
 */
export async function withPoolGuard<T>(
  holder: PoolHolder,
  op: (pool: sql.ConnectionPool) => Promise<T>,
  logger?: Logger,
): Promise<T> {
  const target = holder.current;
  const generation = holder.rebuilds;
  try {
    return await op(await holder.get());
  } catch (err) {
    const rebuiltMeanwhile = holder.rebuilds !== generation;
    if (!isPoolRejection(err) && !(rebuiltMeanwhile && isPoolClosedUnderneath(err))) throw err;
    logger?.debug('SQL Server refused the connection (or its pool was rebuilt); retrying once on the fresh pool', err);
    // a pool rebuilt since this call started (by a concurrent caller) is already the fresh one
    if (!rebuiltMeanwhile) await holder.rebuild(target, err);
    return op(await holder.get());
  }
}
