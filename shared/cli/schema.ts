// npm run schema -- print --dialect sqlserver|postgres [--schema S] [--table T]
//   prints the DDL of every schema version (and the migrations table) for operators whose tooling owns the schema.
// npm run schema -- status
//   prints the database's schema version and the versions this app would apply.
// npm run schema -- apply [--dry-run]
//   applies the pending versions in order under the schema DDL lock, as the deployer's identity, then verifies
//   the tables, so the app's own identity can run with AUTO_CREATE_SCHEMA=false and data rights only.
//   --dry-run prints the statements apply would run and changes nothing.
// npm run schema -- announce [--queue-url URL] [--timeout S] [--dry-run] [--remove]
//   SQL Server / Azure SQL, opt-in (issue 28): creates {table}_announce, the procedure a T-SQL publisher calls so its
//   job starts within seconds instead of at the safety-net timer (stores/sqlserver/announce.ts), and where the server
//   has sp_invoke_external_rest_endpoint the credential it signs with (the server's managed identity). The queue URL
//   defaults to the app's drain-request queue (AzureWebJobsStorage__queueServiceUri or __accountName, and
//   DRAIN_REQUEST_QUEUE). --remove drops the procedure.
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
import {
  announceCredential,
  announceProcedure,
  announceProcedureName,
  dropAnnounceProcedure,
  SYSTEM_ENDPOINT_PROCEDURE,
  type AnnounceTarget,
} from '../stores/sqlserver/announce';

const USAGE = `usage:
  npm run schema -- print --dialect sqlserver|postgres [--schema NAME] [--table NAME]
  npm run schema -- status            (the database's schema version and what is pending)
  npm run schema -- apply [--dry-run] (applies what is pending; --dry-run prints the statements and changes nothing;
                                       uses the store settings: SQL_CONNECTION_STRING / SQL_SERVER / DATABASE_URL)
  npm run schema -- announce [--queue-url https://<account>.queue.core.windows.net/<queue>] [--timeout S] [--dry-run] [--remove]
                                      (SQL Server / Azure SQL: the procedure a T-SQL publisher calls to start its job
                                       within seconds; the URL defaults to the app's drain-request queue)
  npm run schema -- --help`;

/** Each command and the options it takes (`true`: a flag without a value). */
const COMMANDS: Record<string, Record<string, boolean>> = {
  print: { dialect: false, schema: false, table: false },
  status: {},
  apply: { 'dry-run': true },
  announce: { 'queue-url': false, timeout: false, 'dry-run': true, remove: true },
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
  if (args._ === 'announce') {
    const settings = config();
    if (settings.store.kind !== 'sqlserver') {
      console.error('schema announce: SQL Server / Azure SQL only (a PostgreSQL publish function NOTIFYs, and a running instance turns that into a drain request)');
      return 2;
    }
    let plan: AnnouncePlan;
    try {
      plan = announcePlan(args, settings);
    } catch (err) {
      console.error(`schema announce: ${(err as Error).message}`);
      return 2;
    }
    if (args['dry-run'] === 'true') {
      console.log(formatAnnouncePlan(plan, '<a random password, created only when the database has no master key>'));
      return 0;
    }
    const stores = await openStores({ ...settings, autoCreateSchema: false }, logger);
    try {
      console.log(`store: ${storeLabel(settings.store)}`);
      const pool = (stores as OpenedStores & { pool?: import('mssql').ConnectionPool }).pool!;
      return await runAnnouncePlan(plan, (text) => pool.request().query(text).then((r) => r.recordset as Array<Record<string, unknown>> | undefined), (line) => console.log(line));
    } finally {
      await stores.close();
    }
  }
  console.error(USAGE);
  return 2;
}

export interface AnnouncePlan {
  remove: boolean;
  names: ReturnType<typeof transportNames>;
  target?: AnnounceTarget;
}

/** The queue URL the app's own settings name: the storage account's queue endpoint and DRAIN_REQUEST_QUEUE. */
export function appQueueUrl(env: Record<string, string | undefined>, connection: string, queueName: string): string | undefined {
  const uri = env[`${connection}__queueServiceUri`] ?? (env[`${connection}__accountName`] ? `https://${env[`${connection}__accountName`]}.queue.core.windows.net` : undefined);
  if (uri) return `${uri.replace(/\/+$/, '')}/${queueName}`;
  const text = env[connection];
  const endpoint = text && /(?:^|;)\s*QueueEndpoint=([^;]+)/i.exec(text)?.[1];
  if (endpoint) return `${endpoint.replace(/\/+$/, '')}/${queueName}`;
  const account = text && /(?:^|;)\s*AccountName=([^;]+)/i.exec(text)?.[1];
  return account ? `https://${account}.queue.core.windows.net/${queueName}` : undefined;
}

export function announcePlan(args: Record<string, string>, settings: AppConfig, env: Record<string, string | undefined> = process.env): AnnouncePlan {
  const names = transportNames(settings.schema, settings.transportTable, 'sqlserver');
  if (args.remove === 'true') return { remove: true, names };
  const queueUrl = args['queue-url'] ?? appQueueUrl(env, settings.drainRequests.connection, settings.drainRequests.queueName);
  if (!queueUrl) {
    throw new Error(
      `no queue URL: pass --queue-url https://<account>.queue.core.windows.net/${settings.drainRequests.queueName}, or set ` +
        `${settings.drainRequests.connection}__accountName (or __queueServiceUri) as the app has it`,
    );
  }
  const timeoutSeconds = args.timeout === undefined ? undefined : Number(args.timeout);
  const target: AnnounceTarget = { queueUrl, ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }) };
  announceProcedure(names, target); // validates the URL and the timeout before anything connects
  return { remove: false, names, target };
}

/** What announce runs, in order (the credential only where the server has the system procedure). */
export function formatAnnouncePlan(plan: AnnouncePlan, masterKeyPassword: string): string {
  if (plan.remove) return ['-- drops the announce procedure (the credential stays)', dropAnnounceProcedure(plan.names)].join('\n');
  return [
    `-- where ${SYSTEM_ENDPOINT_PROCEDURE} exists: the credential the call signs with (the server's managed identity)`,
    announceCredential(plan.target!, masterKeyPassword),
    '-- everywhere (a no-op where the system procedure is absent, so callers may call it on any version)',
    announceProcedure(plan.names, plan.target!),
  ].join('\n');
}

/** Runs the plan through `query` (one batch per call); returns the exit code. */
export async function runAnnouncePlan(
  plan: AnnouncePlan,
  query: (text: string) => Promise<Array<Record<string, unknown>> | undefined>,
  write: (line: string) => void,
): Promise<number> {
  const procedure = announceProcedureName(plan.names);
  if (plan.remove) {
    await query(dropAnnounceProcedure(plan.names));
    write(`dropped ${procedure} (if it existed); the database scoped credential stays`);
    return 0;
  }
  const available = (await query(`SELECT CASE WHEN OBJECT_ID(N'${SYSTEM_ENDPOINT_PROCEDURE}') IS NULL THEN 0 ELSE 1 END AS available;`))?.[0]?.available === 1;
  if (available) {
    await query(announceCredential(plan.target!));
    write(`credential [${plan.target!.credential ?? plan.target!.queueUrl}]: the server's managed identity for Storage (created if missing)`);
  }
  await query(announceProcedure(plan.names, plan.target!));
  write(`created ${procedure}: EXEC ${procedure} @queue = N'<queue>'; after a T-SQL publish, in or after its transaction`);
  write(
    available
      ? `it calls ${plan.target!.queueUrl}: give the server's identity "Storage Queue Data Message Sender" on the storage account (the Bicep does, with announceTSqlPublishes), and grant EXECUTE on the procedure to the publishers`
      : `this server has no ${SYSTEM_ENDPOINT_PROCEDURE} (SQL Server 2019/2022): the procedure is a no-op here, and a job published from T-SQL waits for the drain-worker timer (DRAIN_WORKER_SCHEDULE, every 5 minutes in queue mode; a shorter schedule shortens the wait)`,
  );
  return 0;
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
