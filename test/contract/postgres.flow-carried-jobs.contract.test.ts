// Jobs a flow-state write carries (stores/postgres/carried-jobs.ts): a run's create inserts its start job, and an
// awaited step's breadcrumb checkpoint its request, in the same statement, both or neither. These pin what is
// PostgreSQL's own: the rows' shape (claimable at once or scheduled), NOTIFY (sent, or not for a quiet job), and the
// refusal of a store not opened beside the transport. PGlite always, the PostgreSQL server with PG_URL (NOTIFY there
// only). The rule itself (a repeat, an id already there, a checkpoint that does not take) is every store's:
// flows.carried-jobs.contract.test.ts.
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { job, LEASE, state, TTL } from './carried-job-fixtures';
import { sleep } from '../support/messages';
import { silentLogger } from '../../shared/log';
import { channelNames } from '../../shared/sql/identifiers';
import { openPostgresStoresOn, type OpenedStores } from '../../shared/stores/open';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { openPglite, openPgPool } from '../../shared/stores/postgres/connect';
import { PostgresFlowStore } from '../../shared/stores/postgres/flow-store';
import type { PgClient } from '../../shared/stores/postgres/client';
import { TRANSPORT_NOTIFY_CHANNEL } from '../../shared/stores/postgres/notify-channel';
import { schemaNames } from '../../shared/stores/schema-names';
import { transportNames } from '../../shared/sql/identifiers';
import { newSchema, PG_SKIP_REASON } from './fixtures';


interface Target {
  name: 'pglite' | 'postgres';
  skip?: string;
  open(): Promise<{ client: PgClient; schema: string; drop(): Promise<void> }>;
}

const targets: Target[] = [
  { name: 'pglite', open: async () => ({ client: await openPglite('memory://'), schema: 'public', drop: async () => undefined }) },
  {
    name: 'postgres',
    ...(PG_SKIP_REASON ? { skip: PG_SKIP_REASON } : {}),
    open: async () => {
      const client = openPgPool(process.env.PG_URL!, { max: 4, min: 0, connectTimeoutMs: 10_000, requestTimeoutMs: 30_000 });
      const schema = newSchema();
      return { client, schema, drop: async () => void (await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)) };
    },
  },
];

for (const target of targets) {
  if (target.skip) console.info(`[${target.name}] carried jobs: skipped (${target.skip})`);
  describe.skipIf(target.skip !== undefined)(`[${target.name}] flow-state writes carry jobs`, () => {
    let opened: OpenedStores;
    let handle: Awaited<ReturnType<Target['open']>>;
    const t = () => `"${handle.schema}"."${DEFAULT_TRANSPORT_TABLE}"`;
    const row = async (id: string) =>
      (
        await handle.client.query<{ queue: string; payload_json: string; headers_json: string; state: number | null; due: boolean; priority: number }>(
          `SELECT queue, payload_json, headers_json, state, available_at <= clock_timestamp() AS due, priority FROM ${t()} WHERE id = $1`,
          [id],
        )
      ).rows[0];

    const setUp = async () => {
      handle ??= await target.open();
      opened ??= await openPostgresStoresOn(
        handle.client,
        { schema: handle.schema, table: DEFAULT_TRANSPORT_TABLE, autoCreateSchema: true, logger: silentLogger },
        { names: channelNames(handle.schema, DEFAULT_CHANNEL_TABLES, 'postgres'), autoCreateSchema: true, logger: silentLogger },
      );
      await opened.transport.ensureSchema();
      return opened;
    };
    afterAll(async () => {
      if (!handle) return;
      await handle.drop();
      await handle.client.close();
    });

    it('the stores opened beside the transport carry jobs', async () => {
      const { flows } = await setUp();
      expect(flows.carriesJobs).toBe(true);
    });

    it('a create inserts its jobs with the run: a claimable row and a scheduled one, in the transport\'s shape', async () => {
      const { flows, transport } = await setUp();
      const now = job('carry_now', { priority: 3 });
      const later = job('carry_now', { delayMs: 60_000 });
      const id = `run-${randomUUID()}`;
      expect(await flows.tryCreate(state(id), TTL, [now, later])).toBe(true);
      expect((await flows.load(id))?.status).toBe('Running');
      expect(await row(now.id)).toEqual({ queue: 'carry_now', payload_json: '{"n":1}', headers_json: '{"h":"v"}', state: null, due: true, priority: 3 });
      expect(await row(later.id)).toMatchObject({ state: 1, due: false });
      const claimed = await transport.claim('carry_now', 10, LEASE);
      expect(claimed.map((c) => c.id)).toEqual([now.id]);
      expect(claimed[0]!.headers).toEqual({ h: 'v' });
    });

    it('a flow store not opened beside the transport refuses jobs', async () => {
      await setUp();
      const names = schemaNames(transportNames(handle.schema, DEFAULT_TRANSPORT_TABLE, 'postgres'), channelNames(handle.schema, DEFAULT_CHANNEL_TABLES, 'postgres'), 'postgres');
      const alone = new PostgresFlowStore(handle.client, { names, logger: silentLogger });
      expect(alone.carriesJobs).toBe(false);
      await expect(alone.tryCreate(state(`run-${randomUUID()}`), TTL, [job('carry_alone')])).rejects.toThrow(/does not carry jobs/);
    });

    if (target.name !== 'postgres') console.info(`[${target.name}] carried jobs: the NOTIFY test skipped (PGlite is one session: no second connection listens)`);
    it.skipIf(target.name !== 'postgres')('NOTIFYs the queue of a claimable job, but not of a quiet one or a scheduled one', async () => {
      const { flows } = await setUp();
      const listener = new Client({ connectionString: process.env.PG_URL });
      await listener.connect();
      const heard: string[] = [];
      listener.on('notification', (n) => {
        if (n.payload?.startsWith(`${handle.schema}.`)) heard.push(n.payload.slice(handle.schema.length + 1 + DEFAULT_TRANSPORT_TABLE.length + 1));
      });
      try {
        await listener.query(`LISTEN ${TRANSPORT_NOTIFY_CHANNEL}`);
        await flows.tryCreate(state(`run-${randomUUID()}`), TTL, [job('carry_loud')]);
        await flows.tryCreate(state(`run-${randomUUID()}`), TTL, [job('carry_quiet', { quiet: true })]);
        await flows.tryCreate(state(`run-${randomUUID()}`), TTL, [job('carry_later', { delayMs: 60_000 })]);
        // a queue with a loud job beside a quiet one is told
        await flows.tryCreate(state(`run-${randomUUID()}`), TTL, [job('carry_mixed', { quiet: true }), job('carry_mixed')]);
        await sleep(200);
        expect(heard.sort()).toEqual(['carry_loud', 'carry_mixed']);
      } finally {
        await listener.end();
      }
    });
  });
}
