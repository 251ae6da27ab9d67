// Flex Consumption limits and the host storage roles, read from the Bicep text (no compiler runs here):
//   - maximumInstanceCount below 40 is refused by Flex Consumption in most regions, so no file may accept it;
//   - the identity needs Storage Table Data Contributor for the host's diagnostic events (AZFD0003 without it).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { blankCommentsAndStrings, closingBracket, INFRA } from '../support/bicep';

/** The decorators written on the lines right above `param <name>`. */
function decoratorsOf(src: string, name: string): string[] {
  const lines = src.split('\n');
  const at = lines.findIndex((l) => new RegExp(`^param\\s+${name}\\b`).test(l));
  if (at < 0) throw new Error(`no param ${name}`);
  const decorators: string[] = [];
  for (let k = at - 1; k >= 0 && /^\s*@/.test(lines[k]!); k--) decorators.push(lines[k]!.trim());
  return decorators;
}

function minValue(decorators: string[]): number | undefined {
  const m = decorators.map((d) => /^@minValue\((\d+)\)$/.exec(d)).find(Boolean);
  return m ? Number(m[1]) : undefined;
}

/** Role definition ids assigned (roleDefinitionId: …, <var>) in a file, resolved through its `var x = '<guid>'`. */
function assignedRoleIds(src: string): string[] {
  const blanked = blankCommentsAndStrings(src);
  const vars = new Map([...src.matchAll(/^var\s+(\w+)\s*=\s*'([0-9a-f-]{36})'/gm)].map((m) => [m[1]!, m[2]!]));
  const ids: string[] = [];
  for (const m of src.matchAll(/^resource\s+\w+\s+'Microsoft\.Authorization\/roleAssignments@[^']+'\s*=\s*\{/gm)) {
    const open = m.index! + m[0].length - 1;
    const body = src.slice(open, closingBracket(blanked, open));
    const ref = /roleDefinitionId:\s*subscriptionResourceId\('Microsoft\.Authorization\/roleDefinitions',\s*(\w+)\)/.exec(body);
    if (ref && vars.has(ref[1]!)) ids.push(vars.get(ref[1]!)!);
  }
  return ids;
}

describe('infra: Flex Consumption scale limit', () => {
  for (const file of ['main.bicep', 'modules/function-app.bicep']) {
    it(`${file}: maximumInstanceCount accepts 40 to 1000 only, and says the limit is per function group`, () => {
      const src = readFileSync(join(INFRA, file), 'utf8');
      const decorators = decoratorsOf(src, 'maximumInstanceCount');
      expect(minValue(decorators), '@minValue of maximumInstanceCount').toBeGreaterThanOrEqual(40);
      expect(decorators).toContain('@maxValue(1000)');
      expect(decorators.find((d) => d.startsWith('@description'))).toMatch(/per function group/);
    });
  }

  it('reads @minValue as written (the check can fail)', () => {
    expect(minValue(decoratorsOf("@minValue(1)\n@maxValue(1000)\nparam maximumInstanceCount int = 40\n", 'maximumInstanceCount'))).toBe(1);
  });

  it('keeps the parameters file within the limit', () => {
    const file = JSON.parse(readFileSync(join(INFRA, 'main.parameters.json'), 'utf8')) as { parameters: Record<string, { value: unknown }> };
    expect(file.parameters.maximumInstanceCount?.value).toBeGreaterThanOrEqual(40);
  });
});

describe('infra: host storage roles of the app identity', () => {
  const STORAGE_BLOB_DATA_OWNER = 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b';
  const STORAGE_TABLE_DATA_CONTRIBUTOR = '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3';

  it('grants Storage Blob Data Owner and Storage Table Data Contributor on the account', () => {
    const ids = assignedRoleIds(readFileSync(join(INFRA, 'modules', 'storage.bicep'), 'utf8'));
    expect(ids).toContain(STORAGE_BLOB_DATA_OWNER);
    expect(ids).toContain(STORAGE_TABLE_DATA_CONTRIBUTOR);
  });
});
