import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // Job modules import 'weir'; resolve it to the same source files the tests use, so there
    // is one copy of every class (instanceof checks in the API depend on it).
    alias: { weir: fileURLToPath(new URL('./src/index.ts', import.meta.url)) },
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One test file per CPU. Vitest's default for a run is one fewer (1 on the 2 CPUs of this
    // project's machines), and most files wait on servers, child processes and timers: with
    // two at a time the suite took 772 s against 1,361 s on one machine of the kind.
    maxWorkers: availableParallelism(),
    reporters: ['default'],
  },
});
