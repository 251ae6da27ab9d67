// The claim routine (stores/postgres/claim-routine.ts, schema version 25): the claim runs as a PL/pgSQL function that
// keeps one generic plan per session instead of planning the claim at every call. What it saves is measured with
// pg_stat_statements in docs/benchmarks.md (the plans per claim); here: the routines carry the setting, the store calls
// the routine, the routine claims what the statement claims, and a schema without it (version 24) still claims.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../shared/log';
import { silentLogger } from '../../shared/log';
import type { OpenedStores } from '../../shared/stores/open';
import type { PgClient } from '../../shared/stores/postgres/client';
import { qualifiedClaimLimited } from '../../shared/stores/postgres/limit-statements';
import { pgStatements, qualifiedClaimRoutine } from '../../shared/stores/postgres/statements';
import { claimRoutineSignature } from '../../shared/stores/postgres/claim-routine';
import { PostgresTransportStore } from '../../shared/stores/postgres/store';
import { DEFAULT_TRANSPORT_TABLE } from '../../shared/stores/options';
import { transportNames } from '../../shared/sql/identifiers';
import { announce } from './fixtures';
import { closeSharedPglite, schemaDbFixtures, type SchemaDb } from './schema-fixtures';

afterAll(() => closeSharedPglite());

const TABLE = DEFAULT_TRANSPORT_TABLE;

for (const fixture of schemaDbFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] the claim routine`, { timeout: 120_000 }, () => {
    let d: SchemaDb | undefined;
    let stores: OpenedStores | undefined;
    afterEach(async () => {
      await stores?.close();
      await d?.close();
      stores = d = undefined;
    });
    const seeded = async (rows: number) => {
      d = await fixture.create();
      stores = await d.open(true);
      await stores.migrator.apply();
      await stores.transport.publish(
        Array.from({ length: rows }, (_, i) => ({ id: randomUUID(), queue: 'work', payloadJson: `{"n":${i}}`, headers: {}, delayMs: 0, priority: i % 3 })),
      );
      return { d, names: transportNames(d.schema, TABLE, 'postgres') };
    };
    /** A schema as version 24 left it: no claim routine. */
    const withoutRoutine = async (rows: number) => {
      const seededDb = await seeded(rows);
      await seededDb.d.client.query(`DROP FUNCTION ${claimRoutineSignature(seededDb.names)}`);
      return seededDb;
    };
    const recorder = (client: PgClient) => {
      const sent: string[] = [];
      const warned: string[] = [];
      const logger: Logger = { ...silentLogger, warn: (m: string) => void warned.push(m) };
      const recording: PgClient = { ...client, query: (text, values, name) => (sent.push(text.trim()), client.query(text, values, name)) };
      return { sent, warned, logger, recording };
    };

    it('both claim routines keep one generic plan per session (plan_cache_mode on the function)', async () => {
      const { d, names } = await seeded(0);
      const config = async (fn: string) =>
        (await d.client.query<{ config: string[] | null }>(`SELECT proconfig AS config FROM pg_proc WHERE oid = to_regproc($1)`, [fn])).rows[0]?.config;
      expect(await config(qualifiedClaimRoutine(names))).toContain('plan_cache_mode=force_generic_plan');
      expect(await config(qualifiedClaimLimited(names))).toContain('plan_cache_mode=force_generic_plan');
    });

    it('the store claims through the routine, and gets what the statement itself claims, in claim order', async () => {
      const { d, names } = await seeded(12);
      const { sent, recording } = recorder(d.client);
      const store = new PostgresTransportStore(recording, { schema: d.schema, table: TABLE, autoCreateSchema: false, logger: silentLogger });
      const first = await store.claim('work', 5, 30_000);
      expect(sent.filter((t) => t.startsWith(`SELECT * FROM ${qualifiedClaimRoutine(names)}(`))).toHaveLength(1);
      expect(sent.filter((t) => t.startsWith('WITH vacant'))).toEqual([]);
      // the statement itself, on the rows left: the two together took every row once, highest priority first
      const rest = await d.client.query<{ id: string; priority: number }>(pgStatements(names).claim, ['work', 100, 30_000, randomUUID()]);
      expect(first.map((m) => m.priority)).toEqual([2, 2, 2, 2, 1]);
      expect(rest.rows).toHaveLength(7);
      expect(new Set([...first.map((m) => m.id), ...rest.rows.map((r) => r.id)]).size).toBe(12);
      expect(Math.max(...rest.rows.map((r) => Number(r.priority)))).toBeLessThanOrEqual(1);
      expect(await store.claim('work', 5, 30_000)).toEqual([]);
    });

    it('a schema without the routine (version 24) still claims, sending the statement itself, and warns once naming version 25', async () => {
      const { d, names } = await withoutRoutine(6);
      const { sent, warned, logger, recording } = recorder(d.client);
      const store = new PostgresTransportStore(recording, { schema: d.schema, table: TABLE, autoCreateSchema: false, logger });
      expect(await store.claim('work', 4, 30_000)).toHaveLength(4);
      expect(await store.claim('work', 4, 30_000)).toHaveLength(2);
      expect(sent.filter((t) => t.startsWith('WITH vacant'))).toHaveLength(2);
      expect(sent.some((t) => t.includes(`${qualifiedClaimRoutine(names)}(`))).toBe(false);
      expect(warned.filter((w) => /no claim routine \(PostgreSQL schema version 25\)/.test(w))).toHaveLength(1);
    });

    it('a store that creates its own schema puts a missing routine back, and claims through it', async () => {
      const { d, names } = await withoutRoutine(3);
      const { sent, warned, logger, recording } = recorder(d.client);
      const store = new PostgresTransportStore(recording, { schema: d.schema, table: TABLE, autoCreateSchema: true, logger });
      expect(await store.claim('work', 10, 30_000)).toHaveLength(3);
      expect(sent.filter((t) => t.startsWith(`SELECT * FROM ${qualifiedClaimRoutine(names)}(`))).toHaveLength(1);
      expect(warned.filter((w) => w.includes('claim routine'))).toEqual([]);
    });
  });
}
