// Issue 18: copying local.settings.example.json, as docs/local-host.md says, set AzureWebJobsStorage=UseDevelopmentStorage=true
// (so `npm start` did not start its embedded Azurite and drain requests went to a 127.0.0.1:10001 nobody served)
// and a */10 drain timer that hid it. The example must start the way `npm start` starts without it: every value it
// sets is the setting's default (or empty, which is unset), and storage stays unconfigured.
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../shared/settings';
import { storageConfigured } from '../../shared/settings/drain-requests';

const example = JSON.parse(readFileSync(path.join(__dirname, '../../local.settings.example.json'), 'utf8')) as { Values: Record<string, string> };

describe('local.settings.example.json', () => {
  it('leaves storage unconfigured, so npm start runs its embedded Azurite', () => {
    expect(storageConfigured(example.Values)).toBe(false);
  });

  it('sets nothing but defaults (or empty values, which are unset)', () => {
    const differing = Object.entries(example.Values).filter(([name, value]) => {
      if (value === '' || name === 'FUNCTIONS_WORKER_RUNTIME') return false;
      const setting = SETTINGS.find((s) => s.name === name);
      return setting?.default !== value;
    });
    expect(differing).toEqual([]);
  });
});
