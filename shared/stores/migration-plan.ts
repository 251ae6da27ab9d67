// Schema versions: what the migration runners of both dialects share, with no SQL and no I/O. A migration is a
// numbered list of named statements (one list per dialect: stores/postgres/migrations.ts,
// stores/sqlserver/migrations.ts); the runner records each applied version in the migrations table, in the
// same transaction as its statements, under the schema's DDL lock. Version 1 is the schema of the releases
// before the migrations table existed: a database that has those tables but no record is recorded at
// version 1 (its baseline) and only the later versions run.

export interface MigrationStatement {
  /** What the statement does, e.g. 'create transport table'; unique within its migration. */
  readonly name: string;
  readonly text: string;
  /**
   * Runs before the version's transaction, outside any transaction, so each statement inside it commits by itself (a
   * backfill in short batches on a live table). It must be idempotent: a version that fails afterwards runs it again.
   */
  readonly autocommit?: boolean;
}

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: readonly MigrationStatement[];
  /**
   * The app runs correctly without this version (an index build, or the drop of an index nothing of this release
   * reads): the schema gate does not wait for it, and the runner builds it without holding the schema DDL lock for the
   * build's length. A required version released after deferrable ones makes them required for that release: versions
   * run in order, so the gate builds the deferrable ones before it (requiredPending).
   */
  readonly deferrable?: boolean;
}

/**
 * The pending versions the app needs before it runs: every pending version up to the last required one (versions run
 * in order, so a deferrable version released before a required one is needed first); the deferrable tail is not.
 */
export function requiredPending(plan: MigrationPlan): readonly Migration[] {
  let last = -1;
  plan.pending.forEach((m, i) => {
    if (!m.deferrable) last = i;
  });
  return plan.pending.slice(0, last + 1);
}

/** What a runner reads before deciding (under the lock when applying). */
export interface SchemaState {
  /** Versions found in the migrations table; empty when the table is absent or empty. */
  readonly recorded: readonly number[];
  /** Version 1's tables, when nothing is recorded: all there (baseline), none, or some (v1 completes them). */
  readonly baseline: 'present' | 'absent' | 'partial';
}

export interface MigrationPlan {
  /** The version the database is at (0: empty; 1 for an unrecorded baseline). */
  readonly current: number;
  /** The newest version this app knows. */
  readonly latest: number;
  /** Version 1 is there but unrecorded: record it without running it. */
  readonly recordBaseline: boolean;
  /** Migrations to run, in order. */
  readonly pending: readonly Migration[];
  /** The database records a version this app does not know: refuse. */
  readonly newerThanApp: boolean;
}

/**
 * Versions must be 1, 2, 3… with unique statement names, and only deferrable versions may run autocommit statements:
 * checked once, when a list is built. A required version may follow deferrable ones (see requiredPending).
 */
export function checkMigrations(migrations: readonly Migration[]): readonly Migration[] {
  migrations.forEach((m, i) => {
    if (!m.deferrable && m.statements.some((st) => st.autocommit)) {
      throw new Error(`migration ${m.version} '${m.name}' has an autocommit statement; only deferrable versions may have them`);
    }
    if (m.version !== i + 1) throw new Error(`migration '${m.name}' has version ${m.version}; expected ${i + 1} (versions are 1, 2, 3… in order)`);
    if (m.statements.length === 0) throw new Error(`migration ${m.version} '${m.name}' has no statements`);
    const names = new Set(m.statements.map((s) => s.name));
    if (names.size !== m.statements.length) throw new Error(`migration ${m.version} '${m.name}' has two statements with one name`);
  });
  return migrations;
}

export function planMigrations(migrations: readonly Migration[], state: SchemaState): MigrationPlan {
  const latest = migrations.length === 0 ? 0 : migrations[migrations.length - 1]!.version;
  const recorded = [...new Set(state.recorded)].sort((a, b) => a - b);
  const maxRecorded = recorded.length === 0 ? 0 : recorded[recorded.length - 1]!;
  const gaps = Array.from({ length: maxRecorded }, (_, i) => i + 1).filter((v) => !recorded.includes(v));
  if (gaps.length > 0) {
    throw new Error(
      `the migrations table records version ${maxRecorded} but not version(s) ${gaps.join(', ')}: it was edited by hand ` +
        'or written by another tool; restore its rows (version, name, applied_at) before applying migrations.',
    );
  }
  const recordBaseline = recorded.length === 0 && state.baseline === 'present';
  const current = recordBaseline ? 1 : maxRecorded;
  return {
    current,
    latest,
    recordBaseline,
    pending: migrations.filter((m) => m.version > current),
    newerThanApp: current > latest,
  };
}

/** Where a message points: the schema and the transport table name the settings give. */
export interface SchemaLocation {
  schema: string;
  transportTable: string;
  migrationsTable: string;
}

export const APPLY_COMMAND = 'npm run schema -- apply';

/**
 * The start of every apply(): refuses a schema newer than the app, and answers the common case (every instance
 * start with AUTO_CREATE_SCHEMA: up to date) without a lock or DDL; undefined when there is work to do.
 */
export function upToDateReport(plan: MigrationPlan, at: SchemaLocation): ApplyReport | undefined {
  if (plan.newerThanApp) throw new Error(newerThanAppMessage(plan, at));
  if (plan.recordBaseline || plan.pending.length > 0) return undefined;
  return { from: plan.current, to: plan.current, baselineRecorded: false, applied: [] };
}

export function newerThanAppMessage(plan: MigrationPlan, at: SchemaLocation): string {
  return (
    `the database schema '${at.schema}' is at version ${plan.current} (table ${at.migrationsTable}), newer than this app, ` +
    `which knows versions up to ${plan.latest}. Refusing to run against it: deploy the app release that created ` +
    `version ${plan.current} (or a newer one).`
  );
}

/** AUTO_CREATE_SCHEMA=false and versions are pending: the exact command the deployer runs. */
export function pendingMessage(plan: MigrationPlan, at: SchemaLocation): string {
  const what = plan.pending.map((m) => `${m.version} ${m.name}`).join('; ');
  const from = plan.current === 0 ? 'has no AsyncResponse tables yet' : `is at version ${plan.current}`;
  return (
    `the database schema '${at.schema}' ${from}; this app needs version ${plan.latest} (pending: ${what}). ` +
    `Run \`${APPLY_COMMAND}\` as the deployer with this app's store settings (the same SQL_CONNECTION_STRING / ` +
    `SQL_SERVER + SQL_DATABASE / DATABASE_URL, SQL_SCHEMA=${at.schema}, TRANSPORT_TABLE=${at.transportTable}), ` +
    'or set AUTO_CREATE_SCHEMA=true.'
  );
}

/** The text `npm run schema -- status` prints. */
export function formatStatus(plan: MigrationPlan, at: SchemaLocation): string {
  const lines = [`schema '${at.schema}' (migrations table ${at.migrationsTable})`];
  lines.push(
    plan.current === 0
      ? 'version: none (no AsyncResponse tables yet)'
      : `version: ${plan.current}${plan.recordBaseline ? ' (tables of version 1 found, not yet recorded: apply records them as the baseline)' : ''}`,
  );
  lines.push(`this app: version ${plan.latest}`);
  if (plan.newerThanApp) lines.push(`NEWER THAN THIS APP: ${newerThanAppMessage(plan, at)}`);
  else if (plan.pending.length === 0) lines.push('pending: none (up to date)');
  else {
    lines.push(`pending: ${plan.pending.length} (run \`${APPLY_COMMAND}\`)`);
    for (const m of plan.pending) lines.push(`  ${m.version} ${m.name}${m.deferrable ? ' (deferrable: the app runs without it)' : ''}`);
  }
  return lines.join('\n');
}

/** What one apply did. */
export interface ApplyReport {
  from: number;
  to: number;
  baselineRecorded: boolean;
  applied: number[];
}

export interface ApplyOptions {
  /** Stop after the last required pending version (the schema gate: what the app needs, nothing it can do without). */
  requiredOnly?: boolean;
}

/** The dialect runners (stores/postgres/migrator.ts, stores/sqlserver/migrator.ts). */
export interface SchemaMigrator {
  readonly location: SchemaLocation;
  readonly migrations: readonly Migration[];
  /** Reads the state without locking or creating anything. */
  status(): Promise<MigrationPlan>;
  /**
   * Applies what is pending, one migration per transaction under the schema DDL lock; refuses a newer database. A
   * runner whose dialect has no deferrable versions may ignore the options.
   */
  apply(options?: ApplyOptions): Promise<ApplyReport>;
}
