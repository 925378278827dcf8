#!/usr/bin/env node
// The `camp` executable: runs the TypeScript CLI through tsx, so no build step is needed.
import { register } from "tsx/esm/api";

register();
await import("./main.ts");
