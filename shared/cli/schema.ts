// npm run schema -- print --dialect sqlserver|postgres [--schema S] [--table T]
//   prints the DDL of every schema version (and the migrations table) for operators whose tooling owns the schema.
// npm run schema -- status
//   prints the database's schema version and the versions this app would apply.
// npm run schema -- apply [--dry-run]
//   applies the pending versions in order under the schema DDL lock, as the deployer's identity, then verifies
//   the tables, so the app's own identity can run with AUTO_CREATE_SCHEMA=false and data rights only.
//   --dry-run prints the statements apply would run and changes nothing.
// Unknown commands and options are refused by name (exit 2): `apply --dry-rn` must never apply.

import { loadConfig, type AppConfig } from '../settings';
import { consoleLogger, type Logger } from '../log';
import { channelNames, transportNames, type Dialect } from '../sql/identifiers';
import { DEFAULT_TRANSPORT_TABLE } from '../stores/options';
import { formatStatus, type MigrationPlan, type SchemaLocation } from '../stores/migration-plan';
import { openStores, type OpenedStores } from '../stores/open';
import { printPostgresMigrations } from '../stores/postgres/migrations';
import { schemaNames } from '../stores/schema-names';
import { printSqlServerMigrations } from '../stores/sqlserver/migrations';
import { storeLabel } from './store-label';
import { nearestKey } from '../engine/option-keys';
import { DEFAULT_CHANNEL_TABLES } from '../channel/types';

const USAGE = `usage:
  npm run schema -- print --dialect sqlserver|postgres [--schema NAME] [--table NAME]
  npm run schema -- status            (the database's schema version and what is pending)
  npm run schema -- apply [--dry-run] (applies what is pending; --dry-run prints the statements and changes nothing;
                                       uses the store settings: SQL_CONNECTION_STRING / SQL_SERVER / DATABASE_URL)
  npm run schema -- --help`;

/** Each command and the options it takes (`true`: a flag without a value). */
const COMMANDS: Record<string, Record<string, boolean>> = {
  print: { dialect: false, schema: false, table: false },
  status: {},
  apply: { 'dry-run': true },
};

/** A command line the CLI refuses: the message names what was wrong. */
export class UsageError extends Error {}

function closest(word: string, known: readonly string[]): string | undefined {
  return nearestKey(word, known);
}

/** The parsed command line: `{ _: command, option: value }`; `help: 'true'` for --help / -h. Throws UsageError. */
export function parseArgs(argv: string[]): Record<string, string> {
  if (argv.some((a) => a === '--help' || a === '-h' || a === 'help')) return { help: 'true' };
  const out: Record<string, string> = {};
  const words: string[] = [];
  const options: Array<[string, string | undefined]> = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('-')) {
      const [k, v] = a.replace(/^--?/, '').split('=', 2) as [string, string | undefined];
      options.push([k, v]);
      // a value-taking option takes the next word when it has no `=value`
      const command = words[0] ?? argv.find((w) => !w.startsWith('-'));
      const spec = command ? COMMANDS[command] : undefined;
      if (v === undefined && spec?.[k] === false) options[options.length - 1] = [k, argv[++i]];
    } else words.push(a);
  }
  if (words.length === 0) throw new UsageError('no command given');
  const command = words[0]!;
  const spec = COMMANDS[command];
  if (!spec) {
    const hint = closest(command, Object.keys(COMMANDS));
    throw new UsageError(`unknown command '${command}'${hint ? ` (did you mean '${hint}'?)` : ''}`);
  }
  out._ = command;
  for (const [k, v] of options) {
    if (!(k in spec)) {
      const known = Object.keys(spec);
      const hint = closest(k, known);
      throw new UsageError(
        `unknown option --${k} for '${command}'${hint ? ` (did you mean --${hint}?)` : ''}; ` +
          (known.length ? `'${command}' takes ${known.map((o) => `--${o}`).join(', ')}` : `'${command}' takes no options`),
      );
    }
    if (spec[k] === true) {
      if (v !== undefined && v !== 'true') throw new UsageError(`--${k} takes no value (got '${v}')`);
      out[k] = 'true';
    } else {
      if (v === undefined || v === '') throw new UsageError(`--${k} needs a value`);
      out[k] = v;
    }
  }
  if (words.length > 1) throw new UsageError(`unexpected argument '${words[1]}' after '${command}'`);
  return out;
}

export function printSchema(dialect: string, schema?: string, table?: string): string {
  if (dialect !== 'sqlserver' && dialect !== 'postgres') throw new Error(`--dialect must be sqlserver or postgres\n${USAGE}`);
  const d = dialect as Dialect;
  const schemaName = schema ?? (d === 'sqlserver' ? 'dbo' : 'public');
  const names = schemaNames(
    transportNames(schemaName, table ?? DEFAULT_TRANSPORT_TABLE, d),
    channelNames(schemaName, DEFAULT_CHANNEL_TABLES, d),
    d,
  );
  return d === 'sqlserver' ? printSqlServerMigrations(names) : printPostgresMigrations(names);
}

/** What `apply --dry-run` prints: every statement apply would run, in order; nothing is executed. */
export function formatDryRun(plan: MigrationPlan, at: SchemaLocation, kind: string): string {
  const lines = [`dry run on ${kind}, schema '${at.schema}': nothing was changed.`];
  if (plan.newerThanApp) {
    lines.push(`apply would refuse: the database is at version ${plan.current}, newer than this app (version ${plan.latest}).`);
    return lines.join('\n');
  }
  if (plan.recordBaseline) lines.push(`apply would record the existing tables as version 1 (baseline), without running it.`);
  if (plan.pending.length === 0) {
    lines.push(`apply would run nothing: schema '${at.schema}' is at version ${plan.current}; it would then verify the tables.`);
    return lines.join('\n');
  }
  lines.push(
    `apply would run ${plan.pending.length} version(s), ${plan.current} → ${plan.latest}, each in its own transaction ` +
      `under the schema DDL lock, recording it in ${at.migrationsTable}:`,
  );
  for (const m of plan.pending) {
    lines.push('', `-- version ${m.version}: ${m.name}`);
    for (const st of m.statements) lines.push(`-- ${st.name}`, `${st.text.trim()}${/;\s*$/.test(st.text) ? '' : ';'}`);
  }
  return lines.join('\n');
}

/** `status`, `apply` and `apply --dry-run` on opened stores; returns the exit code. */
export async function schemaCommand(command: 'status' | 'apply' | 'dry-run', stores: OpenedStores, write: (line: string) => void): Promise<number> {
  const at = stores.migrator.location;
  if (command === 'dry-run') {
    const plan = await stores.migrator.status();
    write(formatDryRun(plan, at, stores.transport.kind));
    return plan.newerThanApp ? 1 : 0;
  }
  if (command === 'status') {
    const plan = await stores.migrator.status();
    write(formatStatus(plan, at));
    return plan.newerThanApp ? 1 : 0;
  }
  const report = await stores.migrator.apply();
  // the stores' own step: verification, and any transport index a crashed build left missing
  await stores.transport.ensureSchema();
  await stores.channel.ensureSchema();
  if (report.baselineRecorded) write(`recorded the existing tables of schema '${at.schema}' as version 1 (baseline)`);
  write(
    report.applied.length > 0
      ? `applied version(s) ${report.applied.join(', ')} on ${stores.transport.kind}: schema '${at.schema}' is at version ${report.to}`
      : `nothing to apply on ${stores.transport.kind}: schema '${at.schema}' is at version ${report.to}`,
  );
  return 0;
}

export async function main(argv: string[], config: () => AppConfig = loadConfig, logger: Logger = consoleLogger('info')): Promise<number> {
  let args: Record<string, string>;
  try {
    args = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`schema: ${err.message}\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  if (args._ === 'print') {
    process.stdout.write(printSchema(args.dialect ?? '', args.schema, args.table));
    return 0;
  }
  if (args._ === 'apply' || args._ === 'status') {
    // status and a dry run read only; apply creates, whatever AUTO_CREATE_SCHEMA says (that is what the command is for)
    const dryRun = args._ === 'apply' && args['dry-run'] === 'true';
    const settings = config();
    const stores = await openStores({ ...settings, autoCreateSchema: args._ === 'apply' && !dryRun }, logger);
    try {
      console.log(`store: ${storeLabel(settings.store)}`);
      return await schemaCommand(dryRun ? 'dry-run' : args._, stores, (line) => console.log(line));
    } finally {
      await stores.close();
    }
  }
  console.error(USAGE);
  return 2;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      console.error((err as Error).message);
      process.exit(1);
    },
  );
}
