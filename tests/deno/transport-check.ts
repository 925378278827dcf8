// Run by tests/webhook-edge.test.ts under Deno (tsconfig leaves tests/deno to Deno): the Edge Function's webhook
// transport with a stand-in resolver that answers 127.0.0.1 for every name,
// as a rebinding DNS server would. Prints one JSON line of outcomes.
import { denoTransport } from "../../supabase/functions/api/webhook-transport.ts";

const [receiverUrl] = Deno.args as [string];
const port = new URL(receiverUrl).port;
const transport = denoTransport(async () => ["127.0.0.1"]);
const request = (url: string) => ({ url, headers: { "content-type": "application/json", "webhook-id": "1" }, body: '{"x":1}' });
const strict = { timeoutMs: 2_000, maxResponseBytes: 65_536, allowPrivate: false };
const open = { ...strict, allowPrivate: true };

async function outcome(promise: Promise<{ status: number; body: string }>) {
  try {
    const answer = await promise;
    return { status: answer.status, body: answer.body.slice(0, 40) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

const outcomes = JSON.stringify({
  rebound: await outcome(transport(request(`https://rebind.example.org:${port}/hook`), strict)),
  literal: await outcome(transport(request(`https://127.0.0.1:${port}/hook`), strict)),
  http: await outcome(transport(request(receiverUrl), strict)),
  allowed: await outcome(transport(request(`http://receiver.example.org:${port}/hook`), open)),
});
await Deno.stdout.write(new TextEncoder().encode(`${outcomes}\n`));
