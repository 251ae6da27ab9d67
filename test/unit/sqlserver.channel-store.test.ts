// The SQL Server channel store against a scripted pool: the schema step (DDL in its transaction, verification
// outside it, single flight, latch, operator path, collision diagnosis), parameter binding and row mapping,
// and the shared-pool lifecycle of openSqlServerStores.

import { describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { silentLogger, type Logger } from '../../shared/log';
import { channelNames } from '../../shared/sql/identifiers';
import { openHandles } from '../../shared/stores/open-handles';
import {
  compareSqlServerGuids,
  SqlServerChannelStore,
  sqlServerGuidKey,
} from '../../shared/stores/sqlserver/channel-store';
import type { ChannelCatalog } from '../../shared/stores/sqlserver/channel-verify';
import { openSqlServerStores } from '../../shared/stores/sqlserver/open';
import {
  absentChannelCatalog,
  channelCatalogRecordsets,
  channelSpecCatalog,
  isChannelCatalog,
  isChannelDdl,
} from './sqlserver.channel-fakes';
import { FakePool, sqlError, type FakeCall, type Row } from './sqlserver.fakes';

const names = channelNames('dbo', DEFAULT_CHANNEL_TABLES, 'sqlserver');
const ID1 = 'A1B2C3D4-0000-4000-8000-000000000001';
const ID2 = 'A1B2C3D4-0000-4000-8000-000000000002';
const REG = 'B0000000-0000-4000-8000-0000000000FF';
const WATERMARK = { startedAt: '2030-01-01 00:00:00.1234567', startedSeq: '9007199254740993' };

const at = (iso: string) => new Date(iso);
const values = (call: FakeCall) => Object.fromEntries(Object.entries(call.inputs).map(([k, v]) => [k, v.value]));

function newStore(pool: FakePool, options: { autoCreateSchema?: boolean; logger?: Logger; ownsPool?: boolean } = {}) {
  return new SqlServerChannelStore(pool.asPool(), {
    names,
    autoCreateSchema: options.autoCreateSchema ?? true,
    logger: options.logger ?? silentLogger,
    ownsPool: options.ownsPool,
  });
}

async function readyStore(respond: (call: FakeCall) => Row[][] | undefined) {
  const pool = new FakePool((call) => {
    if (isChannelCatalog(call)) return channelCatalogRecordsets(channelSpecCatalog(names));
    if (isChannelDdl(call)) return [];
    return respond(call) ?? [];
  });
  const store = newStore(pool);
  await store.ensureSchema();
  pool.calls.length = 0;
  pool.events.length = 0;
  return { pool, store };
}

const header = (id: string, extra: Row = {}): Row => ({
  id,
  correlation_id: 'Corr-1',
  created_at: at('2030-01-01T00:00:00.123Z'),
  created_at_exact: '2030-01-01 00:00:00.1234567',
  acked_at: null,
  acked_seq: null,
  recovery_claimed: false,
  envelope_json: '{"SchemaVersion":1}',
  ...extra,
});

describe('SQL Server channel store: schema', () => {
  it('runs the DDL batch in its own transaction, commits, then verifies outside it; later calls touch nothing', async () => {
    const pool = new FakePool((call) => (isChannelCatalog(call) ? channelCatalogRecordsets(channelSpecCatalog(names)) : []));
    const store = newStore(pool);
    await Promise.all([store.ensureSchema(), store.ensureSchema(), store.countActiveSubscribers('x').catch(() => 0)]);
    const kinds = pool.calls.map((c) => (isChannelDdl(c) ? 'ddl' : isChannelCatalog(c) ? 'catalog' : 'op'));
    expect(kinds).toEqual(['ddl', 'catalog', 'op']);
    expect(pool.events).toEqual(['begin', 'commit']);
    expect(pool.calls[0]!.inTransaction).toBe(true);
    expect(pool.calls[1]!.inTransaction).toBe(false); // catalog reads inside the DDL transaction deadlocked (spec §3.2)
    expect(values(pool.calls[1]!)).toEqual({
      schema: 'dbo',
      recovery_table: 'asyncresponse_recovery_state',
      message_table: 'asyncresponse_channel_messages',
      subscriber_table: 'asyncresponse_channel_subscribers',
      sequence: 'asyncresponse_channel_messages_ack_seq',
    });
    await store.ensureSchema();
    expect(pool.calls).toHaveLength(3);
  });

  it('a channel-only store refuses a database below compatibility level 130 (its statements use OPENJSON)', async () => {
    for (const autoCreateSchema of [true, false]) {
      const catalog: ChannelCatalog = { ...channelSpecCatalog(names), database: [{ compatibility_level: 120 }] };
      const pool = new FakePool((call) => (isChannelCatalog(call) ? channelCatalogRecordsets(catalog) : [[{ active: '1' }]]));
      const store = newStore(pool, { autoCreateSchema });
      await expect(store.countActiveSubscribers('c')).rejects.toThrow(/compatibility level is 120;.*COMPATIBILITY_LEVEL = 130/s);
    }
  });

  it('a verification failure after the DDL throws the problems with the fix and is not latched', async () => {
    let catalog: ChannelCatalog = channelSpecCatalog(names, { indexes: false });
    const pool = new FakePool((call) => (isChannelCatalog(call) ? channelCatalogRecordsets(catalog) : []));
    const store = newStore(pool);
    await expect(store.ensureSchema()).rejects.toThrow(/expected the index \[asyncresponse_recovery_state_expires_idx\].*npm run schema -- print/s);
    catalog = channelSpecCatalog(names);
    await store.ensureSchema();
    expect(pool.calls.filter(isChannelDdl)).toHaveLength(2);
  });

  it('operator path: no DDL; absent objects throw "does not exist … npm run schema -- apply" and are checked again', async () => {
    let catalog: ChannelCatalog = absentChannelCatalog;
    const pool = new FakePool((call) => (isChannelCatalog(call) ? channelCatalogRecordsets(catalog) : [[{ active: '2' }]]));
    const store = newStore(pool, { autoCreateSchema: false });
    const err = await store.countActiveSubscribers('c').then(() => undefined, (e: Error) => e);
    expect(err?.message).toContain('[dbo].[asyncresponse_recovery_state], [dbo].[asyncresponse_channel_messages]');
    expect(err?.message).toMatch(/do not exist \(or this login cannot see them\); run `npm run schema -- apply`/);
    catalog = channelSpecCatalog(names, { indexes: false }); // an operator schema need not carry our index names
    expect(await store.countActiveSubscribers('c')).toBe(2);
    expect(pool.calls.filter(isChannelDdl)).toHaveLength(0);
    expect(pool.events).toEqual([]);
  });

  it('operator path: a message table that predates acked_seq fails with the migration to run', async () => {
    const base = channelSpecCatalog(names);
    const old: ChannelCatalog = {
      ...base,
      columns: base.columns.filter((c) => c.name !== 'acked_seq'),
      sequences: [],
      objects: base.objects.filter((o) => o.type !== 'SO'),
    };
    const pool = new FakePool((call) => (isChannelCatalog(call) ? channelCatalogRecordsets(old) : []));
    const err = await newStore(pool, { autoCreateSchema: false }).ensureSchema().then(() => undefined, (e: Error) => e);
    expect(err?.message).toContain('ALTER TABLE [dbo].[asyncresponse_channel_messages] ADD acked_seq bigint NULL;');
    expect(err?.message).toContain('CREATE SEQUENCE [dbo].[asyncresponse_channel_messages_ack_seq] AS bigint START WITH 1;');
  });

  it('a DDL failure caused by a name collision is diagnosed (original error attached); any other is rethrown as is', async () => {
    const base = channelSpecCatalog(names);
    const view: ChannelCatalog = {
      ...absentChannelCatalog,
      objects: [{ name: names.messageTable, type: 'V ', type_desc: 'VIEW', is_target: false }],
    };
    const collision = sqlError(2714, 16, "There is already an object named 'asyncresponse_channel_messages' in the database.");
    const pool = new FakePool((call) => {
      if (isChannelDdl(call)) throw collision;
      return isChannelCatalog(call) ? channelCatalogRecordsets(view) : [];
    });
    const err = await newStore(pool).ensureSchema().then(() => undefined, (e: Error) => e);
    expect(err?.message).toMatch(/occupied by a view \(\[asyncresponse_channel_messages\]\).*Give this component its own object names/);
    expect(err?.cause).toBe(collision);
    expect(pool.events).toEqual(['begin', 'rollback']);

    const denied = sqlError(262, 14, 'CREATE TABLE permission denied in database');
    const pool2 = new FakePool((call) => {
      if (isChannelDdl(call)) throw denied;
      return isChannelCatalog(call) ? channelCatalogRecordsets(absentChannelCatalog) : [];
    });
    await expect(newStore(pool2).ensureSchema()).rejects.toBe(denied);
    // a wrongly shaped table of another component is a collision too
    const foreign = { ...base, columns: base.columns.map((c) => (c.name === 'envelope_json' ? { ...c, max_length: 400 } : c)) };
    const pool3 = new FakePool((call) => {
      if (isChannelDdl(call)) throw sqlError(1913, 16, 'index exists');
      return isChannelCatalog(call) ? channelCatalogRecordsets(foreign) : [];
    });
    await expect(newStore(pool3).ensureSchema()).rejects.toThrow(/envelope_json.*found nvarchar\(200\).*own object names/);
  });

  it('two stores sharing one unconnected pool connect it once', async () => {
    const pool = new FakePool((call) => (isChannelCatalog(call) ? channelCatalogRecordsets(channelSpecCatalog(names)) : []));
    pool.connected = false;
    const connect = pool.connect.bind(pool);
    pool.connect = async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return connect();
    };
    await Promise.all([newStore(pool).ensureSchema(), newStore(pool).ensureSchema()]);
    expect(pool.connectCalls).toBe(1);
  });
});

describe('SQL Server channel store: parameters and rows', () => {
  it('saveRegistration binds typed values and returns the stored expires_at; load maps rows; delete is a boolean', async () => {
    const expires = at('2030-01-08T00:00:00Z');
    const registered = at('2030-01-01T00:00:00Z');
    let affected = 1;
    const { pool, store } = await readyStore((call) => {
      if (call.text.includes('MERGE')) return [[{ expires_at: expires }]];
      if (call.text.startsWith('SELECT correlation_id')) {
        return [[{ correlation_id: 'Corr-1', registration_id: REG, state_json: '{"v":1}', registered_at: registered, expires_at: expires }]];
      }
      return [[{ affected }]];
    });
    expect(await store.saveRegistration('Corr-1', REG, '{"v":1}', 604_800_000.4, 32)).toBe(expires);
    expect(values(pool.calls[0]!)).toEqual({ correlation_id: 'Corr-1', registration_id: REG, state_json: '{"v":1}', ttl_ms: 604_800_001, max_registrations: 32 });
    expect(await store.loadRegistrations('Corr-1')).toEqual([
      { correlationId: 'Corr-1', registrationId: REG.toLowerCase(), stateJson: '{"v":1}', registeredAt: registered, expiresAt: expires },
    ]);
    expect(await store.deleteRegistration('Corr-1', REG)).toBe(true);
    affected = 0;
    expect(await store.deleteRegistration('Corr-1', REG)).toBe(false);
    await expect(store.saveRegistration('c', REG, '{}', -1, 32)).rejects.toThrow(RangeError);
    await expect(store.saveRegistration('c', REG, '{}', 3651 * 86_400_000, 32)).rejects.toThrow(/3650-day/);
  });

  it('insertMessage: a new row, a duplicate (the stored row’s columns), a pruned duplicate, a duplicate-key race', async () => {
    const created = at('2030-01-01T00:00:00Z');
    const acked = at('2030-01-01T00:00:01Z');
    let script: () => Row[][] = () => [[{ created_at: created, acked_at: null, acked_seq: null, correlation_id: 'Corr-1', inserted: true }]];
    const { pool, store } = await readyStore(() => script());
    expect(await store.insertMessage(ID1, 'Corr-1', '{"e":1}', 3_600_000)).toEqual({
      id: ID1.toLowerCase(),
      inserted: true,
      correlationId: 'Corr-1',
      createdAt: created,
      ackedAt: null,
      ackedSeq: null,
    });
    expect(values(pool.calls[0]!)).toEqual({ id: ID1, correlation_id: 'Corr-1', envelope_json: '{"e":1}', retention_ms: 3_600_000 });

    script = () => [[], [{ created_at: created, acked_at: acked, acked_seq: '9223372036854775807', correlation_id: 'Corr-0', inserted: false }]];
    expect(await store.insertMessage(ID1, 'Corr-1', '{"e":1}', 3_600_000)).toEqual({
      id: ID1.toLowerCase(),
      inserted: false,
      correlationId: 'Corr-0', // the stored row's
      createdAt: created,
      ackedAt: acked,
      ackedSeq: '9223372036854775807',
    });

    script = () => [[], []];
    await expect(store.insertMessage(ID1, 'Corr-1', '{}', 1000)).rejects.toThrow(/already existed, but its row is gone/);

    let attempt = 0;
    script = () => {
      attempt++;
      if (attempt === 1) throw sqlError(2627, 14, 'Violation of PRIMARY KEY constraint');
      return [[], [{ created_at: created, acked_at: null, acked_seq: null, inserted: false }]];
    };
    pool.calls.length = 0;
    expect((await store.insertMessage(ID1, 'Corr-1', '{}', 1000)).inserted).toBe(false);
    expect(pool.calls).toHaveLength(2);

    script = () => {
      throw sqlError(2601, 14, 'Cannot insert duplicate key row');
    };
    await expect(store.insertMessage(ID1, 'Corr-1', '{}', 1000)).rejects.toThrow(/duplicate key/);
  });

  it('loadPending: binds the watermark and cursor as exact text, maps header-only rows, keeps the server order', async () => {
    const { pool, store } = await readyStore(() => [
      [
        header('C0000000-0000-4000-8000-000000000003'),
        header(ID2, { envelope_json: null, acked_at: at('2030-01-01T00:00:02Z'), acked_seq: '42', recovery_claimed: false }),
      ],
    ]);
    const first = await store.loadPending('Corr-1', WATERMARK, 64);
    expect(first.map((m) => m.id)).toEqual(['c0000000-0000-4000-8000-000000000003', ID2.toLowerCase()]);
    expect(first[1]).toEqual({
      id: ID2.toLowerCase(),
      correlationId: 'Corr-1',
      envelopeJson: null,
      createdAt: at('2030-01-01T00:00:00.123Z'),
      createdAtExact: '2030-01-01 00:00:00.1234567',
      ackedAt: at('2030-01-01T00:00:02Z'),
      ackedSeq: '42',
      recoveryClaimed: false,
    });
    expect(first[0]!.envelopeJson).toBe('{"SchemaVersion":1}');
    expect(values(pool.calls[0]!)).toEqual({
      limit: 64,
      correlation_id: 'Corr-1',
      started_at: '2030-01-01 00:00:00.1234567',
      started_seq: '9007199254740993',
    });
    expect(pool.calls[0]!.text).not.toContain('@after');

    await store.loadPending('Corr-1', { startedAt: '2030-01-01T00:00:00', startedSeq: '1' }, 10.9, {
      createdAtExact: first[1]!.createdAtExact,
      id: first[1]!.id,
    });
    expect(values(pool.calls[1]!)).toEqual({
      limit: 10,
      correlation_id: 'Corr-1',
      started_at: '2030-01-01 00:00:00',
      started_seq: '1',
      after_created_at: '2030-01-01 00:00:00.1234567',
      after_id: ID2.toLowerCase(),
    });
    expect(pool.calls[1]!.text).toContain('created_at >= @after AND (created_at > @after OR id > @after_id)');

    // explicit UTC designators (ISO 'Z', PostgreSQL '+00') are read as the same instant
    for (const [given, sent] of [
      ['1970-01-01T00:00:00Z', '1970-01-01 00:00:00'],
      ['2030-01-01T00:00:00.1234567z', '2030-01-01 00:00:00.1234567'],
      ['2030-01-01 00:00:00.123456+00', '2030-01-01 00:00:00.123456'],
      ['2030-01-01 00:00:00+00:00', '2030-01-01 00:00:00'],
    ] as const) {
      await store.loadPending('Corr-1', { startedAt: given, startedSeq: '0' }, 1);
      expect(pool.calls.at(-1)!.inputs.started_at!.value).toBe(sent);
    }
  });

  it('loadPending refuses a malformed watermark or cursor before querying, and answers a zero limit without a query', async () => {
    const { pool, store } = await readyStore(() => [[]]);
    await expect(store.loadPending('c', { startedAt: '2030-01-01T00:00:00.000+02:00', startedSeq: '1' }, 5)).rejects.toThrow(TypeError);
    await expect(store.loadPending('c', { startedAt: '2030-01-01', startedSeq: '1' }, 5)).rejects.toThrow(TypeError);
    await expect(store.loadPending('c', { startedAt: "2030-01-01 00:00:00'; --", startedSeq: '1' }, 5)).rejects.toThrow(TypeError);
    await expect(store.loadPending('c', { ...WATERMARK, startedSeq: '1.5' }, 5)).rejects.toThrow(/not a bigint/);
    await expect(store.loadPending('c', WATERMARK, 5, { createdAtExact: 'yesterday', id: ID1 })).rejects.toThrow(TypeError);
    await expect(store.loadPending('c', WATERMARK, 5, { createdAtExact: WATERMARK.startedAt, id: 'x' })).rejects.toThrow(/not a GUID/);
    expect(await store.loadPending('c', WATERMARK, 0)).toEqual([]);
    expect(pool.calls).toHaveLength(0);
  });

  it('loadMessagesById: de-duplicates, drops malformed ids, sends chunks of at most 1000 as one JSON array each', async () => {
    const ids = Array.from({ length: 2500 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    const { pool, store } = await readyStore((call) => {
      const chunk = JSON.parse(call.inputs.ids!.value as string) as string[];
      return [chunk.slice(0, 1).map((id) => header(id, { created_at_exact: `2030-01-01 00:00:0${9 - pool.calls.length}.0000000` }))];
    });
    const out = await store.loadMessagesById('Corr-1', [...ids, ids[0]!.toUpperCase(), 'not-a-guid']);
    expect(pool.calls.map((c) => (JSON.parse(c.inputs.ids!.value as string) as string[]).length)).toEqual([1000, 1000, 500]);
    expect(pool.calls.every((c) => c.inputs.correlation_id!.value === 'Corr-1')).toBe(true);
    // chunks merged in (created_at, id) order
    expect(out.map((m) => m.createdAtExact)).toEqual([
      '2030-01-01 00:00:06.0000000',
      '2030-01-01 00:00:07.0000000',
      '2030-01-01 00:00:08.0000000',
    ]);
    expect(await store.loadMessagesById('Corr-1', [])).toEqual([]);
    expect(pool.calls).toHaveLength(3);
  });

  it('claims, the acknowledged probe and the watermark map to booleans and strings', async () => {
    let claimed = true;
    const { pool, store } = await readyStore((call) => {
      if (call.text.includes('AS started_seq')) {
        return [[{ started_at: '2030-01-01 00:00:00.1234567', started_seq: '12345678901234567' }]];
      }
      if (call.text.includes('AS acknowledged')) return [[{ acknowledged: claimed }]];
      return [claimed ? [{ id: ID1 }] : []];
    });
    expect(await store.claimForDelivery(ID1, WATERMARK)).toBe(true);
    expect(await store.claimForRecovery(ID1)).toBe(true);
    expect(await store.isAcknowledged(ID1)).toBe(true);
    claimed = false;
    expect(await store.claimForDelivery(ID1, WATERMARK)).toBe(false);
    expect(await store.claimForRecovery(ID1)).toBe(false);
    expect(await store.isAcknowledged(ID1)).toBe(false);
    expect(values(pool.calls[0]!)).toEqual({ id: ID1, started_at: WATERMARK.startedAt, started_seq: WATERMARK.startedSeq });
    expect(await store.subscriptionStart()).toEqual({ startedAt: '2030-01-01 00:00:00.1234567', startedSeq: '12345678901234567' });
  });

  it('findOverdueWithRegistrations passes the negative age and maps rows', async () => {
    const { pool, store } = await readyStore(() => [[{ id: ID1, correlation_id: 'Corr-1', envelope_json: '{}' }]]);
    expect(await store.findOverdueWithRegistrations(5000, 100)).toEqual([{ id: ID1.toLowerCase(), correlationId: 'Corr-1', envelopeJson: '{}' }]);
    expect(values(pool.calls[0]!)).toEqual({ limit: 100, neg_older_than_ms: -5000 });
    expect(await store.findOverdueWithRegistrations(5000, 0)).toEqual([]);
    expect(pool.calls).toHaveLength(1);
  });

  it('subscribers: upsert binds the instance and TTL; heartbeat de-duplicates and batches ≤ 1000; count and delete', async () => {
    const { pool, store } = await readyStore((call) => (call.text.includes('COUNT_BIG') ? [[{ active: '3' }]] : []));
    await store.upsertSubscriber('Corr-1', REG, 'host-1-abc', 30_000);
    expect(values(pool.calls[0]!)).toEqual({ correlation_id: 'Corr-1', registration_id: REG, instance_id: 'host-1-abc', ttl_ms: 30_000 });
    const regs = Array.from({ length: 1500 }, (_, i) => ({ correlationId: i % 2 ? 'corr' : 'CORR', registrationId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` }));
    await store.heartbeatSubscribers('host-1-abc', [...regs, { ...regs[0]!, registrationId: regs[0]!.registrationId.toUpperCase() }], 30_000);
    const batches = pool.calls.slice(1).map((c) => JSON.parse(c.inputs.rows!.value as string) as Array<{ c: string; r: string }>);
    expect(batches.map((b) => b.length)).toEqual([1000, 500]);
    expect(batches[0]![0]).toEqual({ c: 'CORR', r: regs[0]!.registrationId });
    expect(batches[0]![1]).toEqual({ c: 'corr', r: regs[1]!.registrationId }); // case-distinct ids stay distinct
    expect(values(pool.calls[1]!)).toMatchObject({ instance_id: 'host-1-abc', ttl_ms: 30_000 });
    expect(await store.countActiveSubscribers('Corr-1')).toBe(3);
    await store.deleteSubscriber('Corr-1', REG);
    expect(pool.calls.at(-1)!.text).toMatch(/^DELETE FROM \[dbo\]\.\[asyncresponse_channel_subscribers\]/);
  });

  it('an empty heartbeat runs no statement, not even the schema check', async () => {
    const pool = new FakePool(() => {
      throw new Error('no statement expected');
    });
    await newStore(pool).heartbeatSubscribers('host', [], 30_000);
    expect(pool.calls).toHaveLength(0);
  });

  it('prune runs the bounded batch of the named table and returns the server-side count', async () => {
    const { pool, store } = await readyStore(() => [[{ deleted: 1000 }]]);
    expect(await store.pruneExpiredBatch('messages')).toBe(1000);
    expect(await store.pruneExpiredBatch('subscribers')).toBe(1000);
    expect(await store.pruneExpiredBatch('recovery')).toBe(1000);
    expect(pool.calls.map((c) => /FROM (\S+)/.exec(c.text)?.[1])).toEqual([
      '[dbo].[asyncresponse_channel_messages]',
      '[dbo].[asyncresponse_channel_subscribers]',
      '[dbo].[asyncresponse_recovery_state]',
    ]);
    await expect(store.pruneExpiredBatch('nope' as 'messages')).rejects.toThrow(TypeError);
  });

  it('no correlation id, id, state or envelope ever reaches the statement text', async () => {
    const { pool, store } = await readyStore(() => [[{ created_at: at('2030-01-01T00:00:00Z'), inserted: true, expires_at: at('2030-01-01T00:00:00Z'), affected: 1, active: 1, deleted: 0, acknowledged: true, started_at: WATERMARK.startedAt, started_seq: '1' }]]);
    const corr = "secret'corr";
    await store.saveRegistration(corr, REG, '{"secret_state":1}', 1000, 32);
    await store.loadRegistrations(corr);
    await store.insertMessage(ID1, corr, '{"secret_envelope":1}', 1000);
    await store.loadPending(corr, WATERMARK, 5, { createdAtExact: WATERMARK.startedAt, id: ID1 });
    await store.loadMessagesById(corr, [ID1]);
    await store.claimForDelivery(ID1, WATERMARK);
    await store.upsertSubscriber(corr, REG, 'secret_instance', 1000);
    await store.heartbeatSubscribers('secret_instance', [{ correlationId: corr, registrationId: REG }], 1000);
    await store.countActiveSubscribers(corr);
    expect(pool.calls.length).toBeGreaterThanOrEqual(9); // one statement per call at least: the loop below checks them all
    for (const call of pool.calls) expect(call.text).not.toMatch(/secret|a1b2c3d4|b0000000|2030-01-01/i);
  });
});

describe('SQL Server channel store: pools', () => {
  it('close() leaves a shared pool open and closes an owned one', async () => {
    const shared = new FakePool(() => []);
    await newStore(shared).close();
    expect(shared.closed).toBe(false);
    const owned = new FakePool(() => []);
    await newStore(owned, { ownsPool: true }).close();
    expect(owned.closed).toBe(true);
  });

  it('a refused login (18456) rebuilds the pool once and sends the statement again; other errors propagate', async () => {
    let refuse = 1;
    const pool = new FakePool((call) => {
      if (isChannelCatalog(call)) return channelCatalogRecordsets(channelSpecCatalog(names));
      if (call.text.includes('COUNT_BIG') && refuse-- > 0) throw sqlError(18456, 14, "Login failed for user 'app'.");
      if (call.text.includes('COUNT_BIG')) return [[{ active: '1' }]];
      return [];
    });
    const store = newStore(pool);
    expect(await store.countActiveSubscribers('c')).toBe(1);
    expect(store.poolHolder.rebuilds).toBe(1);
    expect(pool.calls.filter((c) => c.text.includes('COUNT_BIG'))).toHaveLength(2);
    refuse = 0;
    const failing = new FakePool((call) => {
      if (isChannelCatalog(call)) return channelCatalogRecordsets(channelSpecCatalog(names));
      if (call.text.includes('COUNT_BIG')) throw sqlError(1205, 13, 'deadlock victim');
      return [];
    });
    const other = newStore(failing);
    await expect(other.countActiveSubscribers('c')).rejects.toThrow(/deadlock/);
    expect(other.poolHolder.rebuilds).toBe(0);
    expect(failing.calls.filter((c) => c.text.includes('COUNT_BIG'))).toHaveLength(1);
  });

  it('openSqlServerStores puts both stores on one pool that only its own close() closes', async () => {
    const before = openHandles().length;
    const stores = openSqlServerStores(
      { connectionString: 'Server=127.0.0.1,1;Database=app;User Id=sa;Password=x', poolMax: 4, poolMin: 0, connectTimeoutMs: 1000, requestTimeoutMs: 1000 },
      { schema: 'dbo', table: 'asyncresponse_transport_messages', autoCreateSchema: true, logger: silentLogger },
      { names, autoCreateSchema: true, logger: silentLogger },
    );
    expect(openHandles().length).toBe(before + 1); // one pool
    expect(stores.channel.poolHolder).toBe(stores.poolHolder);
    expect(stores.transport.poolHolder).toBe(stores.poolHolder);
    expect((stores.channel as unknown as { pool: unknown }).pool).toBe(stores.pool);
    expect((stores.transport as unknown as { pool: unknown }).pool).toBe(stores.pool);
    await stores.transport.close();
    await stores.channel.close();
    expect(openHandles().length).toBe(before + 1);
    await Promise.all([stores.close(), stores.close()]);
    expect(openHandles().length).toBe(before);
  });

  it('openSqlServerStores refuses a channel object named like the transport table before creating a pool', () => {
    const before = openHandles().length;
    expect(() =>
      openSqlServerStores(
        { connectionString: 'Server=127.0.0.1;Database=app;User Id=sa;Password=x', poolMax: 1, poolMin: 0, connectTimeoutMs: 1000, requestTimeoutMs: 1000 },
        { schema: 'dbo', table: 'Shared_Table', autoCreateSchema: true, logger: silentLogger },
        { names: channelNames('dbo', { ...DEFAULT_CHANNEL_TABLES, messageTable: 'shared_table' }, 'sqlserver'), autoCreateSchema: true, logger: silentLogger },
      ),
    ).toThrow(/transport table \('Shared_Table'\) and the MessageTable table \('shared_table'\)/);
    expect(openHandles().length).toBe(before);
  });
});

describe('SQL Server GUID order', () => {
  it('compares the last group first, then group 4, then groups 3, 2, 1 byte-swapped (SqlGuid order)', () => {
    const ordered = [
      '00000000-0000-0000-0000-000000000000',
      'ffffffff-ffff-ffff-ffff-000000000000', // node bytes dominate everything else
      '00000000-0000-0000-0001-000000000001',
      '00000000-0000-0100-0000-000000000002', // Data3 0x0100: low byte 00 is compared first…
      '00000000-0000-0001-0000-000000000002', // …so 0x0001 (low byte 01) sorts after it
      '00000000-0000-0000-0000-000000000100',
    ];
    const shuffled = [...ordered].reverse();
    expect(shuffled.sort(compareSqlServerGuids)).toEqual(ordered);
    expect(sqlServerGuidKey('00112233-4455-6677-8899-aabbccddeeff')).toBe('aabbccddeeff8899' + '7766' + '5544' + '33221100');
  });
});
