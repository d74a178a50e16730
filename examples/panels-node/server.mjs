// An app backend in Node (no dependencies: node:http, node:crypto, global
// fetch; Node 18+) that gives its users a settings panel switchboard's
// agents can open and fill. At start it declares, over HTTP with the admin
// token:
//
//   - a data adapter "projects": switchboard reads a panel's records with
//     POST /switchboard/projects/query and saves with
//     PUT /switchboard/projects/{key}, each request carrying the signed
//     Switchboard-Assertion this backend verifies;
//   - a host panel "project.settings": a form over one project.
//
// When its own data changes outside switchboard (here: POST
// /projects/{id}, the app's own edit), it calls
// POST /api/v1/adapters/projects/invalidate and every open panel showing
// projects refreshes. docs/panels.md walks through it.
//
//   SWITCHBOARD_URL=http://127.0.0.1:7766 \
//   SWITCHBOARD_TOKEN=$(cat "${SWITCHBOARD_DATA:-$HOME/.local/share/switchboard}/admin.token") \
//   node examples/panels-node/server.mjs
//
// The daemon must accept this page's origin: serve --allow-origin
// http://127.0.0.1:3000. PORT picks the port (3000; 0 for any), or
// LISTEN_FD a listening socket the parent passes (the end-to-end test).
import http from 'node:http';
import crypto from 'node:crypto';

const daemon = (process.env.SWITCHBOARD_URL || 'http://127.0.0.1:7766').replace(/\/$/, '');
const adminToken = process.env.SWITCHBOARD_TOKEN || '';

// The app's own data.
const projects = new Map([
  ['apollo', { id: 'apollo', name: 'Apollo launch site', owner: 'Alex Doe' }],
  ['borealis', { id: 'borealis', name: 'Borealis rebrand', owner: 'Sam Lee' }],
]);
// How often each request reached the backend (GET /stats).
const stats = { query: 0, update: 0, refused: 0 };

// daemonCall sends one admin request to the daemon.
async function daemonCall(method, path, body) {
  let res;
  try {
    res = await fetch(daemon + path, {
      method,
      headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    // Name the URL: a bare "fetch failed" leaves the reader guessing.
    throw new Error(`cannot reach the daemon at ${daemon} (${e.cause?.code || e.cause?.errors?.[0]?.code || e.cause?.message || e.message}); is it running there? set SWITCHBOARD_URL to its address`);
  }
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

// actingFor verifies the Switchboard-Assertion (ES256, keys from the
// daemon's JWKS, verified by node:crypto) and returns who the request is
// made for. Production code may prefer the jose package (docs/identity.md).
let keys = new Map();
async function actingFor(req, audience) {
  const jwt = String(req.headers['switchboard-assertion'] || '');
  const [h, p, s] = jwt.split('.');
  if (!s) throw new Error('no assertion');
  const header = JSON.parse(Buffer.from(h, 'base64url'));
  if (header.alg !== 'ES256') throw new Error('unexpected alg');
  if (!keys.has(header.kid)) { // unknown kid: the daemon rotated; fetch again
    const { keys: jwks } = await (await fetch(`${daemon}/.well-known/jwks.json`)).json();
    keys = new Map(jwks.map((k) => [k.kid, crypto.createPublicKey({ key: k, format: 'jwk' })]));
  }
  const key = keys.get(header.kid);
  const ok = key && crypto.verify('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'));
  if (!ok) throw new Error('bad signature');
  const c = JSON.parse(Buffer.from(p, 'base64url'));
  const now = Math.floor(Date.now() / 1000);
  if (c.iss !== daemon || c.aud !== audience || now >= c.exp + 5 || !String(c.sub).startsWith('user:')) {
    throw new Error('assertion refused');
  }
  return { user: c.sub, agent: c.act?.sub };
}

// The panel: a form over one project (the record whose id is the
// panel.open param projectId), saved with the adapter's update.
const settingsPanel = {
  id: 'project.settings',
  title: 'Project settings',
  description: "Edit one project's name and owner. Open with params.projectId.",
  scope: 'one project (params.projectId)',
  contextKinds: ['project'],
  spec: {
    v: 1, origin: 'host', root: 'body',
    sources: { project: { kind: 'adapter', adapter: 'projects', key: 'id', query: { where: { id: { $param: 'projectId' } } } } },
    nodes: {
      body: { type: 'panel-body', props: { title: 'Project settings' }, children: ['form'] },
      form: { type: 'field-form', props: { bind: 'project', submit: 'save', fields: [
        { path: 'name', label: 'Name', kind: 'text', required: true, maxLength: 80 },
        { path: 'owner', label: 'Owner', kind: 'text' },
      ] } },
    },
    actions: { save: { kind: 'mutate', source: 'project', op: 'update' } },
  },
};

async function declare(self) {
  await daemonCall('POST', '/api/v1/adapters', [{
    name: 'projects',
    description: "the studio's projects (id, name, owner)",
    query: { method: 'POST', url: `${self}/switchboard/projects/query`, timeoutMs: 5000 },
    mutate: { update: { method: 'PUT', url: `${self}/switchboard/projects/{key}` } },
    approval: { update: 'hitl' }, // an agent's save waits for the user; the user's own is theirs
    recordSchema: { type: 'object', properties: { name: { type: 'string' }, owner: { type: 'string' } } },
  }]);
  await daemonCall('POST', '/api/v1/panels', [settingsPanel]);
}

// The page a signed-in user gets: the SDK connects a session this backend
// opened for them, and the renderer shows the panels agents open.
async function page(res) {
  const s = await daemonCall('POST', '/api/v1/sessions', { principal: 'user:dana' });
  const cfg = JSON.stringify({ url: daemon, sessionId: s.sessionId, sessionToken: s.sessionToken }).replace(/</g, '\\u003c');
  res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html><meta charset="utf-8"><title>Projects</title>
<main><h1>Projects</h1><div id="panels"></div></main>
<script type="module">
const cfg = ${cfg};
const { connect } = await import(cfg.url + "/sdk/switchboard.js");
const { attachPanels } = await import(cfg.url + "/sdk/panels.js");
const sb = connect(cfg);
sb.on("status", (s) => { document.body.dataset.status = s; document.body.dataset.session = cfg.sessionId; });
attachPanels(sb, { container: document.getElementById("panels") });
</script>`);
}

function readJSON(req) {
  return new Promise((resolve, reject) => {
    let b = '';
    req.on('data', (c) => { b += c; if (b.length > 1 << 20) reject(new Error('too large')); });
    req.on('end', () => { try { resolve(b ? JSON.parse(b) : {}); } catch (e) { reject(e); } });
    req.on('error', reject);
  });
}

function send(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

let self = '';
const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, self);
    let m;
    if (req.method === 'GET' && url.pathname === '/') return await page(res);
    if (req.method === 'GET' && url.pathname === '/stats') return send(res, 200, stats);
    // The adapter's query: {"query": {"where": {"id": ...}}} → {"records": [...]}.
    if (req.method === 'POST' && url.pathname === '/switchboard/projects/query') {
      try { await actingFor(req, self); } catch (e) { stats.refused++; return send(res, 401, { error: e.message }); }
      const { query } = await readJSON(req);
      const id = query?.where?.id;
      stats.query++;
      const records = [...projects.values()].filter((p) => id === undefined || p.id === id);
      return send(res, 200, { records });
    }
    // The adapter's update: PUT …/{key} with {"values": {...}}.
    if (req.method === 'PUT' && (m = url.pathname.match(/^\/switchboard\/projects\/([a-z0-9_-]+)$/))) {
      let who;
      try { who = await actingFor(req, self); } catch (e) { stats.refused++; return send(res, 401, { error: e.message }); }
      const p = projects.get(m[1]);
      if (!p) return send(res, 404, { error: `no project ${m[1]}` });
      const { values = {} } = await readJSON(req);
      if (values.name !== undefined) p.name = String(values.name);
      if (values.owner !== undefined) p.owner = String(values.owner);
      stats.update++;
      console.error(`${who.user}${who.agent ? ` (through ${who.agent})` : ''} saved ${p.id}`);
      return send(res, 200, { record: p });
    }
    // The app's own edit, outside switchboard: tell the daemon the data
    // changed (the adapter's subscribe webhook).
    if (req.method === 'POST' && (m = url.pathname.match(/^\/projects\/([a-z0-9_-]+)$/))) {
      const p = projects.get(m[1]);
      if (!p) return send(res, 404, { error: `no project ${m[1]}` });
      Object.assign(p, await readJSON(req), { id: p.id });
      await daemonCall('POST', '/api/v1/adapters/projects/invalidate');
      return send(res, 200, p);
    }
    send(res, 404, { error: 'not found' });
  } catch (e) {
    send(res, 500, { error: e.message });
  }
});

const listenOn = process.env.LISTEN_FD ? { fd: Number(process.env.LISTEN_FD) } : { port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' };
server.listen(listenOn, async () => {
  const { address, port } = server.address();
  self = `http://${address}:${port}`;
  try {
    await declare(self);
  } catch (e) {
    console.error(e.message);
    process.exit(1);
  }
  console.log(JSON.stringify({ url: self }));
});
// Stop at once: a browser's keep-alive connection would hold close() open.
const stop = () => { server.close(() => process.exit(0)); server.closeAllConnections(); };
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
