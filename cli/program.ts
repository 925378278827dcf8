import { Command, InvalidArgumentError } from "commander";
import { parseScopes, SCOPES, type Scope } from "../functions/api-keys/scopes.ts";
import { loadConfig } from "../functions/config.ts";
import { Database } from "../functions/db/database.ts";
import { RETENTION_DAYS } from "../functions/events/feed.ts";
import { pruneEvents } from "../functions/events/retention.ts";
import { pruneIdempotencyKeys } from "../functions/http/idempotency-retention.ts";
import { raiseIncidentAlerts } from "../functions/incidents/sweep.ts";
import { raiseOverdueDoses, sweepRetainedHealthRecords } from "../functions/medications/sweep.ts";
import { supabasePhotoStore } from "../functions/photos/default-store.ts";
import { PHOTO_BUCKET } from "../functions/photos/supabase-store.ts";
import {
  checkRoleName,
  connectionDetails,
  enforceReportingLimits,
  grantReportingRole,
  listReportingRoles,
  revokeReportingRole,
} from "../functions/reporting/roles.ts";
import { isUuid, requiredText } from "../functions/resources/fields.ts";
import { addUser, createTenant, issueKeyFor, listTenants, type Role, resolveUser } from "../functions/tenants/provisioning.ts";
import { configureLogging } from "../node/logging.ts";
import { resolveDatabase, say } from "../node/runtime.ts";
import { type IssueAllOptions, issueAll } from "./issue-all.ts";
import { type ImportOptions, importFile } from "./participants-import.ts";
import { type SweepCliOptions, sweepFromCli } from "./photos-sweep.ts";
import { runWorker } from "./worker.ts";

/**
 * `camp`: the operator's command line. JSON meant for scripts goes to stdout,
 * one document per line; progress and messages go to stderr. Any failure exits
 * non-zero with a one-line message.
 */

const print = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value)}\n`);
};

function uuid(value: string): string {
  if (!isUuid(value)) throw new InvalidArgumentError("must be an id (uuid)");
  return value.toLowerCase();
}

function email(value: string): string {
  if (!/^[^@\s]+@[^@\s]+$/.test(value)) throw new InvalidArgumentError("must be an e-mail address");
  return value;
}

function role(value: string): Role {
  if (value !== "admin" && value !== "staff") throw new InvalidArgumentError("must be admin or staff");
  return value;
}

/** A key's name, checked as the API checks it. */
function keyName(value: string): string {
  const parsed = requiredText(100).safeParse(value);
  if (!parsed.success) throw new InvalidArgumentError(parsed.error.issues[0]?.message ?? "is not a key name");
  return parsed.data;
}

function scopes(value: string): Scope[] {
  const parsed = parseScopes(value);
  if ("error" in parsed) throw new InvalidArgumentError(parsed.error);
  return parsed.scopes;
}

/** `--expires`: an ISO date or timestamp, or a number of days from now; always in the future. */
function expiry(value: string): Date {
  const days = /^([0-9]{1,5})d$/.exec(value);
  const when = days ? new Date(Date.now() + Number(days[1]) * 86_400_000) : new Date(isoDate(value));
  if (!(when.getTime() > Date.now())) throw new InvalidArgumentError("must be in the future");
  return when;
}

function wholeNumber(value: string): number {
  if (!/^[0-9]{1,9}$/.test(value)) throw new InvalidArgumentError("must be a whole number");
  return Number(value);
}

function isoDate(value: string): string {
  if (!/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value) || Number.isNaN(Date.parse(value))) {
    throw new InvalidArgumentError("must be a date (2025-01-01) or an ISO timestamp");
  }
  return value;
}

function days(value: string): number {
  const match = /^([0-9]{1,5})d?$/.exec(value);
  if (!match) throw new InvalidArgumentError("must be a number of days, e.g. 30 or 30d");
  return Number(match[1]);
}

function reportingRole(value: string): string {
  try {
    return checkRoleName(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/**
 * Opens the configured database (migrating it), runs `work`, and always closes
 * both. On the embedded database, a cluster the server is running is used as
 * it is and left running.
 */
async function withDatabase<T>(work: (db: Database, url: string, embedded: boolean) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env);
  await configureLogging("warning");
  const resolved = await resolveDatabase(config);
  const db = new Database(resolved.url, { max: 4 });
  try {
    return await work(db, resolved.url, resolved.embedded);
  } finally {
    await db.close();
    await resolved.stop();
  }
}

export function buildProgram(): Command {
  const program = new Command("camp")
    .description("Operate the Camp Administration Service (uses DATABASE_URL, else the embedded Postgres under DATA_DIR)")
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => process.stderr.write(s), writeErr: (s) => process.stderr.write(s) });

  program
    .command("migrate")
    .description("apply pending migrations")
    .action(() => withDatabase(async () => say("database is up to date")));

  const tenant = program.command("tenant").description("manage tenants");
  tenant
    .command("create <name>")
    .description("create a tenant and its first admin; prints {tenant_id, user_id, api_key}")
    .requiredOption("--admin <email>", "e-mail of the first admin", email)
    .action((name: string, options: { admin: string }) =>
      withDatabase(async (db) => print(await createTenant(db, name, options.admin))),
    );

  tenant
    .command("list")
    .description("list the tenants, oldest first; prints one JSON line {tenant_id, name, created_at, users, admins} per tenant")
    .action(() => withDatabase(async (db) => (await listTenants(db)).forEach(print)));

  const user = program.command("user").description("manage users");
  user
    .command("add <email>")
    .description("add a user to a tenant; prints {tenant_id, user_id, email, role}")
    .requiredOption("--tenant <tenant_id>", "the tenant", uuid)
    .option("--role <role>", "admin or staff", role, "staff" as Role)
    .action((address: string, options: { tenant: string; role: Role }) =>
      withDatabase(async (db) => print(await addUser(db, options.tenant, email(address), options.role))),
    );

  const keys = program.command("keys").description("manage API keys");
  keys
    .command("issue <email>")
    .description(
      "issue a key for one user: the first, or with --name a further one beside the others; prints {email, tenant_id, key_id, name, scopes, expires_at, api_key}",
    )
    .option("--tenant <tenant_id>", "the tenant, when the e-mail is a user of several", uuid)
    .option("--name <name>", "what the key is for; unique among the user's live keys (a further key needs one)", keyName)
    .option("--scopes <list>", `comma-separated, from ${SCOPES.join(", ")}; must include read (default read,write)`, scopes)
    .option("--expires <when>", "an ISO date or timestamp in the future, or a number of days (90d); default never", expiry)
    .option(
      "--replace",
      "replace the user's live key (the one named by --name, or the only one) by a new one with its name, scopes and expiry, in one transaction",
    )
    .action(
      (address: string, options: { tenant?: string; name?: string; scopes?: Scope[]; expires?: Date; replace?: boolean }) => {
        if (options.replace && (options.scopes || options.expires)) {
          throw new Error("--replace keeps the key's scopes and expiry: leave out --scopes and --expires");
        }
        return withDatabase(async (db) => {
          const target = await resolveUser(db, address, options.tenant);
          const issued = await issueKeyFor(db, target, {
            replace: options.replace,
            name: options.name,
            scopes: options.scopes,
            expiresAt: options.expires,
          });
          print({
            email: target.email,
            tenant_id: target.tenant_id,
            key_id: issued.id,
            name: issued.name,
            scopes: issued.scopes,
            expires_at: issued.expires_at,
            api_key: issued.key,
          });
        });
      },
    );

  keys
    .command("issue-all")
    .description("issue a key for every user of the tenant without one; prints one JSON line {email, user_id, api_key} per key")
    .requiredOption("--tenant <tenant_id>", "the tenant", uuid)
    .option("--out <file>", "write the key lines to this new file (mode 0600) instead of stdout; never overwrites")
    .action((options: IssueAllOptions) => withDatabase((db) => issueAll(db, options)));

  const participants = program.command("participants").description("work with a tenant's participants");
  participants
    .command("import <file>")
    .description("import participants from a CSV file, all or none; prints a JSON report, rejected lines go to stderr")
    .requiredOption("--instance <instance_id>", "the instance they join (it decides the tenant)", uuid)
    .option("--tenant <tenant_id>", "refuse unless the instance belongs to this tenant", uuid)
    .option("--dry-run", "check every line, write nothing")
    .option("--mode <mode>", "create (default) or upsert: update participants whose user_id the instance holds")
    .option("--date-format <format>", "how the file writes dates, e.g. DD/MM/YYYY (default YYYY-MM-DD)")
    .option("--map <file>", 'a JSON mapping: {"columns": {"Column": "field"}, "values": {"field": {"value": "value"}}}')
    .option("--override-capacity", "place participants even where a room is full (recorded in the audit trail)")
    .action((file: string, options: ImportOptions) => withDatabase(async (db) => print(await importFile(db, file, options))));

  const reporting = program.command("reporting").description("manage SQL reporting roles (read-only, one tenant each)");
  reporting
    .command("grant")
    .description("create a login role bound to a tenant; prints its connection details and password, once")
    .requiredOption("--tenant <tenant_id>", "the tenant the role may read", uuid)
    .requiredOption("--role <name>", "the new role's name (lower case, e.g. report_alice)", reportingRole)
    .option("--connection-limit <n>", "connections the role may hold at once (default 3)", wholeNumber)
    .option("--statement-timeout <seconds>", "longest statement it may run (default 30)", wholeNumber)
    .option(
      "--connection-budget <n>",
      "connections all reporting roles of the cluster may hold together (default: a quarter of max_connections)",
      wholeNumber,
    )
    .option("--care", "also let the role read care data: contacts, care records, consents and their audit events")
    .action(
      (options: {
        tenant: string;
        role: string;
        connectionLimit?: number;
        statementTimeout?: number;
        connectionBudget?: number;
        care?: boolean;
      }) =>
        withDatabase(async (db, url, embedded) => {
          const grant = await grantReportingRole(db, options.tenant, options.role, {
            connectionLimit: options.connectionLimit,
            statementTimeoutMs: options.statementTimeout === undefined ? undefined : options.statementTimeout * 1000,
            connectionBudget: options.connectionBudget,
            care: options.care === true,
          });
          print({ ...grant, ...connectionDetails(url, grant) });
          for (const warning of grant.warnings) say(`warning: ${warning}`);
          if (embedded) say("the embedded Postgres answers at this address while the server runs (npm start)");
        }),
    );
  reporting
    .command("enforce")
    .description(
      "cancel reporting statements and end sessions past their limits, once (the server does it every few seconds); prints one JSON line per action",
    )
    .action(() => withDatabase(async (db) => (await enforceReportingLimits(db)).forEach(print)));
  reporting
    .command("revoke")
    .description("drop a reporting role and end its sessions; prints {role, tenant_id, dropped}")
    .requiredOption("--role <name>", "the role to drop", reportingRole)
    .action((options: { role: string }) => withDatabase(async (db) => print(await revokeReportingRole(db, options.role))));
  reporting
    .command("list")
    .description("list reporting roles; prints one JSON line per role")
    .action(() => withDatabase(async (db) => (await listReportingRoles(db)).forEach(print)));

  const audit = program.command("audit").description("the audit trail");
  audit
    .command("prune")
    .description("delete audit events older than a date (retention); prints {deleted}")
    .requiredOption("--before <date>", "an ISO date or timestamp, e.g. 2025-01-01", isoDate)
    .action((options: { before: string }) =>
      withDatabase(async (db) => {
        const [row] = await db.query<{ deleted: string }>("select private.prune_audit_events($1) as deleted", [options.before]);
        print({ deleted: Number(row?.deleted ?? 0) });
      }),
    );

  const events = program.command("events").description("the change feed");
  events
    .command("prune")
    .description(
      `delete events older than the ${RETENTION_DAYS} days the feed keeps (the webhook workers do it hourly); prints {deleted}`,
    )
    .action(() => withDatabase(async (db) => print({ deleted: await pruneEvents(db) })));

  program
    .command("health")
    .description("the health centre")
    .command("sweep")
    .description(
      "raise medication.overdue for scheduled doses left uncharted past their grace period and incident.needs_attention for incidents whose guardians were not notified in time (the webhook workers do it every minute), and delete the health records of erased participants kept past their tenant's retention period (hourly); prints {raised, incidents_raised, deleted}",
    )
    .action(() =>
      withDatabase(async (db) =>
        print({
          raised: await raiseOverdueDoses(db),
          incidents_raised: await raiseIncidentAlerts(db),
          deleted: await sweepRetainedHealthRecords(db),
        }),
      ),
    );

  program
    .command("idempotency")
    .description("the stored answers of POSTs sent with an Idempotency-Key")
    .command("prune")
    .description("delete stored answers past their 24 hours (the webhook workers do it hourly); prints {deleted}")
    .action(() => withDatabase(async (db) => print({ deleted: await pruneIdempotencyKeys(db) })));

  program
    .command("worker")
    .description("deliver webhooks from the queue until SIGTERM or SIGINT (the server runs one too; any number may run)")
    .action(() => runWorker());

  const storage = program.command("storage").description("Supabase Storage for photos (SUPABASE_URL, SUPABASE_SERVICE_ROLE_KEY)");
  storage
    .command("init")
    .description(`make sure the private ${PHOTO_BUCKET} bucket exists with the photo limits; prints {bucket, outcome}`)
    .action(async () => {
      const store = supabasePhotoStore(loadConfig(process.env));
      print({ bucket: PHOTO_BUCKET, outcome: await store.ensureBucket() });
    });

  const photos = program.command("photos").description("participant photos in the configured store (PHOTO_STORAGE)");
  photos
    .command("sweep")
    .description(
      "delete photo objects no live participant points at (failed replacements, participants deleted longer ago than --older-than); prints a JSON report",
    )
    .option("--dry-run", "list what would be deleted, delete nothing")
    .option("--older-than <days>", "retention for photos of deleted participants, in days (e.g. 30 or 30d)", days, 30)
    .action((options: SweepCliOptions) =>
      withDatabase(async (db) => print(await sweepFromCli(db, loadConfig(process.env), options))),
    );

  program
    .command("serve")
    .description("start the HTTP server (same as npm start)")
    // Imported on demand: the server pulls in the whole app, which the other commands do not need.
    .action(async () => (await import("../node/server.ts")).startServer());

  return program;
}
