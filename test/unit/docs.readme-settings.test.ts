import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../shared/settings';

// The configuration table lives in docs/configuration.md (the README links it); the README keeps the two commands.
describe('README and docs/configuration.md', () => {
  const readme = readFileSync(require.resolve('../../README.md'), 'utf8');
  const configuration = readFileSync(require.resolve('../../docs/configuration.md'), 'utf8');
  it('docs/configuration.md documents every setting the app reads, with its default', () => {
    for (const s of SETTINGS) {
      const row = configuration.split('\n').find((l) => l.startsWith(`| \`${s.name}\` |`));
      expect(row, `docs/configuration.md row for ${s.name}`).toBeDefined();
      if (s.default !== '') expect(row, s.name).toContain(s.default.split(' ')[0]!);
    }
  });
  it('the README shows the two set-up commands', () => {
    expect(readme).toContain('npm install && npm start');
    expect(readme).toContain('npm test');
  });
});
