// Every shell and SQL block of README.md and of the docs/*.md pages runs here, or says why it cannot (a
// `<!-- readme-test: skip: reason -->` line right above the fence, reported as a skipped test with that reason).
// The README's blocks run first, then each page's, pages in file-name order. Shell blocks that call the local host
// (`localhost:7071`) run with bash against the app this file starts, with the settings the README's "Try it"
// section lists; every curl fails the block on an HTTP error (--fail-with-body), and each
// `<!-- readme-test: expect TEXT -->` above a block must appear in its output. PostgreSQL blocks run against
// PG_URL in a scratch schema (on the search_path, as the README says) that the engine created, and
// `<!-- readme-test: expect-row queue=NAME -->` checks that the block left a job on that queue.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../shared';
import { startApp, TIMER_DRAIN_EVERY_SECOND, type RunningApp } from './app-harness';

const run = promisify(execFile);
const root = path.resolve(__dirname, '../..');
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
/** README.md, then every docs/*.md page by name: the files whose blocks run here, with their text. */
const files: Array<{ file: string; text: string }> = [
  { file: 'README.md', text: readme },
  ...readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => ({ file: `docs/${f}`, text: readFileSync(path.join(root, 'docs', f), 'utf8') })),
];

interface Block {
  /** file:line of the opening fence, as the test names say */
  where: string;
  lang: string;
  code: string;
  skip?: string;
  expects: string[];
  expectRows: string[];
}

function blocks(file: string, text: string): Block[] {
  const lines = text.split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.indexOf('```', i + 1);
    const block: Block = { where: `${file}:${i + 1}`, lang: open[1]!, code: lines.slice(i + 1, end).join('\n'), expects: [], expectRows: [] };
    for (let j = i - 1; j >= 0 && lines[j]!.startsWith('<!-- readme-test:'); j--) {
      const marker = /^<!-- readme-test: (skip: |expect |expect-row )(.*) -->$/.exec(lines[j]!);
      if (!marker) throw new Error(`${file}:${j + 1}: unknown readme-test marker: ${lines[j]}`);
      if (marker[1] === 'skip: ') block.skip = marker[2];
      else if (marker[1] === 'expect ') block.expects.push(marker[2]!);
      else block.expectRows.push(marker[2]!);
    }
    out.push(block);
    i = end;
  }
  return out;
}

const all = files.flatMap((f) => blocks(f.file, f.text));
const shell = all.filter((b) => b.lang === 'sh' || b.lang === 'bash');
const sql = all.filter((b) => b.lang === 'sql');
const pgUrl = process.env.PG_URL;

const SETTINGS = {
  ...TIMER_DRAIN_EVERY_SECOND,
  PGLITE_DATA_DIR: 'memory://', // not the checkout's .data/pglite: every run starts empty
  QUEUES: 'worker,flaky,approvals',
  QUEUE__flaky__FORWARD_URL: 'http://127.0.0.1:9/unreachable',
  QUEUE__flaky__MAX_DELIVERY_ATTEMPTS: '1',
  TOPICS: 'orders',
  TOPIC__orders__SUBSCRIPTIONS: 'billing,shipping',
  CALLBACK_SIGNING_SECRET: 'dev-secret-at-least-16',
  CALLBACK_ALLOWED_HOSTS: 'localhost',
};

describe('README and docs blocks', () => {
  it('has shell and SQL blocks, each run here or marked with the reason it cannot run', () => {
    expect(files.length).toBeGreaterThan(10);
    expect(shell.length).toBeGreaterThan(5);
    expect(sql.length).toBeGreaterThanOrEqual(2);
    const unaccounted = [...shell, ...sql].filter((b) => !b.skip && !(b.lang === 'sql' ? /^-- PostgreSQL/.test(b.code) : b.code.includes('localhost:7071')));
    expect(unaccounted.map((b) => b.where)).toEqual([]);
  });

  it('has runnable blocks in the README itself and in the docs pages', () => {
    const runnable = [...shell, ...sql].filter((b) => !b.skip);
    expect(runnable.filter((b) => b.where.startsWith('README.md:')).length).toBeGreaterThan(3);
    expect(runnable.filter((b) => b.where.startsWith('docs/')).length).toBeGreaterThan(3);
  });

  it('lists every section in its contents', () => {
    const toc = readme.slice(readme.indexOf('## Contents'), readme.indexOf('## Quick start'));
    const sections = readme.split('\n').filter((l) => /^## /.test(l) && l !== '## Contents').map((l) => l.slice(3));
    expect(sections.filter((s) => !toc.includes(`[${s}]`))).toEqual([]);
  });

  for (const b of [...shell, ...sql].filter((b) => b.skip)) {
    it.skip(`${b.where} (${b.lang}) skipped: ${b.skip}`, () => undefined);
  }
});

describe('README shell blocks against the local host', () => {
  let app: RunningApp;
  beforeAll(async () => {
    app = await startApp({ ...SETTINGS });
  });
  afterAll(async () => {
    await app?.close();
  });

  // In README order, then the pages': later blocks may rely on what earlier ones did (the walkthroughs build on
  // each other).
  for (const b of shell.filter((b) => !b.skip)) {
    it(b.where, async () => {
      const host = new URL(app.url).host;
      const script = `set -euo pipefail\ncurl() { command curl --fail-with-body -sS --max-time 40 "$@"; }\n${b.code.replaceAll('localhost:7071', host)}\n`;
      const { stdout } = await run('bash', ['-c', script], { timeout: 60_000 });
      for (const text of b.expects) expect(stdout, `${b.where} output`).toContain(text);
    }, 70_000);
  }
});

describe.skipIf(!pgUrl)('README PostgreSQL blocks against PG_URL', () => {
  const schema = `readme_${process.pid}_${Date.now() % 100000}`;
  let client: Client;
  beforeAll(async () => {
    const engine = await createEngine({ store: { kind: 'postgres', url: pgUrl! }, schema, queues: { orders: { handler: { kind: 'echo' } } } });
    await engine.stats('orders');
    await engine.close();
    client = new Client({ connectionString: pgUrl });
    await client.connect();
  });
  afterAll(async () => {
    await client?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await client?.end();
  });

  for (const b of sql.filter((b) => !b.skip)) {
    it(b.where, async () => {
      await client.query(`SET search_path TO ${schema}`);
      await client.query(b.code);
      for (const row of b.expectRows) {
        const queue = /^queue=(.+)$/.exec(row)![1]!;
        const found = await client.query(`SELECT count(*)::int AS n FROM ${schema}.asyncresponse_transport_messages WHERE queue = $1`, [queue]);
        expect(found.rows[0].n).toBeGreaterThan(0);
      }
    });
  }
});

if (!pgUrl) {
  describe('README PostgreSQL blocks', () => {
    it.skip('skipped: PG_URL is not set (CI sets it)', () => undefined);
  });
}
