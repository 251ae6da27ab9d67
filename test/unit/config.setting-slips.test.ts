// Misspelt global settings (issue 27, item 4): near misses of the app's setting names are named with the setting
// they are probably meant to be; unrelated names (PATH, a user's own settings) are not.
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../shared/settings/catalog';
import { settingSlips } from '../../shared/settings/slips';

const names = (list: string[]) => settingSlips(list).map((s) => [s.name, s.suggestion]);

describe('setting name slips', () => {
  it('names the setting a near miss is meant to be', () => {
    expect(names(['QUEUE', 'MAX_DELIVERY_ATTEMPT', 'queues', 'LOCK_TIMEOUT_SECOND', 'DRAIN_BUGDET_SECONDS', 'DATABSE_URL'])).toEqual([
      ['QUEUE', 'QUEUES'],
      ['MAX_DELIVERY_ATTEMPT', 'MAX_DELIVERY_ATTEMPTS'],
      ['queues', 'QUEUES'],
      ['LOCK_TIMEOUT_SECOND', 'LOCK_TIMEOUT_SECONDS'],
      ['DRAIN_BUGDET_SECONDS', 'DRAIN_BUDGET_SECONDS'],
      ['DATABSE_URL', 'DATABASE_URL'],
    ]);
    expect(settingSlips(['QUEUE'])[0]!.message).toBe('QUEUE is not a setting this app reads (did you mean QUEUES?); it is ignored');
  });

  it('flags an unknown name under one of the app’s own prefixes, and the single-underscore per-queue form', () => {
    const [drain, perQueue] = settingSlips(['DRAIN_SOMETHING_ELSE', 'QUEUE_orders_HANDLER']);
    expect(drain!.message).toMatch(/^DRAIN_SOMETHING_ELSE is not a setting this app reads; it is ignored \(the DRAIN_… settings are DRAIN_WORKER_SCHEDULE, /);
    expect(perQueue!.message).toContain('QUEUE__<key>__<SETTING>');
  });

  it('leaves every real setting, the per-queue families, the host’s names and unrelated variables alone', () => {
    const real = SETTINGS.filter((s) => !s.pattern).map((s) => s.name);
    const unrelated = ['PATH', 'HOME', 'USER', 'SHELL', 'PWD', 'LANG', 'TERM', 'HOSTNAME', 'NODE_ENV', 'CI', 'PG_URL', 'REQUIRE_PG', 'npm_config_cache', 'MY_OWN_API_KEY', 'TZ'];
    const families = ['QUEUE__orders__HANDLER', 'QUEUE__wroker__BATCH_SIZE', 'TOPIC__orders__SUBSCRIPTIONS', 'FUNCTIONS_WORKER_RUNTIME', 'AzureWebJobsStorage', 'LOCAL_AZURITE', 'PORT'];
    expect(names([...real, ...unrelated, ...families])).toEqual([]);
    // what Azure Functions sets on a Flex Consumption instance
    const azure = ['WEBSITE_SITE_NAME', 'WEBSITE_HOSTNAME', 'WEBSITE_INSTANCE_ID', 'CONTAINER_NAME', 'FUNCTIONS_EXTENSION_VERSION', 'AzureWebJobsScriptRoot', 'IDENTITY_ENDPOINT', 'IDENTITY_HEADER', 'MSI_ENDPOINT', 'REGION_NAME', 'WEBSITE_OWNER_NAME'];
    expect(names(azure)).toEqual([]);
  });

  it('finds no slip in the example local.settings.json', () => {
    const example = JSON.parse(readFileSync(path.resolve(__dirname, '../../local.settings.example.json'), 'utf8')) as { Values: Record<string, string> };
    expect(names(Object.keys(example.Values))).toEqual([]);
  });
});
