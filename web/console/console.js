// The operator console: plain DOM, no framework, no innerHTML. Every value
// from the daemon goes through textContent.
const $ = (id) => document.getElementById(id);
const KEY = 'switchboard.console.token';

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: { Authorization: 'Bearer ' + sessionStorage.getItem(KEY), ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) {
    const e = new Error((data && data.error && `${data.error.code}: ${data.error.message}`) || res.statusText);
    e.status = res.status;
    throw e;
  }
  return data;
}

function signedOut(message) {
  sessionStorage.removeItem(KEY);
  document.querySelectorAll('.view').forEach((v) => (v.hidden = true));
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  $('status').textContent = 'not signed in';
  $('status').className = 'pill';
}

async function guard(fn) {
  try {
    await fn();
  } catch (e) {
    if (e.status === 401) signedOut('That token was refused: ' + e.message);
    else throw e;
  }
}

// --- catalog ---------------------------------------------------------------

function toolRow(t) {
  const tr = el('tr');
  tr.append(el('td', t.name), el('td', t.surface), el('td', t.class), el('td', t.approval || ''), el('td', t.summary || ''));
  tr.addEventListener('click', () => guard(() => describe(t.name)));
  return tr;
}

async function describe(name) {
  const t = await api('GET', '/api/v1/tools/' + encodeURIComponent(name));
  const box = $('describe');
  box.replaceChildren(el('h2', t.name), el('p', t.description));
  const tags = el('p');
  for (const v of [t.surface, t.class, 'approval: ' + (t.approval || 'none'), t.costClass]) if (v) tags.append(el('span', v, 'tag'));
  box.append(tags, el('h3', 'Input schema'), el('pre', JSON.stringify(t.inputSchema, null, 2)));
  if (t.outputSchema) box.append(el('h3', 'Output schema'), el('pre', JSON.stringify(t.outputSchema, null, 2)));
  box.append(el('h3', 'Descriptor'), el('pre', JSON.stringify(t, null, 2)));
}

async function loadCatalog() {
  const q = $('query').value.trim();
  const surface = $('surface').value;
  const body = $('tools');
  if (q) {
    const res = await api('POST', '/api/v1/tools/search', { query: q, limit: 50, ...(surface ? { surface } : {}) });
    body.replaceChildren(...res.items.map(toolRow));
    $('catalog-count').textContent = `${res.items.length} ${res.items.length === 1 ? "match" : "best matches"} for “${q}”`;
  } else {
    const m = await api('GET', '/api/v1/tools' + (surface ? '?surface=' + surface : ''));
    body.replaceChildren(...m.tools.map(toolRow));
    $('catalog-count').textContent = `${m.tools.length} tools in the catalog`;
  }
}

// --- approvals ---------------------------------------------------------------

async function loadApprovals() {
  const list = $('approval-list');
  let res;
  try {
    res = await api('GET', '/api/v1/approvals');
  } catch (e) {
    if (e.status === 404) { list.replaceChildren(el('p', 'This daemon has no approvals route.', 'muted')); return; }
    throw e;
  }
  const items = res.items || res.approvals || [];
  if (!items.length) { list.replaceChildren(el('p', 'Nothing is waiting for you.', 'muted')); return; }
  list.replaceChildren(...items.map((a) => {
    const card = el('div', undefined, 'card');
    card.append(el('strong', a.tool), el('span', a.agent || a.caller || '', 'tag'));
    card.append(el('pre', JSON.stringify(a.input, null, 2)));
    if (a.expiresAt) card.append(el('p', 'expires ' + new Date(a.expiresAt).toLocaleString(), 'muted'));
    const approve = el('button', 'Approve');
    const deny = el('button', 'Deny');
    const id = a.approvalId || a.id;
    approve.onclick = () => guard(async () => { await api('POST', '/api/v1/approvals/' + encodeURIComponent(id), { decision: 'approve' }); loadApprovals(); });
    deny.onclick = () => guard(async () => { await api('POST', '/api/v1/approvals/' + encodeURIComponent(id), { decision: 'deny' }); loadApprovals(); });
    card.append(approve, deny);
    return card;
  }));
}

// --- activity ----------------------------------------------------------------

async function loadActivity() {
  const body = $('entries');
  let res;
  try {
    res = await api('GET', '/api/v1/activity?limit=200');
  } catch (e) {
    if (e.status === 404) { body.replaceChildren(); return; }
    throw e;
  }
  const items = res.items || res.entries || [];
  body.replaceChildren(...items.map((e) => {
    const tr = el('tr');
    tr.append(el('td', e.id), el('td', new Date(e.ts).toLocaleTimeString()), el('td', e.actor), el('td', e.verb), el('td', e.target));
    return tr;
  }));
}

// --- shell -------------------------------------------------------------------

const views = { catalog: loadCatalog, approvals: loadApprovals, activity: loadActivity };

async function show() {
  if (!sessionStorage.getItem(KEY)) return signedOut();
  const name = location.hash.slice(1) in views ? location.hash.slice(1) : 'catalog';
  $('login').hidden = true;
  document.querySelectorAll('.view').forEach((v) => (v.hidden = v.id !== name));
  document.querySelectorAll('nav a').forEach((a) => a.classList.toggle('active', a.dataset.view === name));
  $('status').textContent = 'signed in';
  $('status').className = 'pill ok';
  await guard(views[name]);
}

$('login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(KEY, $('token').value.trim());
  $('token').value = '';
  await show();
});
let timer;
$('query').addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(() => guard(loadCatalog), 150); });
$('surface').addEventListener('change', () => guard(loadCatalog));
$('search-form').addEventListener('submit', (ev) => { ev.preventDefault(); guard(loadCatalog); });
window.addEventListener('hashchange', show);
show();
