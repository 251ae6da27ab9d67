// ID_GENERATION reaches the engine: ids generated for messages published without one are time-ordered (UUIDv7 on
// PostgreSQL/PGlite) by default and random (v4) with `random`; a caller's id is kept as given.
import { describe, expect, it } from 'vitest';
import { createEngine, silentLogger } from '../../shared';
import { engineOptions, loadConfig } from '../../shared/settings';

const version = (id: string) => id[14];

describe('generated ids follow ID_GENERATION (PGlite)', () => {
  it('the setting travels through engineOptions', () => {
    const parts = { store: { kind: 'pglite' as const, dataDir: 'memory://' }, handlers: { get: () => undefined }, logger: silentLogger };
    expect(engineOptions(loadConfig({ ID_GENERATION: 'random' }), parts).idGeneration).toBe('random');
    expect(engineOptions(loadConfig({}), parts).idGeneration).toBe('sequential');
  });

  it('sequential (default) gives ascending UUIDv7, random gives v4, a given id is kept', async () => {
    for (const mode of ['sequential', 'random'] as const) {
      const engine = await createEngine({ store: { kind: 'pglite', dataDir: 'memory://' }, queues: { q: { handler: async () => undefined } }, idGeneration: mode, logger: silentLogger });
      try {
        const results = await engine.publishBatch('q', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
        const ids = results.map((r) => r.id);
        expect(ids.map(version)).toEqual(mode === 'sequential' ? ['7', '7', '7'] : ['4', '4', '4']);
        if (mode === 'sequential') expect([...ids].sort()).toEqual(ids);
        const given = '0190a000-0000-4000-8000-0000000000aa';
        expect((await engine.publish('q', { payload: 4, id: given })).id).toBe(given);
      } finally {
        await engine.close();
      }
    }
  });
});
