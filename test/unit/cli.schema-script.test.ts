// `npm run schema` builds only when a source of the CLI is newer than the built CLI (scripts/schema.js).
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { stale } = require('../../scripts/schema.js') as { stale: (dir: string) => boolean };

let dir = '';
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const at = (file: string, seconds: number) => utimesSync(join(dir, file), seconds, seconds);

describe('npm run schema', () => {
  it('builds when the CLI is missing or older than a source, and not when it is current', () => {
    dir = mkdtempSync(join(tmpdir(), 'schema-script-'));
    mkdirSync(join(dir, 'shared', 'stores'), { recursive: true });
    for (const f of ['tsconfig.json', 'tsconfig.build.json', 'package.json', 'shared/stores/x.ts']) writeFileSync(join(dir, f), '{}');
    for (const f of ['tsconfig.json', 'tsconfig.build.json', 'package.json', 'shared/stores/x.ts']) at(f, 1_000);
    expect(stale(dir)).toBe(true); // never built
    mkdirSync(join(dir, 'dist', 'shared', 'cli'), { recursive: true });
    writeFileSync(join(dir, 'dist/shared/cli/schema.js'), '');
    at('dist/shared/cli/schema.js', 2_000);
    expect(stale(dir)).toBe(false);
    at('shared/stores/x.ts', 3_000); // an edited source
    expect(stale(dir)).toBe(true);
    at('shared/stores/x.ts', 1_000);
    at('package.json', 3_000);
    expect(stale(dir)).toBe(true);
  });
});
