/**
 * Writes functions/docs/assets.generated.ts: the Swagger UI files that GET /docs
 * needs, as string constants. Embedding them in a module (rather than reading
 * files at run time) lets the runtime-neutral app serve them unchanged on Node
 * and in the Edge Function, where the deploy ships only imported modules.
 *
 * Run after upgrading swagger-ui-dist: npm run gen:docs-assets
 * (tests/openapi.test.ts fails while the committed module is stale).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { renderAssetsModule } from "./docs-assets.ts";

const target = fileURLToPath(new URL("../functions/docs/assets.generated.ts", import.meta.url));
writeFileSync(target, renderAssetsModule());
process.stderr.write(`wrote ${target} (${readFileSync(target).length} bytes)\n`);
