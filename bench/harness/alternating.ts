/**
 * Two variants of one write, side by side: the same request to each in
 * turn, the order swapped every round so neither always follows the other,
 * and each side's mean and median. For a feature's cost (its on ÷ off),
 * measured within one run on one machine: read the ratios, not the times.
 */

export interface Stat {
  mean: number;
  p50: number;
}

export const stat = (list: number[]): Stat => {
  const sorted = [...list].sort((a, b) => a - b);
  return { mean: list.reduce((a, b) => a + b, 0) / list.length, p50: sorted[Math.floor(sorted.length / 2)] as number };
};

/** Runs `run` on sides [off, on] alternately for `rounds` rounds; prints and returns on ÷ off. */
export async function alternate<S extends { name: string }>(
  title: string,
  sides: [off: S, on: S],
  run: (side: S, round: number) => Promise<Response> | Response,
  rounds: number,
  out: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<{ off: Stat; on: Stat; mean: number; p50: number }> {
  const times: [number[], number[]] = [[], []];
  for (let i = 0; i < rounds; i++) {
    for (const n of i % 2 === 0 ? [0, 1] : [1, 0]) {
      const side = sides[n] as S;
      const started = performance.now();
      const res = await run(side, i);
      const text = await res.text();
      if (res.status >= 400) throw new Error(`${side.name}: ${res.status} ${text.slice(0, 300)}`);
      times[n]?.push(performance.now() - started);
    }
  }
  const [off, on] = [stat(times[0]), stat(times[1])];
  const ratio = { mean: on.mean / off.mean, p50: on.p50 / off.p50 };
  out(`\n${title} (${rounds} rounds, alternating)`);
  out(`  ${sides[0].name.padEnd(12)} mean ${off.mean.toFixed(3)} ms  p50 ${off.p50.toFixed(3)} ms`);
  out(
    `  ${sides[1].name.padEnd(12)} mean ${on.mean.toFixed(3)} ms  p50 ${on.p50.toFixed(3)} ms  (mean x${ratio.mean.toFixed(3)}, p50 x${ratio.p50.toFixed(3)})`,
  );
  return { off, on, ...ratio };
}
