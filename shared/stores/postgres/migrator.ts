// Runs the PostgreSQL schema versions (migrations.ts) on a pg pool or PGlite. Each step is one transaction
// that takes the schema advisory lock the stores' DDL takes (asyncresponse:ddl:{schema}), creates the
// migrations table if needed, re-reads the recorded versions and then either records the version-1 baseline
// or runs the next pending version and records it. A second session waits on the lock and then finds
// nothing left to do, so concurrent applies run each version once.

import {
  planMigrations,
  newerThanAppMessage,
  upToDateReport,
  type ApplyReport,
  type Migration,
  type MigrationPlan,
  type SchemaLocation,
  type SchemaMigrator,
  type SchemaState,
} from '../migration-plan';
import type { SchemaNames } from '../schema-names';
import type { PgClient, Queryable } from './client';
import { inspectTransportTable, advisoryKey, schemaLockResource } from './ddl';
import { migrationsTable, postgresMigrations, postgresRunnerStatements } from './migrations';

export class PostgresMigrator implements SchemaMigrator {
  readonly location: SchemaLocation;
  readonly migrations: readonly Migration[];
  private readonly sql: ReturnType<typeof postgresRunnerStatements>;

  constructor(
    private readonly client: PgClient,
    private readonly names: SchemaNames,
  ) {
    this.location = { schema: names.schema, transportTable: names.transport.table, migrationsTable: names.migrationsTable };
    this.migrations = postgresMigrations(names);
    this.sql = postgresRunnerStatements(names);
  }

  async status(): Promise<MigrationPlan> {
    return planMigrations(this.migrations, await this.readState(this.client));
  }

  async apply(): Promise<ApplyReport> {
    const first = await this.status();
    const current = upToDateReport(first, this.location);
    if (current) return current;
    let from: number | undefined;
    let baselineRecorded = false;
    const applied: number[] = [];
    for (;;) {
      const step = await this.client.transaction(async (tx) => {
        await tx.query(`SET LOCAL lock_timeout = '60s'`);
        await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(schemaLockResource(this.names.schema))]);
        await tx.query(this.sql.createSchema);
        await tx.query(this.sql.createMigrationsTable);
        const plan = planMigrations(this.migrations, await this.readState(tx));
        from ??= plan.current;
        if (plan.newerThanApp) throw new Error(newerThanAppMessage(plan, this.location));
        if (plan.recordBaseline) {
          const v1 = this.migrations[0]!;
          await tx.query(this.sql.recordVersion, [1, `${v1.name} (baseline: found in place)`]);
          return 'baseline' as const;
        }
        const next = plan.pending[0];
        if (!next) return plan.current;
        for (const s of next.statements) await tx.query(s.text);
        await tx.query(this.sql.recordVersion, [next.version, next.name]);
        return { applied: next.version };
      });
      if (step === 'baseline') baselineRecorded = true;
      else if (typeof step === 'number') return { from: from ?? step, to: step, baselineRecorded, applied };
      else applied.push(step.applied);
    }
  }

  /** Recorded versions, and (when none are) whether version 1's tables are all there, none, or some. */
  private async readState(q: Queryable): Promise<SchemaState> {
    const exists = await q.query<{ present: boolean }>(this.sql.migrationsTableExists, [migrationsTable(this.names)]);
    const recorded = exists.rows[0]?.present
      ? (await q.query<{ version: number }>(this.sql.recordedVersions)).rows.map((r) => Number(r.version))
      : [];
    if (recorded.length > 0) return { recorded, baseline: 'present' };
    const found = await q.query<{ name: string }>(this.sql.baselineTables, [this.sql.baselineTableNames]);
    const count = found.rows.length;
    if (count === 0) return { recorded, baseline: 'absent' };
    if (count < this.sql.baselineTableNames.length) return { recorded, baseline: 'partial' };
    // All there: record them only if the transport table (the one holding jobs) has the expected shape.
    const transport = await inspectTransportTable(q, this.names.transport, { versionOneOnly: true });
    if (transport.problems.length > 0) {
      throw new Error(
        `the tables of version 1 are in schema '${this.names.schema}' but not recorded, and the transport table does not have ` +
          `the expected shape, so it is not recorded as version 1:\n- ${transport.problems.join('\n- ')}`,
      );
    }
    return { recorded, baseline: 'present' };
  }
}
