// The announce of T-SQL publishes end to end (issue 28, item 4; shared/stores/sqlserver/announce.ts) on the T-SQL engine
// MSSQL_CONNECTION_STRING reaches: a transaction inserts a job and EXECs the product's announce procedure; the
// procedure calls a stub of sp_invoke_external_rest_endpoint (a procedure of that name in the test's schema: neither
// SQL Server 2022 nor Babelfish has the system one); the stub hands the request over at once (a PRINT the harness
// reads as the statement runs, so a rollback cannot take it back, as it cannot take back the real HTTPS call) and the
// harness sends it, URL, headers and XML body as the procedure built them, to Azurite's real Put Message endpoint
// (signed with a SAS instead of the server's managed identity). A consumer receives from that queue as the Functions
// queue trigger does (base64, polling up to host.json's 500 ms), parses the request with the app's parseRequest,
// drains the named queue with the app's drain loop (idle grace 1 s, DRAIN_REQUEST_IDLE_GRACE_SECONDS' default), and
// sends the re-checks the app's drain-requested function sends (recheckRequest, DrainRequestSender.sendRequest).
// On an engine with shimmed gaps the store's statements are rewritten as the contract harness does (engine-gaps.ts).

import { randomBytes, randomUUID } from 'node:crypto';
import { QueueSASPermissions, QueueServiceClient, type QueueClient } from '@azure/storage-queue';
import * as sql from 'mssql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAzurite, type Azurite } from '../../local/azurite';
import { silentLogger } from '../../shared/log';
import { parseRequest, recheckRequest, type DrainRequestMessage } from '../../shared/drain-requests/message';
import { DrainRequestSender } from '../../shared/drain-requests/sender';
import { storageRequestQueue } from '../../shared/drain-requests/storage-queue';
import { ANNOUNCE_ALREADY_SENT, ANNOUNCE_FAILED, ANNOUNCE_SENT, announceProcedure, announceProcedureName } from '../../shared/stores/sqlserver/announce';
import { transportNames } from '../../shared/sql/identifiers';
import { drainQueue } from '../../shared/transport/drain-loop';
import { WakeSignal } from '../../shared/transport/wake';
import type { Harness } from './fixtures';
import { hasGap, shimsFor, tdsEngine } from './engine-gaps';
import { sqlServerHarness } from './sqlserver-harness';
import { shimTransactionStart } from './tds-shims';

const cs = process.env.MSSQL_CONNECTION_STRING;
if (!cs) console.warn('[announce] skipped: MSSQL_CONNECTION_STRING is not set (test/compose.yml starts SQL Server 2022; docs/tests.md)');

const TABLE = 'asyncresponse_transport_messages';
/** The account name the procedure is rendered with: Azure's URL form, pointed at Azurite by the forwarder. */
const ACCOUNT_URL = 'https://devstoreaccount1.queue.core.windows.net';

interface Run {
  id: string;
  at: number;
}
interface Forwarded {
  at: number;
  status: number;
  message: DrainRequestMessage | string;
}

describe.skipIf(!cs)('[sqlserver] announce: a T-SQL publish wakes a drain through the Storage queue', { timeout: 120_000 }, () => {
  const schema = `ann_${randomBytes(4).toString('hex')}`;
  const drainQueueName = `ann-${randomBytes(4).toString('hex')}`;
  const names = transportNames(schema, TABLE, 'sqlserver');
  const announce = announceProcedureName(names);
  const stub = `[${schema}].[sp_invoke_external_rest_endpoint]`;
  let azurite: Azurite;
  let h: Harness;
  let publisher: sql.ConnectionPool;
  let requests: QueueClient;
  let sasQuery: string;
  const runs: Run[] = [];
  const forwarded: Forwarded[] = [];
  const drains: Array<{ queue: string; claimed: number; recheck: number | undefined; at: number }> = [];
  let consuming = true;
  let consumer: Promise<void> | undefined;

  /** The stub's PRINT, sent to Azurite as the real procedure would send it (the URL's account swapped for Azurite's). */
  async function forward(line: string): Promise<void> {
    const call = JSON.parse(line.slice('stub-call '.length)) as { url: string; method: string; headers: string; payload: string };
    const url = call.url.replace(ACCOUNT_URL, azurite.queueEndpoint.replace(/\/+$/, '')) + `&${sasQuery}`;
    const response = await fetch(url, { method: call.method, headers: JSON.parse(call.headers) as Record<string, string>, body: call.payload });
    const text = /<MessageText>([^<]*)<\/MessageText>/.exec(call.payload)?.[1] ?? '';
    forwarded.push({ at: Date.now(), status: response.status, message: parseRequest(Buffer.from(text, 'base64').toString('utf8')) });
  }

  /** A request on the publisher's pool whose stub calls are forwarded as they are printed. */
  function request(parent: sql.ConnectionPool | sql.Transaction): sql.Request {
    const r = new sql.Request(parent as sql.ConnectionPool);
    r.on('info', (info: { message: string }) => {
      if (info.message.startsWith('stub-call ')) void forward(info.message);
    });
    return r;
  }

  /** The queue trigger's part: receive, decode, parse, drain each named queue, re-check a drain that found nothing. */
  async function consume(sender: DrainRequestSender): Promise<void> {
    while (consuming) {
      const received = await requests.receiveMessages({ numberOfMessages: 1, visibilityTimeout: 30 }).catch(() => undefined);
      const item = received?.receivedMessageItems[0];
      if (!item) {
        await new Promise((r) => setTimeout(r, 500)); // host.json maxPollingInterval
        continue;
      }
      const parsed = parseRequest(Buffer.from(item.messageText, 'base64').toString('utf8'));
      if (typeof parsed !== 'string') {
        for (const queue of parsed.queues) {
          const report = await drainQueue({
            store: h.store,
            queue,
            handler: async (job) => {
              runs.push({ id: job.id, at: Date.now() });
            },
            policy: { maxDeliveryAttempts: 5, redeliveryDelayMs: 0, redeliveryMaxDelayMs: 0 },
            deadLetterQueue: 'ann_dlq',
            lockTimeoutMs: 30_000,
            batchSize: 16,
            concurrency: 4,
            budgetMs: 8_000,
            idleGraceMs: 1_000,
            emptyPollDelayMs: 250,
            wake: new WakeSignal(),
            logger: silentLogger,
          });
          drains.push({ queue, claimed: report.claimed, recheck: parsed.recheck, at: Date.now() });
          const next = report.claimed === 0 && (report.stoppedBy === 'idle' || report.stoppedBy === 'budget') ? recheckRequest(parsed, queue) : undefined;
          if (next) await sender.sendRequest(next.message, next.visibilitySeconds);
        }
      }
      await requests.deleteMessage(item.messageId, item.popReceipt).catch(() => undefined);
    }
  }

  /** BEGIN TRAN; INSERT a ready job of `queue`; EXEC the announce; `between`; then COMMIT or ROLLBACK. */
  async function publishFromSql(queue: string, o: { rollback?: boolean; between?: (tx: sql.Transaction) => Promise<void>; xactAbort?: boolean; announces?: number } = {}) {
    const id = randomUUID();
    const tx = new sql.Transaction(publisher);
    await tx.begin();
    // an engine without CURRENT_TRANSACTION_ID(): the harness numbers the transaction (engine-gaps.ts currentTransactionId)
    if (hasGap(await tdsEngine(), 'currentTransactionId')) await request(tx).query(shimTransactionStart());
    const results: Array<{ code: number; error: string | null }> = [];
    try {
      await request(tx).query(o.xactAbort ? 'SET XACT_ABORT ON;' : 'SET XACT_ABORT OFF;');
      await request(tx)
        .input('id', sql.UniqueIdentifier(), id)
        .input('queue', sql.NVarChar(200), queue)
        .query(`INSERT INTO [${schema}].[${TABLE}] (id, queue, payload_json) VALUES (@id, @queue, N'{"from":"t-sql"}');`);
      for (let i = 0; i < (o.announces ?? 1); i++) {
        const r = await request(tx)
          .input('queue', sql.NVarChar(200), queue)
          .output('error', sql.NVarChar(4000))
          .execute(announce.replace(/\[|\]/g, ''));
        results.push({ code: r.returnValue as number, error: (r.output.error as string | null) ?? null });
      }
      const state = await request(tx).query<{ s: number }>('SELECT XACT_STATE() AS s;');
      await o.between?.(tx);
      const committedAt = Date.now();
      if (o.rollback) await tx.rollback();
      else await tx.commit();
      return { id, results, xactState: state.recordset[0]!.s, committedAt };
    } catch (err) {
      await tx.rollback().catch(() => undefined);
      throw err;
    }
  }

  const runOf = async (id: string, withinMs: number): Promise<Run | undefined> => {
    const until = Date.now() + withinMs;
    for (;;) {
      const run = runs.find((r) => r.id === id);
      if (run || Date.now() > until) return run;
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  beforeAll(async () => {
    azurite = await startAzurite({ location: 'memory' });
    const service = QueueServiceClient.fromConnectionString(azurite.connectionString);
    requests = service.getQueueClient(drainQueueName);
    await requests.createIfNotExists();
    sasQuery = new URL(await requests.generateSasUrl({ permissions: QueueSASPermissions.parse('a'), expiresOn: new Date(Date.now() + 3600_000) })).search.slice(1);
    h = await sqlServerHarness(cs!, schema, true);
    await h.store.ensureSchema();
    publisher = new sql.ConnectionPool(cs!);
    await publisher.connect();
    await publisher.request().query(`CREATE TABLE [${schema}].[stub_control] (fail bit NOT NULL); INSERT INTO [${schema}].[stub_control] (fail) VALUES (0);`);
    await publisher.request().query(
      [
        `CREATE PROCEDURE ${stub}`,
        '    @url nvarchar(4000), @method nvarchar(6) = N\'POST\', @headers nvarchar(4000) = NULL, @payload nvarchar(max) = NULL,',
        // the system procedure's @response is nvarchar(max); Babelfish cannot return an nvarchar(max) OUTPUT parameter
        // ('… is an output parameter but corresponding argument is not writable'), and the stub's answer is short
        '    @credential nvarchar(128) = NULL, @timeout smallint = 30, @response nvarchar(4000) = NULL OUTPUT',
        'AS',
        'BEGIN',
        '    SET NOCOUNT ON;',
        `    IF EXISTS (SELECT 1 FROM [${schema}].[stub_control] WHERE fail = 1) THROW 50404, N'stub: the endpoint call failed (as 10928, a timeout or a 403 would)', 1;`,
        "    DECLARE @call nvarchar(4000) = N'stub-call ' + (SELECT @url AS url, @method AS method, @headers AS headers, @payload AS payload, @credential AS credential FOR JSON PATH, WITHOUT_ARRAY_WRAPPER);",
        '    PRINT @call;',
        '    SET @response = N\'{"response":{"status":{"http":{"code":201,"description":"Created"}}}}\';',
        '    RETURN 0;',
        'END;',
      ].join('\n'),
    );
    // the product's procedure, calling the stub; on an engine with shimmed gaps rewritten as the harness rewrites statements
    const procedure = announceProcedure(names, { queueUrl: `${ACCOUNT_URL}/${drainQueueName}` }, stub);
    await publisher.request().query((shimsFor(await tdsEngine()) ?? ((t: string) => t))(procedure));
    consumer = consume(new DrainRequestSender(storageRequestQueue(requests), { coalesceMs: 1000, fanOut: 1, maxPending: 10, logger: silentLogger }));
  });

  afterAll(async () => {
    consuming = false;
    await consumer?.catch(() => undefined);
    await publisher?.close().catch(() => undefined);
    await h?.close().catch(() => undefined);
    await azurite?.stop();
  });

  it('a committed T-SQL publish starts within 2 s of its COMMIT; a second announce in the transaction makes no second call', async () => {
    const before = forwarded.length;
    const p = await publishFromSql('ann-orders', { announces: 2 });
    expect(p.results.map((r) => r.code)).toEqual([ANNOUNCE_SENT, ANNOUNCE_ALREADY_SENT]);
    const run = await runOf(p.id, 10_000);
    expect(run, 'the job ran').toBeDefined();
    const latency = run!.at - p.committedAt;
    console.log(`[announce] committed T-SQL publish started ${latency} ms after COMMIT`);
    expect(latency).toBeLessThan(2000);
    const calls = forwarded.slice(before);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ status: 201, message: { queues: ['ann-orders'], recheck: 3 } });
  });

  it('an announce that arrives before the COMMIT (transaction open 3 s more) still starts the job soon after the COMMIT', async () => {
    const p = await publishFromSql('ann-slow', { between: () => new Promise((r) => setTimeout(r, 3000)) });
    expect(p.results[0]!.code).toBe(ANNOUNCE_SENT);
    const run = await runOf(p.id, 20_000);
    expect(run, 'the job ran (before the 5-minute safety net)').toBeDefined();
    const empty = drains.filter((d) => d.queue === 'ann-slow' && d.claimed === 0);
    console.log(
      `[announce] transaction committed 3 s after its announce: started ${run!.at - p.committedAt} ms after COMMIT, after ${empty.length} empty drain(s) (re-checks ${empty.map((d) => d.recheck).join(', ')})`,
    );
    // a drain that starts before the commit finds nothing (on Babelfish 4.2.0: one empty drain, then the 2 s re-check
    // took the job); a claim that waited for the writer's lock instead would take it at the commit: either way soon
    expect(run!.at - p.committedAt).toBeLessThan(4000);
  });

  it('a rolled-back publish runs nothing: the early drain and its re-checks find nothing', async () => {
    const p = await publishFromSql('ann-rollback', { rollback: true });
    expect(p.results[0]!.code).toBe(ANNOUNCE_SENT);
    // the announce and its three re-checks (2 s, 4 s, 8 s) all run, and claim nothing
    const until = Date.now() + 25_000;
    while (drains.filter((d) => d.queue === 'ann-rollback').length < 4 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    const seen = drains.filter((d) => d.queue === 'ann-rollback');
    expect(seen.map((d) => [d.claimed, d.recheck])).toEqual([
      [0, 3],
      [0, 2],
      [0, 1],
      [0, undefined],
    ]);
    expect(runs.find((r) => r.id === p.id)).toBeUndefined();
    expect(await h.raw.countQueue('ann-rollback')).toBe(0);
  });

  it("a failing call leaves the caller's transaction committable, even under XACT_ABORT ON; the job waits for the timers", async () => {
    await publisher.request().query(`UPDATE [${schema}].[stub_control] SET fail = 1;`);
    try {
      const before = forwarded.length;
      const p = await publishFromSql('ann-failing', { xactAbort: true });
      expect(p.results[0]!.code).toBe(ANNOUNCE_FAILED);
      expect(p.results[0]!.error).toMatch(/stub: the endpoint call failed/);
      expect(p.xactState).toBe(1);
      expect(forwarded.length).toBe(before);
      expect(await h.raw.countQueue('ann-failing')).toBe(1); // committed: the safety net drains it
    } finally {
      await publisher.request().query(`UPDATE [${schema}].[stub_control] SET fail = 0;`);
    }
  });
});
