// Every T-SQL text the app can send to SQL Server, collected from the statement builders themselves (not copied),
// so a statement added to a builder's map is checked without editing a test. To check a new kind of SQL (e.g.
// numbered migrations), add ONE entry to SQLSERVER_STATEMENT_SOURCES.

import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { printSchema } from '../../shared/cli/schema';
import type { ChannelNames } from '../../shared/channel/types';
import { channelNames, transportNames, type TransportNames } from '../../shared/sql/identifiers';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { channelAckSequenceMigration, channelStatements } from '../../shared/stores/sqlserver/channel-statements';
import { channelStats } from '../../shared/stores/sqlserver/channel-stats';
import { serverCapabilities } from '../../shared/stores/sqlserver/server-version';
import { transportStatements } from '../../shared/stores/sqlserver/statements';
import { topicStatements } from '../../shared/stores/sqlserver/topic-statements';
import { claimOutlook } from '../../shared/stores/sqlserver/outlook-statements';
import { scheduleStatements } from '../../shared/stores/sqlserver/schedule-statements';
import { jobControlStatements } from '../../shared/stores/sqlserver/job-control-statements';
import { waitingStatements } from '../../shared/stores/sqlserver/waiting-statements';
import { publishKeyedBatch, pruneDedupKeys } from '../../shared/stores/sqlserver/dedup-statements';
import { historyStatements } from '../../shared/stores/sqlserver/history-statements';
import { backOffQueue, claimLimited, limitedOutlook } from '../../shared/stores/sqlserver/limit-statements';
import { CALLBACK_QUEUE } from '../../shared/queue-names';
import { sqlServerMigrationStatements } from '../../shared/stores/sqlserver/migrations';
import { schemaNames, subscriptionsTableName } from '../../shared/stores/schema-names';
import { scriptBatches } from './tsql-grammar';
import { flowStatements } from '../../shared/stores/sqlserver/flow-statements';
import { announceCredential, announceProcedure, dropAnnounceProcedure } from '../../shared/stores/sqlserver/announce';
import { PROBE_SQL } from '../../probes/sqlserver';

/** One batch the app sends (or prints for an operator to run). */
export interface StatementText {
  /** stable key, `<source>.<statement>`: what an allowlist entry names */
  name: string;
  /** which representative names built it */
  variant: string;
  text: string;
}

/** Representative object names: the defaults, and custom ones (another schema, table and channel tables). */
export interface NameSet {
  variant: string;
  schema: string;
  table: string;
  transport: TransportNames;
  channel: ChannelNames;
}

function nameSet(
  variant: string,
  schema: string,
  table: string,
  channelTables: { recoveryTable: string; messageTable: string; subscriberTable: string } = DEFAULT_CHANNEL_TABLES,
): NameSet {
  return {
    variant,
    schema,
    table,
    transport: transportNames(schema, table, 'sqlserver'),
    channel: channelNames(schema, channelTables, 'sqlserver'),
  };
}

export const NAME_SETS: readonly NameSet[] = [
  nameSet('defaults', 'dbo', DEFAULT_TRANSPORT_TABLE),
  nameSet('custom', 'jobs', 'My_Queue_2', { recoveryTable: 'rec_state', messageTable: 'Chan_Msg', subscriberTable: 'chan_sub' }),
];

/** Each entry of a statement map (name → { text }) as a StatementText. */
function fromMap(source: string, variant: string, statements: Record<string, { text: string }>): StatementText[] {
  return Object.entries(statements).map(([name, statement]) => ({ name: `${source}.${name}`, variant, text: statement.text }));
}

export interface StatementSource {
  name: string;
  texts(names: NameSet): StatementText[];
}

export const SQLSERVER_STATEMENT_SOURCES: readonly StatementSource[] = [
  // the transport store's statements (publish, claim, settle, DDL phases, catalog snapshot, …)
  { name: 'transport', texts: (n) => fromMap('transport', n.variant, transportStatements(n.transport)) },
  // the topic statements of the transport store (fan-out publish, subscriptions upsert and list)
  { name: 'topics', texts: (n) => fromMap('topics', n.variant, topicStatements(n.transport, subscriptionsTableName(n.transport, 'sqlserver'))) },
  // the schedules table's statements (upsert, reads, due seek, the firing with its publish)
  { name: 'schedules', texts: (n) => fromMap('schedules', n.variant, scheduleStatements(schemaNames(n.transport, n.channel, 'sqlserver'))) },
  // the claim-outlook probe (queue mode: after a drain and at start-up)
  { name: 'outlook', texts: (n) => fromMap('outlook', n.variant, { claimOutlook: claimOutlook(n.transport) }) },
  // job and queue control: cancel, reschedule, pause and resume, the queue state read
  { name: 'job-control', texts: (n) => fromMap('job-control', n.variant, jobControlStatements(n.transport)) },
  // dedup keys and debounce: the keyed publish batch and the key prune
  { name: 'dedup', texts: (n) => fromMap('dedup', n.variant, { publishKeyedBatch: publishKeyedBatch(n.transport), pruneDedupKeys: pruneDedupKeys(n.transport) }) },
  // a queue's waiting jobs (GET /api/queues/{queue}/messages, the dashboard), one per state and order
  { name: 'waiting', texts: (n) => fromMap('waiting', n.variant, waitingStatements(n.transport)) },
  // job history: the ack into history, the lookup by id, the two searches, the prune, the auto-create DDL
  { name: 'history', texts: (n) => fromMap('history', n.variant, historyStatements(n.transport)) },
  // queue limits across instances and the forward backoff (issue 17 §2)
  {
    name: 'limits',
    texts: (n) =>
      fromMap('limits', n.variant, { claimLimited: claimLimited(n.transport), backOffQueue: backOffQueue(n.transport), limitedOutlook: limitedOutlook(n.transport) }),
  },
  // the channel store's statements (registrations, messages, subscribers, prunes, DDL, catalog snapshot)
  { name: 'channel', texts: (n) => fromMap('channel', n.variant, channelStatements(n.channel, { schema: n.transport.schema, table: n.transport.table, queue: CALLBACK_QUEUE })) },
  // the channel's counts for the dashboard and /api/stats
  { name: 'channel-stats', texts: (n) => [{ name: 'channel-stats.channelStats', variant: n.variant, text: channelStats(n.channel).text }] },
  // the durable-flow state store's statements (create, CAS, leases, prune, list variants, catalog snapshot)
  { name: 'flows', texts: (n) => fromMap('flows', n.variant, flowStatements(schemaNames(n.transport, n.channel, 'sqlserver'))) },
  // the migrator's server probe (SQL Server 2019+ for the UTF-8 collation)
  { name: 'server-version', texts: (n) => [{ name: 'server-version.serverCapabilities', variant: n.variant, text: serverCapabilities.text }] },
  // `npm run schema -- print --dialect sqlserver`, batch by batch as sqlcmd runs it
  {
    name: 'schema-print',
    texts: (n) =>
      scriptBatches(printSchema('sqlserver', n.schema, n.table)).map((text, i) => ({ name: `schema-print.batch${i + 1}`, variant: n.variant, text })),
  },
  // upgrade steps the app prints in its errors for an operator to run
  {
    name: 'migration',
    texts: (n) => [{ name: 'migration.channelAckSequence', variant: n.variant, text: channelAckSequenceMigration(n.channel) }],
  },
  // the opt-in announce of T-SQL publishes (`npm run schema -- announce`): the procedure, its credential, its removal
  {
    name: 'announce',
    texts: (n) => {
      const target = { queueUrl: 'https://appstorage.queue.core.windows.net/drain-requests' };
      return [
        { name: 'announce.procedure', variant: n.variant, text: announceProcedure(n.transport, target) },
        { name: 'announce.credential', variant: n.variant, text: announceCredential(target, 'Ar1!example-password') },
        { name: 'announce.drop', variant: n.variant, text: dropAnnounceProcedure(n.transport) },
      ];
    },
  },
  // `npm run probe:sqlserver`: what the T-SQL review's probes send besides the product's statements
  {
    name: 'probes',
    texts: (n) => {
      const t = `[${n.schema}].[${n.table}]`;
      const publish = `[${n.schema}].[${n.table}_publish]`;
      const copy = `[${n.schema}].[probe_m3]`;
      const texts: Record<string, string> = {
        locksHeld: PROBE_SQL.locksHeld(),
        logicalReads: PROBE_SQL.logicalReads(),
        insertDelayed: PROBE_SQL.insertDelayed(t),
        escalationAttempts: PROBE_SQL.escalationAttempts(t),
        clockTicks: PROBE_SQL.clockTicks(),
        twoKeyedPublishes: PROBE_SQL.twoKeyedPublishes(publish),
        statisticsXmlOn: PROBE_SQL.statisticsXml(true),
        statisticsXmlOff: PROBE_SQL.statisticsXml(false),
        leasedKeyed: PROBE_SQL.leasedKeyed(t),
        liveLeases: PROBE_SQL.liveLeases(t),
        optimizedLocking: PROBE_SQL.optimizedLocking(),
        insertReady: PROBE_SQL.insertReady(t),
        keyedPublish: PROBE_SQL.keyedPublish(publish),
        engineEdition: PROBE_SQL.engineEdition(),
        m3Copy: PROBE_SQL.m3Copy(copy),
        tableBytes: PROBE_SQL.tableBytes(copy),
        addNotNullColumn: PROBE_SQL.addNotNullColumn(copy),
        logBytes: PROBE_SQL.logBytes(),
        dropSchema: PROBE_SQL.dropSchema(n.schema),
        databaseName: PROBE_SQL.databaseName(),
        rcsi: PROBE_SQL.rcsi(),
        createDatabase: PROBE_SQL.createDatabase('asyncresponse_probe_0a1b2c_rcsi_on'),
        setRcsi: PROBE_SQL.setRcsi('asyncresponse_probe_0a1b2c_rcsi_on', true),
        singleUser: PROBE_SQL.singleUser('asyncresponse_probe_0a1b2c_rcsi_on'),
        dropDatabase: PROBE_SQL.dropDatabase('asyncresponse_probe_0a1b2c_rcsi_on'),
        version: PROBE_SQL.version(),
      };
      return Object.entries(texts).map(([name, text]) => ({ name: `probes.${name}`, variant: n.variant, text }));
    },
  },
  // the numbered schema migrations and their runner's statements (`npm run schema -- apply`, auto-create)
  {
    name: 'migrations',
    texts: (n) =>
      sqlServerMigrationStatements(schemaNames(n.transport, n.channel, 'sqlserver')).map((m) => ({ name: `migrations.${m.name}`, variant: n.variant, text: m.text })),
  },
];

/**
 * How each module of shared/stores/sqlserver/ that holds T-SQL reaches the sources above, or why it needs none.
 * The grammar test fails on a module with SQL text that is not listed here: a new module of statements must
 * be added as a source (and here) before the check counts as whole.
 */
export const SQLSERVER_MODULE_COVERAGE: Readonly<Record<string, string>> = {
  'statements.ts': 'transport',
  'topic-statements.ts': 'topics',
  'channel-statements.ts': 'channel, migration',
  'channel-stats.ts': 'channel-stats',
  'outlook-statements.ts': 'outlook',
  'schedule-statements.ts': 'schedules, migrations (version 8 creates the table)',
  'job-control-statements.ts': 'job-control, migrations (version 9 creates the queue state table)',
  'catalog-queries.ts': 'transport, flows (lines of their catalog snapshots)',
  'queue-state-sql.ts': 'transport, job-control, migrations (fragments of their claim, renewal and queue-state statements; version 10 adds the limit columns)',
  'waiting-statements.ts': 'waiting',
  'dedup-statements.ts': 'dedup, migrations (version 10 creates the table)',
  'history-statements.ts': 'history, migrations (version 11 creates the table)',
  'limit-statements.ts': 'limits',
  'ordering-sql.ts': 'transport, migrations (versions 15 and 16 add the column and its index)',
  'ready-set.ts': 'transport, limits, outlook, dedup, history, job-control, waiting, topics, migrations (fragments of their statements; versions 20–27)',
  'server-version.ts': 'server-version',
  'migrations.ts': 'migrations, schema-print',
  'outbox.ts': 'migrations (version 3 creates the procedures)',
  'announce.ts': 'announce',
  'catalog-common.ts': 'none: an ALTER DATABASE hint inside an error message, never sent',
  'verify.ts': 'none: CREATE INDEX hints inside warnings, never sent',
  'channel-verify.ts': 'none: ALTER hints inside error messages, never sent',
  'flow-statements.ts': 'flows, migrations (version 7 creates the table)',
  'flow-verify.ts': 'none: ALTER hints inside error messages, never sent',
  'connection.ts': 'none: a comment',
  'channel-store.ts': 'none: a comment',
};

/** Every statement text of every source, for every name set. */
export function allSqlServerStatementTexts(): StatementText[] {
  return NAME_SETS.flatMap((names) => SQLSERVER_STATEMENT_SOURCES.flatMap((source) => source.texts(names)));
}
