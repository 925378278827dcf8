import { expect, it } from "vitest";

// Deliberately failing: tests/test-gate.test.ts checks that the test command reports it with a non-zero exit.
it("fails on purpose", () => {
  expect(1).toBe(2);
});
