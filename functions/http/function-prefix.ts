/**
 * A Supabase Edge Function receives its requests under its own name
 * (`/api/health` for `https://<ref>.supabase.co/functions/v1/api/health`;
 * the full `/functions/v1/api/...` when called through some local gateways).
 * The app's routes start at `/health` and `/api/v1`, so the prefix is removed
 * once, before routing. A path under neither prefix is passed on unchanged and
 * meets the app's 404.
 */
export function stripFunctionPrefix(request: Request, name: string): Request {
  return splitFunctionPrefix(request, name).request;
}

/** What the Edge entry hands the app beside each request (Hono's bindings, `c.env`). */
export interface FunctionMount {
  /** The function's name: `api`. */
  functionName: string;
  /** The prefix removed from this request's path (`/api`, `/functions/v1/api`), if any. */
  functionPrefix?: string;
}

/** The request with the function's prefix removed, and that prefix. */
export function splitFunctionPrefix(request: Request, name: string): { request: Request; prefix?: string } {
  const url = new URL(request.url);
  for (const prefix of [`/functions/v1/${name}`, `/${name}`]) {
    if (url.pathname === prefix || url.pathname.startsWith(`${prefix}/`)) {
      url.pathname = url.pathname.slice(prefix.length) || "/";
      return { request: new Request(url, request), prefix };
    }
  }
  return { request };
}

/**
 * The message of a 404 under the Edge Function. The function's name is `api`
 * and the API's paths begin `/api/v1`, so `…/functions/v1/api/v1/me` loses its
 * `/api` to the mount and finds no route: say where the function is mounted
 * and, when one exists, the path that would have matched.
 */
export function mountedNotFound(path: string, mount: FunctionMount, isRoute: (path: string) => boolean): string {
  const prefix = mount.functionPrefix ?? `/${mount.functionName}`;
  const base = `no route for ${path}: this Edge Function is mounted at ${prefix}, and its routes follow that (${prefix}/health, ${prefix}/api/v1/...)`;
  const match = [`/api${path}`, `/api/v1${path}`].find(isRoute);
  return match ? `${base}; the path that would have matched is ${prefix}${match}` : base;
}

/** Whether the bindings Hono passed are an Edge Function's (the Node server passes its own, or none). */
export function isFunctionMount(env: unknown): env is FunctionMount {
  return typeof env === "object" && env !== null && typeof (env as FunctionMount).functionName === "string";
}
