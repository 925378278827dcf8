import { randomBytes, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, signToken, testApp } from "./support/fixtures.ts";

/**
 * A Bearer token is the identity of its subject. Its e-mail may find a user
 * the first time only, when the token says the e-mail is verified and no other
 * identity holds that user yet; that first use links the subject.
 */

const t = useTestDatabase();
const MY_KEY = "/api/v1/api-keys/my-key";
const sub = () => `idp|${randomBytes(6).toString("hex")}`;
const subjectOf = async (userId: string) =>
  (await t().admin("select auth_subject from users where id = $1", [userId])).rows[0].auth_subject as string | null;

/** A user's key record (404: a known user without a key) or 401. */
const whoAmI = (token: string, env: Record<string, string> = {}) => call(testApp(t().db, env), "GET", MY_KEY, { token });

describe("Bearer identity by e-mail", () => {
  it("refuses another subject carrying an admin's e-mail once the admin is linked to a subject", async () => {
    const { admin } = await newTenant(t().db);
    const owner = sub();
    expect((await whoAmI(await signToken({ sub: owner, email: admin.email, email_verified: true }))).status).toBe(200);
    expect(await subjectOf(admin.userId)).toBe(owner);

    const intruder = await signToken({ sub: sub(), email: admin.email, email_verified: true });
    expect((await whoAmI(intruder)).status).toBe(401);
    expect(await subjectOf(admin.userId)).toBe(owner);
  });

  it("refuses an e-mail the token does not say is verified, or says is not", async () => {
    const { admin } = await newTenant(t().db);
    expect((await whoAmI(await signToken({ sub: sub(), email: admin.email }))).status).toBe(401);
    expect((await whoAmI(await signToken({ sub: sub(), email: admin.email, email_verified: false }))).status).toBe(401);
    // A string is not the boolean true.
    expect(
      (await whoAmI(await signToken({ sub: sub(), email: admin.email, email_verified: "true" as unknown as boolean }))).status,
    ).toBe(401);
    expect(await subjectOf(admin.userId)).toBeNull();
  });

  it("links the subject on first use, after which the subject alone finds the user, whatever e-mail it carries", async () => {
    const tenant = await newTenant(t().db);
    const user = await tenant.addUser("staff");
    const subject = sub();
    expect((await whoAmI(await signToken({ sub: subject, email: user.email.toUpperCase(), email_verified: true }))).status).toBe(
      200,
    );
    expect(await subjectOf(user.userId)).toBe(subject);
    const later = await whoAmI(await signToken({ sub: subject, email: "changed@elsewhere.test" }));
    expect(later.status).toBe(200);
    expect(later.body.data.email).toBe(user.email);
    expect((await whoAmI(await signToken({ sub: subject }))).status).toBe(200);
  });

  it("never moves a subject linked in one tenant to a user of another tenant", async () => {
    const a = await newTenant(t().db);
    const b = await newTenant(t().db);
    const subject = sub();
    expect((await whoAmI(await signToken({ sub: subject, email: a.admin.email, email_verified: true }))).status).toBe(200);
    const crossing = await whoAmI(
      await signToken({ sub: subject, email: b.admin.email, email_verified: true, tenant_id: b.tenantId }),
    );
    expect(crossing.status).toBe(401);
    expect(await subjectOf(b.admin.userId)).toBeNull();
  });

  it("refuses a Supabase Auth token by e-mail unless AUTH_ASSUME_EMAIL_VERIFIED is set (its user_metadata is the user's own)", async () => {
    const { admin } = await newTenant(t().db);
    const supabaseShaped = {
      sub: randomUUID(),
      aud: "authenticated",
      role: "authenticated",
      email: admin.email,
      phone: "",
      app_metadata: { provider: "email", providers: ["email"] },
      user_metadata: { email_verified: true },
      aal: "aal1",
      amr: [{ method: "password", timestamp: 1 }],
      session_id: randomUUID(),
      is_anonymous: false,
    };
    expect((await whoAmI(await signToken(supabaseShaped))).status).toBe(401);
    expect(await subjectOf(admin.userId)).toBeNull();
    const trusted = await whoAmI(await signToken(supabaseShaped), { AUTH_ASSUME_EMAIL_VERIFIED: "true" });
    expect(trusted.status).toBe(200);
    expect(await subjectOf(admin.userId)).toBe(supabaseShaped.sub);
  });

  it("links only one user when two first uses of one subject race", async () => {
    const tenant = await newTenant(t().db);
    const users = await Promise.all([tenant.addUser("staff"), tenant.addUser("staff")]);
    const subject = sub();
    const results = await Promise.all(
      users.map(async (u) => whoAmI(await signToken({ sub: subject, email: u.email, email_verified: true }))),
    );
    const linked = await t().admin("select count(*)::int as n from users where auth_subject = $1", [subject]);
    expect(linked.rows[0].n).toBe(1);
    // Whichever linked first is the subject's user for both: the other gets that user or a 401, never its own.
    const found = results.filter((r) => r.status === 200).map((r) => r.body.data.email);
    expect(results.every((r) => r.status === 200 || r.status === 401)).toBe(true);
    expect(new Set(found).size).toBe(1);
  });
});
