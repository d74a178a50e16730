// Who acts on the system: the agents view (every agent session: the
// assistant's runs, background jobs, external agents; Interrupt stops one),
// the open tabs view (GET /sessions; a daemon without that route says so
// instead of failing) and agent tokens (mint with allow and deny globs over
// tool names, the secret shown once; list; revoke, which cuts the agent off
// at its next request).
import { $, el, api, button, badge, statusKind, when, jsonBlock, absent, showError, labelled } from './lib.js';

function agentRow(a) {
  const tr = el('tr');
  tr.dataset.agent = a.id;
  const status = el('td');
  status.append(badge(a.status, statusKind(a.status)));
  if (a.reason) status.append(el('small', ' ' + a.reason, 'muted'));
  const seen = el('td');
  seen.append(when(a.lastSeen));
  const act = el('td');
  if (!['done', 'cancelled'].includes(a.status)) {
    const out = el('span', '', 'result');
    out.setAttribute('aria-live', 'polite');
    const b = button('Interrupt', async () => {
      b.disabled = true;
      try {
        const r = await api('POST', `/api/v1/agents/${encodeURIComponent(a.id)}/interrupt`);
        out.replaceChildren(badge(r.status, statusKind(r.status)));
      } catch (e) {
        showError(out, e);
        b.disabled = false;
      }
    }, 'danger');
    b.setAttribute('aria-label', `Interrupt ${a.label || a.id}`);
    act.append(b, out);
  }
  tr.append(el('td', a.label || a.id), el('td', a.kind), el('td', a.transport), status, el('td', a.task || ''), seen, act);
  return tr;
}

export async function loadAgents() {
  let res;
  try {
    res = await api('GET', '/api/v1/agents');
  } catch (e) {
    if (absent(e)) { $('agent-count').textContent = 'This daemon has no agents route (not available).'; $('agent-list').replaceChildren(); return; }
    throw e;
  }
  const items = res.items || [];
  labelled($('agent-list'), items.map(agentRow));
  $('agent-count').textContent = items.length ? `${items.length} agent ${items.length === 1 ? 'session' : 'sessions'}, newest first` : 'No agents have acted yet.';
}

const names = (xs) => (xs || []).map((x) => (typeof x === 'string' ? x : x.name || x.id || JSON.stringify(x)));

function tabCard(s) {
  const c = el('article', undefined, 'card');
  c.dataset.session = s.id;
  const head = el('h3');
  head.append(el('span', s.id), badge(s.connected ? 'connected' : 'disconnected', s.connected ? 'good' : 'muted'));
  c.append(head);
  const meta = el('p', undefined, 'muted');
  meta.append(`user ${s.user || '—'} · last seen `, when(s.lastSeen));
  c.append(meta);
  const tools = names(s.tools);
  c.append(el('p', tools.length ? 'Tools: ' + tools.join(', ') : 'No live tools.'));
  if (s.contexts && (s.contexts.length || Object.keys(s.contexts).length)) c.append(jsonBlock('Contexts', s.contexts));
  return c;
}

export async function loadTabs() {
  const list = $('tab-list');
  let res;
  try {
    res = await api('GET', '/api/v1/sessions');
  } catch (e) {
    if (e.status === 404 || e.status === 405) {
      list.replaceChildren(el('p', 'Open tabs are not available from this daemon (it has no GET /api/v1/sessions).', 'muted'));
      return;
    }
    throw e;
  }
  const items = res.items || res.sessions || [];
  list.replaceChildren(...(items.length ? items.map(tabCard) : [el('p', 'No tabs are open.', 'muted')]));
}

// --- agent tokens ---------------------------------------------------------

const globs = (s) => s.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);

function row(t) {
  const tr = el('tr');
  tr.dataset.token = t.id;
  const state = el('td');
  state.append(t.revokedAt ? badge('revoked', 'muted') : badge('active', 'good'));
  if (t.revokedAt) state.append(el('small', ' ', 'muted'), when(t.revokedAt));
  const act = el('td');
  if (!t.revokedAt) {
    const b = button('Revoke', async () => {
      if (b.dataset.armed !== '1') {
        // A second press confirms: revoking cuts the agent off at once.
        b.dataset.armed = '1';
        b.textContent = 'Revoke: sure?';
        return;
      }
      b.disabled = true;
      try {
        await api('DELETE', '/api/v1/tokens/' + encodeURIComponent(t.id));
        await loadTokens();
        $('token-result').replaceChildren(el('p', `Revoked ${t.agent}'s token ${t.id}.`, 'muted'));
      } catch (e) {
        showError($('token-result'), e);
        b.disabled = false;
      }
    }, 'danger');
    b.setAttribute('aria-label', `Revoke ${t.agent}'s token ${t.id}`);
    act.append(b);
  }
  const created = el('td');
  created.append(when(t.createdAt));
  tr.append(el('td', t.agent), el('td', t.id), el('td', (t.allow || []).join(', ') || 'everything'),
    el('td', (t.deny || []).join(', ') || '—'), created, state, act);
  return tr;
}

export async function loadTokens() {
  const res = await api('GET', '/api/v1/tokens');
  const items = (res.items || []).slice().reverse();
  labelled($('token-list'), items.map(row));
  $('token-count').textContent = items.length ? `${items.length} ${items.length === 1 ? 'token' : 'tokens'}, newest first` : 'No agent tokens yet.';
}

export function initTokens(guard) {
  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    guard(async () => {
      const out = $('token-result');
      const body = { agent: $('t-agent').value.trim() };
      const allow = globs($('t-allow').value);
      const deny = globs($('t-deny').value);
      if (allow.length) body.allow = allow;
      if (deny.length) body.deny = deny;
      try {
        const c = await api('POST', '/api/v1/tokens', body);
        const secret = el('code', c.token, 'secret');
        secret.id = 'new-token';
        out.replaceChildren(el('p', `Token for ${c.agent} (${c.id}). Copy it now: it is not shown again.`), secret);
        $('token-form').reset();
        await loadTokens();
      } catch (e) {
        showError(out, e);
        $('t-agent').focus();
      }
    });
  });
}
