// The catalog view: every tool the daemon serves, the open tabs' live
// browser tools among them (marked with their session), search, the full
// descriptor and a try-it form generated from the input schema.
import { $, el, api, badge, labelled } from './lib.js';
import { tryIt } from './tryit.js';

function liveSession(t) {
  return t.sessionId || (t.origin && t.origin.sessionId) || '';
}

// liveBadge marks a tab's live tool with its session (shortened; the full
// id is the badge's title and data-session).
function liveBadge(sid) {
  const b = badge('live · ' + (sid.length > 14 ? sid.slice(0, 12) + '…' : sid), 'live');
  b.title = 'live in tab ' + sid;
  b.dataset.session = sid;
  return b;
}

function toolRow(t) {
  const tr = el('tr');
  const name = el('td');
  const link = el('button', t.name, 'link');
  link.type = 'button';
  link.addEventListener('click', () => describe(t.name, liveSession(t)).catch((e) => showDescribeError(e)));
  name.append(link);
  const sid = liveSession(t);
  if (sid) name.append(' ', liveBadge(sid));
  const approval = el('td');
  if (t.approval && t.approval !== 'none') approval.append(badge(t.approval, 'wait'));
  else approval.textContent = t.approval || '';
  tr.append(name, el('td', t.surface), el('td', t.class), approval, el('td', t.summary || ''));
  return tr;
}

function showDescribeError(e) {
  $('describe').replaceChildren(el('p', e.message, 'error'));
}

async function describe(name, session) {
  const q = session ? '?session=' + encodeURIComponent(session) : '';
  const t = await api('GET', '/api/v1/tools/' + encodeURIComponent(name) + q);
  if (session && !liveSession(t)) t.sessionId = session;
  const box = $('describe');
  box.replaceChildren(el('h2', t.name), el('p', t.description));
  const tags = el('p');
  for (const v of [t.surface, t.class, 'approval: ' + (t.approval || 'none'), t.costClass]) if (v) tags.append(el('span', v, 'tag'));
  if (liveSession(t)) tags.append(liveBadge(liveSession(t)));
  box.append(tags, tryIt(t));
  const schema = el('details');
  schema.append(el('summary', 'Input schema'), el('pre', JSON.stringify(t.inputSchema, null, 2)));
  box.append(schema);
  if (t.outputSchema) {
    const out = el('details');
    out.append(el('summary', 'Output schema'), el('pre', JSON.stringify(t.outputSchema, null, 2)));
    box.append(out);
  }
  const full = el('details');
  full.append(el('summary', 'Descriptor'), el('pre', JSON.stringify(t, null, 2)));
  box.append(full);
  box.querySelector('h2').tabIndex = -1;
  box.querySelector('h2').focus();
}

export async function loadCatalog() {
  const q = $('query').value.trim();
  const surface = $('surface').value;
  const body = $('tools');
  if (q) {
    const res = await api('POST', '/api/v1/tools/search', { query: q, limit: 50, ...(surface ? { surface } : {}) });
    const items = [...res.items, ...(res.openTab || [])];
    labelled(body, items.map(toolRow));
    const tabs = (res.openTab || []).length;
    $('catalog-count').textContent = `${res.items.length} ${res.items.length === 1 ? 'match' : 'best matches'} for “${q}”` +
      (tabs ? `, and ${tabs} live in open tabs` : '');
  } else {
    const m = await api('GET', '/api/v1/tools' + (surface ? '?surface=' + surface : ''));
    labelled(body, m.tools.map(toolRow));
    const live = m.tools.filter(liveSession).length;
    $('catalog-count').textContent = `${m.tools.length} ${m.tools.length === 1 ? 'tool' : 'tools'} in the catalog` +
      (live ? ` (${live} live in open tabs)` : '');
  }
}

let timer;
export function initCatalog(guard) {
  $('query').addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(() => guard(loadCatalog), 150); });
  $('surface').addEventListener('change', () => guard(loadCatalog));
  $('search-form').addEventListener('submit', (ev) => { ev.preventDefault(); guard(loadCatalog); });
}
