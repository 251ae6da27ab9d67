// The azd hooks (infra/azd/hooks/*.mjs, run by azure.yaml from its posix and windows blocks) with stand-in
// az/azd/sqlcmd/npm/node binaries that record every call (test/support/hook-harness.ts). No Azure, no network:
// what is checked is which commands the hooks run, with which arguments, in which order, on Linux/macOS and on
// the Windows path (commands through cmd.exe, decoded back here the way cmd.exe and the MSVC runtime read them).

import { spawnSync } from 'node:child_process';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeCmdLine, harness, HOOKS, loadHook, type Call, type Rule } from '../support/hook-harness';

const SUB = '11111111-2222-3333-4444-555555555555';
const BASE = { AZURE_ENV_NAME: 'dev', AZURE_LOCATION: 'swedencentral', AZURE_SUBSCRIPTION_ID: SUB };
const NAMES = JSON.stringify({ sqlServer: { value: 'sql-asyncresp-abc' }, keyVault: { value: 'kv-asyncresp-abc' } });
const jwt = (claims: object) => `h.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.s`;
const TOKEN = JSON.stringify({ accessToken: jwt({ oid: 'aaaaaaaa-0000-0000-0000-000000000001', upn: 'me@contoso.example', idtyp: 'user' }) });

/** A fresh subscription: no group, no server, no vault. */
const FRESH: Rule[] = [
  { cmd: 'az', args: ['account', 'show'], stdout: `${SUB}\n` },
  { cmd: 'az', args: ['group', 'exists'], stdout: 'false\n' },
  { cmd: 'az', args: ['deployment', 'group', 'create'], stdout: NAMES },
  { cmd: 'az', args: ['sql', 'server', 'show'], status: 3, stderr: "ERROR: (ResourceNotFound) The Resource 'Microsoft.Sql/servers/sql-asyncresp-abc' was not found." },
  { cmd: 'az', args: ['resource', 'show'], status: 3, stderr: "ERROR: (ResourceNotFound) The Resource 'Microsoft.KeyVault/vaults/kv-asyncresp-abc' under resource group 'rg-dev' was not found." },
  { cmd: 'az', args: ['account', 'get-access-token'], stdout: TOKEN },
];
/** The same after a first deployment: the group, the server with its admin and the secret exist. */
const EXISTING: Rule[] = [
  { cmd: 'az', args: ['account', 'show'], stdout: `${SUB}\n` },
  { cmd: 'az', args: ['group', 'exists'], stdout: 'true\n' },
  { cmd: 'az', args: ['group', 'show'], stdout: 'swedencentral\n' },
  { cmd: 'az', args: ['deployment', 'group', 'create'], stdout: NAMES },
  { cmd: 'az', args: ['sql', 'server', 'show'], stdout: JSON.stringify({ administrators: { login: 'dba-group', sid: 'bbbbbbbb-0000-0000-0000-000000000002', principalType: 'Group' } }) },
  { cmd: 'az', args: ['resource', 'show'], stdout: '' },
];

const azCalls = (calls: Call[]) => calls.filter((c) => c.cmd === 'az');
const envSets = (calls: Call[]) =>
  calls.filter((c) => c.cmd === 'azd').map((c) => {
    expect(c.args.slice(0, 2)).toEqual(['env', 'set']);
    expect(c.args.slice(4), 'azd env set names the environment').toEqual(['-e', 'dev']);
    return [c.args[2]!, c.args[3]!] as const;
  });
/** Every az call runs in azd's subscription (review A3), never the Azure CLI's default one. */
function expectSubscriptionEverywhere(calls: Call[]) {
  const az = azCalls(calls);
  expect(az.length).toBeGreaterThan(0);
  for (const c of az) {
    const at = c.args.indexOf('--subscription');
    expect(at, `az ${c.args.join(' ')}`).toBeGreaterThan(-1);
    expect(c.args[at + 1]).toBe(SUB);
  }
}
/** `az group create` etc.: the command words before the first option. */
const verb = (c: Call) => {
  const end = c.args.findIndex((a) => a.startsWith('-'));
  return [c.cmd, ...c.args.slice(0, end < 0 ? undefined : end).slice(0, 3)].join(' ');
};

describe.each(['linux', 'win32'] as const)('preprovision.mjs (%s)', (platform) => {
  it('on a fresh subscription: checks the tools first, creates the tagged group, sets every parameter azd would prompt for', async () => {
    const { main } = await loadHook('preprovision');
    const h = harness({ platform, env: { ...BASE }, rules: FRESH, ip: ['203.0.113.7'] });
    await main(h.ctx);
    const calls = h.calls();
    // the tool check (go-sqlcmd's --help) runs before any az call (review A4)
    expect(calls[0]).toMatchObject({ cmd: 'sqlcmd', args: ['--help'] });
    expect(azCalls(calls).map(verb)).toEqual([
      'az account show',
      'az group exists',
      'az group create',
      'az deployment group create',
      'az sql server show',
      'az resource show',
      'az account get-access-token',
    ]);
    expectSubscriptionEverywhere(calls);
    const create = calls.find((c) => c.cmd === 'az' && c.args[1] === 'create' && c.args[0] === 'group')!;
    expect(create.args).toEqual(expect.arrayContaining(['--name', 'rg-dev', '--location', 'swedencentral', '--tags', 'azd-env-name=dev']));
    const sets = new Map(envSets(calls));
    expect([...sets.keys()]).toEqual([
      'AZURE_RESOURCE_GROUP', 'NAME_PREFIX', 'SQL_SERVER_EXISTS', 'SQL_ADMIN_OBJECT_ID', 'SQL_ADMIN_LOGIN',
      'SQL_ADMIN_PRINCIPAL_TYPE', 'CALLBACK_SIGNING_SECRET', 'DEPLOYER_IP',
    ]);
    expect(sets.get('AZURE_RESOURCE_GROUP')).toBe('rg-dev');
    expect(sets.get('SQL_SERVER_EXISTS')).toBe('false');
    expect(sets.get('SQL_ADMIN_OBJECT_ID')).toBe('aaaaaaaa-0000-0000-0000-000000000001');
    expect(sets.get('SQL_ADMIN_LOGIN')).toBe('me@contoso.example');
    expect(sets.get('SQL_ADMIN_PRINCIPAL_TYPE')).toBe('User');
    expect(Buffer.from(sets.get('CALLBACK_SIGNING_SECRET')!, 'base64').length).toBe(48);
    expect(sets.get('DEPLOYER_IP')).toBe('203.0.113.7');
  });

  it('on a re-run: keeps the group, the server admin and the secret, and refreshes a changed IP (review B1)', async () => {
    const { main } = await loadHook('preprovision');
    const h = harness({ platform, env: { ...BASE, AZURE_RESOURCE_GROUP: 'rg-dev', DEPLOYER_IP: '198.51.100.1' }, rules: EXISTING, ip: ['203.0.113.9'] });
    await main(h.ctx);
    const calls = h.calls();
    expect(azCalls(calls).map(verb)).not.toContain('az group create');
    expectSubscriptionEverywhere(calls);
    const sets = new Map(envSets(calls));
    expect(sets.has('AZURE_RESOURCE_GROUP')).toBe(false);
    expect(sets.get('SQL_SERVER_EXISTS')).toBe('true');
    expect(sets.get('SQL_ADMIN_OBJECT_ID')).toBe('bbbbbbbb-0000-0000-0000-000000000002');
    expect(sets.get('SQL_ADMIN_PRINCIPAL_TYPE')).toBe('Group');
    expect(sets.has('CALLBACK_SIGNING_SECRET'), 'an existing secret is never rotated').toBe(false);
    expect(sets.get('DEPLOYER_IP')).toBe('203.0.113.9');
  });
});

describe('preprovision.mjs: refusals and choices', () => {
  it('stops before any az call when a tool is missing or the sqlcmd is the ODBC one (review A4)', async () => {
    const { main } = await loadHook('preprovision');
    const missing = harness({ env: { ...BASE }, rules: FRESH, tools: ['az', 'azd', 'npm', 'node'] });
    await expect(main(missing.ctx)).rejects.toThrow(/missing tools: sqlcmd \(go-sqlcmd/);
    expect(missing.calls()).toEqual([]);
    const odbc = harnessWithOdbc();
    await expect(main(odbc.ctx)).rejects.toThrow(/not go-sqlcmd/);
    expect(azCalls(odbc.calls())).toEqual([]);
    const win = harness({ platform: 'win32', env: { ...BASE }, rules: FRESH, tools: ['azd', 'npm', 'node', 'sqlcmd'] });
    await expect(main(win.ctx)).rejects.toThrow(/missing tools: az \(/);
    await expect(main({ ...missing.ctx, nodeVersion: '18.19.0' })).rejects.toThrow(/Node\.js 20 or later/);
  });

  it('needs AZURE_SUBSCRIPTION_ID and AZURE_LOCATION, and runs no az call without them (review A3)', async () => {
    const { main } = await loadHook('preprovision');
    const noSub = harness({ env: { AZURE_ENV_NAME: 'dev', AZURE_LOCATION: 'swedencentral' }, rules: FRESH });
    await expect(main(noSub.ctx)).rejects.toThrow(/AZURE_SUBSCRIPTION_ID is not set/);
    const noLoc = harness({ env: { AZURE_ENV_NAME: 'dev', AZURE_SUBSCRIPTION_ID: SUB }, rules: FRESH });
    await expect(main(noLoc.ctx)).rejects.toThrow(/AZURE_LOCATION/);
    expect(azCalls([...noSub.calls(), ...noLoc.calls()])).toEqual([]);
  });

  it('refuses an existing group in another region, and a lookup that fails for another reason than "not found"', async () => {
    const { main } = await loadHook('preprovision');
    const elsewhere = harness({ env: { ...BASE }, rules: [{ cmd: 'az', args: ['group', 'show'], stdout: 'westeurope\n' }, ...EXISTING] });
    await expect(main(elsewhere.ctx)).rejects.toThrow(/already exists in westeurope/);
    const denied = harness({ env: { ...BASE }, rules: [{ cmd: 'az', args: ['sql', 'server', 'show'], status: 1, stderr: 'ERROR: (AuthorizationFailed) no access' }, ...FRESH] });
    await expect(main(denied.ctx)).rejects.toThrow(/could not check the SQL server sql-asyncresp-abc: .*AuthorizationFailed/);
    expect(envSets(denied.calls()).map(([k]) => k)).not.toContain('SQL_SERVER_EXISTS');
  });

  it('keeps a pinned IP without looking it up, and a service principal becomes an Application admin', async () => {
    const { main } = await loadHook('preprovision');
    const spToken = JSON.stringify({ accessToken: jwt({ oid: 'sp-object', appid: 'cccccccc-0000-0000-0000-000000000003', idtyp: 'app' }) });
    const h = harness({ env: { ...BASE, DEPLOYER_IP_PIN: '192.0.2.44' }, rules: [{ cmd: 'az', args: ['account', 'get-access-token'], stdout: spToken }, ...FRESH] });
    await main(h.ctx);
    expect(h.fetched).toEqual([]);
    const sets = new Map(envSets(h.calls()));
    expect(sets.get('DEPLOYER_IP')).toBe('192.0.2.44');
    expect(sets.get('SQL_ADMIN_OBJECT_ID')).toBe('cccccccc-0000-0000-0000-000000000003');
    expect(sets.get('SQL_ADMIN_PRINCIPAL_TYPE')).toBe('Application');
  });

  it('keeps the stored IP with a warning when the lookup fails', async () => {
    const { main } = await loadHook('preprovision');
    const h = harness({ env: { ...BASE, AZURE_RESOURCE_GROUP: 'rg-dev', DEPLOYER_IP: '198.51.100.1' }, rules: EXISTING, ip: [] });
    await main(h.ctx);
    expect(envSets(h.calls()).map(([k]) => k)).not.toContain('DEPLOYER_IP');
    expect(h.logs.join('\n')).toMatch(/could not find your public IP; keeping DEPLOYER_IP 198\.51\.100\.1/);
  });
});

function harnessWithOdbc() {
  const h = harness({ env: { ...BASE }, rules: FRESH });
  // replace the stand-in sqlcmd with one that prints the ODBC usage
  writeFileSync(join(h.bin, 'sqlcmd'), "#!/bin/sh\necho 'usage: sqlcmd [-U login id] [-P password] [-G use Azure Active Directory]'\n");
  return h;
}

const OUTPUTS = {
  ...BASE,
  AZURE_RESOURCE_GROUP: 'rg-dev',
  SQL_SERVER: 'sql-asyncresp-abc.database.windows.net',
  SQL_SERVER_NAME: 'sql-asyncresp-abc',
  SQL_DATABASE: 'asyncresponse',
  APP_IDENTITY_NAME: 'id-asyncresp-abc',
  APP_IDENTITY_CLIENT_ID: 'dddddddd-0000-0000-0000-000000000004',
  FUNCTION_APP_NAME: 'func-asyncresp-abc',
  FUNCTION_APP_HOST: 'func-asyncresp-abc.azurewebsites.net',
};

describe.each(['linux', 'win32'] as const)('postprovision.mjs (%s)', (platform) => {
  it('clears the one-time secret, then grants the identity as the deployer, retrying a refused connection', async () => {
    const { main } = await loadHook('postprovision');
    const h = harness({
      platform,
      env: { ...OUTPUTS, CALLBACK_SIGNING_SECRET: 'c2VjcmV0', AZURE_CLIENT_ID: 'stray-client-id', DATABASE_URL: 'postgres://x' },
      rules: [{ cmd: 'sqlcmd', args: ['-S'], status: 1, stderr: 'Login failed: Client with IP address is not allowed', times: 2 }],
    });
    await main(h.ctx);
    const calls = h.calls();
    expect(calls.map(verb)).toEqual(['sqlcmd', 'azd env set CALLBACK_SIGNING_SECRET', 'sqlcmd', 'sqlcmd', 'sqlcmd']);
    expect(calls[0]!.args).toEqual(['--help']);
    expect(envSets(calls)).toEqual([['CALLBACK_SIGNING_SECRET', '']]);
    const grant = calls.at(-1)!;
    expect(grant.args).toEqual([
      '-S', 'tcp:sql-asyncresp-abc.database.windows.net,1433', '-d', 'asyncresponse',
      '--authentication-method', 'ActiveDirectoryDefault', '-b',
      '-v', 'APP_IDENTITY_NAME=id-asyncresp-abc', '-v', 'APP_IDENTITY_CLIENT_ID=dddddddd-0000-0000-0000-000000000004',
      '-i', 'infra/sql/grant-app-identity.sql',
    ]);
    // as YOU: a stray app credential or connection string in the environment is not passed on
    // (the stand-in reports AZURE_CLIENT_ID, AZURE_CLIENT_SECRET, DATABASE_URL, SQL_SERVER, SQL_DATABASE, NODE_PATH)
    expect(grant.env).toEqual({ SQL_SERVER: OUTPUTS.SQL_SERVER, SQL_DATABASE: OUTPUTS.SQL_DATABASE });
    expect(h.sleeps).toEqual([20_000, 20_000]);
  });
});

describe('postprovision.mjs: refusals', () => {
  it('gives up after 5 refused grants, and refuses odd identity values before running sqlcmd', async () => {
    const { main } = await loadHook('postprovision');
    const h = harness({ env: { ...OUTPUTS }, rules: [{ cmd: 'sqlcmd', args: ['-S'], status: 1, stderr: 'refused' }] });
    await expect(main(h.ctx)).rejects.toThrow(/the grant failed 5 times/);
    expect(h.calls().filter((c) => c.args[0] === '-S').length).toBe(5);
    const odd = harness({ env: { ...OUTPUTS, APP_IDENTITY_NAME: "x]; DROP USER y; --" } });
    await expect(main(odd.ctx)).rejects.toThrow(/unexpected identity name/);
    expect(odd.calls().filter((c) => c.args[0] === '-S')).toEqual([]);
  });
});

describe.each(['linux', 'win32'] as const)('predeploy.mjs (%s)', (platform) => {
  it('compiles the schema CLI outside dist/ and applies the schema as the deployer (reviews B3, C2)', async () => {
    const { main } = await loadHook('predeploy');
    const h = harness({ platform, env: { ...OUTPUTS, DEPLOYER_IP: '203.0.113.7', AZURE_CLIENT_ID: 'stray' }, ip: ['203.0.113.7'] });
    await main(h.ctx);
    const calls = h.calls();
    expect(azCalls(calls), 'the IP did not change: the firewall is left alone').toEqual([]);
    const node = calls.filter((c) => c.cmd === 'node');
    expect(node.length).toBe(2);
    const [tsc, apply] = node as [Call, Call];
    expect(tsc.args.slice(0, 3)).toEqual([expect.stringMatching(/node_modules[\\/]typescript[\\/]bin[\\/]tsc$/), '-p', 'tsconfig.build.json']);
    const outDir = tsc.args[tsc.args.indexOf('--outDir') + 1]!;
    expect(outDir).toMatch(/asyncresp-schema-/);
    expect(outDir).not.toMatch(/(^|[\\/])dist([\\/]|$)/);
    expect(apply.args).toEqual([expect.stringContaining(outDir), 'apply']);
    expect(apply.args[0]).toMatch(/shared[\\/]cli[\\/]schema\.js$/);
    expect(apply.env).toEqual({
      SQL_SERVER: 'sql-asyncresp-abc.database.windows.net',
      SQL_DATABASE: 'asyncresponse',
      NODE_PATH: expect.stringMatching(/node_modules$/),
    });
    for (const c of calls) expect(c.args.join(' ')).not.toMatch(/npm run build|(^| )dist[\\/]/);
  });

  it('moves the AllowDeployer firewall rule when your IP changed since provisioning (review B1)', async () => {
    const { main } = await loadHook('predeploy');
    const h = harness({ platform, env: { ...OUTPUTS, DEPLOYER_IP: '198.51.100.1' }, ip: ['203.0.113.9'] });
    await main(h.ctx);
    const calls = h.calls();
    expect(envSets(calls)).toEqual([['DEPLOYER_IP', '203.0.113.9']]);
    const [rule] = azCalls(calls);
    expect(rule!.args).toEqual([
      'sql', 'server', 'firewall-rule', 'create', '--resource-group', 'rg-dev', '--server', 'sql-asyncresp-abc',
      '--name', 'AllowDeployer', '--start-ip-address', '203.0.113.9', '--end-ip-address', '203.0.113.9', '--output', 'none',
      '--subscription', SUB,
    ]);
    // before the schema step, which needs the rule
    expect(calls.findIndex((c) => c.cmd === 'az')).toBeLessThan(calls.findIndex((c) => c.cmd === 'node'));
  });
});

describe('predeploy.mjs: a failing schema step stops the deployment', () => {
  it('retries 5 times, then fails (azd then does not upload the new code)', async () => {
    const { main } = await loadHook('predeploy');
    const h = harness({ env: { ...OUTPUTS, DEPLOYER_IP: '203.0.113.7' }, ip: ['203.0.113.7'], rules: [{ cmd: 'node', contains: ['apply'], status: 1, stderr: 'ELOGIN' }] });
    await expect(main(h.ctx)).rejects.toThrow(/schema step failed 5 times/);
    expect(h.calls().filter((c) => c.cmd === 'node' && c.args.includes('apply')).length).toBe(5);
  });
});

describe.each(['linux', 'win32'] as const)('postdeploy.mjs (%s)', (platform) => {
  it('restarts the app until the Key Vault reference resolves, then waits for /api/health (review C1)', async () => {
    const { main } = await loadHook('postdeploy');
    const h = harness({
      platform,
      env: { ...OUTPUTS },
      rules: [
        { cmd: 'az', args: ['resource', 'show'], stdout: 'AccessToKeyVaultDenied\n', times: 2 },
        { cmd: 'az', args: ['resource', 'show'], stdout: 'Resolved\n' },
      ],
      health: [{ status: 503, body: '{"status":"unavailable"}' }, { status: 200, body: '{"status":"ok"}' }],
    });
    await main(h.ctx);
    const calls = azCalls(h.calls());
    expect(calls.map(verb)).toEqual(['az resource show', 'az functionapp restart', 'az resource show', 'az functionapp restart', 'az resource show']);
    expectSubscriptionEverywhere(calls);
    expect(calls[0]!.args.slice(0, 3)).toEqual([
      'resource', 'show', '--ids',
    ]);
    expect(calls[0]!.args[3]).toBe(`/subscriptions/${SUB}/resourceGroups/rg-dev/providers/Microsoft.Web/sites/func-asyncresp-abc/config/configreferences/appsettings/CALLBACK_SIGNING_SECRET`);
    expect(calls[1]!.args).toEqual(expect.arrayContaining(['--resource-group', 'rg-dev', '--name', 'func-asyncresp-abc']));
    expect(h.fetched).toEqual(['https://func-asyncresp-abc.azurewebsites.net/api/health', 'https://func-asyncresp-abc.azurewebsites.net/api/health']);
    expect(h.logs).toContain('{"status":"ok"}');
  });
});

describe('postdeploy.mjs: an app that does not serve fails the hook', () => {
  it('fails after 24 health attempts, naming the last answer; an unresolved reference only warns', async () => {
    const { main } = await loadHook('postdeploy');
    const h = harness({
      env: { ...OUTPUTS },
      rules: [{ cmd: 'az', args: ['resource', 'show'], stdout: 'AccessToKeyVaultDenied\n' }],
      health: Array.from({ length: 24 }, () => ({ status: 503, body: '{"status":"degraded"}' })),
    });
    await expect(main(h.ctx)).rejects.toThrow(/did not answer 200 \(last: 503 \{"status":"degraded"\}\)/);
    expect(azCalls(h.calls()).filter((c) => c.args[1] === 'restart').length).toBe(10);
    expect(h.logs.join('\n')).toMatch(/warning: CALLBACK_SIGNING_SECRET is still 'AccessToKeyVaultDenied'/);
    expect(h.fetched.length).toBe(24);
  });
});

describe('lib.mjs: the Windows command line', () => {
  it('round-trips awkward arguments through cmd.exe quoting, and starts an .exe by its path directly', async () => {
    const { commandLine } = await loadHook('lib');
    const args = ['a b', 'x&y|z', "[?hostType=='Repository'].name | [0]", '100%', 'say "hi"', 'C:\\dir\\', 'back\\"slash', '^caret', '(paren)', '<in>', ''];
    const { file, args: argv, verbatim } = commandLine({ platform: 'win32', env: {} }, 'az', args);
    expect(file).toBe('cmd.exe');
    expect(verbatim).toBe(true);
    expect(argv.slice(0, 3)).toEqual(['/d', '/s', '/c']);
    expect(decodeCmdLine(argv[3].slice(1, -1))).toEqual(['az', ...args]);
    // the decoder can fail: an unescaped & is an operator for cmd.exe, and quotes group by the MSVC rules
    expect(() => decodeCmdLine('az "a" & del x')).toThrow(/operator/);
    expect(decodeCmdLine('az "a b" c\\\\"d e"')).toEqual(['az', 'a b', 'c\\d e']);
    const node = 'C:\\Program Files\\nodejs\\node.exe';
    expect(commandLine({ platform: 'win32', env: {} }, node, ['a b'])).toEqual({ file: node, args: ['a b'], verbatim: false });
    expect(commandLine({ platform: 'linux', env: {} }, 'az', ['a b'])).toEqual({ file: 'az', args: ['a b'], verbatim: false });
  });
});

describe('the hooks as azd starts them (node <file>)', () => {
  it('runs main and exits 1 with the message, also through a symlinked checkout', () => {
    const root = join(HOOKS, '..', '..', '..');
    const link = join(mkdtempSync(join(tmpdir(), 'azd-link-')), 'checkout');
    symlinkSync(root, link);
    for (const dir of [root, link]) {
      for (const hook of ['preprovision', 'postprovision', 'predeploy', 'postdeploy']) {
        const r = spawnSync(process.execPath, [join('infra', 'azd', 'hooks', `${hook}.mjs`)], {
          cwd: dir,
          encoding: 'utf8',
          env: { PATH: mkdtempSync(join(tmpdir(), 'empty-bin-')) },
          timeout: 20_000,
        });
        expect(r.stderr, `${hook} from ${dir}`).toMatch(/^error: missing tools: az /);
        expect(r.status).toBe(1);
      }
    }
  });
});
