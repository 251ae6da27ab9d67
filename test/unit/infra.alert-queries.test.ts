// Log search alert rules (Microsoft.Insights/scheduledQueryRules) in infra/modules/observability.bicep: Azure
// Monitor refuses to create or update a rule whose query starts with `union` or `search` (except cross-resource
// unions); a query must start with a table ("Optimize log search alert queries"). No Bicep compiler runs here, so
// the rules' `query:` variables are resolved from the text and their first token checked.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { blankCommentsAndStrings, closingBracket, OBSERVABILITY_MODULE } from '../support/bicep';

/** Application Insights tables the app's telemetry lands in (classic names, as the rules query the component). */
const TABLES = new Set(['requests', 'traces', 'customMetrics', 'exceptions', 'dependencies']);

/** `var <name> = '''…'''` definitions: name → KQL text. */
function multilineStringVars(src: string): Map<string, string> {
  return new Map([...src.matchAll(/^var\s+(\w+)\s*=\s*'''\n([\s\S]*?)'''/gm)].map((m) => [m[1]!, m[2]!]));
}

/** For every scheduledQueryRules resource: its symbol and the KQL of each `query:` it names. */
function alertRuleQueries(src: string): Array<{ rule: string; query: string }> {
  const blanked = blankCommentsAndStrings(src);
  const vars = multilineStringVars(src);
  const found: Array<{ rule: string; query: string }> = [];
  for (const m of src.matchAll(/^resource\s+(\w+)\s+'Microsoft\.Insights\/scheduledQueryRules@[^']+'\s*=\s*\{/gm)) {
    const open = m.index! + m[0].length - 1;
    const body = blanked.slice(open, closingBracket(blanked, open));
    for (const q of body.matchAll(/\bquery\s*:\s*(\w+)/g)) {
      const text = vars.get(q[1]!);
      if (text === undefined) throw new Error(`${m[1]}: query ${q[1]} is not a '''…''' variable`);
      found.push({ rule: m[1]!, query: text });
    }
  }
  return found;
}

/** The first KQL token, past comment lines. */
function firstToken(kql: string): string {
  const code = kql.replace(/^\s*\/\/[^\n]*\n/gm, '').trimStart();
  return /^[A-Za-z_][A-Za-z0-9_]*/.exec(code)?.[0] ?? code.slice(0, 20);
}

describe('infra: log search alert queries', () => {
  const rules = alertRuleQueries(readFileSync(OBSERVABILITY_MODULE, 'utf8'));

  it('finds every alert rule and its query', () => {
    expect(new Set(rules.map((r) => r.rule)).size).toBe(5);
    expect(rules.length).toBe(5);
  });

  it('starts every alert query with a table, never union or search', () => {
    for (const { rule, query } of rules) {
      const first = firstToken(query);
      expect(['union', 'search'], `${rule} starts with ${first}`).not.toContain(first.toLowerCase());
      expect(TABLES.has(first), `${rule} starts with ${first}, not a table`).toBe(true);
    }
  });

  it('rejects the query shapes Azure Monitor refuses (the check can fail)', () => {
    expect(firstToken('union\n  (requests | project timestamp),\n  (traces | project timestamp)\n')).toBe('union');
    expect(firstToken('// comment\nsearch "x"\n')).toBe('search');
    expect(firstToken('requests\n| where success == false\n')).toBe('requests');
  });
});
