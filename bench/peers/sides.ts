import autocannon from "autocannon";
import type { Scenario, Vars } from "../harness/scenarios.ts";
import { Latencies } from "../harness/stats.ts";
import { TENANT_HEADER, USER_HEADER } from "./peer-protocol.ts";

/**
 * The servers `npm run bench` loads side by side, and how each is asked for
 * the same three things: the API (with its key), the hand-written node:http +
 * pg server and PostGraphile 4 (each told the tenant and user in headers,
 * checking no credential). bench/README.md says what each does per request.
 */

export type SideName = "api" | "hand" | "postgraphile";

export interface Request {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

const PARTICIPANT_FIELDS = `id userId instanceId firstName surname fullName gender pronouns status dateOfBirth schoolYear rank
  unitName schoolInstitute arrivalDate departureDate superGroupId subGroupId blockId roomId roomNumber photoLink createdAt updatedAt
  supergroupByInstanceIdAndSuperGroupId { name } subgroupByInstanceIdAndSubGroupId { name }
  blockByInstanceIdAndBlockId { name } roomByInstanceIdAndRoomId { name }`;

const GRAPHQL: Record<Scenario["name"], string> = {
  get: `query($id: UUID!) { participantById(id: $id) { ${PARTICIPANT_FIELDS} } }`,
  list: `query($instance: UUID!) { allParticipants(condition: {instanceId: $instance, deletedAt: null}, first: 50,
    orderBy: [CREATED_AT_ASC, ID_ASC]) { totalCount nodes { ${PARTICIPANT_FIELDS} } } }`,
  write: `mutation($p: ParticipantInput!) { createParticipant(input: {participant: $p}) { participant { ${PARTICIPANT_FIELDS} } } }`,
};

/** The scenario's request as PostGraphile takes it: the same reads and the same create, in GraphQL. */
function graphqlVariables(scenario: Scenario, v: Vars): Record<string, unknown> {
  if (scenario.name === "get") return { id: v.participantId };
  if (scenario.name === "list") return { instance: v.instanceId };
  const body = JSON.parse(scenario.body?.(v) ?? "{}") as Record<string, string>;
  return {
    p: {
      userId: body.user_id,
      instanceId: body.instance_id,
      firstName: body.first_name,
      surname: body.surname,
      fullName: `${body.first_name} ${body.surname}`,
      gender: body.gender,
      dateOfBirth: body.date_of_birth,
      schoolYear: body.school_year,
      unitName: body.unit_name,
      subGroupId: body.sub_group_id,
      superGroupId: v.supergroupId,
      roomId: body.room_id,
      blockId: v.blockId,
      roomNumber: v.roomNumber,
    },
  };
}

/** The request each side gets for one pick of values. */
export function requestFor(side: SideName, scenario: Scenario, v: Vars, extra: Record<string, string> = {}): Request {
  const json = { "content-type": "application/json", ...extra };
  if (side === "postgraphile") {
    return {
      method: "POST",
      path: "/graphql",
      headers: { ...json, [TENANT_HEADER]: v.tenantId, [USER_HEADER]: v.userId },
      body: JSON.stringify({ query: GRAPHQL[scenario.name], variables: graphqlVariables(scenario, v) }),
    };
  }
  const identity: Record<string, string> =
    side === "api" ? { "x-api-key": v.key } : { [TENANT_HEADER]: v.tenantId, [USER_HEADER]: v.userId };
  return { method: scenario.method, path: scenario.path(v), headers: { ...json, ...identity }, body: scenario.body?.(v) };
}

/** What a side answers a success with: GraphQL answers 200 with `errors` on failure, so its body is checked too. */
export function succeeded(side: SideName, scenario: Scenario, status: number, body: string | undefined): boolean {
  if (side === "postgraphile") return status === 200 && body !== undefined && !body.includes('"errors"');
  return status === scenario.status;
}

export interface Round {
  ok: number;
  errors: number;
  seconds: number;
  latencies: Latencies;
  firstError?: string;
}

/** autocannon against one side for `seconds`, `connections` keep-alive connections, a fresh pick of values per request. */
export async function loadSide(options: {
  url: string;
  side: SideName;
  scenario: Scenario;
  vars: () => Vars;
  connections: number;
  seconds: number;
  headers?: () => Record<string, string>;
}): Promise<Round> {
  const latencies = new Latencies();
  const round: Round = { ok: 0, errors: 0, seconds: options.seconds, latencies };
  let bodyErrors = 0;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        duration: options.seconds,
        requests: [
          {
            // Bodies are read only where a 200 may be a failure: the other sides' load generator does less.
            ...(options.side === "postgraphile"
              ? {
                  onResponse: (status: number, body: string) => {
                    if (status === 200 && !succeeded(options.side, options.scenario, status, body)) {
                      bodyErrors++;
                      round.firstError ??= body.slice(0, 300);
                    }
                  },
                }
              : {}),
            setupRequest: (request) => {
              const r = requestFor(options.side, options.scenario, options.vars(), options.headers?.());
              return { ...request, method: r.method as "GET", path: r.path, headers: r.headers, body: r.body };
            },
          },
        ],
      },
      (error, done) => (error ? reject(error) : resolve(done)),
    );
    instance.on("response", (_client, status, _bytes, ms) => {
      if (status === (options.side === "postgraphile" ? 200 : options.scenario.status)) {
        round.ok++;
        latencies.recordMs(ms);
      } else {
        round.errors++;
        round.firstError ??= `status ${status}`;
      }
    });
  });
  // GraphQL answers a failure 200 with `errors`: those bodies are counted as errors, not successes.
  round.ok -= bodyErrors;
  round.errors += bodyErrors + result.errors + result.timeouts;
  round.seconds = result.duration;
  return round;
}
