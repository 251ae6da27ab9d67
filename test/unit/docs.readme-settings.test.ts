import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../shared/settings';

describe('README', () => {
  const readme = readFileSync(require.resolve('../../README.md'), 'utf8');
  it('documents every setting the app reads, with its default', () => {
    for (const s of SETTINGS) {
      const row = readme.split('\n').find((l) => l.startsWith(`| \`${s.name}\` |`));
      expect(row, `README row for ${s.name}`).toBeDefined();
      if (s.default !== '') expect(row, s.name).toContain(s.default.split(' ')[0]!);
    }
  });
  it('shows the two set-up commands', () => {
    expect(readme).toContain('npm install && npm start');
    expect(readme).toContain('npm test');
  });
});
