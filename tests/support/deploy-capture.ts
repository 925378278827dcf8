import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local stand-in for the few Supabase Management API calls that
 * `supabase functions deploy --use-api` makes (list functions, deploy, read
 * the project), listening on 127.0.0.1. It keeps what a deploy uploads — the
 * metadata and every file, exactly as the CLI packs them — so a test can look
 * at the bundle without an account or a network. It is not the Management API:
 * it accepts anything with a Bearer token.
 */
export interface CapturedDeploy {
  metadata: Record<string, unknown>;
  /** Path inside the project → file text, as uploaded. */
  files: Map<string, string>;
}

export interface DeployCapture {
  url: string;
  deploys: CapturedDeploy[];
  close(): Promise<void>;
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function parseDeploy(req: IncomingMessage): Promise<CapturedDeploy> {
  const form = await new Response(new Uint8Array(await bodyOf(req)), {
    headers: { "content-type": req.headers["content-type"] ?? "" },
  }).formData();
  const files = new Map<string, string>();
  for (const file of form.getAll("file")) {
    if (typeof file !== "string") files.set(file.name, await file.text());
  }
  return { metadata: JSON.parse(String(form.get("metadata"))), files };
}

export async function startDeployCapture(): Promise<DeployCapture> {
  const deploys: CapturedDeploy[] = [];
  const server = createServer(async (req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (!req.headers.authorization?.startsWith("Bearer ")) return reply(401, { message: "unauthorized" });
    const path = new URL(req.url ?? "/", "http://capture").pathname;
    if (req.method === "POST" && /^\/v1\/projects\/[a-z]{20}\/functions\/deploy$/.test(path)) {
      const deploy = await parseDeploy(req);
      deploys.push(deploy);
      const now = Date.now();
      return reply(201, {
        id: "00000000-0000-4000-8000-000000000001",
        slug: deploy.metadata.name,
        name: deploy.metadata.name,
        version: deploys.length,
        status: "ACTIVE",
        created_at: now,
        updated_at: now,
        verify_jwt: deploy.metadata.verify_jwt,
        entrypoint_path: deploy.metadata.entrypoint_path,
        import_map_path: deploy.metadata.import_map_path,
      });
    }
    if (req.method === "GET" && /^\/v1\/projects\/[a-z]{20}\/functions$/.test(path)) return reply(200, []);
    await bodyOf(req);
    return reply(200, {});
  });
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    deploys,
    close: () => new Promise((done) => server.close(() => done())),
  };
}
