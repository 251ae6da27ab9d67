// infra/sql/grant-app-identity.sql gives the app's managed identity a contained user WITHOUT a directory lookup
// (WITH SID = …, TYPE = E, so the server needs no Directory Readers) and DATA roles only: the schema is the
// deployer's job (npm run schema -- apply), the app runs with AUTO_CREATE_SCHEMA=false.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const INFRA = join(__dirname, '..', '..', 'infra');
const source = readFileSync(join(INFRA, 'sql', 'grant-app-identity.sql'), 'utf8');

// The T-SQL without its line and block comments (the script's strings contain neither).
const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/--[^\n]*/g, '');

describe('infra: grant-app-identity.sql', () => {
  it('creates the user from its SID as an external (Entra) user, with no directory lookup', () => {
    expect(code).toMatch(/CREATE USER\s/i);
    expect(code).toMatch(/WITH SID\s*=/i);
    expect(code).toMatch(/TYPE\s*=\s*E\s*;/i);
    expect(code).not.toMatch(/FROM\s+EXTERNAL\s+PROVIDER/i);
    // the SID is the client id as binary
    expect(code).toMatch(/CAST\(\s*@clientId\s+AS\s+varbinary\(16\)\s*\)/i);
  });

  it('grants db_datareader and db_datawriter, and UPDATE on the schema (the ack sequence), nothing else', () => {
    const roles = [...code.matchAll(/ALTER ROLE\s+\[?(\w+)\]?\s+ADD MEMBER/gi)].map((m) => m[1]!.toLowerCase());
    expect(new Set(roles)).toEqual(new Set(['db_datareader', 'db_datawriter']));
    const grants = [...code.matchAll(/\bGRANT\s+([A-Z ,]+?)\s+ON\b/gi)].map((m) => m[1]!.trim().toUpperCase());
    expect(grants).toEqual(['UPDATE']);
    expect(code).toMatch(/GRANT UPDATE ON SCHEMA::/);
    expect(code).not.toMatch(/sp_addrolemember/i);
    for (const role of ['db_owner', 'db_ddladmin', 'db_securityadmin', 'db_accessadmin', 'db_backupoperator']) {
      expect(code.toLowerCase(), role).not.toContain(role);
    }
  });

  it('takes the identity from sqlcmd variables that infra/scripts/grant-app-identity.sh passes (deploy.sh and azd run it)', () => {
    const vars = new Set([...code.matchAll(/\$\((\w+)\)/g)].map((m) => m[1]!));
    expect(vars).toEqual(new Set(['APP_IDENTITY_NAME', 'APP_IDENTITY_CLIENT_ID']));
    const script = readFileSync(join(INFRA, 'scripts', 'grant-app-identity.sh'), 'utf8');
    for (const v of vars) expect(script, `the grant script passes -v ${v}=…`).toMatch(new RegExp(`-v "${v}=`));
    expect(script).toContain('infra/sql/grant-app-identity.sql');
    expect(script).toContain('--authentication-method ActiveDirectoryDefault');
  });

  it('rejects a client id that is not a GUID instead of creating a wrong user', () => {
    expect(code).toMatch(/TRY_CONVERT\(\s*uniqueidentifier/i);
    expect(code).toMatch(/IF @clientId IS NULL\s+THROW/i);
  });
});
