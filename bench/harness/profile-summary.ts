import { readFile } from "node:fs/promises";

/**
 * npx tsx bench/harness/profile-summary.ts <file.cpuprofile> [top]
 * Self time of a V8 CPU profile (`npm run bench -- --profile DIR`) by
 * function and by package, to see where the server spends a request.
 */
interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

const [file, top = "30"] = process.argv.slice(2);
if (!file) throw new Error("usage: profile-summary.ts <file.cpuprofile> [top]");
const profile = JSON.parse(await readFile(file, "utf8")) as { nodes: Node[]; samples: number[] };
const total = profile.samples.length;
const byFunction = new Map<string, number>();
const byPackage = new Map<string, number>();
for (const node of profile.nodes) {
  const hits = node.hitCount ?? 0;
  if (hits === 0) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*\/main\//, "");
  const pkg =
    url === ""
      ? "(native/idle)"
      : url.includes("node_modules/")
        ? where
            .split("/")
            .slice(0, where.startsWith("@") ? 2 : 1)
            .join("/")
        : url.startsWith("node:")
          ? "node core"
          : "app";
  const key = `${functionName || "(anonymous)"} ${where}:${lineNumber}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + hits);
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + hits);
}
const show = (map: Map<string, number>, n: number) =>
  [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`)
    .join("\n");
process.stdout.write(`${total} samples\n\nby package\n${show(byPackage, 20)}\n\nby function\n${show(byFunction, Number(top))}\n`);
