// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

/** The drills' JSON call to an API through the stack's entry (or one API's own port): 200 or a thrown error naming the answer. */
export async function callApi(
  port: number,
  token: string,
  method: 'GET' | 'POST',
  pathname: string,
  body?: unknown,
): Promise<Json> {
  const res = await fetch(`http://127.0.0.1:${port}${pathname}`, {
    method,
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`${method} ${pathname}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}
