// Runs the SQL Server schema versions (migrations.ts). Each step is one transaction: XACT_ABORT and the schema
// applock the stores' DDL takes (asyncresponse:ddl:{schema}), the migrations table if missing, the recorded
// versions re-read under the lock, then either the version-1 baseline record or the next pending version and
// its record; commit. A second session waits on the applock and then finds nothing left to do.
// A deferrable version (migration-plan.ts: index builds and drops the app runs without) is run apart, so no build
// holds the schema applock that every instance's schema step takes (review M4): its autocommit statements outside any
// transaction, its builds in a transaction under the transport table's applock (5 s: another session building it
// makes this attempt fail, not wait), committed at once; then its record in a short transaction under the schema
// applock. A build that committed but was not recorded is found by its guard next time and recorded.
// Catalog reads (which tables of version 1 exist, the transport table's shape) run before the transaction:
// catalog reads inside DDL transactions deadlocked (spec §3.2), and version 1 is idempotent, so a table
// created meanwhile by another session costs nothing.

import type * as sql from 'mssql';
import {
  newerThanAppMessage,
  upToDateReport,
  planMigrations,
  requiredPending,
  type ApplyReport,
  type ApplyOptions,
  type Migration,
  type MigrationPlan,
  type SchemaLocation,
  type SchemaMigrator,
  type SchemaState,
} from '../migration-plan';
import { DDL_SCHEMA_LOCK_TIMEOUT_MS, INDEX_BUILD_COMMAND_TIMEOUT_S } from '../options';
import type { SchemaNames } from '../schema-names';
import { newRequest } from './connection';
import { withPoolGuard, type PoolHolder } from './pool-guard';
import { MIGRATION_LOCK_TIMEOUT_MS, migrationsTable, sqlServerMigrations, sqlServerRunnerStatements } from './migrations';
import { rollbackQuietly, rows } from './store-common';
import type { Statement } from './statements';
import { serverCapabilities, serverVersionProblem, type ServerCapabilities } from './server-version';
import { evaluateTransportCatalog, readTransportCatalog, VERIFICATION_FIX_HINT } from './verify';

type Step = 'baseline' | { applied: number } | { done: number } | { deferred: Migration };

export class SqlServerMigrator implements SchemaMigrator {
  readonly location: SchemaLocation;
  readonly migrations: readonly Migration[];
  private readonly sql: ReturnType<typeof sqlServerRunnerStatements>;
  private serverChecked = false;

  constructor(
    private readonly holder: PoolHolder,
    private readonly names: SchemaNames,
  ) {
    this.location = { schema: names.schema, transportTable: names.transport.table, migrationsTable: names.migrationsTable };
    this.migrations = sqlServerMigrations(names);
    this.sql = sqlServerRunnerStatements(names);
  }

  status(): Promise<MigrationPlan> {
    return withPoolGuard(this.holder, async (pool) => {
      await this.checkServer(pool);
      const recorded = await this.recorded(pool);
      return planMigrations(this.migrations, { recorded, baseline: recorded.length > 0 ? 'present' : await this.baseline(pool) });
    });
  }

  async apply(options: ApplyOptions = {}): Promise<ApplyReport> {
    const first = await this.status();
    const current = upToDateReport(first, this.location);
    if (current) return current;
    // only deferrable versions pending and the caller wants the required ones: nothing to do, no lock taken
    if (options.requiredOnly && !first.recordBaseline && requiredPending(first).length === 0) {
      return { from: first.current, to: first.current, baselineRecorded: false, applied: [] };
    }
    let from: number | undefined;
    let baselineRecorded = false;
    const applied: number[] = [];
    for (;;) {
      const step = await withPoolGuard(this.holder, (pool) => this.step(pool, (current) => (from ??= current), options));
      if (step === 'baseline') baselineRecorded = true;
      else if ('applied' in step) applied.push(step.applied);
      else if ('deferred' in step) applied.push(await withPoolGuard(this.holder, (pool) => this.deferredStep(pool, step.deferred)));
      else return { from: from ?? step.done, to: step.done, baselineRecorded, applied };
    }
  }

  private async step(pool: sql.ConnectionPool, onCurrent: (current: number) => void, options: ApplyOptions): Promise<Step> {
    // before the transaction: the catalog probe (only consulted when nothing is recorded yet)
    const baseline = (await this.recorded(pool)).length > 0 ? 'present' : await this.baseline(pool);
    const tx = pool.transaction();
    try {
      await tx.begin();
      // the lock batch may wait DDL_SCHEMA_LOCK_TIMEOUT_MS: a longer request timeout lets its own THROW 51000 answer
      await this.run(tx, this.sql.lock, {}, DDL_SCHEMA_LOCK_TIMEOUT_MS + 30_000);
      await this.run(tx, this.sql.ensureMigrationsTable, {});
      const recorded = rows(await this.run(tx, this.sql.recordedVersions, {})).map((r) => Number(r.version));
      const plan = planMigrations(this.migrations, { recorded, baseline } satisfies SchemaState);
      onCurrent(plan.current);
      if (plan.newerThanApp) throw new Error(newerThanAppMessage(plan, this.location));
      let step: Step;
      if (plan.recordBaseline) {
        await this.run(tx, this.sql.recordVersion, { version: 1, name: `${this.migrations[0]!.name} (baseline: found in place)` });
        step = 'baseline';
      } else if (plan.pending[0]?.deferrable) {
        // run apart, after this transaction releases the schema applock (or not at all when only required ones were
        // asked for and no required version follows it)
        step = options.requiredOnly && requiredPending(plan).length === 0 ? { done: plan.current } : { deferred: plan.pending[0] };
      } else if (plan.pending[0]) {
        const next = plan.pending[0];
        for (const s of next.statements) {
          // index builds grow with the table: the hour-long timeout of the stores' index phase
          await this.run(tx, { text: s.text, params: {} }, {}, INDEX_BUILD_COMMAND_TIMEOUT_S * 1000);
        }
        await this.run(tx, this.sql.recordVersion, { version: next.version, name: next.name });
        step = { applied: next.version };
      } else step = { done: plan.current };
      await tx.commit();
      return step;
    } catch (err) {
      await rollbackQuietly(tx);
      throw err;
    }
  }

  /** A deferrable version, apart from the schema applock (see the header); answers its version once recorded. */
  private async deferredStep(pool: sql.ConnectionPool, m: Migration): Promise<number> {
    for (const s of m.statements.filter((x) => x.autocommit)) {
      await this.run(pool, { text: s.text, params: {} }, {}, INDEX_BUILD_COMMAND_TIMEOUT_S * 1000);
    }
    const builds = m.statements.filter((x) => !x.autocommit);
    if (builds.length > 0) {
      const tx = pool.transaction();
      try {
        await tx.begin();
        await this.run(tx, this.sql.tableLock, {}, MIGRATION_LOCK_TIMEOUT_MS + 30_000);
        for (const s of builds) await this.run(tx, { text: s.text, params: {} }, {}, INDEX_BUILD_COMMAND_TIMEOUT_S * 1000);
        await tx.commit();
      } catch (err) {
        await rollbackQuietly(tx);
        throw err;
      }
    }
    const tx = pool.transaction();
    try {
      await tx.begin();
      await this.run(tx, this.sql.lock, {}, DDL_SCHEMA_LOCK_TIMEOUT_MS + 30_000);
      const recorded = rows(await this.run(tx, this.sql.recordedVersions, {})).map((r) => Number(r.version));
      if (!recorded.includes(m.version)) await this.run(tx, this.sql.recordVersion, { version: m.version, name: m.name });
      await tx.commit();
    } catch (err) {
      await rollbackQuietly(tx);
      throw err;
    }
    return m.version;
  }

  /** Once per migrator: a server too old for the schema fails here, with what is needed, before any DDL. */
  private async checkServer(pool: sql.ConnectionPool): Promise<void> {
    if (this.serverChecked) return;
    const problem = serverVersionProblem(rows(await this.run(pool, serverCapabilities, {}))[0] as ServerCapabilities | undefined);
    if (problem) throw new Error(problem);
    this.serverChecked = true;
  }

  private async recorded(pool: sql.ConnectionPool): Promise<number[]> {
    const exists = rows(await this.run(pool, this.sql.migrationsTableExists, { table: migrationsTable(this.names) }));
    if (!exists[0]?.present) return [];
    return rows(await this.run(pool, this.sql.recordedVersions, {})).map((r) => Number(r.version));
  }

  /** Version 1's tables when nothing is recorded: all there (and the transport table verified), none, or some. */
  private async baseline(pool: sql.ConnectionPool): Promise<SchemaState['baseline']> {
    const [t1, t2, t3, t4] = this.sql.baselineTableNames;
    const found = rows(await this.run(pool, this.sql.baselineTables, { t1, t2, t3, t4 })).length;
    if (found === 0) return 'absent';
    if (found < this.sql.baselineTableNames.length) return 'partial';
    const transport = evaluateTransportCatalog(await readTransportCatalog(pool, this.names.transport), this.names.transport, {
      autoCreate: false,
      skipIndexes: true,
      versionOneOnly: true,
    });
    if (transport.problems.length > 0) {
      throw new Error(
        `the tables of version 1 are in schema '${this.names.schema}' but not recorded, and the transport table does not ` +
          `have the expected shape, so it is not recorded as version 1: ${transport.problems.join(' ')} ${VERIFICATION_FIX_HINT}`,
      );
    }
    return 'present';
  }

  private run<P extends string>(
    parent: sql.ConnectionPool | sql.Transaction,
    statement: Statement<P>,
    values: Record<P, unknown>,
    timeoutMs?: number,
  ): Promise<sql.IResult<unknown>> {
    const request = newRequest(parent, timeoutMs);
    for (const name of Object.keys(statement.params) as P[]) request.input(name, statement.params[name], values[name]);
    return request.query(statement.text);
  }
}
