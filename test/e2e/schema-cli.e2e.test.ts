// `npm run schema` as an operator types it (issue 27, item 2): an unknown option or command is refused by name and
// changes nothing (`apply --dry-rn` applied all versions once), `apply --dry-run` prints what would run and changes
// nothing, `--help` exits 0, and `status` warns when another live process holds the PGlite directory.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PGLITE_HOLDER_FILE } from '../../shared/stores/postgres/connect';

const root = path.resolve(__dirname, '../..');
let dir = '';

function schema(...args: string[]): { status: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [path.join(root, 'scripts/schema.js'), ...args], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: '', SQL_CONNECTION_STRING: '', SQL_SERVER: '', PGLITE_DATA_DIR: dir, LOG_LEVEL: 'info' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

describe('npm run schema: strict command line, dry run, PGlite holder', { timeout: 180_000 }, () => {
  beforeAll(() => {
    execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root });
    dir = path.join(mkdtempSync(path.join(tmpdir(), 'schema-cli-')), 'pglite');
  });
  afterAll(() => rmSync(path.dirname(dir), { recursive: true, force: true }));

  it('refuses an unknown option of apply by name and applies nothing', () => {
    const r = schema('apply', '--dry-rn');
    expect(r.status).toBe(2);
    expect(r.err).toContain('unknown option --dry-rn');
    expect(r.err).toContain('did you mean --dry-run?');
    const status = schema('status');
    expect(status.status).toBe(0);
    expect(status.out).toContain('version: none');
  });

  it('refuses an unknown command by name, with the nearest one', () => {
    const r = schema('stats');
    expect(r.status).toBe(2);
    expect(r.err).toContain("unknown command 'stats' (did you mean 'status'?)");
    expect(schema('status', '--schema', 'x').err).toContain("'status' takes no options");
    expect(schema().err).toContain('no command given');
  });

  it('--help prints the usage and exits 0', () => {
    const r = schema('--help');
    expect(r.status).toBe(0);
    expect(r.out).toContain('apply [--dry-run]');
  });

  it('apply --dry-run prints every pending statement and changes nothing; apply then applies them', () => {
    const dry = schema('apply', '--dry-run');
    expect(dry.status).toBe(0);
    expect(dry.out).toContain('nothing was changed');
    expect(dry.out).toMatch(/apply would run \d+ version\(s\), 0 → \d+/);
    expect(dry.out).toContain('-- version 1:');
    expect(dry.out).toMatch(/CREATE TABLE/i);
    expect(schema('status').out).toContain('version: none');
    const applied = schema('apply');
    expect(applied.status).toBe(0);
    expect(applied.out).toMatch(/applied version\(s\) 1, 2/);
    const again = schema('apply', '--dry-run');
    expect(again.out).toContain('apply would run nothing');
  });

  it('status warns when another live process holds the PGlite directory', () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, PGLITE_HOLDER_FILE), String(process.pid)); // this test process: alive, not the CLI
    const r = schema('status');
    expect(r.status).toBe(0);
    expect(r.out + r.err).toContain(`is held by another process (pid ${process.pid}`);
    // a holder that is gone (a killed `npm start`) is no warning
    writeFileSync(path.join(dir, PGLITE_HOLDER_FILE), '999999');
    expect(schema('status').err).not.toContain('held by another process');
  });
});
