import { z } from "zod";

/**
 * The service's configuration, read once from the environment by each entry
 * (Node passes process.env, Deno passes Deno.env.toObject()). Every variable is
 * documented in the README.
 */
const schema = z.object({
  DATABASE_URL: z.string().url().optional(),
  DATA_DIR: z.string().min(1).default("./.data"),
  PORT: z.coerce.number().int().min(0).max(65535).default(8000),
  /**
   * The address the Node server (and `npm run serve:edge`) binds to: this
   * machine only by default, as fits the embedded development setup; a
   * container sets 0.0.0.0 (docs/operations.md).
   */
  HOST: z.string().min(1).default("127.0.0.1"),
  AUTH_JWT_SECRET: z.string().min(1).optional(),
  AUTH_JWKS_URL: z.string().url().optional(),
  AUTH_JWT_ISSUER: z.string().min(1).optional(),
  AUTH_JWT_AUDIENCE: z.string().min(1).optional(),
  /**
   * Treat every token's e-mail as verified, for an identity provider that never
   * sends `email_verified` but only issues tokens for confirmed addresses
   * (Supabase Auth with e-mail confirmation on). Off: only `email_verified: true` counts.
   */
  AUTH_ASSUME_EMAIL_VERIFIED: z
    .enum(["true", "false"])
    .default("false")
    .transform((v) => v === "true"),
  PHOTO_STORAGE: z.enum(["file", "supabase"]).default("file"),
  SUPABASE_URL: z.string().url().optional(),
  SUPABASE_SERVICE_ROLE_KEY: z.string().min(1).optional(),
  /** The address clients reach the service at, for links it returns (photo_link); unset → the request's origin. */
  PUBLIC_URL: z.string().url().optional(),
  /** Comma-separated allowed origins; unset allows any origin (without cookies). */
  CORS_ORIGINS: z.string().optional(),
  /** Connections per server process. */
  DB_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  /** The least severe log level written: `info` logs every request, `warning` only what needs a look. */
  LOG_LEVEL: z.enum(["debug", "info", "warning", "error"]).default("info"),
  /** How long a request waits for a database connection before it is answered 503. */
  DB_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(3_000),
  /**
   * The Node server's limits on slow clients (node/http-server.ts): time for a
   * request's headers, for the whole request (headers and body: a 5 MB photo
   * at 1 Mbit/s takes 40 s), and how long an idle kept-alive connection stays
   * open (set it above the idle timeout of a proxy in front, e.g. 65 s behind
   * an AWS load balancer).
   */
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(500).max(120_000).default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(120_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(5_000),
  /** On SIGTERM/SIGINT, how long requests in flight may take to finish before their connections are cut. */
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  /** Requests a minute per user (all their keys and tokens), counted across every process; 0 turns limits off. */
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).max(1_000_000).default(1_200),
  /** How often the server ends reporting-role sessions past their granted limits; 0 leaves it to cron. */
  REPORTING_GUARD_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).default(5_000),
  /** Webhooks to http and to loopback/private addresses: for development and tests only. */
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: z
    .enum(["true", "false"])
    .default("false")
    .transform((v) => v === "true"),
  /** Whether the Node server works the webhook queue itself (`camp worker` runs one alone). */
  WEBHOOK_WORKER: z
    .enum(["true", "false"])
    .default("true")
    .transform((v) => v === "true"),
  /** Deliveries a worker sends at once. */
  WEBHOOK_WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(8),
  /** How long a receiver has to answer an attempt. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(30_000).default(10_000),
  /** The bearer secret of the Edge Function's scheduled drain (POST /webhooks/drain); unset turns the drain off. */
  WEBHOOK_DRAIN_SECRET: z.string().min(32).optional(),
  /** Named (prepared) statements; set false behind a transaction-mode pooler that cannot keep them. */
  DB_PREPARED_STATEMENTS: z
    .enum(["true", "false"])
    .default("true")
    .transform((v) => v === "true"),
});

export type Config = z.infer<typeof schema>;

export function loadConfig(env: Record<string, string | undefined>): Config {
  // An empty variable means "unset", as in most shells' `VAR= cmd`.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`invalid configuration: ${problems}`);
  }
  return parsed.data;
}
