// The SQL server's Entra admin across re-deployments. Azure honours the `administrators` property of
// Microsoft.Sql/servers only when the server is created (an update ignores it or fails: Azure/bicep#6858), so the
// Bicep sends it for a new server only and manages the admin and Entra-only authentication of an existing server
// through the child resources servers/administrators and servers/azureADOnlyAuthentications.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { blankCommentsAndStrings, closingBracket, INFRA } from '../support/bicep';

const SQL = readFileSync(join(INFRA, 'modules', 'sql.bicep'), 'utf8');
const MAIN = readFileSync(join(INFRA, 'main.bicep'), 'utf8');

/** The body (braces included) of `resource <symbol> '<type>@…' = [if (…)] {…}`, with its condition. */
function resourceOfType(src: string, type: string): { symbol: string; condition: string | undefined; body: string }[] {
  const blanked = blankCommentsAndStrings(src);
  const escaped = type.replace(/[./]/g, (c) => `\\${c}`);
  return [...src.matchAll(new RegExp(`^resource\\s+(\\w+)\\s+'${escaped}@[^']+'\\s*=\\s*(?:if\\s*\\(([^)]*)\\)\\s*)?\\{`, 'gm'))].map((m) => {
    const open = m.index! + m[0].length - 1;
    return { symbol: m[1]!, condition: m[2]?.trim(), body: src.slice(open, closingBracket(blanked, open) + 1) };
  });
}

describe('infra: SQL Entra admin on new and existing servers', () => {
  it('sends the server administrators block only when the server does not exist yet', () => {
    const [server] = resourceOfType(SQL, 'Microsoft.Sql/servers');
    expect(server, 'the server resource').toBeDefined();
    expect(server!.body).toMatch(/\n\s*administrators:\s*serverExists\s*\?\s*null\s*:\s*\{/);
    expect(SQL).toMatch(/^param serverExists bool$/m);
  });

  it('sets the admin of an existing server through servers/administrators (ActiveDirectory)', () => {
    const admins = resourceOfType(SQL, 'Microsoft.Sql/servers/administrators');
    expect(admins).toHaveLength(1);
    const [admin] = admins;
    expect(admin!.condition).toBe('serverExists');
    expect(admin!.body).toMatch(/\n\s*parent:\s*server\n/);
    expect(admin!.body).toMatch(/\n\s*name:\s*'ActiveDirectory'\n/);
    for (const key of ['administratorType', 'login', 'sid', 'tenantId']) expect(admin!.body, key).toMatch(new RegExp(`\\n\\s*${key}:`));
  });

  it('keeps Entra-only authentication on an existing server through servers/azureADOnlyAuthentications (Default)', () => {
    const only = resourceOfType(SQL, 'Microsoft.Sql/servers/azureADOnlyAuthentications');
    expect(only).toHaveLength(1);
    expect(only[0]!.condition).toBe('serverExists');
    expect(only[0]!.body).toMatch(/\n\s*name:\s*'Default'\n/);
    expect(only[0]!.body).toMatch(/\n\s*azureADOnlyAuthentication:\s*true\n/);
  });

  it('makes main.bicep say whether the server exists (required, no silent default) and pass it on', () => {
    expect(MAIN).toMatch(/^param sqlServerExists bool$/m);
    expect(MAIN).toMatch(/\n\s*serverExists:\s*sqlServerExists\n/);
  });
});
