import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup-open-handles.ts', 'test/setup-e2e-engine-gaps.ts'],
    // Contract and e2e files each open their own schema; running files in parallel is fine on 2 cores.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
