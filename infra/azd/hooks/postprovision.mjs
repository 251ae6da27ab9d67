// azd postprovision hook (azure.yaml): removes the one-time signing secret from the azd environment (it is in Key
// Vault now), then gives the app's managed identity its database user (data roles only) by running
// infra/sql/grant-app-identity.sql with go-sqlcmd as YOU, the server's Entra admin (infra/deploy.sh runs the same
// file through infra/scripts/grant-app-identity.sh). azd passes the deployment outputs (SQL_SERVER, SQL_DATABASE,
// APP_IDENTITY_NAME, APP_IDENTITY_CLIENT_ID) as environment variables.
//
// The schema is NOT applied here: `azd up` packages the app while provisioning runs, and azd's package step
// builds into dist/; the schema runs as the service's predeploy hook (predeploy.mjs), after packaging, and on
// every `azd deploy`, before the new code serves.

import { azdEnvSet, checkTools, die, NOT_AS_DEPLOYER, required, run, runIfMain, say } from './lib.mjs';

export const GRANT_ATTEMPTS = 5;

export async function main(ctx) {
  checkTools(ctx);
  if (ctx.env.CALLBACK_SIGNING_SECRET) azdEnvSet(ctx, 'CALLBACK_SIGNING_SECRET', '');

  const [server, database, identity, clientId] = required(
    ctx,
    ['SQL_SERVER', 'SQL_DATABASE', 'APP_IDENTITY_NAME', 'APP_IDENTITY_CLIENT_ID'],
    'deployment outputs: run through azd provision / azd up',
  );
  if (!/^[A-Za-z0-9_.-]+$/.test(identity)) die(`unexpected identity name '${identity}'`);
  if (!/^[0-9a-fA-F-]{36}$/.test(clientId)) die(`unexpected client id '${clientId}'`);

  say(ctx, `granting ${identity} db_datareader + db_datawriter in ${database}`);
  for (let attempt = 1; ; attempt++) {
    const r = run(
      ctx,
      'sqlcmd',
      ['-S', `tcp:${server},1433`, '-d', database, '--authentication-method', 'ActiveDirectoryDefault', '-b',
        '-v', `APP_IDENTITY_NAME=${identity}`, '-v', `APP_IDENTITY_CLIENT_ID=${clientId}`,
        '-i', 'infra/sql/grant-app-identity.sql'],
      { allowFail: true, unset: NOT_AS_DEPLOYER },
    );
    if (r.status === 0) {
      if (r.stdout.trim()) ctx.log(r.stdout.trim());
      return;
    }
    ctx.log((r.stderr || r.stdout).trim());
    // a new firewall rule or a resuming serverless database can refuse the first connections
    if (attempt >= GRANT_ATTEMPTS) {
      die(`the grant failed ${GRANT_ATTEMPTS} times (firewall: is DEPLOYER_IP your address? are you the server's Entra admin?)`);
    }
    ctx.log('retrying in 20 s ...');
    await ctx.sleep(20_000);
  }
}

runIfMain(import.meta.url, main);
