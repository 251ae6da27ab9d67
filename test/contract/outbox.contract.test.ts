// Schema version 3 on PGlite and the PostgreSQL server: the publish functions a caller runs inside its own
// transaction. The job exists exactly when that transaction commits; every HTTP validation rule raises and
// writes nothing; topic copies carry the ids topicCopyId() derives; the wake arrives at commit, not before;
// a role holding only USAGE on the schema and EXECUTE on the function can publish, and nothing else.
import { Client } from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Queryable } from '../../shared/stores/postgres/client';
import type { OpenedStores } from '../../shared/stores/open';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { channelNames, transportNames } from '../../shared/sql/identifiers';
import { PG_PUBLISH_INVALID, PG_PUBLISH_TOO_LARGE, postgresOutboxJobFieldsStatements, postgresOutboxStatements, SQL_PUBLISH_MAX_PAYLOAD_BYTES } from '../../shared/stores/postgres/outbox';
import { schemaNames } from '../../shared/stores/schema-names';
import { notifyPrefix, TRANSPORT_NOTIFY_CHANNEL } from '../../shared/stores/postgres/statements';
import { idTimestamp } from '../../shared/transport/ids';
import { subscriptionQueue, topicCopyId } from '../../shared/transport/topic-names';
import { eventually, message } from '../support/messages';
import { announce } from './fixtures';
import { closeSharedPglite, schemaDbFixtures, type SchemaDb } from './schema-fixtures';

afterAll(() => closeSharedPglite());

const TABLE = 'asyncresponse_transport_messages';

class Rollback extends Error {}

for (const fixture of schemaDbFixtures()) {
  describe.skipIf(!announce(fixture))(`[${fixture.name}] SQL publish (outbox)`, { timeout: 240_000 }, () => {
    let d: SchemaDb;
    let stores: OpenedStores;
    const fn = (name: string) => `"${d.schema}"."${TABLE}_${name}"`;
    const rows = async (queue: string) =>
      (await d.client.query<{ id: string; payload_json: string; headers_json: string }>(
        `SELECT id, payload_json, headers_json FROM "${d.schema}"."${TABLE}" WHERE queue = $1 ORDER BY id`,
        [queue],
      )).rows;
    const total = async () => Number((await d.client.query<{ n: string }>(`SELECT count(*) AS n FROM "${d.schema}"."${TABLE}"`)).rows[0]!.n);
    const orders = async () => Number((await d.client.query<{ n: string }>(`SELECT count(*) AS n FROM "${d.schema}".orders`)).rows[0]!.n);
    const publishIn = (tx: Queryable, args: unknown[], named = '') =>
      tx.query<{ message_id: string; inserted: boolean }>(`SELECT * FROM ${fn('publish')}(${args.map((_, i) => `$${i + 1}`).join(', ')}${named})`, args);

    beforeEach(async () => {
      d = await fixture.create();
      stores = await d.open(true);
      await stores.migrator.apply();
      await d.client.query(`CREATE TABLE "${d.schema}".orders (id integer PRIMARY KEY)`);
    });
    afterEach(async () => {
      await stores?.close();
      await d?.close();
    });

    it('inside a committed transaction the job exists and is claimable; inside a rolled-back one nothing is written', async () => {
      await expect(
        d.client.transaction(async (tx) => {
          await tx.query(`INSERT INTO "${d.schema}".orders (id) VALUES (1)`);
          await publishIn(tx, ['orders', '{"order":1}']);
          throw new Rollback('business rule failed');
        }),
      ).rejects.toThrow(Rollback);
      expect([await orders(), await total()]).toEqual([0, 0]);

      const published = await d.client.transaction(async (tx) => {
        await tx.query(`INSERT INTO "${d.schema}".orders (id) VALUES (2)`);
        return (await publishIn(tx, ['orders', ' {"order": 2} '])).rows[0]!;
      });
      expect(published.inserted).toBe(true);
      const now = Date.now();
      expect(Math.abs(idTimestamp(published.message_id, 'uuidv7') - now)).toBeLessThan(60_000);
      expect(published.message_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const [claimed] = await stores.transport.claim('orders', 10, 30_000);
      expect(claimed).toMatchObject({ id: published.message_id, queue: 'orders', payloadJson: ' {"order": 2} ', headers: {}, attempt: 1 });
    });

    it('keeps a given id (lower-cased), correlation id and headers as the HTTP publish does; a delay keeps it unclaimable', async () => {
      const id = 'ABCDEF01-2345-4678-89AB-CDEF01234567';
      const r = await publishIn(d.client, ['work', '[1,"ü"]', id, 'Order-42', '{"tenant":"acme","note":"a\\tb"}', 0]);
      expect(r.rows[0]).toEqual({ message_id: id.toLowerCase(), inserted: true });
      const [claimed] = await stores.transport.claim('work', 10, 30_000);
      expect(claimed!.headers).toEqual({ tenant: 'acme', note: 'a\tb', 'AR-Correlation-Id': 'Order-42' });
      expect(claimed!.payloadJson).toBe('[1,"ü"]');

      const later = await d.client.query<{ message_id: string }>(`SELECT * FROM ${fn('publish')}(queue => 'later', payload => '1', delay_seconds => 60)`);
      expect(await rows('later')).toHaveLength(1);
      expect(await stores.transport.claim('later', 10, 30_000)).toEqual([]);
      const available = await d.client.query<{ s: number }>(
        `SELECT EXTRACT(EPOCH FROM available_at - created_at)::float8 AS s FROM "${d.schema}"."${TABLE}" WHERE id = $1`,
        [later.rows[0]!.message_id],
      );
      expect(available.rows[0]!.s).toBeCloseTo(60, 1);
    });

    it('priority and ordering_key (version 16) are stored as the HTTP publish stores them: one key\'s jobs run one at a time in publish order', async () => {
      const keyed = (payload: string) => `SELECT * FROM ${fn('publish')}(queue => 'keyed', payload => '${payload}', ordering_key => 'order-42')`;
      await d.client.transaction(async (tx) => {
        for (const n of [1, 2, 3]) await tx.query(keyed(`{"n":${n}}`));
        await tx.query(`SELECT * FROM ${fn('publish')}(queue => 'keyed', payload => '{"n":9}', priority => 5)`);
      });
      const stored = await d.client.query<{ payload_json: string; priority: number; ordering_key: string | null }>(
        `SELECT payload_json, priority, ordering_key FROM "${d.schema}"."${TABLE}" WHERE queue = 'keyed' ORDER BY created_at, id`,
      );
      expect(stored.rows).toEqual([
        { payload_json: '{"n":1}', priority: 0, ordering_key: 'order-42' },
        { payload_json: '{"n":2}', priority: 0, ordering_key: 'order-42' },
        { payload_json: '{"n":3}', priority: 0, ordering_key: 'order-42' },
        { payload_json: '{"n":9}', priority: 5, ordering_key: null },
      ]);
      // the priority job first, then only the head of the key; its successor once it is acked
      const first = await stores.transport.claim('keyed', 10, 30_000);
      expect(first.map((c) => [c.payloadJson, c.priority])).toEqual([['{"n":9}', 5], ['{"n":1}', 0]]);
      await stores.transport.ack(first);
      expect((await stores.transport.claim('keyed', 10, 30_000)).map((c) => c.payloadJson)).toEqual(['{"n":2}']);
      // a topic publish takes a priority for every copy, and no ordering key (ordering keys belong to a queue publish)
      await d.client.query(`INSERT INTO "${d.schema}"."${TABLE}_subscriptions" (topic, subscription) VALUES ('events', 'audit')`);
      const copies = await d.client.query<{ copies: number }>(`SELECT * FROM ${fn('publish_topic')}(topic => 'events', payload => '1', priority => 3)`);
      expect(copies.rows[0]!.copies).toBe(1);
      expect((await stores.transport.claim('events:audit', 10, 30_000)).map((c) => c.priority)).toEqual([3]);
      await expect(d.client.query(`SELECT * FROM ${fn('publish_topic')}(topic => 'events', payload => '1', ordering_key => 'k')`)).rejects.toMatchObject({ code: '42883' });
    });

    it('two SQL publishes of one key in one transaction run in the order made, round after round (the order is a sequence, never a clock tick)', async () => {
      const keyed = (payload: string) => `SELECT * FROM ${fn('publish')}(queue => 'ticks', payload => '${payload}', ordering_key => 'k')`;
      let inverted = 0;
      for (let round = 0; round < 40; round++) {
        await d.client.transaction(async (tx) => {
          await tx.query(keyed('1'));
          await tx.query(keyed('2'));
        });
        const [first] = await stores.transport.claim('ticks', 10, 30_000);
        if (first!.payloadJson !== '1') inverted++;
        await stores.transport.ack([first!]);
        const [second] = await stores.transport.claim('ticks', 10, 30_000);
        await stores.transport.ack([second!]);
      }
      expect(inverted).toBe(0);
      // a delayed keyed SQL publish is scheduled (no claim reads it until it is due); a duplicate id counts nothing
      const id = '0a0a0a0a-0000-4000-8000-000000000001';
      await d.client.query(`SELECT * FROM ${fn('publish')}(queue => 'ticks', payload => '3', id => '${id}', ordering_key => 'late', delay_seconds => 3600)`);
      expect((await d.client.query(`SELECT * FROM ${fn('publish')}(queue => 'ticks', payload => '3', id => '${id}', ordering_key => 'late')`)).rows[0]).toMatchObject({ inserted: false });
      const filed = await d.client.query<{ state: number | null }>(`SELECT state FROM "${d.schema}"."${TABLE}" WHERE id = $1`, [id]);
      expect(filed.rows[0]!.state).toBe(1);
      const key = await d.client.query<{ backlog: number }>(`SELECT backlog FROM "${d.schema}"."${TABLE}_keys" WHERE queue = 'ticks' AND ordering_key = 'late'`);
      expect(key.rows[0]!.backlog).toBe(1);
    });

    it('version 16 carries the grants over: a role granted EXECUTE on version 3\'s publish function can call the new one', async () => {
      const names = schemaNames(transportNames(d.schema, TABLE, 'postgres'), channelNames(d.schema, DEFAULT_CHANNEL_TABLES, 'postgres'), 'postgres');
      const role = `${d.schema}_upgraded`;
      await d.client.query(`CREATE ROLE "${role}" NOLOGIN`);
      try {
        // a database at version 15: version 3's wrapper, granted to a caller as docs/outbox.md says
        await d.client.query(`DROP FUNCTION ${fn('publish')}(text, text, text, text, text, double precision, integer, text)`);
        const v3 = postgresOutboxStatements(names);
        await d.client.query(v3.find((st) => st.name === 'create enqueue function')!.text);
        await d.client.query(v3.find((st) => st.name === 'create publish function')!.text);
        await d.client.query(`REVOKE ALL ON FUNCTION ${fn('publish')}(text, text, text, text, text, double precision) FROM PUBLIC`);
        await d.client.query(`GRANT USAGE ON SCHEMA "${d.schema}" TO "${role}"`);
        await d.client.query(`GRANT EXECUTE ON FUNCTION ${fn('publish')}(text, text, text, text, text, double precision) TO "${role}"`);
        // version 16's statements, as the migrator runs them
        await d.client.transaction(async (tx) => {
          for (const st of postgresOutboxJobFieldsStatements(names)) await tx.query(st.text);
        });
        const as = <T>(work: (tx: Queryable) => Promise<T>) =>
          d.client.transaction(async (tx) => {
            await tx.query(`SET LOCAL ROLE "${role}"`);
            return work(tx);
          });
        const r = await as((tx) => tx.query<{ inserted: boolean }>(`SELECT * FROM ${fn('publish')}(queue => 'granted', payload => '1', ordering_key => 'k', priority => 2)`));
        expect(r.rows[0]!.inserted).toBe(true);
        expect(await rows('granted')).toHaveLength(1);
        // only the new signature exists, still closed to PUBLIC
        const fns = await d.client.query<{ args: number; public_execute: boolean }>(
          `SELECT p.pronargs::int AS args, has_function_privilege('public', p.oid, 'EXECUTE') AS public_execute
           FROM pg_proc AS p JOIN pg_namespace AS s ON s.oid = p.pronamespace WHERE s.nspname = $1 AND p.proname IN ($2, $3) ORDER BY p.proname`,
          [d.schema, `${TABLE}_publish`, `${TABLE}_enqueue`],
        );
        expect(fns.rows).toHaveLength(2);
        expect(fns.rows.every((f) => !f.public_execute)).toBe(true);
        expect(fns.rows.map((f) => f.args)).toEqual([9, 8]); // enqueue (kind + 8), publish: version 3's arguments + 2
      } finally {
        await d.client.query(`DROP OWNED BY "${role}"`);
        await d.client.query(`DROP ROLE "${role}"`);
      }
    });

    it('a duplicate id writes no second row and reports inserted = false', async () => {
      const id = '0190a000-0000-7000-8000-0000000000aa';
      expect((await publishIn(d.client, ['dup', '{"n":1}', id])).rows[0]!.inserted).toBe(true);
      expect((await publishIn(d.client, ['dup', '{"n":2}', id.toUpperCase()])).rows[0]).toEqual({ message_id: id, inserted: false });
      expect(await rows('dup')).toEqual([{ id, payload_json: '{"n":1}', headers_json: '{}' }]);
    });

    const invalid: Array<[string, unknown[], string, RegExp]> = [
      ['payload missing', ['q', null], PG_PUBLISH_INVALID, /payload is required/],
      ['payload not JSON', ['q', '{"a":'], PG_PUBLISH_INVALID, /payload is not valid JSON/],
      ['payload empty', ['q', ''], PG_PUBLISH_INVALID, /payload is not valid JSON/],
      ['payload too large', ['q', JSON.stringify('é'.repeat(SQL_PUBLISH_MAX_PAYLOAD_BYTES / 2))], PG_PUBLISH_TOO_LARGE, /payload is 262146 bytes; the limit is 262144/],
      ['id not a UUID', ['q', '1', 'not-a-uuid'], PG_PUBLISH_INVALID, /id must be a UUID/],
      ['id in braces', ['q', '1', '{0190a000-0000-7000-8000-0000000000aa}'], PG_PUBLISH_INVALID, /id must be a UUID/],
      ['queue empty', ['', '1'], PG_PUBLISH_INVALID, /queue name must be 1 to 200 characters/],
      ['queue too long', ['q'.repeat(201), '1'], PG_PUBLISH_INVALID, /queue name must be 1 to 200 characters/],
      ['queue with edge whitespace', ['q\u00a0', '1'], PG_PUBLISH_INVALID, /must not begin or end with whitespace/],
      ['queue with a control character', ['a\u0007b', '1'], PG_PUBLISH_INVALID, /must not contain control characters/],
      ['correlation id empty', ['q', '1', null, ''], PG_PUBLISH_INVALID, /correlation_id must be 1 to 400/],
      ['correlation id too long', ['q', '1', null, 'c'.repeat(401)], PG_PUBLISH_INVALID, /correlation_id must be 1 to 400/],
      ['correlation id with whitespace', ['q', '1', null, ' c'], PG_PUBLISH_INVALID, /correlation_id must not begin or end/],
      ['correlation id with C1 control', ['q', '1', null, 'a\u0085b'], PG_PUBLISH_INVALID, /correlation_id must not contain control/],
      ['headers not JSON', ['q', '1', null, null, '{'], PG_PUBLISH_INVALID, /headers are not valid JSON/],
      ['headers an array', ['q', '1', null, null, '["a"]'], PG_PUBLISH_INVALID, /headers must be a JSON object/],
      ['header not a string', ['q', '1', null, null, '{"n":1}'], PG_PUBLISH_INVALID, /header n must be a string/],
      ['header reserved', ['q', '1', null, null, '{"ar-correlation-id":"x"}'], PG_PUBLISH_INVALID, /header ar-correlation-id is reserved/],
      ['header __proto__', ['q', '1', null, null, '{"__proto__":"x"}'], PG_PUBLISH_INVALID, /__proto__ is not a usable header name/],
      ['header empty name', ['q', '1', null, null, '{"":"x"}'], PG_PUBLISH_INVALID, /header name must be 1 to 256/],
      ['header value control', ['q', '1', null, null, '{"a":"x\\ny"}'], PG_PUBLISH_INVALID, /header a must not contain control characters/],
      ['header value NUL escape', ['q', '1', null, null, '{"a":"x\\u0000"}'], PG_PUBLISH_INVALID, /must not contain control characters or lone surrogates/],
      ['header value lone surrogate escape', ['q', '1', null, null, '{"a":"x\\ud800"}'], PG_PUBLISH_INVALID, /must not contain control characters or lone surrogates/],
      ['headers too many', ['q', '1', null, null, JSON.stringify(Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`h${i}`, 'v'])))], PG_PUBLISH_INVALID, /more than 64 entries/],
      ['headers too large', ['q', '1', null, null, JSON.stringify({ big: 'x'.repeat(16 * 1024) })], PG_PUBLISH_TOO_LARGE, /headers are 16394 bytes as JSON; the limit is 16384/],
      ['delay negative', ['q', '1', null, null, null, -1], PG_PUBLISH_INVALID, /delay_seconds must be a number from 0 to 315360000/],
      ['delay too long', ['q', '1', null, null, null, 315360001], PG_PUBLISH_INVALID, /delay_seconds/],
      ['delay NaN', ['q', '1', null, null, null, 'NaN'], PG_PUBLISH_INVALID, /delay_seconds/],
      ['priority too high', ['q', '1', null, null, null, 0, 32768], PG_PUBLISH_INVALID, /priority must be an integer from -32768 to 32767/],
      ['priority too low', ['q', '1', null, null, null, 0, -32769], PG_PUBLISH_INVALID, /priority must be an integer from -32768 to 32767/],
      ['ordering key empty', ['q', '1', null, null, null, 0, null, ''], PG_PUBLISH_INVALID, /ordering_key must be 1 to 200 characters/],
      ['ordering key too long', ['q', '1', null, null, null, 0, null, 'k'.repeat(201)], PG_PUBLISH_INVALID, /ordering_key must be 1 to 200 characters/],
      ['ordering key with a control character', ['q', '1', null, null, null, 0, null, 'a\u0001b'], PG_PUBLISH_INVALID, /ordering_key must not contain control characters/],
    ];

    it('every validation error raises its SQLSTATE and writes nothing, alone or inside the caller\'s transaction', async () => {
      for (const [label, args, code, why] of invalid) {
        const padded = [...args, ...Array(Math.max(0, 6 - args.length)).fill(null)];
        padded[5] ??= 0;
        await expect(publishIn(d.client, padded), label).rejects.toMatchObject({ code, message: expect.stringMatching(why) });
        await expect(
          d.client.transaction(async (tx) => {
            await tx.query(`INSERT INTO "${d.schema}".orders (id) VALUES (7)`);
            await publishIn(tx, padded);
          }),
          label,
        ).rejects.toMatchObject({ code });
        expect([await orders(), await total()], label).toEqual([0, 0]);
      }
      // the edges the rules allow are accepted
      await publishIn(d.client, ['q'.repeat(200), JSON.stringify('é'.repeat(SQL_PUBLISH_MAX_PAYLOAD_BYTES / 2 - 1)), null, 'c'.repeat(400), JSON.stringify({ big: 'x'.repeat(16 * 1024 - 10) }), 315360000]);
      await publishIn(d.client, ['q', '1', null, null, null, 0, -32768, 'k'.repeat(200)]);
      expect(await total()).toBe(2);
    });

    it('a topic publish copies the message onto each subscription queue with topicCopyId ids, non-ASCII names included', async () => {
      const subs: Array<[string, string]> = [
        ['orders', 'billing'],
        ['orders', 'Versand-ü'],
        ['orders', '配送'],
        ['orders', 'emoji-🚚'],
        ['orders.other', 'billing'],
        ['Órdenes', 'facturación'],
      ];
      for (const [topic, sub] of subs) {
        await d.client.query(`INSERT INTO "${d.schema}"."${TABLE}_subscriptions" (topic, subscription) VALUES ($1, $2)`, [topic, sub]);
      }
      const topicFn = fn('publish_topic');
      const ids = ['0190A000-0000-7000-8000-0000000000BB', '6f9619ff-8b86-d011-b42d-00c04fc964ff'];
      for (const id of ids) {
        const r = await d.client.query<{ message_id: string; copies: number }>(`SELECT * FROM ${topicFn}('orders', '{"x":1}', $1, 'C-1')`, [id]);
        expect(r.rows[0]).toEqual({ message_id: id.toLowerCase(), copies: 4 });
        for (const sub of ['billing', 'Versand-ü', '配送', 'emoji-🚚']) {
          const queue = subscriptionQueue('orders', sub);
          expect((await rows(queue)).map((x) => x.id), queue).toContain(topicCopyId(id, queue));
        }
      }
      const spanish = await d.client.query<{ message_id: string; copies: number }>(`SELECT * FROM ${topicFn}('Órdenes', '2')`);
      expect(spanish.rows[0]!.copies).toBe(1);
      expect(await rows('Órdenes:facturación')).toEqual([
        { id: topicCopyId(spanish.rows[0]!.message_id, 'Órdenes:facturación'), payload_json: '2', headers_json: '{}' },
      ]);
      // republishing writes no second copy; a topic without subscriptions writes nothing
      expect((await d.client.query(`SELECT * FROM ${topicFn}('orders', '{"x":1}', $1)`, [ids[0]])).rows[0]).toMatchObject({ copies: 0 });
      expect((await d.client.query(`SELECT * FROM ${topicFn}('nobody', '1')`)).rows[0]).toMatchObject({ copies: 0 });
      expect(await total()).toBe(9);
      const [claimed] = await stores.transport.claim('orders:配送', 10, 30_000);
      expect(claimed!.headers).toEqual({ 'AR-Correlation-Id': 'C-1' });
      // validation applies to topics too
      await expect(d.client.query(`SELECT * FROM ${topicFn}(' orders', '1')`)).rejects.toMatchObject({ code: PG_PUBLISH_INVALID, message: expect.stringMatching(/topic name must not begin/) });
    });

    it('a role with only USAGE on the schema and EXECUTE on the function can publish, and cannot touch the table', async () => {
      const role = `${d.schema}_caller`;
      await d.client.query(`CREATE ROLE "${role}" NOLOGIN`);
      try {
        await d.client.query(`GRANT USAGE ON SCHEMA "${d.schema}" TO "${role}"`);
        await d.client.query(`GRANT EXECUTE ON FUNCTION ${fn('publish')}(text, text, text, text, text, double precision, integer, text) TO "${role}"`);
        const as = <T>(work: (tx: Queryable) => Promise<T>) =>
          d.client.transaction(async (tx) => {
            await tx.query(`SET LOCAL ROLE "${role}"`);
            return work(tx);
          });
        const r = await as((tx) => publishIn(tx, ['granted', '{"ok":true}']));
        expect(r.rows[0]!.inserted).toBe(true);
        expect(await rows('granted')).toHaveLength(1);
        await expect(as((tx) => tx.query(`INSERT INTO "${d.schema}"."${TABLE}" (id, queue, payload_json) VALUES (gen_random_uuid(), 'x', '1')`))).rejects.toMatchObject({ code: '42501' });
        await expect(as((tx) => tx.query(`SELECT count(*) FROM "${d.schema}"."${TABLE}"`))).rejects.toMatchObject({ code: '42501' });
        await expect(as((tx) => tx.query(`SELECT * FROM ${fn('publish_topic')}('t', '1')`))).rejects.toMatchObject({ code: '42501' });
        await expect(as((tx) => tx.query(`SELECT * FROM ${fn('enqueue')}('queue', 'x', '1', NULL, NULL, NULL, 0, 0, NULL)`))).rejects.toMatchObject({ code: '42501' });
      } finally {
        await d.client.query(`DROP OWNED BY "${role}"`);
        await d.client.query(`DROP ROLE "${role}"`);
      }
    });

    it.skipIf(fixture.name !== 'postgres')('the wake (NOTIFY) arrives at commit, not before, and never for a rollback or a delayed row', async () => {
      const heard: string[] = [];
      const prefix = notifyPrefix({ schema: d.schema, table: TABLE } as Parameters<typeof notifyPrefix>[0]);
      const listener = new Client({ connectionString: process.env.PG_URL });
      await listener.connect();
      listener.on('notification', (n) => {
        if (n.channel === TRANSPORT_NOTIFY_CHANNEL && n.payload?.startsWith(prefix)) heard.push(n.payload.slice(prefix.length));
      });
      await listener.query(`LISTEN ${TRANSPORT_NOTIFY_CHANNEL}`);
      try {
        // Notifications arrive in commit order: once a marker committed later has arrived, an earlier one would have too.
        const marker = async (name: string) => {
          await stores.transport.publish([message(name)]);
          await eventually(() => heard.includes(name), `the ${name} wake`);
        };
        await expect(
          d.client.transaction(async (tx) => {
            await publishIn(tx, ['rolled-back', '1']);
            throw new Rollback('no');
          }),
        ).rejects.toThrow(Rollback);
        await publishIn(d.client, ['delayed', '1', null, null, null, 30]);
        await d.client.transaction(async (tx) => {
          await publishIn(tx, ['committed', '1']);
          await marker('marker-1');
          expect(heard).not.toContain('committed');
        });
        await eventually(() => heard.includes('committed'), 'the wake at commit');
        await marker('marker-2');
        expect(heard.filter((q) => !q.startsWith('marker'))).toEqual(['committed']);
      } finally {
        await listener.end();
      }
    });
  });
}
