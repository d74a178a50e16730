// "Your access", for a user signed in through the authorization server:
// the grants they gave on the consent page (GET /oauth/grants answers
// theirs; Revoke is DELETE /oauth/grants/{id}, which stops that client's
// tokens at their next request — this console's own grant included) and
// their assistant runs (GET /runs answers theirs).
import { el, api, button, badge, statusKind, when, showError, fillTable } from './lib.js';

const CONSOLE_CLIENT = 'switchboard-console';

function grantRow(g) {
  const tr = el('tr');
  tr.dataset.grant = g.id;
  const who = el('td');
  who.append(el('span', g.clientName || g.client));
  if (g.client === CONSOLE_CLIENT) who.append(badge('this console', 'live'));
  if (g.redirectHost) who.append(el('small', ' ' + g.redirectHost, 'muted'));
  const created = el('td');
  created.append(when(g.createdAt));
  const used = el('td');
  used.append(g.lastUsedAt ? when(g.lastUsedAt) : el('span', '—', 'muted'));
  const state = el('td');
  if (g.revokedAt) {
    state.append(badge('revoked', 'muted'), when(g.revokedAt));
  } else {
    const out = el('span', '', 'result');
    out.setAttribute('aria-live', 'polite');
    const b = button(g.client === CONSOLE_CLIENT ? 'Revoke (signs you out)' : 'Revoke', async () => {
      b.disabled = true;
      try {
        await api('DELETE', '/api/v1/oauth/grants/' + encodeURIComponent(g.id));
        await loadAccess();
      } catch (e) {
        if (e.status === 401) return; // this console's own grant: signed out
        showError(out, e);
        b.disabled = false;
      }
    }, 'danger');
    b.setAttribute('aria-label', `Revoke ${g.clientName || g.client}`);
    state.append(b, out);
  }
  tr.append(who, el('td', (g.scopes || []).join(' ')), created, used, state);
  return tr;
}

function runRow(r) {
  const tr = el('tr');
  tr.dataset.run = r.runId;
  const st = el('td');
  st.append(badge(r.status, statusKind(r.status)));
  const t = el('td');
  t.append(when(r.createdAt));
  tr.append(el('td', r.runId), el('td', r.threadId || '—'), st, el('td', r.steps ?? '—'), t);
  return tr;
}

export async function loadAccess() {
  await Promise.all([
    fillTable('/api/v1/oauth/grants', 'grant-list', 'grant-count', grantRow, 'grants', 'You have not let any app act for you.'),
    fillTable('/api/v1/runs?limit=100', 'myrun-list', 'myrun-count', runRow, 'runs', 'Your assistant has not run yet.'),
  ]);
}
