// An MCP client built on the official TypeScript SDK and its OAuth client
// provider, as a desktop client is: given only the /mcp URL, it discovers
// the authorization server, registers itself, sends the user's browser to
// sign in (here: prints the URL for the test's Chromium), receives the
// code on a loopback redirect, and then lists and calls tools.
//
// Usage: node client.mjs <mcp URL> <mode: approve | digest | call> [client ID]
// With a client ID the client is pre-registered at the authorization
// server (an IdP without dynamic registration, as hosted IdPs are
// configured for a desktop app): the SDK skips registration and uses it
// as a public client with PKCE.
// Writes one JSON object per line to stdout: {"authorize": url}, then
// {"ready": {tools, whoami}}, then for approve {"pending": the digest's
// pending approvals} and {"result": ...}, for digest {"digest": ...},
// {"refreshed": {scope, idToken}}, and after the line "revoked" on stdin
// two {"refusal": {name, message}}; call stops after ready.
import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError, discoverAuthorizationServerMetadata, refreshAuthorization } from "@modelcontextprotocol/sdk/client/auth.js";
import readline from "node:readline";

const [mcpURL, mode, clientID] = process.argv.slice(2);
const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");

// The loopback redirect (RFC 8252): any free port.
let gotCode;
const codeArrived = new Promise((resolve) => (gotCode = resolve));
const cb = http.createServer((req, res) => {
  const u = new URL(req.url, "http://127.0.0.1");
  if (u.pathname !== "/callback") return res.writeHead(404).end();
  res.writeHead(200, { "Content-Type": "text/html" }).end("<p id=done>You can close this window.</p>");
  gotCode(u.searchParams);
});
await new Promise((r) => cb.listen(0, "127.0.0.1", r));
const redirectUrl = `http://127.0.0.1:${cb.address().port}/callback`;

// The provider keeps everything in memory, as a one-shot client may.
const store = clientID ? { client: { client_id: clientID } } : {};
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return { client_name: `E2E ${mode} client`, redirect_uris: [redirectUrl], grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"], token_endpoint_auth_method: "client_secret_post" };
  },
  state: () => "e2e-state",
  clientInformation: () => store.client,
  saveClientInformation: (c) => { store.client = c; },
  tokens: () => store.tokens,
  saveTokens: (t) => { store.tokens = t; },
  redirectToAuthorization: (url) => say({ authorize: url.toString() }),
  saveCodeVerifier: (v) => { store.verifier = v; },
  codeVerifier: () => store.verifier,
};

const connect = async () => {
  const client = new Client({ name: `e2e-${mode}`, version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider }));
  return client;
};

let client;
try {
  client = await connect();
  throw new Error("connected without signing in");
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
  const params = await codeArrived;
  if (params.get("error")) throw new Error(`authorization refused: ${params.get("error")}`);
  if (params.get("state") !== "e2e-state") throw new Error("state mismatch");
  const transport = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
  await transport.finishAuth(params.get("code"));
  client = new Client({ name: `e2e-${mode}`, version: "1.0.0" });
  await client.connect(transport);
}
cb.close();

const text = (r) => r.content.map((c) => c.text ?? "").join("");
const tools = (await client.listTools()).tools.map((t) => t.name);
const who = text(await client.callTool({ name: "auth-whoami", arguments: {} }));
say({ ready: { tools, whoami: who, refresh: Boolean(store.tokens?.refresh_token) } });

const digest = async () => (await client.readResource({ uri: "switchboard://workspace/digest" })).contents[0].text;

if (mode === "approve") {
  // The call waits for the user's approval; meanwhile the client reads
  // its digest, where the pending approval shows.
  const call = client.callTool({ name: "tasks-delete", arguments: { task: "t-1" } }, undefined, { timeout: 120000 })
    .then((r) => ({ isError: Boolean(r.isError), text: text(r) }), (e) => ({ error: String(e.message ?? e) }));
  const pending = async () => JSON.parse(await digest()).pendingApprovals;
  let d = await pending();
  for (let i = 0; i < 300 && d.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 100)); // the call is recorded as the request goes out
    d = await pending();
  }
  say({ pending: d });
  say({ result: await call });
} else if (mode === "digest") {
  say({ digest: JSON.parse(await digest()) });
  // The SDK's own refresh: once while the grant is live, then again
  // after the test (the user's operator) revoked it, as a client does
  // when its access token runs out.
  const as = new URL(mcpURL).origin;
  const metadata = await discoverAuthorizationServerMetadata(as);
  const refresh = () => refreshAuthorization(as, { metadata, clientInformation: store.client, refreshToken: store.tokens.refresh_token,
    resource: new URL(mcpURL) });
  store.tokens = await refresh();
  say({ refreshed: { scope: store.tokens.scope ?? null, idToken: store.tokens.id_token !== undefined } });
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) if (line === "revoked") break;
  for (let i = 0; i < 2; i++) { // and once more, as a client retrying would
    try {
      await refresh();
      say({ refusal: { name: "none", message: "the refresh succeeded" } });
    } catch (e) {
      say({ refusal: { name: e.constructor.name, message: String(e.message ?? e) } });
    }
  }
}
await client.close();
process.exit(0);
