// azd postdeploy hook of the service `api` (azure.yaml, services.api.hooks), what infra/deploy.sh does after its
// code upload (review C1):
//   1. waits for the CALLBACK_SIGNING_SECRET Key Vault reference to resolve. Right after the first deployment the
//      identity's access to the vault may not apply yet, and the platform fetches a reference again only on a
//      restart, a config change or about once a day: until then callbacks are off. So it restarts the app until
//      the reference resolves (up to ~13 minutes; then only a warning, everything but callbacks works).
//   2. waits for GET /api/health to answer 200 (up to 4 minutes); fails the hook otherwise, so `azd up` in CI
//      does not report success for an app that does not serve.

import { az, checkTools, die, required, runIfMain, say } from './lib.mjs';

export const REFERENCE_ROUNDS = 10;
export const HEALTH_ATTEMPTS = 24;

export async function main(ctx) {
  checkTools(ctx, { sqlcmd: false });
  const [app, host, rg, sub] = required(
    ctx,
    ['FUNCTION_APP_NAME', 'FUNCTION_APP_HOST', 'AZURE_RESOURCE_GROUP', 'AZURE_SUBSCRIPTION_ID'],
    'deployment outputs: run through azd deploy / azd up',
  );
  const appId = `/subscriptions/${sub}/resourceGroups/${rg}/providers/Microsoft.Web/sites/${app}`;
  const referenceStatus = () =>
    az(ctx, ['resource', 'show', '--ids', `${appId}/config/configreferences/appsettings/CALLBACK_SIGNING_SECRET`,
      '--api-version', '2022-03-01', '--query', 'properties.status', '--output', 'tsv'], { allowFail: true }).stdout.trim();

  let status = referenceStatus();
  for (let round = 0; round < REFERENCE_ROUNDS && status !== 'Resolved' && status !== ''; round++) {
    say(ctx, `the Key Vault reference of CALLBACK_SIGNING_SECRET is '${status}'; restarting ${app} in 60 s to fetch it again`);
    await ctx.sleep(60_000);
    az(ctx, ['functionapp', 'restart', '--resource-group', rg, '--name', app, '--output', 'none']);
    await ctx.sleep(20_000);
    status = referenceStatus();
  }
  if (status !== 'Resolved' && status !== '') {
    ctx.log(`warning: CALLBACK_SIGNING_SECRET is still '${status}': callbacks are off until it resolves (docs/azure.md, troubleshooting)`);
  }

  const url = `https://${host}/api/health`;
  say(ctx, `waiting for ${url}`);
  let last = '';
  for (let attempt = 1; attempt <= HEALTH_ATTEMPTS; attempt++) {
    try {
      const res = await ctx.fetch(url, { signal: AbortSignal.timeout(30_000) });
      const body = await res.text();
      if (res.ok) {
        ctx.log(body);
        return;
      }
      last = `${res.status} ${body.slice(0, 300)}`;
    } catch (err) {
      last = String(err?.message ?? err);
    }
    if (attempt < HEALTH_ATTEMPTS) await ctx.sleep(10_000);
  }
  die(`${url} did not answer 200 (last: ${last}); see docs/azure.md, "When something is off"`);
}

runIfMain(import.meta.url, main);
