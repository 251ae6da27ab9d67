// The announce of T-SQL publishes (shared/stores/sqlserver/announce.ts), which no Azure SQL here runs: its text is
// pinned here, parsed by the grammar check (sqlserver.tsql-grammar.test.ts), and run on a T-SQL engine with the system
// procedure stubbed and the call forwarded to Azurite (test/contract/sqlserver.announce.contract.test.ts). Also the
// drain side's re-checks and `npm run schema -- announce`'s plan.

import { describe, expect, it } from 'vitest';
import { transportNames } from '../../shared/sql/identifiers';
import {
  ANNOUNCE_ALREADY_SENT,
  ANNOUNCE_FAILED,
  ANNOUNCE_SENT,
  ANNOUNCE_UNAVAILABLE,
  announceCredential,
  announceProcedure,
  announceProcedureName,
  dropAnnounceProcedure,
  queueUrlProblem,
} from '../../shared/stores/sqlserver/announce';
import { ANNOUNCE_RECHECKS, parseRequest, recheckRequest } from '../../shared/drain-requests/message';
import { announcePlan, appQueueUrl, formatAnnouncePlan, parseArgs, runAnnouncePlan } from '../../shared/cli/schema';
import type { AppConfig } from '../../shared/settings';

const names = transportNames('dbo', 'asyncresponse_transport_messages', 'sqlserver');
const URL_ = 'https://appstorage.queue.core.windows.net/drain-requests';
const text = announceProcedure(names, { queueUrl: URL_ });

describe('the announce procedure (T-SQL)', () => {
  it('is named after the transport table and runs as its owner, so publishers need EXECUTE on it only', () => {
    expect(announceProcedureName(names)).toBe('[dbo].[asyncresponse_transport_messages_announce]');
    expect(text.split('\n').slice(0, 6)).toEqual([
      'CREATE OR ALTER PROCEDURE [dbo].[asyncresponse_transport_messages_announce]',
      '    @queue nvarchar(200),',
      '    @error nvarchar(4000) = NULL OUTPUT',
      'WITH EXECUTE AS OWNER',
      'AS',
      'BEGIN',
    ]);
    expect(announceProcedureName(transportNames('jobs', 'x'.repeat(125), 'sqlserver'))).toBe(`[jobs].[${'x'.repeat(119)}_announce]`);
  });

  it("never lets a failed call doom the caller's transaction, and is a no-op where the system procedure is absent", () => {
    expect(text).toContain('    SET XACT_ABORT OFF;');
    expect(text).toContain(`    IF @queue IS NULL OR OBJECT_ID(N'sys.sp_invoke_external_rest_endpoint') IS NULL RETURN ${ANNOUNCE_UNAVAILABLE};`);
    const tryAt = text.indexOf('    BEGIN TRY');
    const callAt = text.indexOf('        EXEC @status = sys.sp_invoke_external_rest_endpoint');
    const catchAt = text.indexOf('    BEGIN CATCH');
    expect(tryAt).toBeGreaterThan(0);
    expect(callAt).toBeGreaterThan(tryAt);
    expect(catchAt).toBeGreaterThan(callAt);
    expect(text.slice(catchAt)).toBe(
      [
        '    BEGIN CATCH',
        '        SET @error = ERROR_MESSAGE();',
        "        -- a transaction the engine doomed cannot commit anyway: say why now rather than at the caller's COMMIT",
        '        IF XACT_STATE() = -1 THROW;',
        `        RETURN ${ANNOUNCE_FAILED};`,
        '    END CATCH;',
        'END;',
      ].join('\n'),
    );
  });

  it('Put Messages on the queue with the credential, Storage headers, a bounded timeout and an 8-day time to live', () => {
    expect(text).toContain(
      [
        '        EXEC @status = sys.sp_invoke_external_rest_endpoint',
        `            @url = N'${URL_}/messages?messagettl=691200',`,
        "            @method = N'POST',",
        '            @headers = N\'{"Content-Type":"application/xml","Accept":"application/xml","x-ms-version":"2021-08-06"}\',',
        '            @payload = @payload,',
        `            @credential = N'${URL_}',`,
        '            @timeout = 5,',
        '            @response = @response OUTPUT;',
      ].join('\n'),
    );
    expect(text).toContain("DECLARE @payload nvarchar(max) = N'<QueueMessage><MessageText>' + CONVERT(nvarchar(4000), @b64) + N'</MessageText></QueueMessage>';");
    expect(announceProcedure(names, { queueUrl: URL_, credential: 'https://appstorage.queue.core.windows.net/', timeoutSeconds: 3 })).toContain(
      "            @credential = N'https://appstorage.queue.core.windows.net/',\n            @timeout = 3,",
    );
  });

  it('builds {"queues":[<queue>],"recheck":3} in ASCII and base64 with the standard alphabet (no UTF-8 collation, no BASE64_ENCODE)', () => {
    expect(text).toContain(`DECLARE @json varchar(2000) = '{"queues":["'`);
    expect(text).toContain(`SET @json = @json + '"],"recheck":${ANNOUNCE_RECHECKS}}';`);
    expect(text).toContain("@alphabet varchar(64) = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'");
    expect(text).not.toMatch(/BASE64_ENCODE|_UTF8|FOR XML/);
    // every character outside printable ASCII, and " and \, as \uXXXX (the UTF-16 code unit, BIN2: surrogates apart)
    expect(text).toContain('UNICODE(SUBSTRING(@queue COLLATE Latin1_General_100_BIN2, @i, 1))');
    expect(text).toContain('CASE WHEN @c BETWEEN 32 AND 126 AND @c NOT IN (34, 92) THEN CHAR(@c)');
  });

  it('makes one call per queue per transaction (SESSION_CONTEXT keyed by the transaction), recording only a call that went', () => {
    expect(text).toContain("DECLARE @tran nvarchar(20) = CASE WHEN @@TRANCOUNT > 0 THEN CONVERT(nvarchar(20), CURRENT_TRANSACTION_ID()) END;");
    expect(text).toContain(`IF CHARINDEX(NCHAR(31) + @queue + NCHAR(31), @seen COLLATE Latin1_General_100_BIN2) > 0 RETURN ${ANNOUNCE_ALREADY_SENT};`);
    const record = text.indexOf("EXEC sys.sp_set_session_context @key = N'asyncresponse.announced', @value = @seen;");
    expect(record).toBeGreaterThan(text.indexOf('        IF @status <> 0'));
    expect(text.indexOf(`        RETURN ${ANNOUNCE_SENT};`)).toBeGreaterThan(record);
  });

  it('takes a stub of the system procedure for a test engine (the same call, another name)', () => {
    const stubbed = announceProcedure(names, { queueUrl: URL_ }, '[dbo].[sp_invoke_external_rest_endpoint]');
    expect(stubbed).toContain("OBJECT_ID(N'[dbo].[sp_invoke_external_rest_endpoint]') IS NULL");
    expect(stubbed).toContain('EXEC @status = [dbo].[sp_invoke_external_rest_endpoint]');
    expect(stubbed.replace(/\[dbo\]\.\[sp_invoke_external_rest_endpoint\]/g, 'sys.sp_invoke_external_rest_endpoint')).toBe(text);
  });

  it('refuses a URL or setting it could not call with', () => {
    expect(queueUrlProblem(URL_)).toBeNull();
    expect(queueUrlProblem('http://appstorage.queue.core.windows.net/drain-requests')).toMatch(/https/);
    expect(queueUrlProblem(`${URL_}?sv=1`)).toMatch(/query string/);
    expect(queueUrlProblem('https://appstorage.queue.core.windows.net/Drain_Requests')).toMatch(/one queue name/);
    expect(queueUrlProblem('https://appstorage.queue.core.windows.net/a/b')).toMatch(/one queue name/);
    expect(() => announceProcedure(names, { queueUrl: URL_, timeoutSeconds: 0 })).toThrow(/1-230/);
    expect(() => announceProcedure(names, { queueUrl: URL_, credential: "x'y" })).toThrow(/quotes/);
  });

  it('creates the credential (and a master key when the database has none) only when missing', () => {
    expect(announceCredential({ queueUrl: URL_ }, 'Ar1!pw')).toBe(
      [
        "IF NOT EXISTS (SELECT 1 FROM sys.symmetric_keys WHERE name = N'##MS_DatabaseMasterKey##')",
        "    CREATE MASTER KEY ENCRYPTION BY PASSWORD = N'Ar1!pw';",
        `IF NOT EXISTS (SELECT 1 FROM sys.database_scoped_credentials WHERE name = N'${URL_}')`,
        `    CREATE DATABASE SCOPED CREDENTIAL [${URL_}] WITH IDENTITY = 'Managed Identity', SECRET = '{"resourceid":"https://storage.azure.com/"}';`,
      ].join('\n'),
    );
    expect(announceCredential({ queueUrl: URL_ })).toMatch(/PASSWORD = N'Ar1!\S{32}';/);
    expect(dropAnnounceProcedure(names)).toBe(
      "IF OBJECT_ID(N'[dbo].[asyncresponse_transport_messages_announce]', N'P') IS NOT NULL DROP PROCEDURE [dbo].[asyncresponse_transport_messages_announce];",
    );
  });
});

describe('the drain side: a request sent before its commit looks again', () => {
  it('reads recheck from a request, and refuses one out of range', () => {
    expect(parseRequest({ queues: ['orders'], recheck: 3 })).toEqual({ queues: ['orders'], recheck: 3 });
    expect(parseRequest(JSON.stringify({ queues: ['orders'], recheck: 0 }))).toEqual({ queues: ['orders'] });
    expect(parseRequest({ queues: ['orders'], recheck: 9 })).toMatch(/recheck/);
    expect(parseRequest({ queues: ['orders'], recheck: 1.5 })).toMatch(/recheck/);
  });

  it('a drain that found nothing sends the request again 2 s, 4 s, then 8 s later, and then stops', () => {
    const seen: Array<[number, number | undefined]> = [];
    let request = { queues: ['orders'], recheck: ANNOUNCE_RECHECKS } as ReturnType<typeof parseRequest>;
    for (let next = recheckRequest(request as never, 'orders'); next; next = recheckRequest(request as never, 'orders')) {
      seen.push([next.visibilitySeconds, next.message.recheck]);
      expect(next.message.queues).toEqual(['orders']);
      request = next.message;
    }
    expect(seen).toEqual([
      [2, 2],
      [4, 1],
      [8, undefined],
    ]);
    expect(recheckRequest({ queues: ['orders'] }, 'orders')).toBeUndefined();
  });
});

describe('npm run schema -- announce', () => {
  const settings = {
    schema: 'dbo',
    transportTable: 'asyncresponse_transport_messages',
    drainRequests: { connection: 'AzureWebJobsStorage', queueName: 'drain-requests' },
  } as unknown as AppConfig;

  it('takes its options by name', () => {
    expect(parseArgs(['announce', '--queue-url', URL_, '--dry-run'])).toEqual({ _: 'announce', 'queue-url': URL_, 'dry-run': 'true' });
    expect(() => parseArgs(['announce', '--queue', URL_])).toThrow(/unknown option --queue for 'announce'.*--queue-url/);
  });

  it("defaults the URL to the app's own drain-request queue, however the storage account is configured", () => {
    expect(appQueueUrl({ AzureWebJobsStorage__accountName: 'appstorage' }, 'AzureWebJobsStorage', 'drain-requests')).toBe(URL_);
    expect(appQueueUrl({ AzureWebJobsStorage__queueServiceUri: 'https://appstorage.queue.core.windows.net/' }, 'AzureWebJobsStorage', 'drain-requests')).toBe(URL_);
    expect(appQueueUrl({ AzureWebJobsStorage: 'DefaultEndpointsProtocol=https;AccountName=appstorage;AccountKey=k' }, 'AzureWebJobsStorage', 'drain-requests')).toBe(URL_);
    expect(appQueueUrl({}, 'AzureWebJobsStorage', 'drain-requests')).toBeUndefined();
    expect(() => announcePlan({ _: 'announce' }, settings, {})).toThrow(/--queue-url/);
    expect(announcePlan({ _: 'announce' }, settings, { AzureWebJobsStorage__accountName: 'appstorage' }).target).toEqual({ queueUrl: URL_ });
  });

  it('where the server has the system procedure: the credential, then the procedure; elsewhere the procedure alone (a no-op)', async () => {
    const plan = announcePlan({ _: 'announce', 'queue-url': URL_ }, settings, {});
    for (const [available, expected] of [
      [1, ['probe', 'credential', 'procedure']],
      [0, ['probe', 'procedure']],
    ] as const) {
      const sent: string[] = [];
      const lines: string[] = [];
      const code = await runAnnouncePlan(
        plan,
        async (t) => {
          sent.push(t.includes('AS available') ? 'probe' : t.includes('SCOPED CREDENTIAL') ? 'credential' : t.startsWith('CREATE OR ALTER PROCEDURE') ? 'procedure' : t);
          return t.includes('AS available') ? [{ available }] : [];
        },
        (l) => lines.push(l),
      );
      expect(code).toBe(0);
      expect(sent).toEqual(expected);
      expect(lines.join('\n')).toMatch(available ? /Storage Queue Data Message Sender/ : /no-op here/);
    }
    expect(formatAnnouncePlan(plan, '<pw>')).toContain("CREATE MASTER KEY ENCRYPTION BY PASSWORD = N'<pw>';");
    expect(formatAnnouncePlan(announcePlan({ _: 'announce', remove: 'true' }, settings, {}), '<pw>')).toContain('DROP PROCEDURE');
  });
});
