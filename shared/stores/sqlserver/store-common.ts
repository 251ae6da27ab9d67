// What the SQL Server transport store (store.ts) and channel store (channel-store.ts) share: the pool plumbing
// (a PoolHolder, statements sent through the pool guard), the single-flight schema step, the DDL transaction
// with its name-collision diagnosis, the duplicate-key race retry, and small result-set helpers.

import type * as sql from 'mssql';
import type { Logger } from '../../log';
import { sqlServerErrorNumbers } from '../../sql/transient';
import { newRequest } from './connection';
import { isPoolHolder, poolHolderFor, withPoolGuard, type PoolHolder } from './pool-guard';
import type { Statement } from './statements';
import { DDL_SCHEMA_LOCK_TIMEOUT_MS } from '../options';

export type Row = Record<string, unknown>;

export const lower = (value: unknown) => String(value).toLowerCase();

export function rows(result: sql.IResult<unknown>, index = 0): Row[] {
  const sets = result.recordsets as unknown as Row[][];
  return sets[index] ?? [];
}

export async function rollbackQuietly(tx: sql.Transaction): Promise<void> {
  try {
    await tx.rollback();
  } catch {
    /* already rolled back by the server (XACT_ABORT, a batch-aborting error, a broken connection) */
  }
}

const DUPLICATE_KEY_NUMBERS = [2627, 2601];

export abstract class SqlServerStoreBase {
  /** The holder of this store's pool: share it with other stores so a rebuild serves them all. */
  readonly poolHolder: PoolHolder;
  protected readonly logger: Logger;
  private readonly ownsPool: boolean;
  protected schemaReady = false;
  private schemaAttempt: Promise<void> | null = null;

  /** `ownsPool` false: the pool is shared (open.ts: one pool for the transport and the channel) and close() leaves it open. */
  protected constructor(pool: sql.ConnectionPool | PoolHolder, logger: Logger, ownsPool: boolean) {
    this.logger = logger;
    this.ownsPool = ownsPool;
    this.poolHolder = isPoolHolder(pool) ? pool : poolHolderFor(pool, logger);
  }

  /** The current pool: a rebuild (pool-guard) replaces it, so it is never kept. */
  protected get pool(): sql.ConnectionPool {
    return this.poolHolder.current;
  }

  // ---- schema -------------------------------------------------------------------------------------------

  /**
   * Single-flight; latched after success (runSchemaAttempt sets schemaReady). beforeSchemaAttempt may refuse
   * at once, without connecting (the transport's retry-after window).
   */
  async ensureSchema(): Promise<void> {
    if (this.schemaReady) return;
    this.beforeSchemaAttempt();
    // every schema step is idempotent, so a refused connection (pool-guard) rebuilds the pool and runs them once more
    this.schemaAttempt ??= withPoolGuard(this.poolHolder, () => this.runSchemaAttempt(), this.logger).finally(() => {
      this.schemaAttempt = null;
    });
    await this.schemaAttempt;
  }

  /** Called by ensureSchema before it starts (or joins) an attempt; throws to refuse. */
  protected beforeSchemaAttempt(): void {}

  /** One schema attempt: connect, create (autoCreate) and verify; sets schemaReady on success. */
  protected abstract runSchemaAttempt(): Promise<void>;

  /**
   * Problems that name a collision (another component's table, a view holding a name) after a failed DDL
   * batch; empty when there is none. Reads the catalog on a fresh request.
   */
  protected abstract collisionProblems(): Promise<string[]>;

  /** A DDL batch in its own transaction, committed before anything else runs; a failure is diagnosed. */
  protected async runDdlTransaction(statement: Statement<never>): Promise<void> {
    const tx = this.pool.transaction();
    try {
      await tx.begin();
      // The batch may wait up to DDL_SCHEMA_LOCK_TIMEOUT_MS for the schema applock: give it longer than that, so
      // a contended lock ends in its own THROW 51000 rather than the pool's shorter request timeout.
      await this.run(statement, {}, { parent: tx, timeoutMs: DDL_SCHEMA_LOCK_TIMEOUT_MS + 30_000 });
      await tx.commit();
    } catch (err) {
      await rollbackQuietly(tx);
      await this.diagnoseDdlFailure(err);
    }
  }

  /**
   * A DDL failure may be a name collision. Verification on a fresh request names it; otherwise (nothing found,
   * or the diagnosis itself fails) the original error is rethrown untouched, so e.g. a permission error stays
   * the driver's error.
   */
  private async diagnoseDdlFailure(original: unknown): Promise<never> {
    let problems: string[];
    try {
      problems = await this.collisionProblems();
    } catch {
      throw original;
    }
    if (problems.length === 0) throw original;
    throw new Error(
      `${problems.join(' ')} Give this component its own object names (or its own schema) so two AsyncResponse ` +
        'components cannot share one name.',
      { cause: original },
    );
  }

  // ---- statements ---------------------------------------------------------------------------------------

  protected async run<P extends string>(
    statement: Statement<P>,
    values: Record<P, unknown>,
    opts: { parent?: sql.Transaction; timeoutMs?: number } = {},
  ): Promise<sql.IResult<unknown>> {
    const send = (parent: sql.ConnectionPool | sql.Transaction) => {
      const request = newRequest(parent, opts.timeoutMs);
      for (const name of Object.keys(statement.params) as P[]) {
        request.input(name, statement.params[name], values[name]);
      }
      return request.query(statement.text);
    };
    if (opts.parent) return send(opts.parent);
    // a refused connection (login failed, token expired) rebuilds the pool and sends the statement once more:
    // the refusal comes before the statement reaches the server, so nothing can apply twice
    return withPoolGuard(this.poolHolder, send, this.logger);
  }

  /**
   * Runs an insert-if-absent whose NOT EXISTS probe does not lock missing keys (publishes) or holds a key-range
   * lock (the channel's random ids); when two writers of one id still race (2627/2601) the INSERT was rolled back,
   * so the statement runs again (up to `attempts` times in all) and now reads the stored rows as duplicates. `debugMessage` is logged on each lost race.
   */
  protected async runRetryingDuplicateKeyRace<P extends string>(
    statement: Statement<P>,
    values: Record<P, unknown>,
    attempts: number,
    debugMessage: string,
  ): Promise<sql.IResult<unknown>> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.run(statement, values);
      } catch (err) {
        const duplicate = sqlServerErrorNumbers(err).some((n) => DUPLICATE_KEY_NUMBERS.includes(n));
        if (!duplicate || attempt >= attempts) throw err;
        this.logger.debug(debugMessage, err);
      }
    }
  }

  async close(): Promise<void> {
    // mssql refuses to close a pool while it is connecting
    await this.poolHolder.settle();
    if (this.ownsPool) await this.poolHolder.close();
  }
}

/**
 * SQL Server's uniqueidentifier order (SqlGuid): bytes 10–15, then 8–9, 6–7, 4–5, 0–3 of the .NET byte layout,
 * whose first three groups are little-endian. Used to merge hydration chunks that the server ordered
 * separately, and to send publish batches in key order (concurrent batches then take their key-range locks in
 * one order and cannot deadlock on each other).
 */
export function sqlServerGuidKey(id: string): string {
  const hex = id.replace(/-/g, '').toLowerCase();
  const byte = (i: number) => hex.slice(i * 2, i * 2 + 2);
  // string bytes: 0-3 Data1 (big-endian text), 4-5 Data2, 6-7 Data3, 8-15 Data4
  return [10, 11, 12, 13, 14, 15, 8, 9, 7, 6, 5, 4, 3, 2, 1, 0].map(byte).join('');
}

export function compareSqlServerGuids(a: string, b: string): number {
  const ka = sqlServerGuidKey(a);
  const kb = sqlServerGuidKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}
