// Every SQL Server statement the app can send (transport, channel, the printed schema, the migration steps) is
// parsed by an outside T-SQL grammar: antlr4ts-sql 1.1.0's TSqlParser (grammars-v4). It catches a statement that
// is not T-SQL at all (a lost parenthesis, a misspelt keyword, a stray comma in a builder) without a SQL Server.
// The statements come from test/support/sqlserver-statement-sources.ts: a new builder entry is checked as is.

import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { allSqlServerStatementTexts, SQLSERVER_MODULE_COVERAGE, type StatementText } from '../support/sqlserver-statement-sources';
import { tsqlSyntaxErrors } from '../support/tsql-grammar';

/**
 * Statements the grammar cannot parse although SQL Server runs them: gaps of the grammar, not of the statement.
 * Each names why, and a stand-in that replaces only the construct the grammar lacks, so the rest of the
 * statement is still checked. An entry must keep failing without its stand-in (or it is stale: delete it).
 */
interface GrammarGap {
  reason: string;
  standIn: (text: string) => string;
}

/** By statement name (the limited claim's OUTPUT … INTO plus OUTPUT went with the lease roster). */
const GRAMMAR_GAPS: Readonly<Record<string, GrammarGap>> = {
  'announce.credential': {
    reason:
      'CREATE DATABASE SCOPED CREDENTIAL (SQL Server 2016+, Azure SQL): antlr4ts-sql 1.1.0 knows only the server-level CREATE CREDENTIAL, ' +
      'whose WITH IDENTITY = …, SECRET = … clause is the same',
    standIn: (text) => {
      const replaced = text.replace(/CREATE DATABASE SCOPED CREDENTIAL/g, 'CREATE CREDENTIAL');
      if (replaced === text) throw new Error('no CREATE DATABASE SCOPED CREDENTIAL to stand in for');
      return replaced;
    },
  },
};

/** By construct: every statement that holds it (the ready set draws seq from a sequence in many statements). */
const CONSTRUCT_GAPS: ReadonlyArray<GrammarGap & { construct: RegExp }> = [
  {
    construct: /NEXT VALUE FOR/,
    reason: 'NEXT VALUE FOR [… OVER (ORDER BY …)] (sequences, SQL Server 2012+): antlr4ts-sql 1.1.0 has no rule for it',
    standIn: withoutNextValueFor,
  },
];

/** `NEXT VALUE FOR [s].[seq] [OVER (ORDER BY …)]` → `CAST(0 AS bigint)`: an expression of the same type the grammar knows. */
function withoutNextValueFor(text: string): string {
  const replaced = text.replace(/NEXT VALUE FOR (\[[^\]]+\]\.)?\[[^\]]+\]( OVER \(ORDER BY [^)]*\))?/g, 'CAST(0 AS bigint)');
  if (replaced === text) throw new Error('no NEXT VALUE FOR to stand in for');
  return replaced;
}

/** The gaps a statement meets: its name's, then each construct it holds. */
function gapsOf(statement: StatementText): GrammarGap[] {
  return [...(GRAMMAR_GAPS[statement.name] ? [GRAMMAR_GAPS[statement.name]!] : []), ...CONSTRUCT_GAPS.filter((g) => g.construct.test(statement.text))];
}

const standInAll = (statement: StatementText) => gapsOf(statement).reduce((text, gap) => gap.standIn(text), statement.text);

const statements = allSqlServerStatementTexts();
const label = (s: StatementText) => `${s.name} (${s.variant})`;

describe('T-SQL grammar check of every SQL Server statement', () => {
  it('collects the statements of every source (transport, channel, schema print, migration) for both name sets', () => {
    const names = new Set(statements.map((s) => s.name));
    for (const expected of [
      'transport.publishBatch',
      'transport.claimBatch',
      'transport.catalogSnapshot',
      'channel.heartbeatSubscribers',
      'channel.ddl',
      'channel.catalogSnapshot',
      'schema-print.batch1',
      'migration.channelAckSequence',
    ]) {
      expect(names, expected).toContain(expected);
    }
    expect(new Set(statements.map((s) => s.variant))).toEqual(new Set(['defaults', 'custom']));
    // the printed script is parsed batch by batch: none of its GO separators reaches the grammar
    expect(statements.filter((s) => /^\s*GO\s*$/im.test(s.text))).toEqual([]);
  });

  it('every module of shared/stores/sqlserver/ that holds T-SQL is collected (or named as holding hints only)', () => {
    const dir = join(__dirname, '../../shared/stores/sqlserver');
    const withSql = readdirSync(dir)
      .filter((f) => f.endsWith('.ts'))
      .filter((f) => /(SELECT |INSERT INTO|UPDATE |DELETE |EXEC |CREATE |ALTER |MERGE )/.test(readFileSync(join(dir, f), 'utf8')));
    expect(withSql.filter((f) => !(f in SQLSERVER_MODULE_COVERAGE))).toEqual([]);
    expect(Object.keys(SQLSERVER_MODULE_COVERAGE).filter((f) => !withSql.includes(f))).toEqual([]); // stale entries
    const names = new Set(statements.map((s) => s.name));
    for (const expected of ['channel-stats.channelStats', 'server-version.serverCapabilities', 'migrations.v5: create transport dead-letter index']) {
      expect(names, expected).toContain(expected);
    }
  });

  it('every statement parses, apart from the named grammar gaps', { timeout: 180_000 }, () => {
    const failures: string[] = [];
    for (const statement of statements) {
      if (gapsOf(statement).length > 0) continue;
      const errors = tsqlSyntaxErrors(statement.text);
      if (errors.length > 0) failures.push(`${label(statement)}: ${errors.join('; ')}`);
    }
    expect(failures).toEqual([]);
  });

  it('each grammar gap still fails as written and parses with only the missing constructs stood in for', { timeout: 180_000 }, () => {
    for (const name of Object.keys(GRAMMAR_GAPS)) {
      expect(statements.filter((s) => s.name === name).length, `${name} is no statement any more: delete its entry`).toBeGreaterThan(0);
    }
    for (const gap of CONSTRUCT_GAPS) {
      expect(statements.filter((s) => gap.construct.test(s.text)).length, `no statement holds ${gap.construct}: delete its entry`).toBeGreaterThan(0);
    }
    for (const statement of statements.filter((s) => gapsOf(s).length > 0)) {
      const reasons = gapsOf(statement).map((g) => g.reason).join('; ');
      expect(tsqlSyntaxErrors(statement.text), `${label(statement)} parses now: delete its entry (${reasons})`).not.toEqual([]);
      expect(tsqlSyntaxErrors(standInAll(statement)), label(statement)).toEqual([]);
    }
  });

  it('the claims parse as written: no grammar gap stands in for any of their text', () => {
    for (const name of ['transport.claimBatch', 'limits.claimLimited', 'outlook.claimOutlook', 'limits.limitedOutlook', 'transport.releaseLostClaim', 'transport.ackBatch']) {
      for (const statement of statements.filter((s) => s.name === name)) {
        expect(gapsOf(statement), label(statement)).toEqual([]);
        expect(tsqlSyntaxErrors(statement.text), label(statement)).toEqual([]);
      }
    }
  });

  it('a deliberately broken statement fails', () => {
    const published = statements.find((s) => s.name === 'transport.publishBatch' && s.variant === 'defaults')!;
    // the publish draws seq from the sequence: checked with that construct stood in for, as above
    const publish = { ...published, text: standInAll(published) };
    const claim = statements.find((s) => s.name === 'transport.claimBatch' && s.variant === 'defaults')!;
    expect(tsqlSyntaxErrors(publish.text)).toEqual([]);
    expect(tsqlSyntaxErrors(claim.text)).toEqual([]);
    const broken = {
      'a missing closing parenthesis': publish.text.replace(')', ''),
      'SELEC for SELECT': claim.text.replace(/\bSELECT\b/, 'SELEC'),
      'a dropped FROM keyword': claim.text.replace(/\bFROM\b/, ''),
      'a trailing comma in a column list': publish.text.replace(/\bOUTPUT inserted\.id\b/, 'OUTPUT inserted.id,,'),
      'a plain typo': 'SELECT id FROM [dbo].[t] WHERE;',
    };
    for (const [what, text] of Object.entries(broken)) {
      expect(text, what).not.toBe(publish.text);
      expect(tsqlSyntaxErrors(text), what).not.toEqual([]);
    }
  });
});
