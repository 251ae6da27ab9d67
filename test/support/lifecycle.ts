import { afterAll, beforeAll } from 'vitest';

/**
 * Opens a resource before the tests of the enclosing describe and closes it after them. Returns a stand-in that
 * forwards every property to the open resource, so tests write `h.store` as if they held it themselves.
 */
export function openForDescribe<T extends { close(): Promise<void> }>(open: () => Promise<T>): T {
  let current: T | undefined;
  beforeAll(async () => {
    current = await open();
  });
  afterAll(async () => {
    await current?.close();
    current = undefined;
  });
  return new Proxy({} as T, {
    get(_, property) {
      if (current === undefined) throw new Error(`used outside its describe's tests (reading '${String(property)}')`);
      const value = (current as Record<PropertyKey, unknown>)[property];
      return typeof value === 'function' ? value.bind(current) : value;
    },
  });
}
