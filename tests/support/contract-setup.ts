import { afterEach } from "vitest";
import { takeViolations } from "./contract.ts";

/**
 * Every test file runs with this (vitest.config.ts, setupFiles): a test during
 * which the service gave an answer its OpenAPI document does not allow fails,
 * naming each such answer (tests/support/contract.ts).
 */
afterEach(() => {
  const broken = takeViolations();
  if (broken.length > 0) {
    throw new Error(`answers the OpenAPI document does not allow:\n- ${broken.join("\n- ")}`);
  }
});
