// azd predeploy hook of the service `api` (azure.yaml, services.api.hooks): applies pending schema versions as
// YOU (Entra, DefaultAzureCredential = your az login) before the new code is uploaded, on `azd up` and on every
// `azd deploy` alone. The app runs with AUTO_CREATE_SCHEMA=false and refuses a database that is behind, so a
// release that brings a schema version must find it applied (review C2).
//
// It never writes dist/ (review B3): azd's package step builds there (and in `azd up`, packaging overlaps
// provisioning), so the schema CLI is compiled from the same sources into a temporary folder and run from there,
// resolving packages from this project's node_modules (NODE_PATH). A service predeploy runs after that service is
// packaged; the separate build keeps the step independent of the order anyway.
//
// Before it, the SQL firewall's AllowDeployer rule is moved to your current public IP when it changed since the
// last provisioning (a plain `azd deploy` from another network would be refused; review B1).

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { az, checkTools, die, NOT_AS_DEPLOYER, refreshDeployerIp, required, run, runIfMain, say } from './lib.mjs';

export const SCHEMA_ATTEMPTS = 5;

export async function main(ctx) {
  checkTools(ctx, { sqlcmd: false });
  const [server, database, rg, serverName] = required(
    ctx,
    ['SQL_SERVER', 'SQL_DATABASE', 'AZURE_RESOURCE_GROUP', 'SQL_SERVER_NAME'],
    'deployment outputs: provision first (azd provision / azd up)',
  );

  const { ip, changed } = await refreshDeployerIp(ctx);
  if (changed && ip) {
    say(ctx, `SQL firewall: your IP is now ${ip}; updating AllowDeployer on ${serverName}`);
    az(ctx, ['sql', 'server', 'firewall-rule', 'create', '--resource-group', rg, '--server', serverName,
      '--name', 'AllowDeployer', '--start-ip-address', ip, '--end-ip-address', ip, '--output', 'none']);
  }

  if (!existsSync(join(ctx.root, 'node_modules', 'typescript'))) {
    say(ctx, 'npm ci (node_modules is missing)');
    run(ctx, 'npm', ['ci', '--no-audit', '--no-fund'], { inherit: true });
  }

  const out = mkdtempSync(join(tmpdir(), 'asyncresp-schema-'));
  try {
    say(ctx, 'compiling the schema CLI (into a temporary folder, not dist/)');
    run(ctx, ctx.nodeBin, [join('node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json', '--outDir', out, '--sourceMap', 'false'], {
      what: 'tsc (schema CLI)',
    });
    const cli = join(out, 'shared', 'cli', 'schema.js');
    say(ctx, `schema apply on ${server}/${database}`);
    for (let attempt = 1; ; attempt++) {
      const r = run(ctx, ctx.nodeBin, [cli, 'apply'], {
        allowFail: true,
        unset: NOT_AS_DEPLOYER,
        extraEnv: { SQL_SERVER: server, SQL_DATABASE: database, NODE_PATH: join(ctx.root, 'node_modules') },
      });
      if (r.stdout.trim()) ctx.log(r.stdout.trim());
      if (r.status === 0) return;
      ctx.log(r.stderr.trim());
      // a firewall rule just changed, or a paused serverless database resuming, refuses the first connections
      if (attempt >= SCHEMA_ATTEMPTS) die(`the schema step failed ${SCHEMA_ATTEMPTS} times; the new code was not deployed (it would refuse a database that is behind)`);
      ctx.log('retrying in 20 s ...');
      await ctx.sleep(20_000);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, main);
