import { defineConfig, mergeConfig } from "vitest/config";
import base from "../../vitest.config.ts";

/**
 * The suite's own configuration (global set-up included, so the embedded
 * database's process hooks are loaded exactly as in `npm test`), pointed at the
 * gate's fixtures instead of the test files. Used by tests/test-gate.test.ts.
 */
export default mergeConfig(base, defineConfig({ test: { include: ["tests/gate/*.fixture.ts"] } }));
