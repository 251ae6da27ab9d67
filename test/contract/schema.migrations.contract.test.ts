// Schema versions on PGlite and the PostgreSQL server: a fresh database gets every version; a database created
// by the release before versioning (version 1, no migrations table) is recorded as version 1 and upgraded in
// place with its rows intact; a newer database is refused; AUTO_CREATE_SCHEMA=false names the command to run.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { schemaCommand } from '../../shared/cli/schema';
import type { OpenedStores } from '../../shared/stores/open';
import { message } from '../support/messages';
import { announce } from './fixtures';
import { closeSharedPglite, schemaDbFixtures, type SchemaDb } from './schema-fixtures';

afterAll(() => closeSharedPglite());

const MIGRATIONS = 'asyncresponse_transport_messages_migrations';
/** PostgreSQL's versions in order (one place to pin them: version N is VERSION_NAMES[N - 1]). */
const VERSION_NAMES = [
  'transport and channel tables',
  'topic subscriptions table',
  'publish functions (outbox)',
  'dead-letter source index',
  'durable flow state table',
  'schedules table',
  'queue state table',
  'dedup keys table',
  'job history table',
  'queue limits and backoff',
  'transport table fillfactor',
  'job priority',
  'ordering keys',
  'claim index',
  'lease roster table',
  'publish functions: priority and ordering key',
  'history priority and ordering key',
  'ready set',
  'drop indexes the ready set replaced',
  'flow steps table',
  'limited claim routine: rows by TID',
  'dead-letter index by time; created index dropped',
  'key backlog, key numbers and key indexes',
  'transport table autovacuum',
  'claim routines: one plan per session',
];
const LATEST = VERSION_NAMES.length;
/** Versions from..LATEST. */
const versionsFrom = (from: number) => VERSION_NAMES.map((_, i) => i + 1).filter((v) => v >= from);
const pendingFrom = (from: number, sep: string) => versionsFrom(from).map((v) => `${v} ${VERSION_NAMES[v - 1]}`).join(sep);
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const SUBSCRIPTIONS = 'asyncresponse_transport_messages_subscriptions';

async function recorded(d: SchemaDb) {
  const r = await d.client.query<{ version: number; name: string; applied_at: Date }>(
    `SELECT version, name, applied_at FROM "${d.schema}"."${MIGRATIONS}" ORDER BY version`,
  );
  return r.rows;
}

async function columns(d: SchemaDb, table: string) {
  const r = await d.client.query<{ column_name: string; data_type: string; is_nullable: string }>(
    `SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
    [d.schema, table],
  );
  return r.rows.map((c) => `${c.column_name} ${c.data_type} ${c.is_nullable === 'YES' ? 'NULL' : 'NOT NULL'}`);
}

async function statusText(stores: OpenedStores): Promise<{ code: number; text: string }> {
  const lines: string[] = [];
  const code = await schemaCommand('status', stores, (l) => lines.push(l));
  return { code, text: lines.join('\n') };
}

for (const fixture of schemaDbFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] schema versions`, { timeout: 120_000 }, () => {
    let d: SchemaDb | undefined;
    const opened: OpenedStores[] = [];
    const open = async (autoCreate: boolean) => {
      const s = await d!.open(autoCreate);
      opened.push(s);
      return s;
    };
    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
      await d?.close();
      d = undefined;
    });

    it('a fresh database gets every version in order, recorded with the database clock; a second apply does nothing', async () => {
      d = await fixture.create();
      const stores = await open(true);
      expect((await statusText(stores)).text).toContain('version: none (no AsyncResponse tables yet)');
      const before = (await d.client.query<{ now: Date }>('SELECT clock_timestamp() AS now')).rows[0]!.now;
      const lines: string[] = [];
      expect(await schemaCommand('apply', stores, (l) => lines.push(l))).toBe(0);
      expect(lines.join('\n')).toMatch(new RegExp(`applied version\\(s\\) ${versionsFrom(1).join(', ')} on (pglite|postgres): schema 'ar_test_\\w+' is at version ${LATEST}`));
      const rows = await recorded(d);
      expect(rows.map((r) => [r.version, r.name])).toEqual(VERSION_NAMES.map((name, i) => [i + 1, name]));
      for (const r of rows) expect(r.applied_at.getTime()).toBeGreaterThanOrEqual(before.getTime());
      expect(await columns(d, SUBSCRIPTIONS)).toEqual([
        'topic text NOT NULL',
        'subscription text NOT NULL',
        'created_at timestamp with time zone NOT NULL',
      ]);
      expect(await stores.migrator.apply()).toEqual({ from: LATEST, to: LATEST, baselineRecorded: false, applied: [] });
      const status = await statusText(stores);
      expect(status).toEqual({ code: 0, text: expect.stringContaining('pending: none (up to date)') });
    });

    it("upgrades a database created by today's release (version 1, no migrations table) in place, its rows intact", async () => {
      d = await fixture.create();
      const v1 = await d.createVersion1();
      const [job] = await v1.transport.publish([message('work', { keep: 'me' })]);
      const responseId = '0190a000-0000-7000-8000-000000000001';
      await v1.channel.insertMessage(responseId, 'corr-1', '{"payload":1}', 3_600_000);
      await v1.channel.saveRegistration('corr-1', '0190a000-0000-7000-8000-000000000002', '{"CallbackUrl":"https://x"}', 3_600_000, 32);
      expect(await columns(d, MIGRATIONS)).toEqual([]); // today's release has no migrations table

      const stores = await open(true);
      const status = await statusText(stores);
      expect(status.text).toContain('version: 1 (tables of version 1 found, not yet recorded: apply records them as the baseline)');
      expect(status.text).toContain(`pending: ${LATEST - 1} (run \`npm run schema -- apply\`)\n  ${pendingFrom(2, '\n  ')}`);

      const lines: string[] = [];
      await schemaCommand('apply', stores, (l) => lines.push(l));
      expect(lines).toEqual([
        expect.stringMatching(/^recorded the existing tables of schema 'ar_test_\w+' as version 1 \(baseline\)$/),
        expect.stringMatching(new RegExp(`applied version\\(s\\) ${versionsFrom(2).join(', ')} .* is at version ${LATEST}$`)),
      ]);
      expect((await recorded(d)).map((r) => [r.version, r.name])).toEqual([
        [1, 'transport and channel tables (baseline: found in place)'],
        ...versionsFrom(2).map((v) => [v, VERSION_NAMES[v - 1]]),
      ]);
      // the rows of version 1, read through the new release's stores
      const claimed = await stores.transport.claim('work', 10, 30_000);
      expect(claimed.map((c) => [c.id, c.payloadJson])).toEqual([[job!.id, '{"keep":"me"}']]);
      expect((await stores.channel.loadMessagesById('corr-1', [responseId])).map((m) => m.envelopeJson)).toEqual(['{"payload":1}']);
      expect((await stores.channel.loadRegistrations('corr-1')).map((r) => r.stateJson)).toEqual(['{"CallbackUrl":"https://x"}']);
      expect(await columns(d, SUBSCRIPTIONS)).toHaveLength(3);
    });

    it('auto-create applies pending versions at the first store operation (the gate both stores share)', async () => {
      d = await fixture.create();
      await d.createVersion1();
      const stores = await open(true);
      const [outcome] = await stores.transport.publish([message('q')]);
      expect(outcome!.inserted).toBe(true);
      await stores.channel.ensureSchema();
      expect((await recorded(d)).map((r) => r.version)).toEqual(versionsFrom(1));
    });

    it('AUTO_CREATE_SCHEMA=false: an older database fails with the exact command; once applied the stores run', async () => {
      d = await fixture.create();
      const empty = await open(false);
      await expect(empty.transport.publish([message('q')])).rejects.toThrow(
        new RegExp(`schema 'ar_test_\\w+' has no AsyncResponse tables yet; this app needs version ${LATEST} ${escape(`(pending: ${pendingFrom(1, '; ')}). Run \`npm run schema -- apply\` as the deployer`)}`),
      );
      await d.createVersion1();
      const older = await open(false);
      const error = await older.channel.ensureSchema().then(() => undefined, (e: Error) => e);
      expect(error?.message).toContain(`schema '${d.schema}' is at version 1; this app needs version ${LATEST} (pending: ${pendingFrom(2, '; ')})`);
      expect(error?.message).toContain(`Run \`npm run schema -- apply\` as the deployer with this app's store settings`);
      expect(error?.message).toContain(`SQL_SCHEMA=${d.schema}, TRANSPORT_TABLE=asyncresponse_transport_messages`);
      expect(error?.message).toContain('or set AUTO_CREATE_SCHEMA=true');
      expect(await columns(d, MIGRATIONS)).toEqual([]); // the check created nothing

      await (await open(true)).migrator.apply();
      const [outcome] = await older.transport.publish([message('q')]); // not latched: checked again
      expect(outcome!.inserted).toBe(true);
    });

    it('refuses a database newer than the app, with or without auto-create, and status says so', async () => {
      d = await fixture.create();
      const stores = await open(true);
      await stores.migrator.apply();
      await d.client.query(`INSERT INTO "${d.schema}"."${MIGRATIONS}" (version, name) VALUES (${LATEST + 1}, 'from a newer release')`);
      const newer = new RegExp(`the database schema '${d.schema}' is at version ${LATEST + 1} \\(table ${MIGRATIONS}\\), newer than this app, which knows versions up to ${LATEST}`);
      await expect(stores.migrator.apply()).rejects.toThrow(newer);
      await expect((await open(true)).transport.publish([message('q')])).rejects.toThrow(newer);
      await expect((await open(false)).channel.ensureSchema()).rejects.toThrow(newer);
      const status = await statusText(stores);
      expect(status.code).toBe(1);
      expect(status.text).toMatch(/NEWER THAN THIS APP/);
      expect((await recorded(d)).map((r) => r.version)).toEqual([...versionsFrom(1), LATEST + 1]); // nothing was touched
    });

    it('a partial version 1 (a channel table missing) is completed by version 1, not recorded as a baseline', async () => {
      d = await fixture.create();
      await d.createVersion1();
      await d.client.query(`DROP TABLE "${d.schema}"."asyncresponse_channel_subscribers"`);
      const stores = await open(true);
      expect((await stores.migrator.status()).current).toBe(0);
      expect(await stores.migrator.apply()).toEqual({ from: 0, to: LATEST, baselineRecorded: false, applied: versionsFrom(1) });
      await stores.channel.ensureSchema();
      expect(await columns(d, 'asyncresponse_channel_subscribers')).toHaveLength(4);
    });

    it('does not record a misshapen transport table as version 1', async () => {
      d = await fixture.create();
      await d.createVersion1();
      await d.client.query(`ALTER TABLE "${d.schema}"."asyncresponse_transport_messages" ALTER COLUMN payload_json TYPE varchar(200)`);
      const stores = await open(true);
      await expect(stores.migrator.apply()).rejects.toThrow(/not recorded as version 1:\n- column 'payload_json' .*expected text NOT NULL; found character varying NOT NULL/);
      expect(await columns(d, MIGRATIONS)).toEqual([]); // rolled back with the refused step
    });
  });
}
