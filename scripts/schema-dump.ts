import pg from "pg";

/**
 * The schema of a migrated database as one readable SQL text (sql/schema.sql):
 * what pg_dump --schema-only would say, read from the catalog instead, so
 * that it needs no pg_dump of the server's exact version (a bare machine
 * has none; the embedded Postgres ships without it), carries no `\restrict`
 * line with a random key, no owner that is only the migrating role, and
 * comes out the same from run to run and on any Postgres 15: every list is
 * sorted by name, never by oid.
 *
 * Each table is followed by what belongs to it (row-level security, indexes,
 * policies, triggers, grants, comments), so that one place holds each
 * object. Functions, views and tables are as their last migration left them.
 * It is for reading: the migrations remain what builds a database.
 */

/** Where the schema is committed. */
export const SCHEMA_FILE = "sql/schema.sql";

/** Schemas that are Postgres's own, or the migrator's bookkeeping. */
const SKIPPED_SCHEMAS = ["pg_catalog", "information_schema", "pg_toast", "supabase_migrations"];

/** Objects an extension made belong to the extension: `create extension` stands for them. */
const NOT_FROM_EXTENSION = (classTable: string, oid: string) =>
  `not exists (select from pg_depend d where d.classid = '${classTable}'::regclass and d.objid = ${oid} and d.deptype = 'e')`;

const IN_OUR_SCHEMAS = (nspname: string) =>
  `${nspname} not in (${SKIPPED_SCHEMAS.map((s) => `'${s}'`).join(", ")}) and ${nspname} not like 'pg\\_temp\\_%' and ${nspname} not like 'pg\\_toast\\_temp\\_%'`;

const TABLE_PRIVILEGES = ["SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"];

interface AclEntry {
  grantee: string;
  privilege_type: string;
  is_grantable: boolean;
}

type Query = <R extends object>(text: string, values?: unknown[]) => Promise<R[]>;

/** Postgres's keywords that quote_ident quotes (all but the unreserved), read from the server at each dump. */
let keywords = new Set<string>();

/** A name as quote_ident writes it. */
const ident = (name: string) => (/^[a-z_][a-z0-9_$]*$/.test(name) && !keywords.has(name) ? name : pg.escapeIdentifier(name));
const literal = (text: string) => pg.escapeLiteral(text);

/** GRANT statements for an object's privileges, the owner's own left out (they are implied). */
function grants(entries: AclEntry[], owner: string, on: string, order: string[]): string[] {
  const byGrantee = new Map<string, { plain: string[]; grantable: string[] }>();
  for (const entry of entries) {
    if (entry.grantee === owner) continue;
    const held = byGrantee.get(entry.grantee) ?? { plain: [], grantable: [] };
    (entry.is_grantable ? held.grantable : held.plain).push(entry.privilege_type);
    byGrantee.set(entry.grantee, held);
  }
  const rank = (p: string) => (order.indexOf(p) === -1 ? order.length : order.indexOf(p));
  const lines: string[] = [];
  for (const grantee of [...byGrantee.keys()].sort()) {
    const held = byGrantee.get(grantee) as { plain: string[]; grantable: string[] };
    const to = grantee === "PUBLIC" ? "public" : ident(grantee);
    for (const [privileges, suffix] of [
      [held.plain, ""],
      [held.grantable, " with grant option"],
    ] as const) {
      if (privileges.length === 0) continue;
      const list = [...privileges]
        .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
        .map((p) => p.toLowerCase())
        .join(", ");
      lines.push(`grant ${list} on ${on} to ${to}${suffix};`);
    }
  }
  return lines;
}

export async function dumpSchema(connectionString: string): Promise<string> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    // Every name the catalog functions print is then schema-qualified (pg_catalog's aside).
    await client.query("set search_path = ''");
    const query: Query = async (text, values) => (await client.query(text, values)).rows;
    return await render(query);
  } finally {
    await client.end();
  }
}

async function render(query: Query): Promise<string> {
  keywords = new Set(
    (await query<{ word: string }>("select word from pg_get_keywords() where catcode <> 'U'")).map((k) => k.word),
  );
  const [me] = await query<{ role: string }>("select current_user as role");
  const migrator = me?.role ?? "postgres";
  const out: string[] = [];
  const [through] = await query<{ version: string | null; count: number }>(
    `select max(version) as version, count(*)::int as count from supabase_migrations.schema_migrations`,
  ).catch(() => [{ version: null, count: 0 }]);
  out.push(
    "-- The schema of a migrated database, generated from the catalog by `npm run db:schema`:",
    "-- do not edit (tests/schema-file.test.ts fails when it differs from what the migrations build).",
    "-- For reading: sql/migrations/ builds a database. Owners are named only where they are not",
    "-- the migrating role; every list is in name order.",
    `-- Through migration ${through?.version ?? "(none)"} (${through?.count ?? 0} migrations).`,
    "",
  );

  const extensions = await query<{ extname: string; nspname: string }>(
    `select e.extname, n.nspname from pg_extension e join pg_namespace n on n.oid = e.extnamespace
     where e.extname <> 'plpgsql' order by 1`,
  );
  const schemas = await query<{ oid: string; nspname: string; owner: string; acl: string | null; comment: string | null }>(
    `select n.oid, n.nspname, pg_get_userbyid(n.nspowner) as owner, n.nspacl::text as acl,
            obj_description(n.oid, 'pg_namespace') as comment
     from pg_namespace n where ${IN_OUR_SCHEMAS("n.nspname")} order by n.nspname`,
  );

  out.push("-- Schemas and extensions", "");
  for (const s of schemas) {
    if (s.nspname !== "public") out.push(`create schema ${ident(s.nspname)};`);
    if (s.owner !== migrator && s.owner !== "pg_database_owner")
      out.push(`alter schema ${ident(s.nspname)} owner to ${ident(s.owner)};`);
    if (s.acl) {
      const entries = await query<AclEntry>(
        `select coalesce(r.rolname, 'PUBLIC') as grantee, a.privilege_type, a.is_grantable
         from pg_namespace n, aclexplode(n.nspacl) a left join pg_roles r on r.oid = a.grantee
         where n.oid = $1 order by 1, 2`,
        [s.oid],
      );
      // Every database's public schema lets PUBLIC use it (Postgres 15's default): not worth a line.
      const own =
        s.nspname === "public" ? entries.filter((e) => !(e.grantee === "PUBLIC" && e.privilege_type === "USAGE")) : entries;
      out.push(...grants(own, s.owner, `schema ${ident(s.nspname)}`, ["USAGE", "CREATE"]));
    }
    if (s.comment && !(s.nspname === "public" && s.comment === "standard public schema"))
      out.push(`comment on schema ${ident(s.nspname)} is ${literal(s.comment)};`);
  }
  for (const e of extensions) out.push(`create extension if not exists ${ident(e.extname)} with schema ${ident(e.nspname)};`);
  out.push("");

  await defaultPrivileges(query, out);
  for (const s of schemas) {
    const section = await renderSchema(query, s.oid, s.nspname, migrator);
    if (section.length) out.push(`-- ${"=".repeat(20)} schema ${s.nspname} ${"=".repeat(20)}`, "", ...section);
  }
  return `${out
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trimEnd()}\n`;
}

async function defaultPrivileges(query: Query, out: string[]): Promise<void> {
  const rows = await query<{
    role: string;
    schema: string | null;
    objtype: string;
    grantee: string;
    privilege_type: string;
    is_grantable: boolean;
  }>(
    `select pg_get_userbyid(d.defaclrole) as role, n.nspname as schema, d.defaclobjtype as objtype,
            coalesce(r.rolname, 'PUBLIC') as grantee, a.privilege_type, a.is_grantable
     from pg_default_acl d left join pg_namespace n on n.oid = d.defaclnamespace,
          aclexplode(d.defaclacl) a left join pg_roles r on r.oid = a.grantee
     order by 1, 2, 3, 4, 5`,
  );
  if (rows.length === 0) return;
  const kinds: Record<string, string> = { r: "tables", S: "sequences", f: "functions", T: "types", n: "schemas" };
  out.push("-- Default privileges", "");
  for (const row of rows) {
    const inSchema = row.schema ? ` in schema ${ident(row.schema)}` : "";
    const to = row.grantee === "PUBLIC" ? "public" : ident(row.grantee);
    out.push(
      `alter default privileges for role ${ident(row.role)}${inSchema} grant ${row.privilege_type.toLowerCase()} on ${kinds[row.objtype] ?? row.objtype} to ${to}${row.is_grantable ? " with grant option" : ""};`,
    );
  }
  out.push("");
}

/** An aclitem[] as a JSON array of AclEntry, for reading in the same statement as its object. */
const aclJson = (acl: string) =>
  `(select coalesce(json_agg(json_build_object('grantee', coalesce(r.rolname, 'PUBLIC'), 'privilege_type', a.privilege_type,
                                               'is_grantable', a.is_grantable)), '[]')
    from aclexplode(${acl}) a left join pg_roles r on r.oid = a.grantee)`;

interface Relation {
  name: string;
  relkind: string;
  persistence: string;
  owner: string;
  options: string[] | null;
  rls: boolean;
  force_rls: boolean;
  comment: string | null;
  partkey: string | null;
  viewdef: string | null;
  acl: AclEntry[];
  columns: Array<{
    name: string;
    type: string;
    notnull: boolean;
    def: string | null;
    identity: string;
    generated: string;
    collation: string | null;
    comment: string | null;
  }>;
  constraints: Array<{ name: string; def: string }>;
  indexes: string[];
  policies: Array<{ name: string; permissive: boolean; cmd: string; roles: string[]; qual: string | null; check: string | null }>;
  triggers: string[];
  column_grants: Array<AclEntry & { columns: string[] }>;
}

/** Every relation of a schema with what belongs to it, in one statement (a round trip per object made the dump slow). */
const RELATIONS = `
select c.relname as name, c.relkind, c.relpersistence as persistence, pg_get_userbyid(c.relowner) as owner,
       c.reloptions as options, c.relrowsecurity as rls, c.relforcerowsecurity as force_rls,
       obj_description(c.oid, 'pg_class') as comment,
       case when c.relkind = 'p' then pg_get_partkeydef(c.oid) end as partkey,
       case when c.relkind in ('v', 'm') then pg_get_viewdef(c.oid, true) end as viewdef,
       case when c.relacl is not null then ${aclJson("c.relacl")} else '[]' end as acl,
       (select coalesce(json_agg(json_build_object(
                 'name', a.attname, 'type', format_type(a.atttypid, a.atttypmod), 'notnull', a.attnotnull,
                 'def', pg_get_expr(d.adbin, d.adrelid), 'identity', a.attidentity, 'generated', a.attgenerated,
                 'collation', case when a.attcollation <> t.typcollation
                                   then (select quote_ident(co.collname) from pg_collation co where co.oid = a.attcollation) end,
                 'comment', col_description(a.attrelid, a.attnum)) order by a.attnum), '[]')
        from pg_attribute a join pg_type t on t.oid = a.atttypid
        left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
        where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped) as columns,
       (select coalesce(json_agg(json_build_object('name', k.conname, 'def', pg_get_constraintdef(k.oid, true))
                 order by case k.contype when 'p' then 0 when 'u' then 1 when 'x' then 2 when 'f' then 3 else 4 end, k.conname), '[]')
        from pg_constraint k where k.conrelid = c.oid and k.contype in ('p', 'u', 'f', 'c', 'x')) as constraints,
       -- Indexes that back a constraint are the constraint's.
       (select coalesce(json_agg(pg_get_indexdef(i.indexrelid) order by ic.relname), '[]')
        from pg_index i join pg_class ic on ic.oid = i.indexrelid
        where i.indrelid = c.oid
          and not exists (select from pg_constraint k where k.conindid = i.indexrelid and k.conrelid = i.indrelid)) as indexes,
       (select coalesce(json_agg(json_build_object(
                 'name', p.polname, 'permissive', p.polpermissive, 'cmd', p.polcmd,
                 'roles', array(select case when r = 0 then 'public' else quote_ident(pg_get_userbyid(r)) end
                                from unnest(p.polroles) r order by 1),
                 'qual', pg_get_expr(p.polqual, p.polrelid), 'check', pg_get_expr(p.polwithcheck, p.polrelid)) order by p.polname), '[]')
        from pg_policy p where p.polrelid = c.oid) as policies,
       (select coalesce(json_agg(pg_get_triggerdef(g.oid, true) order by g.tgname), '[]')
        from pg_trigger g where g.tgrelid = c.oid and not g.tgisinternal) as triggers,
       (select coalesce(json_agg(json_build_object('grantee', x.grantee, 'privilege_type', x.privilege_type,
                                                   'is_grantable', x.is_grantable, 'columns', x.columns)
                                 order by x.grantee, x.is_grantable, x.privilege_type), '[]')
        from (select coalesce(r.rolname, 'PUBLIC') as grantee, a.privilege_type, a.is_grantable,
                     array_agg(quote_ident(at.attname) order by at.attnum) as columns
              from pg_attribute at, aclexplode(at.attacl) a left join pg_roles r on r.oid = a.grantee
              where at.attrelid = c.oid and at.attacl is not null and not at.attisdropped
              group by 1, 2, 3) x) as column_grants
from pg_class c
where c.relnamespace = $1 and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')
  and ${NOT_FROM_EXTENSION("pg_class", "c.oid")}
  -- identity sequences belong to their column
  and not exists (select from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'i')
order by case when c.relkind in ('r', 'p', 'f') then 0 when c.relkind = 'S' then 1 else 2 end, c.relname`;

async function renderSchema(query: Query, schemaOid: string, schema: string, migrator: string): Promise<string[]> {
  const out: string[] = [];
  out.push(...(await renderTypes(query, schemaOid)));
  for (const rel of await query<Relation>(RELATIONS, [schemaOid])) {
    const qualified = `${ident(schema)}.${ident(rel.name)}`;
    const lines: string[] = [];
    if (rel.relkind === "r" || rel.relkind === "p") lines.push(...renderTable(rel, qualified));
    else if (rel.relkind === "v" || rel.relkind === "m") {
      const options = rel.options?.length ? ` with (${rel.options.join(", ")})` : "";
      const kind = rel.relkind === "m" ? "materialized view" : "view";
      lines.push(`create ${kind} ${qualified}${options} as`, `${(rel.viewdef ?? "").trimEnd().replace(/;$/, "")};`);
      lines.push(...rel.indexes.map((i) => `${i};`));
    } else if (rel.relkind === "S") {
      lines.push(`create sequence ${qualified};`);
    } else {
      lines.push(`-- ${qualified}: a foreign table (not rendered)`);
    }
    if (rel.owner !== migrator) lines.push(`alter table ${qualified} owner to ${ident(rel.owner)};`);
    const on = rel.relkind === "S" ? `sequence ${qualified}` : `table ${qualified}`;
    lines.push(...grants(rel.acl, rel.owner, on, rel.relkind === "S" ? ["USAGE", "SELECT", "UPDATE"] : TABLE_PRIVILEGES));
    if (rel.comment) lines.push(`comment on ${kindWord(rel.relkind)} ${qualified} is ${literal(rel.comment)};`);
    out.push(...lines, "");
  }
  out.push(...(await renderFunctions(query, schemaOid, schema, migrator)));
  return out;
}

const kindWord = (relkind: string) =>
  ({ r: "table", p: "table", v: "view", m: "materialized view", S: "sequence", f: "foreign table" })[relkind] ?? "table";

function renderTable(rel: Relation, qualified: string): string[] {
  const body: string[] = rel.columns.map((c) => {
    let line = `  ${ident(c.name)} ${c.type}`;
    if (c.collation) line += ` collate ${c.collation}`;
    if (c.generated === "s") line += ` generated always as (${c.def}) stored`;
    else if (c.def !== null) line += ` default ${c.def}`;
    if (c.identity === "a") line += " generated always as identity";
    if (c.identity === "d") line += " generated by default as identity";
    if (c.notnull) line += " not null";
    return line;
  });
  for (const c of rel.constraints) body.push(`  constraint ${ident(c.name)} ${c.def}`);
  const unlogged = rel.persistence === "u" ? "unlogged " : "";
  const partition = rel.partkey ? ` partition by ${rel.partkey}` : "";
  const options = rel.options?.length ? ` with (${rel.options.join(", ")})` : "";
  const lines = [`create ${unlogged}table ${qualified} (`, body.join(",\n"), `)${partition}${options};`];
  if (rel.rls) lines.push(`alter table ${qualified} enable row level security;`);
  if (rel.force_rls) lines.push(`alter table ${qualified} force row level security;`);
  lines.push(...rel.indexes.map((i) => `${i};`));

  const commands: Record<string, string> = { r: "select", a: "insert", w: "update", d: "delete", "*": "all" };
  for (const p of rel.policies) {
    let line = `create policy ${pg.escapeIdentifier(p.name)} on ${qualified}`;
    if (!p.permissive) line += " as restrictive";
    line += ` for ${commands[p.cmd] ?? p.cmd} to ${p.roles.join(", ")}`;
    if (p.qual) line += `\n  using (${p.qual})`;
    if (p.check) line += `\n  with check (${p.check})`;
    lines.push(`${line};`);
  }
  lines.push(...rel.triggers.map((t) => `${t};`));

  // Column privileges, one statement per grantee: each privilege with the columns it covers, in table order.
  const byGrantee = new Map<string, { to: string; option: string; privileges: Array<AclEntry & { columns: string[] }> }>();
  for (const g of rel.column_grants) {
    const key = `${g.grantee}|${g.is_grantable}`;
    const to = g.grantee === "PUBLIC" ? "public" : ident(g.grantee);
    const held = byGrantee.get(key) ?? { to, option: g.is_grantable ? " with grant option" : "", privileges: [] };
    byGrantee.set(key, { ...held, privileges: [...held.privileges, g] });
  }
  const rank = (p: string) => TABLE_PRIVILEGES.indexOf(p);
  for (const { to, option, privileges } of byGrantee.values()) {
    const list = [...privileges]
      .sort((x, y) => rank(x.privilege_type) - rank(y.privilege_type))
      .map((g) => `${g.privilege_type.toLowerCase()} (${g.columns.join(", ")})`);
    lines.push(`grant ${list.join(", ")} on table ${qualified} to ${to}${option};`);
  }
  for (const c of rel.columns) {
    if (c.comment) lines.push(`comment on column ${qualified}.${ident(c.name)} is ${literal(c.comment)};`);
  }
  return lines;
}

async function renderTypes(query: Query, schemaOid: string): Promise<string[]> {
  const types = await query<{ oid: string; name: string; typtype: string; def: string | null; comment: string | null }>(
    `select t.oid, t.typname as name, t.typtype,
            case t.typtype
              when 'e' then (select string_agg(quote_literal(e.enumlabel), ', ' order by e.enumsortorder) from pg_enum e where e.enumtypid = t.oid)
              when 'd' then format_type(t.typbasetype, t.typtypmod)
              when 'c' then (select string_agg(quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod), ', ' order by a.attnum)
                             from pg_attribute a where a.attrelid = t.typrelid and a.attnum > 0 and not a.attisdropped)
            end as def,
            obj_description(t.oid, 'pg_type') as comment
     from pg_type t
     where t.typnamespace = $1 and t.typtype in ('e', 'd', 'c', 'r', 'm')
       and (t.typtype <> 'c' or (select c.relkind from pg_class c where c.oid = t.typrelid) = 'c')
       and ${NOT_FROM_EXTENSION("pg_type", "t.oid")}
     order by t.typname`,
    [schemaOid],
  );
  const out: string[] = [];
  for (const t of types) {
    const name = `${(await query<{ n: string }>("select $1::oid::regtype::text as n", [t.oid]))[0]?.n}`;
    if (t.typtype === "e") out.push(`create type ${name} as enum (${t.def});`);
    else if (t.typtype === "c") out.push(`create type ${name} as (${t.def});`);
    else if (t.typtype === "d") {
      const checks = await query<{ name: string; def: string }>(
        "select conname as name, pg_get_constraintdef(oid, true) as def from pg_constraint where contypid = $1 order by conname",
        [t.oid],
      );
      out.push(`create domain ${name} as ${t.def}${checks.map((c) => `\n  constraint ${ident(c.name)} ${c.def}`).join("")};`);
    } else out.push(`-- ${name}: a range or multirange type (not rendered)`);
    if (t.comment) out.push(`comment on type ${name} is ${literal(t.comment)};`);
  }
  if (out.length) out.push("");
  return out;
}

async function renderFunctions(query: Query, schemaOid: string, schema: string, migrator: string): Promise<string[]> {
  const functions = await query<{
    name: string;
    args: string;
    kind: string;
    owner: string;
    def: string | null;
    acl: AclEntry[] | null;
    comment: string | null;
  }>(
    `select p.proname as name, pg_get_function_identity_arguments(p.oid) as args, p.prokind as kind,
            pg_get_userbyid(p.proowner) as owner,
            case when p.prokind in ('f', 'p') then pg_get_functiondef(p.oid) end as def,
            case when p.proacl is not null then ${aclJson("p.proacl")} end as acl,
            obj_description(p.oid, 'pg_proc') as comment
     from pg_proc p where p.pronamespace = $1 and ${NOT_FROM_EXTENSION("pg_proc", "p.oid")}
     order by p.proname, 2`,
    [schemaOid],
  );
  const out: string[] = [];
  for (const f of functions) {
    const kind = f.kind === "p" ? "procedure" : f.kind === "a" ? "aggregate" : "function";
    const signature = `${ident(schema)}.${ident(f.name)}(${f.args})`;
    if (f.def === null) out.push(`-- ${signature}: an aggregate or window function (not rendered)`);
    else out.push(`${f.def.trimEnd()};`);
    if (f.owner !== migrator) out.push(`alter ${kind} ${signature} owner to ${ident(f.owner)};`);
    if (f.acl) {
      // A function is executable by PUBLIC unless that was revoked: say when it was.
      if (!f.acl.some((e) => e.grantee === "PUBLIC")) out.push(`revoke all on ${kind} ${signature} from public;`);
      out.push(...grants(f.acl, f.owner, `${kind} ${signature}`, ["EXECUTE"]));
    }
    if (f.comment) out.push(`comment on ${kind} ${signature} is ${literal(f.comment)};`);
    out.push("");
  }
  return out;
}
