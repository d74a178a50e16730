// The assistant's model, as the operator needs to know it: the header says
// which model runs use (or "no model"), and the Assistant view lists the
// configured models (endpoint, the variable the key is read from and
// whether it is set — never the key) or, without one, the lines to copy to
// configure it. Both read GET /api/v1/agent/models (admin only).
import { $, KEY, el, api, badge, absent, labelled } from './lib.js';

let report = null; // the last answer, shared by the header and the view

async function read() {
  try {
    report = await api('GET', '/api/v1/agent/models');
  } catch (e) {
    if (!absent(e)) throw e;
    report = { absent: true, models: [] };
  }
  return report;
}

// pill shows the header's model status; it links to the Assistant view.
function pill(r) {
  const p = $('model-status');
  if (!sessionStorage.getItem(KEY)) return; // signed out while it was read
  p.hidden = false;
  p.title = '';
  if (r.absent) {
    p.textContent = 'assistant: not available';
    p.className = 'pill';
    return;
  }
  const def = r.models.find((m) => m.alias === r.defaultAlias) || r.models[0];
  if (!r.configured || !def) {
    p.textContent = 'no model';
    p.className = 'pill warn';
    p.title = 'The assistant has no model: see how to configure one';
    return;
  }
  p.textContent = 'model: ' + def.model;
  p.className = 'pill ' + (def.keySet === false ? 'warn' : 'ok');
  p.title = `${def.provider} ${def.model}` + (def.baseURL ? ' at ' + def.baseURL : '') + (def.keySet === false ? ` ($${def.apiKeyEnv} is not set)` : '');
}

// refreshModelStatus updates the header once per sign-in.
export async function refreshModelStatus() {
  try {
    pill(await read());
  } catch {
    $('model-status').hidden = true; // a refused token signs out; other errors show in the view
  }
}

export function hideModelStatus() {
  $('model-status').hidden = true;
  report = null;
}

function keyCell(m) {
  const td = el('td');
  if (!m.apiKeyEnv) {
    td.append(el('span', 'none sent', 'muted'));
    return td;
  }
  td.append(el('code', '$' + m.apiKeyEnv), ' ', m.keySet ? badge('set', 'good') : badge('not set', 'bad'));
  return td;
}

function row(m) {
  const tr = el('tr');
  tr.dataset.alias = m.alias;
  const alias = el('td');
  alias.append(el('code', m.alias));
  const can = [m.caps.tools && 'tools', m.caps.streaming && 'streaming', m.caps.vision && 'vision'].filter(Boolean).join(', ');
  const endpoint = el('td');
  if (m.baseURL) endpoint.append(el('code', m.baseURL));
  tr.append(alias, el('td', m.provider), el('td', m.model), endpoint, keyCell(m), el('td', can || '—'));
  return tr;
}

// setupCard says, line by line, how to give the assistant a model.
function setupCard(r) {
  const c = el('article', undefined, 'card setup');
  const s = r.setup;
  c.append(el('h2', 'No model is configured'),
    el('p', 'The assistant (the demo chat, /api/v1/agui, /api/v1/agent/chat) answers every message with MODEL_ERROR until one is. No provider is built in: bring your own key, or a local server.'));
  if (!s) {
    if (r.error) c.append(el('p', `${r.error.code}: ${r.error.message}`, 'error'));
    return c;
  }
  c.append(el('h3', '1. Save a models: section as switchboard.yaml'), el('pre', s.config),
    el('h3', '2. Restart the daemon with it, the key in its environment'), el('pre', s.start),
    el('h3', 'No hosted key? A local OpenAI-compatible server'), el('pre', s.local),
    el('p', 'llama.cpp and vLLM work the same way with their own baseURL; the model must support tool calls. More: ' + s.docs + '.', 'muted'));
  return c;
}

export async function loadAssistant() {
  const r = await read();
  pill(r);
  const body = $('assistant-body');
  if (r.absent) {
    body.replaceChildren(el('p', 'This daemon has no assistant route (not available).', 'muted'));
    return;
  }
  if (!r.configured) {
    body.replaceChildren(setupCard(r));
    return;
  }
  const table = el('table');
  const head = el('thead');
  const hr = el('tr');
  for (const h of ['alias', 'provider', 'model', 'endpoint', 'key', 'can']) hr.append(el('th', h));
  head.append(hr);
  const tbody = el('tbody');
  tbody.id = 'model-list';
  table.append(head, tbody);
  const scroll = el('div', undefined, 'scroll');
  scroll.append(table);
  const n = r.models.length;
  const intro = el('p', `${n} ${n === 1 ? 'model is' : 'models are'} configured. Runs that name no model use the alias ${r.defaultAlias}.`, 'muted');
  intro.id = 'model-count';
  const parts = [intro, scroll];
  if (!r.models.some((m) => m.alias === r.defaultAlias)) {
    parts.push(el('p', `No alias is named ${r.defaultAlias}: a run that names no model fails with MODEL_ERROR. Add one under models: in the config file.`, 'error'));
  }
  if (r.models.some((m) => m.keySet === false)) {
    parts.push(el('p', 'A model whose key variable is not set fails with MODEL_ERROR: start the daemon with the variable in its environment.', 'error'));
  }
  body.replaceChildren(...parts);
  labelled(tbody, r.models.map(row));
}
