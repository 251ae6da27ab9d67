// After every test file: no database client may be left open (a leaked pool keeps connections that other
// instances need, and hides missing close() paths).
import { afterAll, expect } from 'vitest';
import { openHandles } from '../shared/stores/open-handles';

afterAll(() => {
  expect(openHandles(), 'database clients left open by this test file').toEqual([]);
});
