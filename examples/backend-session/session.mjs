// What an app's Node backend does when a signed-in user loads a page with
// the switchboard SDK: open a browser session for that user with the admin
// token and hand the id and token to the page. Node 18+ (global fetch).
//
//   SWITCHBOARD_TOKEN=$(cat ~/.local/share/switchboard/admin.token) node examples/backend-session/session.mjs user:42
export async function openSession(base, adminToken, principal, allow = []) {
  const res = await fetch(`${base}/api/v1/sessions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ principal, allow }),
  });
  const body = await res.json().catch(() => null);
  if (res.status !== 201) throw new Error(`open session: ${res.status}: ${JSON.stringify(body)}`);
  return { sessionId: body.sessionId, sessionToken: body.sessionToken }; // pass both to connect()
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const base = process.env.SWITCHBOARD_URL || 'http://127.0.0.1:7766';
  openSession(base, process.env.SWITCHBOARD_TOKEN || '', process.argv[2] || 'user:42', ['tasks.*', 'nav.*'])
    .then((s) => console.log(JSON.stringify(s)))
    .catch((e) => { console.error(e.message); process.exit(1); });
}
