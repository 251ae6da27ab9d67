// The version logic both dialect runners share (pure): ordering, pending detection, the version-1 baseline,
// refusal of a newer database, the status text and messages, and the gate the stores run before their schema step.
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../shared/log';
import {
  checkMigrations,
  formatStatus,
  newerThanAppMessage,
  pendingMessage,
  planMigrations,
  requiredPending,
  type ApplyOptions,
  type ApplyReport,
  type Migration,
  type MigrationPlan,
  type SchemaMigrator,
} from '../../shared/stores/migration-plan';
import { SchemaVersionGate } from '../../shared/stores/schema-gate';

const m = (version: number, name = `m${version}`): Migration => ({ version, name, statements: [{ name: 'one', text: `-- ${version}` }] });
const three = [m(1, 'base'), m(2, 'subs'), m(3, 'more')];
const at = { schema: 's', transportTable: 'jobs', migrationsTable: 'jobs_migrations' };
const versions = (p: MigrationPlan) => p.pending.map((x) => x.version);

describe('migration plan', () => {
  it('a list must be numbered 1, 2, 3… with statements of distinct names', () => {
    expect(checkMigrations(three)).toBe(three);
    expect(() => checkMigrations([m(1), m(3)])).toThrow(/has version 3; expected 2/);
    expect(() => checkMigrations([m(2)])).toThrow(/expected 1/);
    expect(() => checkMigrations([{ version: 1, name: 'x', statements: [] }])).toThrow(/no statements/);
    expect(() => checkMigrations([{ version: 1, name: 'x', statements: [{ name: 'a', text: '1' }, { name: 'a', text: '2' }] }])).toThrow(/two statements with one name/);
    // only deferrable versions (index builds the app runs without) may run statements in autocommit; a required version
    // may follow deferrable ones, which then are required too (versions run in order)
    const mixed = checkMigrations([m(1), { ...m(2), deferrable: true }, m(3), { ...m(4), deferrable: true }]);
    expect(requiredPending(planMigrations(mixed, { recorded: [1], baseline: 'absent' })).map((x) => x.version)).toEqual([2, 3]);
    expect(requiredPending(planMigrations(mixed, { recorded: [1, 2, 3], baseline: 'absent' }))).toEqual([]);
    expect(() => checkMigrations([m(1), { version: 2, name: 'x', statements: [{ name: 'a', text: '1', autocommit: true }] }])).toThrow(/only deferrable versions may have them/);
    expect(checkMigrations([m(1), { ...m(2), deferrable: true, statements: [{ name: 'a', text: '1', autocommit: true }] }])).toHaveLength(2);
    const plan = planMigrations([m(1), m(2), { ...m(3), deferrable: true }], { recorded: [1], baseline: 'absent' });
    expect(requiredPending(plan).map((x) => x.version)).toEqual([2]);
    expect(formatStatus(plan, at)).toContain('  3 m3 (deferrable: the app runs without it)');
  });

  it('an empty database: every version pending, in order', () => {
    const p = planMigrations(three, { recorded: [], baseline: 'absent' });
    expect(p).toMatchObject({ current: 0, latest: 3, recordBaseline: false, newerThanApp: false });
    expect(versions(p)).toEqual([1, 2, 3]);
  });

  it("today's release (version 1 tables, nothing recorded): record the baseline, then 2 and 3", () => {
    const p = planMigrations(three, { recorded: [], baseline: 'present' });
    expect(p).toMatchObject({ current: 1, recordBaseline: true });
    expect(versions(p)).toEqual([2, 3]);
  });

  it('some of version 1 present: version 1 runs (its statements are idempotent), no baseline', () => {
    const p = planMigrations(three, { recorded: [], baseline: 'partial' });
    expect(p).toMatchObject({ current: 0, recordBaseline: false });
    expect(versions(p)).toEqual([1, 2, 3]);
  });

  it('recorded versions decide, in any row order; the tables are not consulted', () => {
    expect(versions(planMigrations(three, { recorded: [2, 1], baseline: 'absent' }))).toEqual([3]);
    const done = planMigrations(three, { recorded: [1, 2, 3], baseline: 'present' });
    expect(done).toMatchObject({ current: 3, recordBaseline: false, newerThanApp: false });
    expect(versions(done)).toEqual([]);
  });

  it('a recorded version the app does not know: newer than the app', () => {
    const p = planMigrations(three, { recorded: [1, 2, 3, 4], baseline: 'present' });
    expect(p).toMatchObject({ current: 4, latest: 3, newerThanApp: true });
    expect(versions(p)).toEqual([]);
  });

  it('a gap in the recorded versions is refused (hand-edited table)', () => {
    expect(() => planMigrations(three, { recorded: [1, 3], baseline: 'present' })).toThrow(/records version 3 but not version\(s\) 2/);
  });

  it('status text: empty, baseline, pending, up to date, newer', () => {
    expect(formatStatus(planMigrations(three, { recorded: [], baseline: 'absent' }), at)).toBe(
      ["schema 's' (migrations table jobs_migrations)", 'version: none (no AsyncResponse tables yet)', 'this app: version 3', 'pending: 3 (run `npm run schema -- apply`)', '  1 base', '  2 subs', '  3 more'].join('\n'),
    );
    expect(formatStatus(planMigrations(three, { recorded: [], baseline: 'present' }), at)).toContain(
      'version: 1 (tables of version 1 found, not yet recorded: apply records them as the baseline)',
    );
    expect(formatStatus(planMigrations(three, { recorded: [1, 2, 3], baseline: 'present' }), at)).toContain('pending: none (up to date)');
    expect(formatStatus(planMigrations(three, { recorded: [1, 2, 3, 4], baseline: 'present' }), at)).toContain('NEWER THAN THIS APP');
  });

  it('messages name the versions, the command and the settings it needs', () => {
    const older = planMigrations(three, { recorded: [1], baseline: 'present' });
    expect(pendingMessage(older, at)).toBe(
      "the database schema 's' is at version 1; this app needs version 3 (pending: 2 subs; 3 more). Run `npm run schema -- apply` as the deployer " +
        "with this app's store settings (the same SQL_CONNECTION_STRING / SQL_SERVER + SQL_DATABASE / DATABASE_URL, SQL_SCHEMA=s, " +
        'TRANSPORT_TABLE=jobs), or set AUTO_CREATE_SCHEMA=true.',
    );
    const newer = planMigrations(three, { recorded: [1, 2, 3, 4, 5], baseline: 'present' });
    expect(newerThanAppMessage(newer, at)).toBe(
      "the database schema 's' is at version 5 (table jobs_migrations), newer than this app, which knows versions up to 3. " +
        'Refusing to run against it: deploy the app release that created version 5 (or a newer one).',
    );
  });
});

class FakeMigrator implements SchemaMigrator {
  readonly location = at;
  readonly migrations = three;
  applies = 0;
  statuses = 0;
  constructor(public recorded: number[], public failApply?: Error) {}
  async status() {
    this.statuses++;
    return planMigrations(three, { recorded: this.recorded, baseline: 'absent' });
  }
  async apply(): Promise<ApplyReport> {
    this.applies++;
    await new Promise((r) => setTimeout(r, 5));
    if (this.failApply) throw this.failApply;
    const plan = await this.status();
    if (plan.newerThanApp) throw new Error(newerThanAppMessage(plan, at));
    const applied = versions(plan);
    this.recorded = [1, 2, 3];
    return { from: plan.current, to: 3, baselineRecorded: false, applied };
  }
}

describe('schema version gate', () => {
  it('auto-create: one apply for concurrent callers, then latched', async () => {
    const migrator = new FakeMigrator([1]);
    const gate = new SchemaVersionGate(migrator, true, silentLogger);
    await Promise.all([gate.ensure(), gate.ensure(), gate.ensure()]);
    await gate.ensure();
    expect(migrator.applies).toBe(1);
    expect(migrator.recorded).toEqual([1, 2, 3]);
  });

  it('auto-create: a failed apply is not latched; the next call tries again', async () => {
    const migrator = new FakeMigrator([1], new Error('lock wait'));
    const gate = new SchemaVersionGate(migrator, true, silentLogger);
    await expect(gate.ensure()).rejects.toThrow('lock wait');
    migrator.failApply = undefined;
    await gate.ensure();
    expect(migrator.applies).toBe(2);
  });

  it('verify only: pending versions fail with the command (re-checked next time), never applied', async () => {
    const migrator = new FakeMigrator([1]);
    const gate = new SchemaVersionGate(migrator, false, silentLogger);
    await expect(gate.ensure()).rejects.toThrow(/is at version 1; this app needs version 3 .*Run `npm run schema -- apply`/);
    migrator.recorded = [1, 2, 3]; // the deployer applied
    await gate.ensure();
    await gate.ensure();
    expect(migrator.applies).toBe(0);
    expect(migrator.statuses).toBe(2);
  });

  it.each([true, false])('refuses a newer database (auto-create %s)', async (autoCreate) => {
    const gate = new SchemaVersionGate(new FakeMigrator([1, 2, 3, 4]), autoCreate, silentLogger);
    await expect(gate.ensure()).rejects.toThrow(/is at version 4 .*newer than this app, which knows versions up to 3/);
  });
});

/** Versions 1–2 required, 3 deferrable (an index build): apply({ requiredOnly }) stops before it, as the runners do. */
class DeferringMigrator implements SchemaMigrator {
  readonly location = at;
  readonly migrations: Migration[] = [m(1), m(2), { ...m(3), deferrable: true }];
  calls: Array<ApplyOptions | undefined> = [];
  release!: () => void;
  readonly building = new Promise<void>((r) => (this.release = r));
  constructor(public recorded: number[], public failDeferred?: Error) {}
  async status() {
    return planMigrations(this.migrations, { recorded: this.recorded, baseline: 'absent' });
  }
  async apply(options?: ApplyOptions): Promise<ApplyReport> {
    this.calls.push(options);
    const from = Math.max(0, ...this.recorded);
    if (options?.requiredOnly) {
      this.recorded = [...new Set([...this.recorded, 1, 2])];
      return { from, to: 2, baselineRecorded: false, applied: [1, 2].filter((n) => n > from) };
    }
    await this.building; // the build takes its time
    if (this.failDeferred) throw this.failDeferred;
    this.recorded = [1, 2, 3];
    return { from, to: 3, baselineRecorded: false, applied: [3].filter((n) => n > from) };
  }
}

describe('schema version gate and deferrable versions (review M4)', () => {
  it('auto-create: the gate waits for the required versions only; the deferrable ones are applied in the background', async () => {
    const migrator = new DeferringMigrator([1]);
    const infos: string[] = [];
    const gate = new SchemaVersionGate(migrator, true, { ...silentLogger, info: (msg: string) => void infos.push(msg) });
    await gate.ensure(); // resolves while the build still runs
    expect(migrator.recorded).toEqual([1, 2]);
    expect(migrator.calls).toEqual([{ requiredOnly: true }, undefined]);
    migrator.release();
    await gate.settled();
    expect(migrator.recorded).toEqual([1, 2, 3]);
    expect(infos.at(-1)).toBe("schema 's': applied deferrable migration(s) 3; now at version 3");
    await gate.ensure();
    expect(migrator.calls).toHaveLength(2); // latched
  });

  it('auto-create: a deferrable version that fails (another instance building it) is logged, and the app runs on', async () => {
    const migrator = new DeferringMigrator([1, 2], new Error('could not take the table lock'));
    const warnings: unknown[][] = [];
    const gate = new SchemaVersionGate(migrator, true, { ...silentLogger, warn: (...a: unknown[]) => void warnings.push(a) });
    await gate.ensure();
    migrator.release();
    await gate.settled();
    expect(migrator.recorded).toEqual([1, 2]);
    expect(String(warnings[0]![0])).toMatch(/deferrable migration\(s\) after version 2 \(up to 3\) were not applied now; the app runs without them/);
    expect(warnings[0]![1]).toEqual(new Error('could not take the table lock'));
  });

  it('verify only: pending deferrable versions are a warning naming the command, required ones a failure', async () => {
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (msg: string) => void warnings.push(msg) };
    await new SchemaVersionGate(new DeferringMigrator([1, 2]), false, logger).ensure();
    expect(warnings).toEqual([
      "schema 's' is at version 2; deferrable version(s) 3 (index builds the app runs without, slower) are pending: run `npm run schema -- apply` as the deployer.",
    ]);
    await expect(new SchemaVersionGate(new DeferringMigrator([1]), false, logger).ensure()).rejects.toThrow(/is at version 1; this app needs version 3 \(pending: 2 m2; 3 m3\)/);
  });
});
