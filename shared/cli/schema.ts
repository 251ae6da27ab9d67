// npm run schema -- print --dialect sqlserver|postgres [--schema S] [--table T]
//   prints the DDL of every schema version (and the migrations table) for operators whose tooling owns the schema.
// npm run schema -- status
//   prints the database's schema version and the versions this app would apply.
// npm run schema -- apply
//   applies the pending versions in order under the schema DDL lock, as the deployer's identity, then verifies
//   the tables, so the app's own identity can run with AUTO_CREATE_SCHEMA=false and data rights only.

import { loadConfig, type AppConfig } from '../settings';
import { consoleLogger, type Logger } from '../log';
import { channelNames, transportNames, type Dialect } from '../sql/identifiers';
import { DEFAULT_TRANSPORT_TABLE } from '../stores/options';
import { formatStatus } from '../stores/migration-plan';
import { openStores, type OpenedStores } from '../stores/open';
import { printPostgresMigrations } from '../stores/postgres/migrations';
import { schemaNames } from '../stores/schema-names';
import { printSqlServerMigrations } from '../stores/sqlserver/migrations';
import { storeLabel } from './store-label';
import { DEFAULT_CHANNEL_TABLES } from '../channel/types';

const USAGE = `usage:
  npm run schema -- print --dialect sqlserver|postgres [--schema NAME] [--table NAME]
  npm run schema -- status       (the database's schema version and what is pending)
  npm run schema -- apply        (applies what is pending; uses the store settings: SQL_CONNECTION_STRING / SQL_SERVER / DATABASE_URL)`;

export function parseArgs(argv: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('--')) {
      const [k, v] = a.slice(2).split('=', 2) as [string, string | undefined];
      out[k] = v ?? argv[++i] ?? '';
    } else out._ = out._ ? `${out._} ${a}` : a;
  }
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

/** `status` and `apply` on opened stores; returns the exit code. */
export async function schemaCommand(command: 'status' | 'apply', stores: OpenedStores, write: (line: string) => void): Promise<number> {
  const at = stores.migrator.location;
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

async function main(argv: string[], config: () => AppConfig = loadConfig, logger: Logger = consoleLogger('info')): Promise<number> {
  const args = parseArgs(argv);
  if (args._ === 'print') {
    process.stdout.write(printSchema(args.dialect ?? '', args.schema, args.table));
    return 0;
  }
  if (args._ === 'apply' || args._ === 'status') {
    // status reads only; apply creates, whatever AUTO_CREATE_SCHEMA says (that is what the command is for)
    const settings = config();
    const stores = await openStores({ ...settings, autoCreateSchema: args._ === 'apply' }, logger);
    try {
      console.log(`store: ${storeLabel(settings.store)}`);
      return await schemaCommand(args._, stores, (line) => console.log(line));
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
