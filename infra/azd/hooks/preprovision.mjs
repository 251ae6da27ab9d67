// azd preup and preprovision hook (azure.yaml): what infra/deploy.sh does before its Bicep deployment, written
// into the azd environment for infra/azd/main.parameters.json.
//
// It runs as `preup` too because `azd up` resolves the Bicep parameters and the resource group BEFORE its
// preprovision hook (azd's early provisioning Initialize); run first, this hook leaves nothing to prompt for, so
// `azd up --no-prompt` works with only AZURE_ENV_NAME, AZURE_LOCATION and AZURE_SUBSCRIPTION_ID. `azd provision`
// runs it as preprovision. Both runs in one `azd up` are the same idempotent checks.
//
// In order:
//   1. the tools (node 20+, az, azd, npm, go-sqlcmd), before anything is provisioned
//   2. AZURE_SUBSCRIPTION_ID / AZURE_LOCATION / AZURE_ENV_NAME, and `az` signed in with access to that
//      subscription (every az call names it: the Azure CLI's default subscription may be another one)
//   3. the resource group: AZURE_RESOURCE_GROUP, default rg-<env name>; created (tagged azd-env-name) only when
//      missing (a create on an existing group replaces its tags), refused when it is in another region
//   4. the SQL server and Key Vault names the deployment will use (infra/modules/names.bicep deployed alone), then
//      whether the server exists (and its Entra admin) and whether the vault holds the signing secret
//   5. SQL_SERVER_EXISTS, the SQL admin (the existing server's, else the signed-in principal), the signing secret
//      on the first deployment only, and DEPLOYER_IP (looked up on every run unless DEPLOYER_IP_PIN is set)
// A lookup that fails for another reason than "not found" stops the hook: guessing "missing" could send a new
// admin block to an existing server or rotate the signing secret callback receivers verify with.

import { randomBytes } from 'node:crypto';
import { az, azdEnvSet, checkTools, die, envName, isNotFound, refreshDeployerIp, required, runIfMain, say, subscription } from './lib.mjs';

/** Reads a dotted path from parsed JSON (undefined when absent). */
const pick = (obj, path) => path.split('.').reduce((v, k) => (v == null ? undefined : v[k]), obj);

/** The claims of an access token (the signed-in principal: user or service principal), not verified. */
export function tokenClaims(token) {
  const part = String(token).split('.')[1];
  if (!part) die('az account get-access-token returned no JWT');
  return JSON.parse(Buffer.from(part.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8'));
}

/**
 * The signed-in principal as a SQL Entra admin, from a token for azd's subscription (so from that subscription's
 * tenant, which `az ad signed-in-user show` would not guarantee). Users: object id + UPN. Service principals (CI):
 * Azure SQL identifies an application admin by its client id.
 */
export function signedInAdmin(ctx) {
  const out = az(ctx, ['account', 'get-access-token', '--resource', 'https://management.azure.com/', '--output', 'json'], {
    what: 'az account get-access-token',
  });
  const claims = tokenClaims(JSON.parse(out.stdout).accessToken);
  if (claims.idtyp === 'app' || (!claims.upn && !claims.unique_name && claims.appid)) {
    return { sid: claims.appid, login: ctx.env.SQL_ADMIN_LOGIN || claims.appid, type: 'Application' };
  }
  const login = ctx.env.SQL_ADMIN_LOGIN || claims.upn || claims.unique_name || claims.preferred_username;
  if (!claims.oid || !login) die('could not read the signed-in user from its token; set SQL_ADMIN_LOGIN, SQL_ADMIN_OBJECT_ID and SQL_ADMIN_PRINCIPAL_TYPE');
  return { sid: claims.oid, login, type: 'User' };
}

export async function main(ctx) {
  checkTools(ctx);
  const env = envName(ctx);
  const sub = subscription(ctx);
  const [location] = required(ctx, ['AZURE_LOCATION'], 'run: azd env set AZURE_LOCATION <region with Flex Consumption>');
  az(ctx, ['account', 'show', '--query', 'id', '--output', 'tsv'], {
    what: `az account show (sign in with az login, with access to subscription ${sub})`,
  });

  // 3. resource group
  const rg = ctx.env.AZURE_RESOURCE_GROUP || `rg-${env}`;
  if (ctx.env.AZURE_RESOURCE_GROUP !== rg) azdEnvSet(ctx, 'AZURE_RESOURCE_GROUP', rg);
  const wanted = location.replace(/\s/g, '').toLowerCase();
  if (az(ctx, ['group', 'exists', '--name', rg]).stdout.trim() === 'true') {
    const at = az(ctx, ['group', 'show', '--name', rg, '--query', 'location', '--output', 'tsv']).stdout.trim().toLowerCase();
    if (at !== wanted) die(`resource group ${rg} already exists in ${at}, not ${location}; use that region or another AZURE_RESOURCE_GROUP`);
    say(ctx, `resource group ${rg} (exists, left as it is)`);
  } else {
    say(ctx, `creating resource group ${rg} in ${location}`);
    // the tag tells `azd down` the group is azd's (no "not created by azd" warning)
    az(ctx, ['group', 'create', '--name', rg, '--location', location, '--tags', `azd-env-name=${env}`, '--output', 'none']);
  }

  // 4. what exists
  const prefix = ctx.env.NAME_PREFIX || 'asyncresp';
  const names = JSON.parse(
    az(ctx, ['deployment', 'group', 'create', '--resource-group', rg, '--name', 'names-asyncresponse',
      '--template-file', 'infra/modules/names.bicep', '--parameters', `namePrefix=${prefix}`,
      '--query', 'properties.outputs', '--output', 'json'], { what: 'evaluating the resource names (infra/modules/names.bicep)' }).stdout,
  );
  const sqlServer = pick(names, 'sqlServer.value');
  const keyVault = pick(names, 'keyVault.value');
  if (!sqlServer || !keyVault) die('infra/modules/names.bicep returned no names');

  let server;
  const show = az(ctx, ['sql', 'server', 'show', '--resource-group', rg, '--name', sqlServer, '--expand-ad-admin', '--output', 'json'], { allowFail: true });
  if (show.status === 0) server = JSON.parse(show.stdout);
  else if (!isNotFound(show.stderr)) die(`could not check the SQL server ${sqlServer}: ${show.stderr.trim()}`);

  const secretId = `/subscriptions/${sub}/resourceGroups/${rg}/providers/Microsoft.KeyVault/vaults/${keyVault}/secrets/callback-signing-secret`;
  const secret = az(ctx, ['resource', 'show', '--ids', secretId, '--output', 'none'], { allowFail: true });
  if (secret.status !== 0 && !isNotFound(secret.stderr)) die(`could not check the signing secret in ${keyVault}: ${secret.stderr.trim()}`);
  const secretExists = secret.status === 0;

  // 5. the parameters
  azdEnvSet(ctx, 'NAME_PREFIX', prefix);
  azdEnvSet(ctx, 'SQL_SERVER_EXISTS', server ? 'true' : 'false');
  const admin = server?.administrators;
  if (!ctx.env.SQL_ADMIN_OBJECT_ID && admin?.sid) {
    say(ctx, `SQL Entra admin: keeping ${admin.login} of ${sqlServer}`);
    azdEnvSet(ctx, 'SQL_ADMIN_OBJECT_ID', admin.sid);
    azdEnvSet(ctx, 'SQL_ADMIN_LOGIN', admin.login);
    azdEnvSet(ctx, 'SQL_ADMIN_PRINCIPAL_TYPE', admin.principalType || 'User');
  } else if (!ctx.env.SQL_ADMIN_OBJECT_ID) {
    const me = signedInAdmin(ctx);
    say(ctx, `SQL Entra admin: the signed-in principal ${me.login}`);
    azdEnvSet(ctx, 'SQL_ADMIN_OBJECT_ID', me.sid);
    azdEnvSet(ctx, 'SQL_ADMIN_LOGIN', me.login);
    azdEnvSet(ctx, 'SQL_ADMIN_PRINCIPAL_TYPE', ctx.env.SQL_ADMIN_PRINCIPAL_TYPE || me.type);
  } else if (!ctx.env.SQL_ADMIN_LOGIN) {
    die('SQL_ADMIN_OBJECT_ID is set without SQL_ADMIN_LOGIN: azd env set SQL_ADMIN_LOGIN <UPN or group name>');
  }

  // Only a definite "not found" creates a secret. It stays in the azd environment (.azure/<env>/.env) only until
  // the postprovision hook clears it; `azd env set` takes it as an argument (visible to local `ps` for that
  // moment), the trade-off for keeping to what every azd version accepts.
  if (!secretExists && !ctx.env.CALLBACK_SIGNING_SECRET) {
    say(ctx, `generating CALLBACK_SIGNING_SECRET (first deployment); it is stored in Key Vault ${keyVault}`);
    azdEnvSet(ctx, 'CALLBACK_SIGNING_SECRET', randomBytes(48).toString('base64'));
  }

  const { ip } = await refreshDeployerIp(ctx);
  if (ip) say(ctx, `SQL firewall: admitting ${ip} (AllowDeployer)`);
}

runIfMain(import.meta.url, main);
