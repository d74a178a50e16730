// Who acts on the system: the agents view (every agent session: the
// assistant's runs, background jobs, external agents; Interrupt stops one),
// the open tabs view (GET /sessions: each tab's state, user, pending calls,
// live tools and reported contexts, refreshed while it shows; End closes
// one; a daemon without that route says so instead of failing) and agent
// tokens (mint with allow and deny globs over tool names, the secret shown
// once; list; revoke, which cuts the agent off at its next request).
import { $, el, api, button, badge, statusKind, when, jsonBlock, absent, showError, labelled, userMode } from './lib.js';

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

// quotaCell is "used / limit" of one quota, the limit left out when none
// is set; at or past the limit it is flagged.
function quotaCell(used, limit, fmt) {
  const td = el('td', limit ? `${fmt(used)} / ${fmt(limit)}` : fmt(used));
  if (limit && used >= limit) td.append(' ', badge('used up', 'bad'));
  return td;
}

const dollars = (micros) => '$' + (micros / 1e6).toFixed(2);
const count = (n) => n.toLocaleString('en-US');

// describeLimits says which quotas the daemon enforces.
function describeLimits(l) {
  const parts = [];
  for (const who of ['agent', 'user']) {
    const q = l[who] || {};
    const set = [];
    if (q.calls) set.push(`${count(q.calls)} calls`);
    if (q.tokens) set.push(`${count(q.tokens)} tokens`);
    if (q.costMicros) set.push(dollars(q.costMicros));
    if (set.length) parts.push(`each ${who}: ${set.join(', ')}`);
  }
  return parts.join('; ');
}

// loadQuotas shows today's usage of every agent and user (GET /quotas).
async function loadQuotas() {
  let res;
  try {
    res = await api('GET', '/api/v1/quotas');
  } catch (e) {
    if (absent(e)) { $('quota-count').textContent = 'This daemon has no quotas route (not available).'; $('quota-list').replaceChildren(); return; }
    throw e;
  }
  const limits = describeLimits(res.limits || {});
  const items = res.items || [];
  labelled($('quota-list'), items.map((q) => {
    const tr = el('tr');
    tr.dataset.subject = q.subject;
    tr.append(el('td', q.subject),
      quotaCell(q.used.calls, q.limit.calls, count),
      quotaCell(q.used.tokens, q.limit.tokens, count),
      quotaCell(q.used.costMicros, q.limit.costMicros, dollars));
    return tr;
  }));
  $('quota-count').textContent = !limits
    ? 'No daily quotas are set (serve --daily-quota agent.calls=N, user.cost=N, …).'
    : `Today (${res.day}, UTC) — ${limits}. ` + (items.length ? 'Most calls first.' : 'Nothing used yet.');
}

export async function loadAgents() {
  // Quotas are the operator's; a user signed in as themselves sees their agents.
  await Promise.all([loadAgentList(), userMode() ? null : loadQuotas()]);
}

async function loadAgentList() {
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

// --- open tabs ------------------------------------------------------------

// The view refreshes itself while it shows (and at once when the browser
// tab comes back into view), so a tab's state and pending calls are live.
const TAB_REFRESH_MS = 2000;
let tabTimer = 0;
// Session ids whose End was pressed once: a refresh keeps the question.
const armedEnd = new Set();

function tabStateKind(state) {
  if (state === 'connected') return 'good';
  if (state === 'connecting' || state === 'reconnecting') return 'wait';
  if (state === 'disconnected') return 'bad';
  return 'muted'; // gone, closed
}

const attentionKind = { focused: 'good', visible: 'wait', background: 'muted' };

// tabTools groups the live tools by surface: "browser: nav.goto, …".
function tabTools(tools) {
  const box = el('div', undefined, 'tab-tools');
  if (!tools.length) { box.append(el('p', 'No live tools.', 'muted')); return box; }
  const by = new Map();
  for (const t of tools) {
    const s = t.surface || 'unknown';
    if (!by.has(s)) by.set(s, []);
    by.get(s).push(t);
  }
  for (const [surface, ts] of by) {
    const p = el('p');
    p.append(el('strong', `Tools (${ts.length}) `), el('span', surface, 'tag'), ' ');
    ts.forEach((t, i) => {
      if (i) p.append(', ');
      const c = el('code', t.name);
      if (t.description) c.title = t.description;
      p.append(c);
    });
    box.append(p);
  }
  return box;
}

// tabContexts lists what the tab reported: label, kind, attention, route,
// the panels by title and the selection; the raw JSON stays one click away.
function tabContexts(contexts) {
  const box = el('div', undefined, 'tab-contexts');
  if (!contexts.length) { box.append(el('p', 'No contexts reported.', 'muted')); return box; }
  box.append(el('strong', `Contexts (${contexts.length})`));
  const ul = el('ul');
  for (const c of contexts) {
    const li = el('li');
    li.dataset.context = c.id;
    li.append(el('span', c.label || c.id, 'ctx-label'), el('span', c.kind, 'tag'), ' ', badge(c.attention || 'unknown', attentionKind[c.attention] || ''));
    if (c.route) li.append(el('code', c.route));
    const panels = c.panels || [];
    if (panels.length) {
      const p = el('div', 'Panels: ', 'muted');
      panels.forEach((pn, i) => {
        if (i) p.append(', ');
        const s = el('span', pn.title || pn.type || pn.id, 'panel-title');
        s.title = pn.type || '';
        p.append(s);
        if (pn.dirty) p.append(' ', badge('unsaved', 'wait'));
      });
      li.append(p);
    }
    if (c.selection && c.selection.text) li.append(el('div', 'Selected: “' + c.selection.text + '”', 'muted'));
    ul.append(li);
  }
  box.append(ul, jsonBlock('Contexts as JSON', contexts));
  return box;
}

function tabCard(s) {
  const c = el('article', undefined, 'card tab');
  c.dataset.session = s.id;
  c.dataset.state = s.state;
  const head = el('h3');
  head.append(badge(s.state, tabStateKind(s.state)), el('code', s.id));
  c.append(head);
  const meta = el('p', undefined, 'muted');
  const seen = when(s.lastSeen);
  seen.classList.add('seen');
  meta.append(`user ${s.user || '—'} · opened `, when(s.createdAt), ' · last seen ', seen,
    ` · ${s.pending} pending ${s.pending === 1 ? 'call' : 'calls'}`);
  if (s.expiresAt) meta.append(' · dropped at ', when(s.expiresAt), ' unless it comes back');
  c.append(meta, tabTools(s.tools || []), tabContexts(s.contexts || []));
  if (s.state !== 'closed') {
    const out = el('span', '', 'result');
    out.setAttribute('aria-live', 'polite');
    const b = button(armedEnd.has(s.id) ? 'End: sure?' : 'End', async () => {
      if (!armedEnd.has(s.id)) {
        // A second press confirms: ending closes the tab's session for good.
        armedEnd.add(s.id);
        b.textContent = 'End: sure?';
        return;
      }
      b.disabled = true;
      try {
        await api('DELETE', '/api/v1/sessions/' + encodeURIComponent(s.id));
        armedEnd.delete(s.id);
        c.remove();
        $('tab-result').replaceChildren(el('p', `Ended tab ${s.id}.`, 'muted'));
        await loadTabs();
      } catch (e) {
        showError(out, e);
        b.disabled = false;
      }
    }, 'danger');
    b.setAttribute('aria-label', `End tab ${s.id}`);
    const row = el('div', undefined, 'row');
    row.append(b, out);
    c.append(row);
  }
  return c;
}

// sameTab is the card's content without lastSeen, which moves every
// refresh while a tab is connected: an unchanged card is kept (and with it
// the focus of a keyboard user), only its time is updated.
const sameTab = (s) => JSON.stringify({ ...s, lastSeen: undefined });

function renderTabs(items) {
  const list = $('tab-list');
  const old = new Map([...list.querySelectorAll('article[data-session]')].map((c) => [c.dataset.session, c]));
  const cards = items.map((s) => {
    const sig = sameTab(s);
    const c = old.get(s.id);
    if (c && c.dataset.sig === sig) {
      const seen = when(s.lastSeen);
      seen.classList.add('seen');
      c.querySelector('time.seen').replaceWith(seen);
      return c;
    }
    const n = tabCard(s);
    n.dataset.sig = sig;
    return n;
  });
  // No cards: the count line above already says no tab is open.
  if (!items.length) { list.replaceChildren(); return; }
  const now = [...list.children];
  if (now.length === cards.length && now.every((c, i) => c === cards[i])) return;
  // Replace in place where the order holds, so kept cards are not moved.
  if (now.length === cards.length && now.every((c, i) => c.dataset.session === cards[i].dataset.session)) {
    now.forEach((c, i) => { if (c !== cards[i]) c.replaceWith(cards[i]); });
    return;
  }
  list.replaceChildren(...cards);
}

export async function loadTabs() {
  clearTimeout(tabTimer);
  let res;
  try {
    res = await api('GET', '/api/v1/sessions');
  } catch (e) {
    scheduleTabs(); // a failed refresh is shown (guard) and tried again
    if (absent(e)) {
      clearTimeout(tabTimer);
      $('tab-count').textContent = 'Open tabs are not available from this daemon (it has no GET /api/v1/sessions).';
      $('tab-list').replaceChildren();
      return;
    }
    throw e;
  }
  const items = res.items || [];
  renderTabs(items);
  const live = items.filter((s) => s.connected).length;
  $('tab-count').textContent = items.length
    ? `${items.length} ${items.length === 1 ? 'tab' : 'tabs'} (${live} connected), newest first; refreshes every ${TAB_REFRESH_MS / 1000} s`
    : 'No tabs are open.';
  scheduleTabs();
}

function scheduleTabs() {
  clearTimeout(tabTimer);
  tabTimer = setTimeout(() => { if (!$('tabs').hidden && !document.hidden) refreshTabs(); }, TAB_REFRESH_MS);
}

let tabGuard = (fn) => fn();
function refreshTabs() { return tabGuard(loadTabs); }

export function initTabs(guard) {
  tabGuard = guard;
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && !$('tabs').hidden) refreshTabs();
  });
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
