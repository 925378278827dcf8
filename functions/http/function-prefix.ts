/**
 * A Supabase Edge Function receives its requests under its own name
 * (`/api/health` for `https://<ref>.supabase.co/functions/v1/api/health`;
 * the full `/functions/v1/api/...` when called through some local gateways).
 * The app's routes start at `/health` and `/api/v1`, so the prefix is removed
 * once, before routing. A path under neither prefix is passed on unchanged and
 * meets the app's 404.
 */
export function stripFunctionPrefix(request: Request, name: string): Request {
  const url = new URL(request.url);
  for (const prefix of [`/functions/v1/${name}`, `/${name}`]) {
    if (url.pathname === prefix || url.pathname.startsWith(`${prefix}/`)) {
      url.pathname = url.pathname.slice(prefix.length) || "/";
      return new Request(url, request);
    }
  }
  return request;
}
