// The schema-version check every store runs before its own create-or-verify step: with AUTO_CREATE_SCHEMA the
// pending migrations are applied (under the schema DDL lock), without it a database that is behind fails with
// the command to run; a database newer than the app is refused either way. Single-flight, latched on success.

import type { Logger } from '../log';
import { newerThanAppMessage, pendingMessage, type SchemaMigrator } from './migration-plan';

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

  private async check(): Promise<void> {
    const at = this.migrator.location;
    if (this.autoCreate) {
      const report = await this.migrator.apply();
      if (report.baselineRecorded) this.logger.info(`schema '${at.schema}': recorded the existing tables as version 1`);
      if (report.applied.length > 0) this.logger.info(`schema '${at.schema}': applied migration(s) ${report.applied.join(', ')}; now at version ${report.to}`);
    } else {
      const plan = await this.migrator.status();
      if (plan.newerThanApp) throw new Error(newerThanAppMessage(plan, at));
      if (plan.pending.length > 0) throw new Error(pendingMessage(plan, at));
    }
    this.done = true;
  }
}
