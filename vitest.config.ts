import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    globalSetup: ["tests/support/global-setup.ts"],
    // Every answer the tests receive is held to the OpenAPI document (tests/support/contract.ts).
    setupFiles: ["tests/support/contract-setup.ts"],
    // Generous: several tests start real processes (servers, the CLI, an embedded Postgres),
    // which take many times longer on a loaded 2-core machine. A timeout is a safety net, never a measure.
    testTimeout: 90_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two files at a time, whatever the core count (vitest's default on 2 cores is one): most
    // files spend their time waiting on Postgres and on the processes they start, not on a core.
    maxWorkers: 2,
  },
});
