// The schema-version check every store runs before its own create-or-verify step: with AUTO_CREATE_SCHEMA the
// pending migrations are applied (under the schema DDL lock), without it a database that is behind fails with
// the command to run; a database newer than the app is refused either way. Single-flight, latched on success.
//
// Deferrable versions (index builds and drops the app runs correctly without: SQL Server's ready-set indexes, review
// M4) never hold the gate: with AUTO_CREATE_SCHEMA the required versions are applied and awaited, and the deferrable
// ones are then applied in the background (a failure, e.g. another instance building the same index, is logged and
// left to the next start or to `npm run schema -- apply`); without it they are named in a warning.

import type { Logger } from '../log';
import { APPLY_COMMAND, newerThanAppMessage, pendingMessage, requiredPending, type SchemaMigrator } from './migration-plan';

export class SchemaVersionGate {
  private done = false;
  private attempt?: Promise<void>;

  constructor(
    private readonly migrator: SchemaMigrator,
    private readonly autoCreate: boolean,
    private readonly logger: Logger,
  ) {}

  ensure(): Promise<void> {
    if (this.done) return Promise.resolve();
    this.attempt ??= this.check().finally(() => (this.attempt = undefined));
    return this.attempt;
  }

  /** The background apply of deferrable versions, while it runs (one per gate). */
  private deferred?: Promise<void>;

  private async check(): Promise<void> {
    const at = this.migrator.location;
    if (this.autoCreate) {
      const report = await this.migrator.apply({ requiredOnly: true });
      if (report.baselineRecorded) this.logger.info(`schema '${at.schema}': recorded the existing tables as version 1`);
      if (report.applied.length > 0) this.logger.info(`schema '${at.schema}': applied migration(s) ${report.applied.join(', ')}; now at version ${report.to}`);
      const latest = this.migrator.migrations.at(-1)?.version ?? 0;
      if (report.to < latest) this.applyDeferred(report.to, latest);
    } else {
      const plan = await this.migrator.status();
      if (plan.newerThanApp) throw new Error(newerThanAppMessage(plan, at));
      if (requiredPending(plan).length > 0) throw new Error(pendingMessage(plan, at));
      if (plan.pending.length > 0) {
        this.logger.warn(
          `schema '${at.schema}' is at version ${plan.current}; deferrable version(s) ${plan.pending.map((m) => m.version).join(', ')} ` +
            `(index builds the app runs without, slower) are pending: run \`${APPLY_COMMAND}\` as the deployer.`,
        );
      }
    }
    this.done = true;
  }

  private applyDeferred(from: number, latest: number): void {
    const at = this.migrator.location;
    this.deferred ??= this.migrator
      .apply()
      .then(
        (report) => {
          if (report.applied.length > 0) this.logger.info(`schema '${at.schema}': applied deferrable migration(s) ${report.applied.join(', ')}; now at version ${report.to}`);
        },
        (err: unknown) =>
          this.logger.warn(
            `schema '${at.schema}': deferrable migration(s) after version ${from} (up to ${latest}) were not applied now; the app runs ` +
              `without them, and the next start or \`${APPLY_COMMAND}\` applies them`,
            err,
          ),
      )
      .finally(() => (this.deferred = undefined));
  }

  /** Resolves once a background apply of deferrable versions (if any) ended: for tests and orderly shutdowns. */
  settled(): Promise<void> {
    return this.deferred ?? Promise.resolve();
  }
}
