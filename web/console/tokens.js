// The agent tokens view: mint a token for an agent with allow and deny
// globs over tool names (the secret is shown once, right after), list
// every token, revoke one (its next request is refused).
import { $, el, api, button, badge, when, showError, labelled } from './lib.js';

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
