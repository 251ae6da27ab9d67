import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, SETTINGS } from '../../shared/settings';
import { engineOptions } from '../../shared/settings/engine-options';
import { silentLogger } from '../../shared/log';

describe('configuration', () => {
  it('defaults to the embedded PGlite store with the spec defaults', () => {
    const c = loadConfig({});
    expect(c.store).toEqual({ kind: 'pglite', dataDir: '.data/pglite' });
    expect(c).toMatchObject({
      schema: 'public',
      transportTable: 'asyncresponse_transport_messages',
      autoCreateSchema: true,
      durableClaimsAndAcks: false,
      queues: ['worker'],
      deadLetterQueue: 'deadletter',
      lockTimeoutMs: 30_000,
      maxDeliveryAttempts: 5,
      redeliveryDelayMs: 5_000,
      batchSize: 16,
      emptyPollDelayMs: 250,
      publish: { maxAttempts: 3, classes: { lock: { baseMs: 20, maxMs: 200 }, throttling: { baseMs: 10_000, maxMs: 60_000 } } },
      deadLetterRetentionMs: 14 * 86_400_000,
      drain: { schedule: '*/10 * * * * *', budgetMs: 8000, idleGraceMs: 8000 },
      pruneSchedule: '0 * * * * *',
      workerHandler: 'echo',
    });
  });

  it('selects SQL Server from a connection string (schema dbo) and PostgreSQL from DATABASE_URL', () => {
    expect(loadConfig({ SQL_CONNECTION_STRING: 'Server=x;Database=y' })).toMatchObject({ store: { kind: 'sqlserver' }, schema: 'dbo' });
    expect(loadConfig({ SQL_SERVER: 'x.database.windows.net', SQL_DATABASE: 'db' }).store).toMatchObject({
      kind: 'sqlserver',
      server: 'x.database.windows.net',
      database: 'db',
    });
    expect(loadConfig({ DATABASE_URL: 'postgres://u@h/db' }).store).toEqual({ kind: 'postgres', url: 'postgres://u@h/db' });
  });

  it('reports every bad setting at once, naming each', () => {
    let error: ConfigError | undefined;
    try {
      loadConfig({
        SQL_SERVER: 'x',
        BATCH_SIZE: '0',
        LOCK_TIMEOUT_SECONDS: 'soon',
        QUEUES: 'worker, deadletter, worker ',
        SQL_SCHEMA: 'bad-name',
        WORKER_HANDLER: 'forward',
        AUTO_CREATE_SCHEMA: 'maybe',
        DURABLE_CLAIMS_AND_ACKS: 'sometimes',
      });
    } catch (e) {
      error = e as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = error!.problems.join('\n');
    for (const name of ['SQL_DATABASE', 'BATCH_SIZE', 'LOCK_TIMEOUT_SECONDS', 'dead-letter queue', 'twice', 'bad-name', 'WORKER_FORWARD_URL', 'AUTO_CREATE_SCHEMA', 'DURABLE_CLAIMS_AND_ACKS']) {
      expect(text).toContain(name);
    }
  });

  it('reads DURABLE_CLAIMS_AND_ACKS and hands it to the engine', () => {
    expect(loadConfig({ DURABLE_CLAIMS_AND_ACKS: 'true' }).durableClaimsAndAcks).toBe(true);
    expect(loadConfig({ DURABLE_CLAIMS_AND_ACKS: 'false' }).durableClaimsAndAcks).toBe(false);
    const parts = { store: { kind: 'pglite', dataDir: 'memory://' } as const, handlers: { get: () => undefined }, logger: silentLogger };
    expect(engineOptions(loadConfig({ DURABLE_CLAIMS_AND_ACKS: 'true' }), parts).durableClaimsAndAcks).toBe(true);
    expect(engineOptions(loadConfig({}), parts).durableClaimsAndAcks).toBe(false);
  });

  it('rejects reserved queue names and a forward URL that is not http(s)', () => {
    expect(() => loadConfig({ QUEUES: 'worker,response' })).toThrow(/reserved/);
    expect(() => loadConfig({ WORKER_FORWARD_URL: 'ftp://x' })).toThrow(/WORKER_FORWARD_URL/);
    expect(loadConfig({ WORKER_FORWARD_URL: 'http://localhost:9/x' }).workerHandler).toBe('forward');
  });

  it('reads the per-class retry backoff and rejects a cap below its base', () => {
    expect(loadConfig({ SQL_RETRY_THROTTLING_BASE_MS: '2000', SQL_RETRY_THROTTLING_MAX_MS: '4000' }).retry.throttling).toEqual({ baseMs: 2000, maxMs: 4000 });
    expect(() => loadConfig({ SQL_RETRY_LOCK_BASE_MS: '500', SQL_RETRY_LOCK_MAX_MS: '100' })).toThrow(/lock\.maxMs/);
  });

  it('an unresolved Key Vault reference for the signing secret turns callbacks off instead of failing the app', () => {
    const c = loadConfig({ CALLBACK_SIGNING_SECRET: '@Microsoft.KeyVault(SecretUri=https://kv.vault.azure.net/secrets/cb/)' });
    expect(c.channel.callbackSigningSecret).toBeUndefined();
    expect(c.channel.callbackSigningSecretProblem).toMatch(/unresolved Key Vault reference .*Key Vault Secrets User.*callbacks are off/);
    expect(loadConfig({ CALLBACK_SIGNING_SECRET: 'a-resolved-secret-of-32-characters' }).channel).toMatchObject({ callbackSigningSecret: 'a-resolved-secret-of-32-characters' });
    expect(loadConfig({ CALLBACK_SIGNING_SECRET: 'a-resolved-secret-of-32-characters' }).channel.callbackSigningSecretProblem).toBeUndefined();
    expect(() => loadConfig({ CALLBACK_SIGNING_SECRET: 'short' })).toThrow(/at least 16 characters/);
  });

  it('reports a bad timer schedule together with the other problems', () => {
    let error: unknown;
    try {
      loadConfig({ BATCH_SIZE: 'abc', DRAIN_WORKER_SCHEDULE: 'bad', SWEEP_CHANNEL_SCHEDULE: '*/5 * * * *' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toMatch(/BATCH_SIZE/);
    expect(message).toMatch(/DRAIN_WORKER_SCHEDULE: .*"bad"/);
    expect(message).toMatch(/SWEEP_CHANNEL_SCHEDULE: /);
    expect(() => loadConfig({ DRAIN_WORKER_SCHEDULE: '00:00:10' })).toThrow(/TimeSpan schedules \(hh:mm:ss\) run only on App Service plans/);
  });

  it('a drain budget plus the longest handler timeout must fit inside host.json functionTimeout', () => {
    expect(() => loadConfig({ DRAIN_BUDGET_SECONDS: '500', WORKER_FORWARD_TIMEOUT_SECONDS: '60' })).toThrow(/DRAIN_BUDGET_SECONDS \(500\) plus the longest handler timeout \(60 s/);
    expect(() => loadConfig({ DRAIN_BUDGET_SECONDS: '480', WORKER_FORWARD_TIMEOUT_SECONDS: '60' })).not.toThrow();
  });

  it('DEAD_LETTER_RETENTION_DAYS=0 keeps dead letters forever', () => {
    expect(loadConfig({ DEAD_LETTER_RETENTION_DAYS: '0' }).deadLetterRetentionMs).toBeNull();
  });

  it('documents every setting it reads', () => {
    const fs = require('node:fs') as typeof import('node:fs');
    const dir = require('node:path').dirname(require.resolve('../../shared/settings/load.ts')) as string;
    const source = fs.readdirSync(dir).map((f) => fs.readFileSync(`${dir}/${f}`, 'utf8')).join('\n');
    const read = new Set([...source.matchAll(/(?:str|num|bool)\('([A-Z_]+)'/g)].map((m) => m[1]));
    // the scan must find what loadConfig reads; one that matched nothing would check only the name added below
    expect(read.size, 'settings found by the source scan').toBeGreaterThan(20);
    read.add('SQL_PASSWORD');
    const documented = new Set(SETTINGS.map((s) => s.name));
    for (const name of read) expect(documented, name).toContain(name);
  });
});
