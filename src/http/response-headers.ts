/** Headers every answer of the service carries (the Koa app's middleware and the webhook fast path alike). */
export const SERVICE_HEADERS: Readonly<Record<string, string>> = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
};
