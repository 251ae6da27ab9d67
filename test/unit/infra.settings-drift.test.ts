// The app settings the Bicep writes vs the settings the app reads (SETTINGS in shared/settings/catalog.ts). No Bicep
// compiler runs here, so the object literals of infra/modules/function-app.bicep are read with a small parser:
// comments and string contents are blanked first, then the top-level keys of `var appSettings = {…}` and
// `var platformSettings = {…}` (and of any siteConfig `appSettings: [ { name: '…' } ]` array) are collected.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../shared/settings';
import { bicepFiles, blankCommentsAndStrings, INFRA, objectBody, topLevelKeys } from '../support/bicep';

const MODULE = join(INFRA, 'modules', 'function-app.bicep');

/** Settings Azure must set for the app to reach its database as its identity, without DDL rights. */
const REQUIRED_IN_AZURE = ['SQL_SERVER', 'SQL_DATABASE', 'AZURE_CLIENT_ID', 'AUTO_CREATE_SCHEMA'];

/** Read by the Functions host, the platform or the Application Insights integration, not by shared/settings. */
const PLATFORM = [/^AzureWebJobs/, /^AzureFunctionsJobHost__/, /^APPLICATIONINSIGHTS_/, /^WEBSITE_/, /^FUNCTIONS_/];
const isPlatform = (name: string) => PLATFORM.some((re) => re.test(name));

/** Settings Flex Consumption rejects or ignores (runtime, scale and deployment live in functionAppConfig). */
const FLEX_REJECTED = [
  'FUNCTIONS_WORKER_RUNTIME',
  'FUNCTIONS_WORKER_RUNTIME_VERSION',
  'FUNCTIONS_EXTENSION_VERSION',
  'FUNCTIONS_MAX_HTTP_CONCURRENCY',
  'FUNCTIONS_WORKER_PROCESS_COUNT',
  'FUNCTIONS_WORKER_DYNAMIC_CONCURRENCY_ENABLED',
  'SCM_DO_BUILD_DURING_DEPLOYMENT',
  'ENABLE_ORYX_BUILD',
  'WEBSITE_CONTENTAZUREFILECONNECTIONSTRING',
  'WEBSITE_CONTENTSHARE',
  'WEBSITE_CONTENTOVERVNET',
  'WEBSITE_NODE_DEFAULT_VERSION',
  'WEBSITE_RUN_FROM_PACKAGE',
  'WEBSITE_MAX_DYNAMIC_APPLICATION_SCALE_OUT',
  'WEBSITE_SKIP_CONTENTSHARE_VALIDATION',
  'WEBSITE_VNET_ROUTE_ALL',
  'WEBSITE_TIME_ZONE',
  'linuxFxVersion',
];

/** `name: 'X'` entries of siteConfig-style `appSettings: [ … ]` arrays, should the module ever use that form. */
function arrayStyleSettingNames(src: string): string[] {
  const names: string[] = [];
  const re = /appSettings\s*:\s*\[([\s\S]*?)\n\s*\]/g;
  for (let m = re.exec(src); m; m = re.exec(src)) {
    for (const n of m[1]!.matchAll(/\bname\s*:\s*'([^']+)'/g)) names.push(n[1]!);
  }
  return names;
}

function bicepSettings() {
  const src = readFileSync(MODULE, 'utf8');
  const blanked = blankCommentsAndStrings(src);
  const app = objectBody(src, blanked, 'appSettings');
  const platform = objectBody(src, blanked, 'platformSettings');
  return {
    src,
    app: app ? topLevelKeys(app.body, app.blankedBody) : [],
    platform: platform ? topLevelKeys(platform.body, platform.blankedBody) : [],
    arrayStyle: arrayStyleSettingNames(src),
    appBody: app?.body ?? '',
  };
}

describe('infra: app settings in the Bicep vs SETTINGS (shared/settings/catalog.ts)', () => {
  const known = new Set(SETTINGS.map((s) => s.name));
  /** A fixed name, or one of a declared family (QUEUE__<key>__<SETTING>). */
  const isKnown = (name: string) => known.has(name) || SETTINGS.some((s) => s.pattern?.test(name));

  it('accepts per-queue settings of the declared family and nothing else', () => {
    expect(isKnown('QUEUE__orders__MAX_DELIVERY_ATTEMPTS')).toBe(true);
    expect(isKnown('QUEUE__orders__NOT_A_SETTING')).toBe(false);
    expect(isKnown('QUEUE_orders_MAX_DELIVERY_ATTEMPTS')).toBe(false);
  });

  it('finds the settings objects in infra/modules/function-app.bicep', () => {
    const { app, platform } = bicepSettings();
    expect(app.length, 'keys of var appSettings').toBeGreaterThan(3);
    expect(platform.length, 'keys of var platformSettings').toBeGreaterThan(2);
  });

  it('sets only settings the app reads (plus platform ones), each known to SETTINGS', () => {
    const { app, platform, arrayStyle } = bicepSettings();
    const ours = [...app, ...platform, ...arrayStyle].filter((n) => !isPlatform(n));
    const unknown = ours.filter((n) => !isKnown(n));
    expect(unknown, 'Bicep app settings that shared/settings does not read (typo, or add them to SETTINGS)').toEqual([]);
    expect(app.filter(isPlatform), 'platform settings belong in var platformSettings').toEqual([]);
    expect(platform.filter((n) => !isPlatform(n)), 'app settings belong in var appSettings').toEqual([]);
  });

  it('sets what Azure needs: the database, the identity, verify-only schema', () => {
    const { app, appBody } = bicepSettings();
    for (const name of REQUIRED_IN_AZURE) expect(app, `${name} in var appSettings`).toContain(name);
    expect(appBody).toMatch(/^\s*AUTO_CREATE_SCHEMA\s*:\s*'false'\s*$/m);
    for (const name of [...REQUIRED_IN_AZURE, 'QUEUES']) {
      expect(known.has(name), `${name} is a setting the app reads`).toBe(true);
    }
  });

  it('connects host storage and Application Insights by identity', () => {
    const { platform } = bicepSettings();
    for (const name of [
      'AzureWebJobsStorage__accountName',
      'AzureWebJobsStorage__credential',
      'AzureWebJobsStorage__clientId',
      'APPLICATIONINSIGHTS_CONNECTION_STRING',
    ]) {
      expect(platform, name).toContain(name);
    }
    expect(platform, 'a storage connection string').not.toContain('AzureWebJobsStorage');
  });

  it('sets none of the settings Flex Consumption rejects, in any Bicep file', () => {
    expect(bicepFiles(INFRA).length, 'Bicep files under infra/').toBeGreaterThanOrEqual(8);
    for (const file of bicepFiles(INFRA)) {
      const blanked = blankCommentsAndStrings(readFileSync(file, 'utf8'));
      const src = readFileSync(file, 'utf8');
      for (const name of FLEX_REJECTED) {
        // as an object key (code, not comments) or as a quoted setting name
        expect(new RegExp(`(^|[\\s{,])${name}\\s*:`, 'm').test(blanked), `${name} in ${file}`).toBe(false);
        expect(src.includes(`'${name}'`), `'${name}' in ${file}`).toBe(false);
      }
    }
  });

  it('stores no password or connection-string secret anywhere in the infrastructure', () => {
    expect(bicepFiles(INFRA).length, 'Bicep files under infra/').toBeGreaterThanOrEqual(8);
    for (const file of bicepFiles(INFRA)) {
      const code = blankCommentsAndStrings(readFileSync(file, 'utf8'));
      for (const forbidden of ['administratorLoginPassword', 'SQL_PASSWORD', 'SQL_CONNECTION_STRING', 'listKeys', 'DefaultEndpointsProtocol']) {
        expect(code.includes(forbidden), `${forbidden} in ${file}`).toBe(false);
      }
    }
    const { src } = bicepSettings();
    expect(src).toMatch(/CALLBACK_SIGNING_SECRET\s*:\s*'@Microsoft\.KeyVault\(SecretUri=/);
  });
});

describe('infra settings parser', () => {
  it('reads top-level keys and ignores nested objects, comments and strings', () => {
    const src = [
      'var appSettings = {',
      "  // NOT_A_KEY: 'x'",
      "  A_KEY: 'value: with { brace'",
      "  'QUOTED_KEY': 'x'",
      '  nested: {',
      "    INNER: 'x'",
      '  }',
      "  B_KEY: '''",
      'MULTI: line }',
      "'''",
      '}',
    ].join('\n');
    const blanked = blankCommentsAndStrings(src);
    const o = objectBody(src, blanked, 'appSettings')!;
    expect(topLevelKeys(o.body, o.blankedBody)).toEqual(['A_KEY', 'QUOTED_KEY', 'nested', 'B_KEY']);
  });
});
