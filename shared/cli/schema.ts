// npm run schema -- print --dialect sqlserver|postgres [--schema S] [--table T]
//   prints the DDL for operators whose migrations own the schema.
// npm run schema -- apply
//   creates (or verifies) the schema with the configured store, as the deployer's identity, so the app's
//   own identity can run with AUTO_CREATE_SCHEMA=false and data rights only.

import { loadConfig } from '../config';
import { consoleLogger } from '../log';
import { transportNames, type Dialect } from '../sql/identifiers';
import { DEFAULT_TRANSPORT_TABLE } from '../stores/options';
import { openStores } from '../stores/open';
import { printPostgresSchema } from '../stores/postgres/ddl';
import { printSqlServerSchema } from '../stores/sqlserver/statements';
import { printSqlServerChannelSchema } from '../stores/sqlserver/channel-statements';
import { printPostgresChannelSchema } from '../stores/postgres/channel-statements';
import { DEFAULT_CHANNEL_TABLES } from '../channel/types';
import { channelNames } from '../sql/identifiers';

const USAGE = `usage:
  npm run schema -- print --dialect sqlserver|postgres [--schema NAME] [--table NAME]
  npm run schema -- apply        (uses the store settings: SQL_CONNECTION_STRING / SQL_SERVER / DATABASE_URL)`;

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
  const names = transportNames(schemaName, table ?? DEFAULT_TRANSPORT_TABLE, d);
  const channel = channelNames(schemaName, DEFAULT_CHANNEL_TABLES, d);
  return d === 'sqlserver'
    ? `${printSqlServerSchema(names)}
${printSqlServerChannelSchema(channel)}`
    : `${printPostgresSchema(names)}
${printPostgresChannelSchema(channel)}`;
}

async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if (args._ === 'print') {
    process.stdout.write(printSchema(args.dialect ?? '', args.schema, args.table));
    return 0;
  }
  if (args._ === 'apply') {
    const config = { ...loadConfig(), autoCreateSchema: true };
    const logger = consoleLogger('info');
    const stores = await openStores(config, logger);
    try {
      await stores.transport.ensureSchema();
      await stores.channel.ensureSchema();
      console.log(`schema ready on ${stores.transport.kind}: ${config.schema}.${config.transportTable} and the channel tables`);
    } finally {
      await stores.close();
    }
    return 0;
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
