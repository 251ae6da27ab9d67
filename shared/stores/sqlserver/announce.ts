// The announce (issue 28): a job published from the user's own T-SQL (the outbox procedures, or a plain INSERT)
// announces nothing by itself, so in queue mode it waits for the safety-net timer (up to 5 minutes). On Azure SQL
// Database (and SQL Server 2025) `sp_invoke_external_rest_endpoint` can Put Message the app's drain request on its
// Storage queue, signed with the logical server's managed identity through a database scoped credential:
//
//   EXEC {schema}.{table}_announce @queue = N'orders';      -- after the publish, in or after the transaction
//
// Opt-in, created by `npm run schema -- announce` (it needs the deployment's queue URL, so it is no schema version).
// The procedure
// * makes one call per queue per transaction: a second announce of that queue in the same transaction returns 1
//   without a call (the session remembers the transaction id and the queues in SESSION_CONTEXT);
// * never fails the caller's transaction: XACT_ABORT OFF inside (so a failed call, caught, leaves it committable
//   whatever the caller set), TRY/CATCH around the call, the error returned in @error; only a transaction the engine
//   already doomed (XACT_STATE() = -1, which no caller can commit) gets the error re-raised at once;
// * is a no-op (returns 2) where the system procedure does not exist: SQL Server 2019/2022, where such a job waits
//   for the timers (DRAIN_WORKER_SCHEDULE, 0 */5 * * * * in queue mode; a shorter schedule shortens the wait);
// * sends `{"queues":["<queue>"],"recheck":3}`, base64 as the queue trigger expects, built with no UTF-8 collation
//   and no BASE64_ENCODE (every character outside printable ASCII escaped as \uXXXX, then base64 by hand), so it
//   compiles on every version the schema supports.
// The call is not transactional: it runs when the statement runs, before the caller's COMMIT (or ROLLBACK). A drain
// that starts before the commit finds nothing (READPAST skips the uncommitted row); `recheck` makes that drain send
// the request again, visible 2 s, then 4 s, then 8 s later (shared/drain-requests/message.ts recheckRequest), so a
// transaction that commits within ~15 s of its announce is drained then, and a later one by the safety net. A
// rolled-back publish costs four empty drains. No SQL Server runs here: the text is pinned by
// test/unit/sqlserver.announce-statement-shapes.test.ts, parsed by the T-SQL grammar check, and run end to end on a
// T-SQL engine with the system procedure replaced by a stub (test/contract/sqlserver.announce.contract.test.ts).

import { randomBytes } from 'node:crypto';
import { derivedName, IDENTIFIER_CAP, quoteIdentifier, type TransportNames } from '../../sql/identifiers';
import { ANNOUNCE_RECHECKS } from '../../drain-requests/message';

/** The system procedure the announce calls (Azure SQL Database, Managed Instance, SQL Server 2025). */
export const SYSTEM_ENDPOINT_PROCEDURE = 'sys.sp_invoke_external_rest_endpoint';
/** The token audience of Azure Storage for the credential's managed identity. */
export const STORAGE_RESOURCE = 'https://storage.azure.com/';
/** The Storage REST version the call asks for (bearer tokens need 2017-11-09 or later). */
export const STORAGE_API_VERSION = '2021-08-06';
/** Put Message's messagettl: the app's own requests live 8 days (storage-queue.ts). */
export const ANNOUNCE_MESSAGE_TTL_SECONDS = 8 * 24 * 3600;
/** The session-context key holding "<transaction id><US><queue><US>…" (US = NCHAR(31), which no queue name holds). */
export const ANNOUNCED_KEY = 'asyncresponse.announced';

/** What the announce returns. */
export const ANNOUNCE_SENT = 0;
export const ANNOUNCE_ALREADY_SENT = 1;
export const ANNOUNCE_UNAVAILABLE = 2;
export const ANNOUNCE_FAILED = 3;

export interface AnnounceTarget {
  /** The drain-request queue: https://<account>.queue.core.windows.net/<queue> (no query string, no trailing slash). */
  queueUrl: string;
  /** The database scoped credential that signs the call; default the queue URL (a credential is named after a URL prefix). */
  credential?: string;
  /** The call's timeout in seconds, 1–230 (the caller's transaction waits that long at most). Default 5. */
  timeoutSeconds?: number;
}

const q = (n: string) => quoteIdentifier(n, 'sqlserver');

export function announceProcedureName(names: TransportNames): string {
  return `${q(names.schema)}.${q(derivedName(names.table, '_announce', IDENTIFIER_CAP.sqlserver))}`;
}

/** null when the URL can be a drain-request queue the procedure may call; else what is wrong with it. */
export function queueUrlProblem(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `'${url}' is not a URL`;
  }
  if (u.protocol !== 'https:') return `the queue URL must be https (sp_invoke_external_rest_endpoint calls https only): '${url}'`;
  if (u.search || u.hash || u.username || u.password) return `the queue URL must have no query string, fragment or user: '${url}'`;
  if (!/^\/[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$/.test(u.pathname)) return `the queue URL's path must be one queue name (3-63 lower-case letters, digits and single hyphens): '${url}'`;
  if (/['\s]/.test(url)) return `the queue URL must not hold quotes or spaces: '${url}'`;
  return null;
}

function checkedTarget(target: AnnounceTarget): Required<AnnounceTarget> {
  const problem = queueUrlProblem(target.queueUrl);
  if (problem) throw new Error(problem);
  const credential = target.credential ?? target.queueUrl;
  if (/'/.test(credential) || credential.length > 128 || credential.length === 0) throw new Error(`the credential name must be 1-128 characters without quotes: '${credential}'`);
  const timeoutSeconds = target.timeoutSeconds ?? 5;
  if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1 || timeoutSeconds > 230) throw new Error(`the call's timeout must be 1-230 seconds, not ${timeoutSeconds}`);
  return { queueUrl: target.queueUrl, credential, timeoutSeconds };
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const hexDigit = (e: string) => `SUBSTRING('0123456789abcdef', ${e} + 1, 1)`;

/**
 * The announce procedure for the app's schema. `endpoint` is the procedure it calls and tests for: the system one in
 * production; a test harness on an engine without it passes a stub of the same signature.
 */
export function announceProcedure(names: TransportNames, target: AnnounceTarget, endpoint: string = SYSTEM_ENDPOINT_PROCEDURE): string {
  const t = checkedTarget(target);
  const url = `${t.queueUrl}/messages?messagettl=${ANNOUNCE_MESSAGE_TTL_SECONDS}`;
  const headers = JSON.stringify({ 'Content-Type': 'application/xml', Accept: 'application/xml', 'x-ms-version': STORAGE_API_VERSION });
  return [
    `CREATE OR ALTER PROCEDURE ${announceProcedureName(names)}`,
    '    @queue nvarchar(200),',
    '    @error nvarchar(4000) = NULL OUTPUT',
    // callers need EXECUTE on this procedure only, not EXECUTE ANY EXTERNAL ENDPOINT and REFERENCES on the credential
    'WITH EXECUTE AS OWNER',
    'AS',
    'BEGIN',
    '    SET NOCOUNT ON;',
    "    -- a failed call must leave the caller's transaction committable, whatever XACT_ABORT the caller set",
    '    SET XACT_ABORT OFF;',
    '    SET @error = NULL;',
    `    IF @queue IS NULL OR OBJECT_ID(N'${endpoint}') IS NULL RETURN ${ANNOUNCE_UNAVAILABLE};`,
    "    -- one call per queue per transaction: the session remembers '<transaction id><US><queue><US>…'",
    "    DECLARE @tran nvarchar(20) = CASE WHEN @@TRANCOUNT > 0 THEN CONVERT(nvarchar(20), CURRENT_TRANSACTION_ID()) END;",
    `    DECLARE @seen nvarchar(4000) = CONVERT(nvarchar(4000), SESSION_CONTEXT(N'${ANNOUNCED_KEY}'));`,
    '    IF @tran IS NULL OR @seen IS NULL OR LEFT(@seen, LEN(@tran) + 1) <> @tran + NCHAR(31) SET @seen = NULL;',
    '    IF CHARINDEX(NCHAR(31) + @queue + NCHAR(31), @seen COLLATE Latin1_General_100_BIN2) > 0 RETURN ' + `${ANNOUNCE_ALREADY_SENT};`,
    `    -- the drain request {"queues":["<queue>"],"recheck":${ANNOUNCE_RECHECKS}} in ASCII (other characters as \\uXXXX), then base64`,
    `    DECLARE @json varchar(2000) = '{"queues":["', @i int = 1, @c int, @len int = LEN(@queue + N'.') - 1;`,
    '    WHILE @i <= @len',
    '    BEGIN',
    '        SET @c = UNICODE(SUBSTRING(@queue COLLATE Latin1_General_100_BIN2, @i, 1));',
    "        SET @json = @json + CASE WHEN @c BETWEEN 32 AND 126 AND @c NOT IN (34, 92) THEN CHAR(@c)",
    `            ELSE '\\u' + ${hexDigit('@c / 4096 % 16')} + ${hexDigit('@c / 256 % 16')} + ${hexDigit('@c / 16 % 16')} + ${hexDigit('@c % 16')} END;`,
    '        SET @i = @i + 1;',
    '    END;',
    `    SET @json = @json + '"],"recheck":${ANNOUNCE_RECHECKS}}';`,
    `    DECLARE @alphabet varchar(64) = '${B64}', @b64 varchar(4000) = '', @k int = 1, @n int = LEN(@json), @b1 int, @b2 int, @b3 int;`,
    '    WHILE @k <= @n',
    '    BEGIN',
    '        SET @b1 = ASCII(SUBSTRING(@json, @k, 1));',
    '        SET @b2 = CASE WHEN @k + 1 <= @n THEN ASCII(SUBSTRING(@json, @k + 1, 1)) END;',
    '        SET @b3 = CASE WHEN @k + 2 <= @n THEN ASCII(SUBSTRING(@json, @k + 2, 1)) END;',
    '        SET @b64 = @b64 + SUBSTRING(@alphabet, @b1 / 4 + 1, 1) + SUBSTRING(@alphabet, @b1 % 4 * 16 + ISNULL(@b2, 0) / 16 + 1, 1)',
    "            + CASE WHEN @b2 IS NULL THEN '=' ELSE SUBSTRING(@alphabet, @b2 % 16 * 4 + ISNULL(@b3, 0) / 64 + 1, 1) END",
    "            + CASE WHEN @b3 IS NULL THEN '=' ELSE SUBSTRING(@alphabet, @b3 % 64 + 1, 1) END;",
    '        SET @k = @k + 3;',
    '    END;',
    "    DECLARE @payload nvarchar(max) = N'<QueueMessage><MessageText>' + CONVERT(nvarchar(4000), @b64) + N'</MessageText></QueueMessage>';",
    '    DECLARE @status int, @response nvarchar(max);',
    '    BEGIN TRY',
    `        EXEC @status = ${endpoint}`,
    `            @url = N'${url}',`,
    "            @method = N'POST',",
    `            @headers = N'${headers}',`,
    '            @payload = @payload,',
    `            @credential = N'${t.credential}',`,
    `            @timeout = ${t.timeoutSeconds},`,
    '            @response = @response OUTPUT;',
    '        IF @status <> 0',
    '        BEGIN',
    "            SET @error = N'the queue answered HTTP ' + ISNULL(CONVERT(nvarchar(10), JSON_VALUE(@response, N'$.response.status.http.code')), N'(no status)');",
    `            RETURN ${ANNOUNCE_FAILED};`,
    '        END;',
    '        IF @tran IS NOT NULL AND LEN(ISNULL(@seen, N\'\')) + @len < 3800',
    '        BEGIN',
    '            SET @seen = ISNULL(@seen, @tran + NCHAR(31)) + @queue + NCHAR(31);',
    `            EXEC sys.sp_set_session_context @key = N'${ANNOUNCED_KEY}', @value = @seen;`,
    '        END;',
    `        RETURN ${ANNOUNCE_SENT};`,
    '    END TRY',
    '    BEGIN CATCH',
    '        SET @error = ERROR_MESSAGE();',
    "        -- a transaction the engine doomed cannot commit anyway: say why now rather than at the caller's COMMIT",
    '        IF XACT_STATE() = -1 THROW;',
    `        RETURN ${ANNOUNCE_FAILED};`,
    '    END CATCH;',
    'END;',
  ].join('\n');
}

/**
 * The credential the call signs with: the logical server's managed identity for Storage, named after the queue URL,
 * created when missing (after a database master key, which a scoped credential needs, when the database has none:
 * its password is random and never needed again, the service master key opens it). Idempotent.
 */
export function announceCredential(target: AnnounceTarget, masterKeyPassword: string = randomMasterKeyPassword()): string {
  const t = checkedTarget(target);
  if (/'/.test(masterKeyPassword)) throw new Error('the master key password must not hold quotes');
  return [
    "IF NOT EXISTS (SELECT 1 FROM sys.symmetric_keys WHERE name = N'##MS_DatabaseMasterKey##')",
    `    CREATE MASTER KEY ENCRYPTION BY PASSWORD = N'${masterKeyPassword}';`,
    `IF NOT EXISTS (SELECT 1 FROM sys.database_scoped_credentials WHERE name = N'${t.credential}')`,
    `    CREATE DATABASE SCOPED CREDENTIAL [${t.credential}] WITH IDENTITY = 'Managed Identity', SECRET = '{"resourceid":"${STORAGE_RESOURCE}"}';`,
  ].join('\n');
}

/** Upper, lower, digits and symbols: Azure SQL's password policy met by construction. */
export function randomMasterKeyPassword(): string {
  return `Ar1!${randomBytes(24).toString('base64url')}`;
}

/** Removes the announce procedure (the credential stays: drop it by hand if nothing else uses it). */
export function dropAnnounceProcedure(names: TransportNames): string {
  const name = announceProcedureName(names);
  return `IF OBJECT_ID(N'${name}', N'P') IS NOT NULL DROP PROCEDURE ${name};`;
}
