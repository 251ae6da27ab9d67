// PostgreSQL only: publishes and response inserts NOTIFY at commit; a listener in another session wakes the
// right queue / correlation id at once. Delayed rows and duplicates notify nothing.
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { silentLogger } from '../../shared/log';
import { channelNames, transportNames } from '../../shared/sql/identifiers';
import { channelNotifyPrefix } from '../../shared/stores/postgres/channel-statements';
import { PostgresChannelStore } from '../../shared/stores/postgres/channel-store';
import { pgPoolClient, type PgClient } from '../../shared/stores/postgres/client';
import { startNotifyListener, type NotifyListener } from '../../shared/stores/postgres/notify-listener';
import { notifyPrefix } from '../../shared/stores/postgres/statements';
import { PostgresTransportStore } from '../../shared/stores/postgres/store';
import { eventually, message } from '../support/messages';
import { newSchema } from './fixtures';

const PG_URL = process.env.PG_URL;
if (!PG_URL) console.warn('[contract:postgres-notify] skipped: PG_URL is not set');

describe.skipIf(!PG_URL)('[postgres] NOTIFY wake across sessions', () => {
  const schema = newSchema();
  const table = 'asyncresponse_transport_messages';
  let client: PgClient;
  let transport: PostgresTransportStore;
  let channel: PostgresChannelStore;
  let listener: NotifyListener;
  const queues: string[] = [];
  const correlations: string[] = [];

  beforeAll(async () => {
    client = pgPoolClient(new Pool({ connectionString: PG_URL, max: 2 }));
    transport = new PostgresTransportStore(client, { schema, table, autoCreateSchema: true, logger: silentLogger });
    const names = channelNames(schema, DEFAULT_CHANNEL_TABLES, 'postgres');
    channel = new PostgresChannelStore(client, { names, autoCreateSchema: true, logger: silentLogger });
    listener = startNotifyListener(
      PG_URL!,
      {
        transport: { prefix: notifyPrefix(transportNames(schema, table, 'postgres')), wake: (q) => queues.push(q) },
        channel: { prefix: channelNotifyPrefix(names), wake: (c) => correlations.push(c) },
      },
      silentLogger,
    );
    await listener.ready;
  });

  afterAll(async () => {
    await listener?.close();
    await client?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client?.close();
  });

  // A listener gets notifications in commit order, so once a marker committed last has arrived, every
  // notification of the statements before it has too: what is missing then was never sent (no fixed pause).
  const marked = async (list: string[], marker: string, label: string) => {
    await eventually(() => list.includes(marker), label);
    return list.filter((x) => x !== marker);
  };

  it('an immediate publish wakes its queue once per statement; delayed rows and duplicates do not', async () => {
    const m = message('nq-1');
    await transport.publish([m, message('nq-1'), message('nq-2')]);
    await transport.publish([message('nq-delayed', {}, { delayMs: 60_000 })]);
    await transport.publish([m]);
    await transport.publish([message('nq-marker-1')]);
    expect((await marked(queues, 'nq-marker-1', 'the marker publish to wake its queue')).sort()).toEqual(['nq-1', 'nq-2']);
  });

  it('a new response wakes its correlation id; a duplicate insert does not', async () => {
    const id = randomUUID();
    await channel.insertMessage(id, 'Corr-X', '{}', 60_000);
    await channel.insertMessage(id, 'Corr-X', '{}', 60_000);
    await channel.insertMessage(randomUUID(), 'Corr-marker', '{}', 60_000);
    expect(await marked(correlations, 'Corr-marker', 'the marker response to wake its correlation id')).toEqual(['Corr-X']);
  });

  it('notifications of another schema are not delivered here', async () => {
    const other = new PostgresTransportStore(client, { schema: newSchema(), table, autoCreateSchema: true, logger: silentLogger });
    queues.length = 0;
    await other.publish([message('nq-other')]);
    await transport.publish([message('nq-marker-3')]);
    expect(await marked(queues, 'nq-marker-3', 'the marker publish to wake its queue')).toEqual([]);
    await client.query(`DROP SCHEMA IF EXISTS "${other.names.schema}" CASCADE`);
  });
});
