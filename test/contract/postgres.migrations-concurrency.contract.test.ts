// Concurrent applies on the PostgreSQL server (real sessions; PGlite is one session): every step takes the
// schema DDL advisory lock the stores take, so two deployers (or two instances with AUTO_CREATE_SCHEMA)
// applying at once run each version exactly once, and an apply waits while another session holds the lock.
import { Pool } from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { advisoryKey, schemaLockResource } from '../../shared/stores/postgres/ddl';
import type { OpenedStores } from '../../shared/stores/open';
import { sleep } from '../support/messages';
import { announce } from './fixtures';
import { postgresSchemaDb, type SchemaDb } from './schema-fixtures';

const fixture = postgresSchemaDb(2);
/** PostgreSQL's latest version (schema.migrations.contract pins each version's name). */
const LATEST = 25;
const versionsFrom = (from: number) => Array.from({ length: LATEST - from + 1 }, (_, i) => from + i);

describe.skipIf(!announce(fixture))('[postgres] concurrent schema applies', { timeout: 60_000 }, () => {
  let d: SchemaDb | undefined;
  const opened: OpenedStores[] = [];
  const open = async () => {
    const s = await d!.open(true);
    opened.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
    await d?.close();
    d = undefined;
  });

  it.each([
    ['a fresh database', false],
    ["a database of today's release (version 1 unrecorded)", true],
  ])('%s: two sessions apply at once; each version runs and is recorded once', async (_label, fromV1) => {
    d = await fixture.create();
    if (fromV1) await d.createVersion1();
    const [a, b] = [await open(), await open()];
    const reports = await Promise.all([a.migrator.apply(), b.migrator.apply()]);
    const applied = reports.flatMap((r) => r.applied).sort((x, y) => x - y);
    expect(applied).toEqual(versionsFrom(fromV1 ? 2 : 1));
    expect(reports.filter((r) => r.baselineRecorded)).toHaveLength(fromV1 ? 1 : 0);
    for (const r of reports) expect(r.to).toBe(LATEST);
    const rows = await d.client.query<{ version: number }>(`SELECT version FROM "${d.schema}"."asyncresponse_transport_messages_migrations" ORDER BY version`);
    expect(rows.rows.map((r) => r.version)).toEqual(versionsFrom(1));
  });

  it('an apply waits while another session holds the schema DDL lock, then applies', async () => {
    d = await fixture.create();
    const holder = new Pool({ connectionString: process.env.PG_URL, max: 1 });
    const conn = await holder.connect();
    try {
      await conn.query('BEGIN');
      await conn.query('SELECT pg_advisory_xact_lock($1::bigint)', [advisoryKey(schemaLockResource(d.schema))]);
      const stores = await open();
      let finished = false;
      const applying = stores.migrator.apply().then((r) => ((finished = true), r));
      await sleep(700);
      expect(finished).toBe(false);
      await conn.query('COMMIT');
      expect(await applying).toMatchObject({ from: 0, to: LATEST, applied: versionsFrom(1) });
    } finally {
      conn.release();
      await holder.end();
    }
  });
});
