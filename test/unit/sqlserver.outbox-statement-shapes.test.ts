// Pins the T-SQL of schema version 3 (stores/sqlserver/outbox.ts): the publish procedures a caller runs inside
// its own transaction. No SQL Server runs here: the PostgreSQL twins run in test/contract/outbox.contract.test.ts;
// these batches are parsed by the grammar check (sqlserver.tsql-grammar.test.ts collects every migration batch).
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CHANNEL_TABLES } from '../../shared/channel/types';
import { channelNames, transportNames } from '../../shared/sql/identifiers';
import { schemaNames } from '../../shared/stores/schema-names';
import { sqlServerMigrations } from '../../shared/stores/sqlserver/migrations';
import { copyIdExpression, sqlServerOutboxStatements } from '../../shared/stores/sqlserver/outbox';
import { topicCopyId } from '../../shared/transport/topic-names';

const names = schemaNames(transportNames('dbo', 'jobs', 'sqlserver'), channelNames('dbo', DEFAULT_CHANNEL_TABLES, 'sqlserver'), 'sqlserver');
const [enqueue, publish, publishTopic] = sqlServerOutboxStatements(names).map((s) => s.text);
const SPLIT_NOW = 'DATEADD(SECOND, CAST(@delay_ms / 1000 AS int), DATEADD(MILLISECOND, CAST(@delay_ms % 1000 AS int), @now))';

/**
 * Evaluates the copy id's string expression (LEFT / SUBSTRING / CHARINDEX over literals, `+` and d.h) the way
 * SQL Server does, 1-based, so the hex-text assembly is checked against topicCopyId() without a server.
 */
function evalTsqlText(expr: string, vars: Record<string, string>): string {
  let at = 0;
  const ws = () => {
    while (/\s/.test(expr[at] ?? '')) at++;
  };
  const eat = (s: string) => {
    ws();
    if (!expr.startsWith(s, at)) throw new Error(`expected ${s} at ${at}: ${expr.slice(at, at + 30)}`);
    at += s.length;
  };
  const atom = (): string | number => {
    ws();
    if (expr[at] === "'") {
      const end = expr.indexOf("'", at + 1);
      const s = expr.slice(at + 1, end);
      at = end + 1;
      return s;
    }
    const num = /^\d+/.exec(expr.slice(at));
    if (num) return (at += num[0].length), Number(num[0]);
    const ident = /^[A-Za-z_.@]+/.exec(expr.slice(at))![0];
    at += ident.length;
    if (ident in vars) return vars[ident]!;
    ws();
    if (expr[at] !== '(') return ident; // a type name (CONVERT's first argument)
    eat('(');
    const args: Array<string | number> = [sum()];
    for (ws(); expr[at] === ','; ws()) (at++, args.push(sum()));
    eat(')');
    const [a, b, c] = args as [string, number, number];
    switch (ident) {
      case 'LEFT': return a.slice(0, b);
      case 'SUBSTRING': return a.slice(b - 1, b - 1 + c);
      case 'CHARINDEX': return (args[1] as string).indexOf(a) + 1;
      case 'CONVERT': return args[1] as string; // CONVERT(uniqueidentifier, text): the text
      default: throw new Error(`unknown function ${ident}`);
    }
  };
  const sum = (): string | number => {
    let v = atom();
    for (ws(); expr[at] === '+'; ws()) (at++, (v = String(v) + String(atom())));
    return v;
  };
  const v = sum();
  ws();
  if (at !== expr.length) throw new Error(`trailing text at ${at}`);
  return String(v);
}

describe('SQL Server outbox (schema version 3) statement shapes', () => {
  it('version 3 holds the three procedures, each CREATE OR ALTER alone in its batch', () => {
    const v3 = sqlServerMigrations(names)[2]!;
    expect([v3.version, v3.name]).toEqual([3, 'publish procedures (outbox)']);
    expect(v3.statements.map((s) => s.name)).toEqual(['create enqueue procedure', 'create publish procedure', 'create publish topic procedure']);
    expect(enqueue!.split('\n')[0]).toBe('CREATE OR ALTER PROCEDURE [dbo].[jobs_enqueue]');
    expect(publish!.split('\n')[0]).toBe('CREATE OR ALTER PROCEDURE [dbo].[jobs_publish]');
    expect(publishTopic!.split('\n')[0]).toBe('CREATE OR ALTER PROCEDURE [dbo].[jobs_publish_topic]');
    for (const t of [enqueue!, publish!, publishTopic!]) {
      expect(t.match(/CREATE OR ALTER/g)).toHaveLength(1);
      expect(t).not.toMatch(/\bEXEC\s*\(|sp_executesql/); // no dynamic SQL: ownership chaining needs it absent
      expect(t.trimEnd().endsWith('END')).toBe(true);
    }
  });

  it('the wrappers: named parameters with defaults, nvarchar(max) names (never silently truncated), results as OUTPUT', () => {
    expect(publish).toBe(
      [
        'CREATE OR ALTER PROCEDURE [dbo].[jobs_publish]',
        '    @queue nvarchar(max),',
        '    @payload nvarchar(max),',
        '    @id nvarchar(100) = NULL,',
        '    @correlation_id nvarchar(max) = NULL,',
        '    @headers nvarchar(max) = NULL,',
        '    @delay_seconds float = 0,',
        '    @message_id uniqueidentifier = NULL OUTPUT,',
        '    @inserted bit = NULL OUTPUT',
        'AS',
        'BEGIN',
        '    SET NOCOUNT ON;',
        '    DECLARE @copies int;',
        "    EXEC [dbo].[jobs_enqueue] N'queue', @queue, @payload, @id, @correlation_id, @headers, @delay_seconds, @message_id OUTPUT, @copies OUTPUT;",
        '    SET @inserted = CASE WHEN @copies > 0 THEN 1 ELSE 0 END;',
        'END',
      ].join('\n'),
    );
    expect(publishTopic).toContain('    @topic nvarchar(max),');
    expect(publishTopic).toContain('    @copies int = NULL OUTPUT\nAS');
    expect(publishTopic).toContain(
      "    EXEC [dbo].[jobs_enqueue] N'topic', @topic, @payload, @id, @correlation_id, @headers, @delay_seconds, @message_id OUTPUT, @copies OUTPUT;",
    );
  });

  it('validation: every HTTP rule THROWs 50400 (invalid) or 50413 (too large) before the one write', () => {
    const t = enqueue!;
    const firstWrite = t.indexOf('INSERT INTO');
    const throws = [...t.matchAll(/THROW (\d+),/g)];
    const validation = throws.filter((m) => m[1] !== '50409');
    expect(validation).toHaveLength(18); // name ×3, payload ×4, id, headers ×5, correlation id ×3, delay, topic queue length
    for (const m of validation) {
      expect(['50400', '50413']).toContain(m[1]);
      expect(m.index).toBeLessThan(firstWrite);
    }
    expect(t).toContain('IF @name IS NULL OR DATALENGTH(@name) = 0 OR DATALENGTH(@name) / 2 > 200');
    // two IFs: OPENJSON must never see text ISJSON refused (OR has no guaranteed order, L2)
    expect(t).toContain("IF ISJSON(N'[' + @payload + N']') = 0\n        THROW 50400");
    expect(t).toContain("IF (SELECT COUNT(*) FROM OPENJSON(N'[' + @payload + N']')) <> 1\n        THROW 50400");
    expect(t.indexOf("IF ISJSON(N'[' + @payload")).toBeLessThan(t.indexOf("FROM OPENJSON(N'[' + @payload"));
    expect(t).toContain('IF DATALENGTH(CAST(@payload COLLATE Latin1_General_100_BIN2_UTF8 AS varchar(max))) > 262144');
    expect(t).toContain('THROW 50413, @error, 1;');
    expect(t).toContain("IF DATALENGTH(@id) <> 72 OR NOT (@id COLLATE Latin1_General_100_BIN2 LIKE REPLICATE(N'[0-9a-fA-F]', 8) + N'-'");
    expect(t).toContain('IF DATALENGTH(CAST(@headers COLLATE Latin1_General_100_BIN2_UTF8 AS varchar(max))) > 16384');
    expect(t).toContain('IF (SELECT COUNT(*) FROM OPENJSON(@headers)) > 64');
    expect(t).toContain("WHEN j.[type] <> 1 THEN N'must be a string'");
    expect(t).toContain("WHEN LOWER(LEFT(j.[key], 3)) = N'ar-' THEN N'is reserved");
    expect(t).toContain("WHEN j.[key] COLLATE Latin1_General_100_BIN2 = N'__proto__'");
    // control characters by code point (BIN2); tab allowed in header values; C1 controls refused in correlation ids
    expect(t).toContain("(@name COLLATE Latin1_General_100_BIN2 LIKE N'%[' + NCHAR(1) + N'-' + NCHAR(31) + NCHAR(127) + N']%' OR CHARINDEX(NCHAR(0) COLLATE Latin1_General_100_BIN2, @name) > 0)");
    expect(t).toContain("j.[value] COLLATE Latin1_General_100_BIN2 LIKE N'%[' + NCHAR(1) + N'-' + NCHAR(8) + NCHAR(10) + N'-' + NCHAR(31) + NCHAR(127) + N']%'");
    expect(t).toContain("@correlation_id COLLATE Latin1_General_100_BIN2 LIKE N'%[' + NCHAR(1) + N'-' + NCHAR(31) + NCHAR(127) + N'-' + NCHAR(159) + N']%'");
    expect(t).toContain('IF DATALENGTH(@correlation_id) = 0 OR DATALENGTH(@correlation_id) / 2 > 400');
    expect(t).toContain('UNICODE(LEFT(@correlation_id, 1)) IN (9, 10, 11, 12, 13, 32, 160, 5760, 8192,');
    expect(t).toContain('IF @delay_seconds IS NOT NULL AND NOT (@delay_seconds >= 0 AND @delay_seconds <= 315360000)');
    expect(t).toContain('SET @delay_ms = CAST(FLOOR(ISNULL(@delay_seconds, 0) * 1000 + 0.5) AS bigint);');
    expect(t).toContain(`SET @stored_headers = JSON_MODIFY(@stored_headers, N'$."AR-Correlation-Id"', @correlation_id);`);
  });

  it('the write: one insert-if-absent of the message or its topic copies under a per-id applock, delays on the DB clock (H2)', () => {
    const t = enqueue!;
    expect(t.match(/INSERT INTO/g)).toHaveLength(1);
    expect(t).toContain('    INSERT INTO [dbo].[jobs] (id, queue, payload_json, headers_json, created_at, available_at)');
    expect(t).toContain(`CASE WHEN @delay_ms > 0 THEN ${SPLIT_NOW} ELSE @now END`);
    expect(t).toContain("SELECT @message_id AS id, CAST(@name AS nvarchar(200)) AS queue WHERE @kind = N'queue'");
    expect(t).toContain("FROM [dbo].[jobs_subscriptions] AS s");
    expect(t).toContain("WHERE @kind = N'topic' AND s.topic = @name AND s.topic + N'.' = @name + N'.' COLLATE Latin1_General_100_BIN2");
    // no key-range lock: one publisher of a message id at a time through an applock owned by the transaction
    expect(t).toContain('WHERE NOT EXISTS (SELECT 1 FROM [dbo].[jobs] AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = target.id);');
    expect(t).not.toContain('HOLDLOCK');
    const lock = [
      '    IF @outer_tran = 0 BEGIN TRANSACTION;',
      "    SET @lock_resource = N'asyncresponse:publish:' + LOWER(CONVERT(nvarchar(36), @message_id));",
      "    EXEC @lock_result = sp_getapplock @Resource = @lock_resource, @LockMode = 'Exclusive', @LockOwner = 'Transaction';",
      '    IF @lock_result < 0',
      '    BEGIN',
      '        IF @outer_tran = 0 ROLLBACK TRANSACTION;',
    ].join('\n');
    expect(t).toContain(lock);
    expect(t).toContain("THROW 50409, N'AsyncResponse publish: the lock on this message id was not granted");
    expect(t.indexOf(lock)).toBeGreaterThan(t.lastIndexOf('THROW 50400'));
    expect(t.indexOf(lock)).toBeLessThan(t.indexOf('INSERT INTO'));
    expect(t).toContain('    DECLARE @outer_tran int = @@TRANCOUNT;');
    // a transaction of its own only when the caller has none; inside the caller's, the caller's commit decides
    expect(t).toMatch(/WHERE existing\.id = target\.id\);\n {4}SET @copies = @@ROWCOUNT;\n {4}IF @outer_tran = 0 COMMIT TRANSACTION;\nEND$/);
    expect(t).not.toMatch(/XACT_ABORT/);
    expect(t.match(/BEGIN TRANSACTION|COMMIT TRANSACTION|ROLLBACK TRANSACTION/g)).toEqual(['BEGIN TRANSACTION', 'ROLLBACK TRANSACTION', 'COMMIT TRANSACTION']);
  });

  it('version 6 re-creates the procedures as this release writes them (databases at version 3 get the per-id lock)', () => {
    const v6 = sqlServerMigrations(names)[5]!;
    expect([v6.version, v6.name]).toEqual([6, 'publish procedures: per-id lock']);
    expect(v6.statements).toEqual(sqlServerMigrations(names)[2]!.statements);
  });

  it('version 18 alters the three procedures: @priority and @ordering_key last and defaulted, checked by the HTTP rules, written with the row', () => {
    const v18 = sqlServerMigrations(names)[17]!;
    expect([v18.version, v18.name]).toEqual([18, 'publish procedures: priority and ordering key']);
    const [e18, p18, t18] = v18.statements.map((st) => st.text) as [string, string, string];
    expect([e18, p18, t18].map((t) => t.split('\n')[0])).toEqual([
      'CREATE OR ALTER PROCEDURE [dbo].[jobs_enqueue]',
      'CREATE OR ALTER PROCEDURE [dbo].[jobs_publish]',
      'CREATE OR ALTER PROCEDURE [dbo].[jobs_publish_topic]',
    ]);
    // version 3's parameters unchanged, the new ones after the OUTPUT parameters: existing calls bind as before
    expect(p18).toContain(publish!.slice(0, publish!.indexOf('    @inserted bit = NULL OUTPUT')));
    expect(p18).toContain('    @inserted bit = NULL OUTPUT,\n    @priority int = 0,\n    @ordering_key nvarchar(max) = NULL\nAS');
    expect(t18).toContain('    @copies int = NULL OUTPUT,\n    @priority int = 0\nAS');
    expect(t18).not.toContain('@ordering_key');
    expect(p18).toContain('@message_id OUTPUT, @copies OUTPUT, @priority, @ordering_key;');
    expect(t18).toContain('@message_id OUTPUT, @copies OUTPUT, @priority, NULL;');
    expect(e18).toContain('    @copies int OUTPUT,\n    @priority int = 0,\n    @ordering_key nvarchar(max) = NULL\nAS');
    // the rules, before the applock and the one write
    expect(e18).toContain("    IF @priority IS NOT NULL AND (@priority < -32768 OR @priority > 32767)\n        THROW 50400, N'AsyncResponse publish: @priority must be an integer from -32768 to 32767 (higher is claimed first)', 1;");
    expect(e18).toContain("        IF @kind <> N'queue'\n            THROW 50400, N'AsyncResponse publish: ordering keys belong to a queue publish', 1;");
    expect(e18).toContain("        IF DATALENGTH(@ordering_key) = 0 OR DATALENGTH(@ordering_key) / 2 > 200\n            THROW 50400, N'AsyncResponse publish: @ordering_key must be 1 to 200 characters', 1;");
    expect(e18).toMatch(/IF \(@ordering_key COLLATE Latin1_General_100_BIN2 LIKE N'%\[' \+ NCHAR\(1\) \+ N'-' \+ NCHAR\(31\) \+ NCHAR\(127\) \+ N'\]%'/);
    expect(e18.indexOf('@ordering_key must not contain control characters')).toBeLessThan(e18.indexOf('sp_getapplock'));
    expect(e18).toContain('    INSERT INTO [dbo].[jobs] (id, queue, payload_json, headers_json, created_at, available_at, priority, ordering_key)');
    expect(e18).toContain('           CAST(ISNULL(@priority, 0) AS smallint), CAST(@ordering_key AS nvarchar(200))');
    // everything else is version 6's body
    expect(e18.replace(/\n {4}-- priority:[\s\S]*?\n {4}END;\n/, '\n')).toContain(enqueue!.slice(enqueue!.indexOf('AS\nBEGIN'), enqueue!.indexOf('    INSERT INTO')));
  });

  it('version 22 alters the enqueue body only: each row filed in the ready set, a keyed one counted under its key row\'s lock, seq after it; lone surrogates refused (L7)', () => {
    const all = sqlServerMigrations(names);
    const v22 = all.find((m) => m.version === 22)!;
    expect([v22.name, v22.statements.map((st) => st.name)]).toEqual(['publish procedures: ready set', ['alter enqueue procedure: ready set']]);
    const e22 = v22.statements[0]!.text;
    const e18 = all[17]!.statements[0]!.text;
    // same signature, same rules up to the write
    expect(e22.slice(0, e22.indexOf('AS\nBEGIN'))).toBe(e18.slice(0, e18.indexOf('AS\nBEGIN')));
    expect(e22).toContain('    DECLARE @queue nvarchar(200), @key nvarchar(200), @pending int, @seq bigint, @i int, @unit int;');
    // the queue message: probe, then the key row locked (to the outermost commit), then seq, then the one INSERT
    const probe = e22.indexOf('        IF NOT EXISTS (SELECT 1 FROM [dbo].[jobs] AS existing WITH (UPDLOCK, FORCESEEK) WHERE existing.id = @message_id)');
    const lock = e22.indexOf('                SELECT @pending = pending FROM [dbo].[jobs_keys] WITH (UPDLOCK, HOLDLOCK) WHERE queue = @queue AND ordering_key = @key;');
    const seq = e22.indexOf('            SET @seq = NEXT VALUE FOR [dbo].[jobs_seq];');
    const insert = e22.indexOf('            INSERT INTO [dbo].[jobs] (id, queue, payload_json, headers_json, created_at, available_at, priority, ordering_key, state, seq)');
    expect([e22.indexOf('sp_getapplock') < probe, probe < lock, lock < seq, seq < insert]).toEqual([true, true, true, true]);
    expect(e22).toContain('                    INSERT INTO [dbo].[jobs_keys] (queue, ordering_key, pending) VALUES (@queue, @key, 1);');
    expect(e22).toContain('                    UPDATE [dbo].[jobs_keys] SET pending = pending + 1 WHERE queue = @queue AND ordering_key = @key;');
    expect(e22).toContain('CAST(ISNULL(@priority, 0) AS smallint), @key, CASE WHEN @pending > 0 THEN 2 WHEN @delay_ms > 0 THEN 1 END, @seq);');
    // topic copies: their own INSERT (no UNION ALL: NEXT VALUE FOR may not appear in such a statement), seq from the default
    expect(e22).not.toContain('UNION ALL');
    expect(e22).toContain('        INSERT INTO [dbo].[jobs] (id, queue, payload_json, headers_json, created_at, available_at, priority, state)');
    expect(e22).toContain('               CAST(ISNULL(@priority, 0) AS smallint), CASE WHEN @delay_ms > 0 THEN 1 END');
    // L7: a key with a surrogate is walked by UTF-16 code unit; a low one alone or a high one not followed by a low one is refused
    const rule = e22.slice(e22.indexOf("        IF @ordering_key COLLATE Latin1_General_100_BIN2 LIKE N'%[' + NCHAR(55296) + N'-' + NCHAR(57343) + N']%'"));
    expect(rule).toContain('                SET @unit = UNICODE(SUBSTRING(@ordering_key COLLATE Latin1_General_100_BIN2, @i, 1));');
    expect(rule).toContain("                IF @unit BETWEEN 56320 AND 57343\n                    THROW 50400, N'AsyncResponse publish: @ordering_key must not contain lone surrogates', 1;");
    expect(rule).toContain(
      "                    IF @i = DATALENGTH(@ordering_key) / 2 OR UNICODE(SUBSTRING(@ordering_key COLLATE Latin1_General_100_BIN2, @i + 1, 1)) NOT BETWEEN 56320 AND 57343",
    );
    expect(e22.indexOf('must not contain lone surrogates')).toBeLessThan(e22.indexOf('sp_getapplock'));
    expect(e18).not.toContain('lone surrogates'); // version 18's text stays as it was applied
  });

  it("generated ids: the SQL Server layout of ids.ts (timestamp in the last group, version 8) built from text", () => {
    expect(enqueue).toContain('SET @random = CONVERT(char(36), NEWID());');
    expect(enqueue).toContain(
      "SET @message_id = CONVERT(uniqueidentifier, LEFT(@random, 14) + '8' + SUBSTRING(@random, 16, 9)\n" +
        "            + RIGHT(CONVERT(char(16), CAST(DATEDIFF_BIG(MILLISECOND, '19700101', SYSUTCDATETIME()) AS binary(8)), 2), 12));",
    );
  });

  it('topic copy ids: SHA-256 over the UTF-8 text, assembled from hex text, equal topicCopyId()', () => {
    const copy = copyIdExpression('@message_id', "s.topic + N':' + s.subscription");
    expect(copy.apply).toBe(
      "CROSS APPLY (SELECT CONVERT(char(32), CAST(HASHBYTES('SHA2_256', CAST((LOWER(CONVERT(nvarchar(36), @message_id)) + NCHAR(10) + s.topic + N':' + s.subscription) COLLATE Latin1_General_100_BIN2_UTF8 AS varchar(max))) AS binary(16)), 2) AS h) AS d",
    );
    expect(enqueue).toContain(copy.apply);
    expect(enqueue).toContain(`SELECT ${copy.id}, s.topic + N':' + s.subscription`);
    expect(copy.id).not.toMatch(/binary\(16\)\)?\s*$/); // never a binary → uniqueidentifier conversion
    const cases: Array<[string, string]> = [
      ['0190A000-0000-7000-8000-0000000000BB', 'orders:billing'],
      ['6f9619ff-8b86-d011-b42d-00c04fc964ff', 'orders:配送'],
      ['00000000-0000-0000-0000-000000000000', 'Órdenes:facturación'],
      ['ffffffff-ffff-ffff-ffff-ffffffffffff', 'emoji:🚚'],
    ];
    const seenVariants = new Set<string>();
    for (const [id, queue] of cases) {
      // what CONVERT(char(32), CAST(HASHBYTES(...) AS binary(16)), 2) yields: the first 16 bytes, upper-case hex
      const h = createHash('sha256').update(`${id.toLowerCase()}\n${queue}`, 'utf8').digest().subarray(0, 16).toString('hex').toUpperCase();
      seenVariants.add(h[16]!);
      expect(evalTsqlText(copy.id, { 'd.h': h }).toLowerCase(), `${id} ${queue}`).toBe(topicCopyId(id, queue));
    }
    // every variant digit mapping is exercised across a wider sample
    for (let i = 0; seenVariants.size < 16 && i < 500; i++) {
      const h = createHash('sha256').update(`x${i}`).digest().subarray(0, 16).toString('hex').toUpperCase();
      seenVariants.add(h[16]!);
      const id = evalTsqlText(copy.id, { 'd.h': h }).toLowerCase();
      expect(id[19]).toMatch(/[89ab]/);
      expect(id[14]).toBe('8');
    }
    expect(seenVariants.size).toBe(16);
  });
});
