// ID_GENERATION reaches the ids a publish generates: the setting, the publisher's generator per store kind,
// and the publish parser, which uses it only where the caller gave no id.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../shared/settings';
import { silentLogger } from '../../shared/log';
import { parsePublishBody } from '../../shared/transport/publish-request';
import { Publisher } from '../../shared/transport/publisher';
import type { TransportStore } from '../../shared/transport/types';
import { WakeSignal } from '../../shared/transport/wake';

const publisherFor = (kind: TransportStore['kind'], idGeneration?: 'sequential' | 'random') =>
  new Publisher({ kind } as TransportStore, new WakeSignal(), { maxAttempts: 1, idGeneration }, silentLogger);

describe('generated ids wiring', () => {
  it('ID_GENERATION defaults to sequential, accepts random, reports anything else', () => {
    expect(loadConfig({}).publish.idGeneration).toBe('sequential');
    expect(loadConfig({ ID_GENERATION: 'random' }).publish.idGeneration).toBe('random');
    expect(() => loadConfig({ ID_GENERATION: 'v7' })).toThrow(ConfigError);
    expect(() => loadConfig({ ID_GENERATION: 'v7' })).toThrow(/ID_GENERATION='v7' must be sequential or random/);
  });

  it('the publisher generates UUIDv7 for PostgreSQL and PGlite, the SQL Server layout (version 8) for SQL Server', () => {
    expect(publisherFor('postgres').newId()[14]).toBe('7');
    expect(publisherFor('pglite').newId()[14]).toBe('7');
    expect(publisherFor('sqlserver').newId()[14]).toBe('8');
    expect(publisherFor('postgres', 'random').newId()[14]).toBe('4');
    expect(publisherFor('sqlserver', 'random').newId()[14]).toBe('4');
  });

  it("the parser takes the generator's id where none was given and keeps the caller's id as given", () => {
    let n = 0;
    const newId = () => `0190a000-0000-7000-8000-${String(++n).padStart(12, '0')}`;
    const caller = 'AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE';
    const parsed = parsePublishBody([{ payload: 1 }, { payload: 2, id: caller }, { payload: 3 }], 'q', 1000, newId);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.messages.map((m) => [m.id, m.generatedId ?? false])).toEqual([
      ['0190a000-0000-7000-8000-000000000001', true],
      [caller.toLowerCase(), false],
      ['0190a000-0000-7000-8000-000000000003', true],
    ]);
  });
});
