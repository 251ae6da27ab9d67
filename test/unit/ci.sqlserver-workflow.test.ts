// The SQL Server workflow (.github/workflows/sqlserver.yml) runs where the repository is hosted, never here: its test
// steps must be the commands docs/tests.md gives under "Against SQL Server", with the same environment, so a reader
// who runs the docs runs what CI runs. .ci/run validates the file against GitHub's workflow schema
// (@action-validator/cli); this file checks what a schema cannot: the mirror, the services and the matrix.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
// yaml: present through applicationinsights (a production dependency), not a dependency of its own
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');
const WORKFLOW = join(ROOT, '.github', 'workflows', 'sqlserver.yml');
const DOCS = join(ROOT, 'docs', 'tests.md');

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  env?: Record<string, string>;
  with?: Record<string, unknown>;
}
interface Job {
  env?: Record<string, string>;
  steps: Step[];
  services: Record<string, { image: string; env?: Record<string, string>; ports?: string[] }>;
  strategy?: { matrix?: Record<string, unknown[]> };
}

/** Steps that prepare the runner and are not in the docs (the docs reader has a checkout and a node already). */
const SETUP_RUNS = ['npm ci --no-audit --no-fund'];

/** The sh block under the docs' "Against SQL Server" paragraph. */
export function docsBlock(markdown: string): string {
  const at = markdown.indexOf('**Against SQL Server**');
  if (at < 0) throw new Error('docs/tests.md has no "Against SQL Server" paragraph');
  const fence = /```sh\n([\s\S]*?)```/.exec(markdown.slice(at));
  if (!fence) throw new Error('no sh block after "Against SQL Server"');
  return fence[1]!;
}

/** A shell line without its trailing comment (no `#` inside quotes in these blocks). */
const uncomment = (line: string) => line.replace(/(^|\s)#.*$/, '').trim();
const unquote = (v: string) => v.replace(/^'(.*)'$/, '$1').replace(/^"(.*)"$/, '$1');

/** Leading `NAME=value` assignments split from the command they prefix. */
export function splitAssignments(line: string): { env: Record<string, string>; command: string } {
  const env: Record<string, string> = {};
  let rest = line.trim();
  for (let m = /^([A-Z_][A-Z0-9_]*)=('[^']*'|"[^"]*"|\S+)\s+/.exec(rest); m; m = /^([A-Z_][A-Z0-9_]*)=('[^']*'|"[^"]*"|\S+)\s+/.exec(rest)) {
    env[m[1]!] = unquote(m[2]!);
    rest = rest.slice(m[0].length);
  }
  return { env, command: rest };
}

/** The docs block as (exported environment, commands in order), the Docker line left out (the workflow has services). */
export function docsPlan(block: string): { env: Record<string, string>; commands: Array<{ env: Record<string, string>; command: string }> } {
  const env: Record<string, string> = {};
  const commands: Array<{ env: Record<string, string>; command: string }> = [];
  for (const raw of block.split('\n')) {
    const line = uncomment(raw);
    if (!line || line.startsWith('docker compose')) continue;
    const exported = /^export\s+(.*)$/.exec(line);
    if (exported) {
      for (const m of exported[1]!.matchAll(/([A-Z_][A-Z0-9_]*)=('[^']*'|"[^"]*"|\S+)/g)) env[m[1]!] = unquote(m[2]!);
      continue;
    }
    commands.push(splitAssignments(line));
  }
  return { env, commands };
}

/** The workflow job's test steps as (environment, command), in order. */
export function workflowPlan(job: Job): Array<{ env: Record<string, string>; command: string }> {
  return job.steps
    .filter((s) => s.run !== undefined && !SETUP_RUNS.includes(s.run.trim()))
    .map((s) => {
      const { env, command } = splitAssignments(s.run!.trim());
      return { env: { ...(s.env ?? {}), ...env }, command };
    });
}

const workflow = parseYaml(readFileSync(WORKFLOW, 'utf8')) as { jobs: Record<string, Job>; on: unknown };
const jobs = Object.values(workflow.jobs);

describe('the SQL Server workflow mirrors docs/tests.md', () => {
  const docs = docsPlan(docsBlock(readFileSync(DOCS, 'utf8')));

  it('the parsers read what they are given (a sample block and a sample job)', () => {
    const sample = docsPlan("docker compose up\nexport A='x y' B=2   # note\nnpm test   # all\nE=1 npx vitest run t\n");
    expect(sample).toEqual({ env: { A: 'x y', B: '2' }, commands: [{ env: {}, command: 'npm test' }, { env: { E: '1' }, command: 'npx vitest run t' }] });
    const job: Job = { services: {}, steps: [{ uses: 'actions/checkout@v4' }, { run: 'npm ci --no-audit --no-fund' }, { run: 'E=1 npx vitest run t', env: { F: '2' } }] };
    expect(workflowPlan(job)).toEqual([{ env: { F: '2', E: '1' }, command: 'npx vitest run t' }]);
  });

  it('has one job, and the docs have commands to compare', () => {
    expect(jobs).toHaveLength(1);
    expect(docs.commands.length).toBeGreaterThanOrEqual(3);
  });

  for (const [name, job] of Object.entries(workflow.jobs)) {
    it(`${name}: its test steps are the docs' commands, in the docs' order, with the same inline settings`, () => {
      expect(workflowPlan(job)).toEqual(docs.commands);
    });

    it(`${name}: its environment is the one the docs export (same names, same values)`, () => {
      expect(job.env).toEqual(docs.env);
    });

    it(`${name}: SQL Server 2022 and 2019 (the version gate's oldest) run as services, PostgreSQL beside them, on Node 22`, () => {
      expect(job.strategy?.matrix?.sqlserver).toEqual(['2022', '2019']);
      expect(job.services.mssql?.image).toBe('mcr.microsoft.com/mssql/server:${{ matrix.sqlserver }}-latest');
      expect(job.services.postgres?.image).toMatch(/^postgres:1[6-9]$/);
      const node = job.steps.find((s) => s.uses?.startsWith('actions/setup-node@'));
      expect(String(node?.with?.['node-version'])).toMatch(/^22\./);
      // the server the docs' connection string reaches is the service's: the same sa password as test/compose.yml
      const compose = readFileSync(join(ROOT, 'test', 'compose.yml'), 'utf8');
      const password = /MSSQL_SA_PASSWORD: "([^"]+)"/.exec(compose)?.[1];
      expect(job.services.mssql?.env?.MSSQL_SA_PASSWORD).toBe(password);
      expect(docs.env.MSSQL_CONNECTION_STRING).toContain(`Password=${password};`);
    });
  }

  it("the probe command is a package script, and .ci/run validates every workflow file", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string>; devDependencies: Record<string, string> };
    for (const { command } of docs.commands) {
      const script = /^npm run ([\w:-]+)/.exec(command)?.[1];
      if (script) expect(pkg.scripts[script], `npm run ${script}`).toBeDefined();
    }
    expect(pkg.devDependencies['@action-validator/cli']).toMatch(/^\d+\.\d+\.\d+$/);
    expect(readFileSync(join(ROOT, '.ci', 'run'), 'utf8')).toMatch(/for workflow in \.github\/workflows\/\*\.yml; do[\s\S]*action-validator "\$workflow"/);
  });
});
