// Shared helpers of the operator console: DOM building (textContent only,
// never innerHTML), the API client with the token this tab signed in with
// (the operator's admin token, or a user's access token, renewed once on a
// 401), an SSE reader over fetch (EventSource cannot send the
// Authorization header) and a few formatters.
export const $ = (id) => document.getElementById(id);
export const KEY = 'switchboard.console.token';
// MODE is 'user' while a person of the host app is signed in through the
// daemon's authorization server (auth.js); absent for the operator.
export const MODE = 'switchboard.console.mode';
// REFRESH is that user's refresh token.
export const REFRESH = 'switchboard.console.refresh';
export const userMode = () => sessionStorage.getItem(MODE) === 'user';

export function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

export function button(text, onClick, cls) {
  const b = el('button', text, cls);
  b.type = 'button';
  b.addEventListener('click', onClick);
  return b;
}

// ApiError carries the daemon's error envelope ({code, message, details}).
export class ApiError extends Error {
  constructor(status, body, fallback) {
    const e = body && body.error;
    super(e ? `${e.code}: ${e.message}` : fallback);
    this.status = status;
    this.code = e && e.code;
    this.details = e && e.details;
    this.body = body;
  }
}

let onUnauthorized = () => {};
// whenUnauthorized sets what a refused token does: fn(err, why), why being
// the reason a user's sign-in could not be renewed (else undefined).
export function whenUnauthorized(fn) { onUnauthorized = fn; }

let renew = null;
// whenExpired sets how a user's access token is renewed: fn() resolves to
// null once a new one is stored, or to why it could not be.
export function whenExpired(fn) { renew = fn; }

let renewing = null; // one renewal shared by the requests refused together

// renewed answers a 401 to a request sent with token sent: {again: true}
// when it is worth sending again with the token now stored (renewed by
// this call, or by another request's meanwhile), else {why} it is not
// (why is undefined for a token that is not renewed at all: only a user's
// is; the operator's admin token does not expire).
async function renewed(sent) {
  if (!userMode() || !renew || !sent) return {};
  const now = sessionStorage.getItem(KEY);
  if (now && now !== sent) return { again: true };
  if (!renewing) renewing = renew().finally(() => { renewing = null; });
  const why = await renewing;
  return why === null ? { again: true } : { why };
}

// refused reports a 401 that renewing did not cure — unless the tab has
// since signed out or in again: an answer to an older token must not end
// (or rewrite the message of) what came after it.
function refused(sent, err, why) {
  if (sent && sessionStorage.getItem(KEY) === sent) onUnauthorized(err, why);
}

function headers(token, body) {
  return { Authorization: 'Bearer ' + (token || ''), ...(body ? { 'Content-Type': 'application/json' } : {}) };
}

// send makes one request; a user's 401 is answered by renewing the token
// once and sending again.
async function send(path, init, signal) {
  for (let retried = false; ; retried = true) {
    const sent = sessionStorage.getItem(KEY);
    const res = await fetch(path, { ...init, headers: headers(sent, init.body), signal });
    if (res.ok) return res;
    const data = await res.json().catch(() => null);
    const err = new ApiError(res.status, data, res.statusText);
    if (res.status === 401 && !(signal && signal.aborted)) {
      const r = retried ? {} : await renewed(sent);
      if (r.again) continue;
      // Aborted while its body was read (another request's 401 signed
      // out first): its bare "Unauthorized" must not replace that message.
      if (!(signal && signal.aborted)) refused(sent, err, r.why);
    }
    throw err;
  }
}

export async function api(method, path, body) {
  const res = await send(path, { method, body: body ? JSON.stringify(body) : undefined });
  return res.status === 204 ? null : await res.json().catch(() => null);
}

// stream reads an SSE route and calls onEvent(kind, data) per frame until
// signal aborts; it resolves when the stream ends (the caller reconnects).
export async function stream(path, onEvent, signal) {
  const res = await send(path, {}, signal);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value.replace(/\r\n?/g, '\n');
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let kind = 'message';
      const data = [];
      for (const line of frame.split('\n')) {
        if (line.startsWith('event:')) kind = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length) {
        let parsed = null;
        try { parsed = JSON.parse(data.join('\n')); } catch { parsed = data.join('\n'); }
        onEvent(kind, parsed);
      }
    }
  }
}

// when renders a timestamp with its full date, in the operator's locale;
// the ISO form is the element's title.
export function when(ts) {
  const t = el('time', ts ? new Date(ts).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' }) : '—');
  if (ts) { t.dateTime = ts; t.title = ts; }
  return t;
}

// duration says how long something took the way a person would: "840 ms",
// "12.3 s", "2 min 28 s", "1 h 5 min" (an approval wait is minutes, not
// 147633.3 ms). The exact number of milliseconds is the element's title.
export function duration(ms) {
  const s = ms / 1000;
  let text;
  if (ms < 1000) text = `${Math.round(ms)} ms`;
  else if (s < 60) text = `${s.toFixed(1)} s`;
  else if (s < 3600) text = `${Math.floor(s / 60)} min ${Math.floor(s % 60)} s`;
  else text = `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  const t = el('small', ' ' + text, 'muted');
  t.title = `${ms} ms`;
  return t;
}

// jsonBlock is an expandable JSON view: a <details> whose summary says what
// it holds.
export function jsonBlock(label, value, open) {
  const d = el('details');
  d.append(el('summary', label), el('pre', JSON.stringify(value, null, 2)));
  d.open = !!open;
  return d;
}

export function badge(text, kind) {
  return el('span', text, 'badge ' + (kind || ''));
}

// statusKind maps an outcome to a badge colour.
export function statusKind(s) {
  if (['succeeded', 'approved', 'done', 'ok', 'connected'].includes(s)) return 'good';
  if (['failed', 'denied', 'timed_out', 'expired', 'error'].includes(s)) return 'bad';
  if (['cancelled', 'revoked'].includes(s)) return 'muted';
  return 'wait';
}

// errorBox shows an error (or clears it with null) in a live region.
export function showError(box, err) {
  box.replaceChildren();
  if (err) box.append(el('p', err.message || String(err), 'error'));
}

// absent answers whether an error means "this daemon has no such route".
export function absent(err) {
  return err instanceof ApiError && err.status === 404 && err.code === 'NOT_FOUND' && /no route/.test(err.message);
}

// followCall re-reads an invocation until it settles and renders it into
// out: its status, then its error or result. Short pauses: a console
// follows one call a person just started.
export async function followCall(out, id) {
  const line = el('p', 'running…', 'muted');
  out.append(line);
  for (let i = 0; i < 120; i++) {
    let inv;
    try { inv = await api('GET', '/api/v1/invocations/' + encodeURIComponent(id)); } catch (e) { line.textContent = e.message; line.className = 'error'; return; }
    if (!['pending', 'awaiting_approval', 'dispatched'].includes(inv.status)) {
      line.className = '';
      line.replaceChildren(el('span', 'call '), badge(inv.status, statusKind(inv.status)));
      if (inv.error) out.append(el('p', `${inv.error.code}: ${inv.error.message}`, 'error'));
      if (inv.result !== undefined) out.append(jsonBlock('Result', inv.result, true));
      return;
    }
    line.textContent = 'call ' + inv.status.replace('_', ' ') + '…';
    await new Promise((r) => setTimeout(r, 250));
  }
}

// labelled fills rows into tbody and labels each cell with its column's
// heading (data-label), which the narrow layout shows beside the value
// when a table stacks into cards.
export function labelled(tbody, rows) {
  const heads = [...tbody.closest('table').querySelectorAll('thead th')].map((th) => th.textContent);
  for (const tr of rows) [...tr.cells].forEach((td, i) => { if (heads[i]) td.dataset.label = heads[i]; });
  tbody.replaceChildren(...rows);
}

// fillTable reads a list route ({items}) into tbody with one row per item,
// says how many in count (none, or "No <noun> yet.", when there are none,
// and the empty table is hidden), and answers the items: [] when this
// daemon has no such route.
export async function fillTable(path, body, count, row, noun, none) {
  let res;
  try {
    res = await api('GET', path);
  } catch (e) {
    if (absent(e)) { $(body).replaceChildren(); $(count).textContent = `This daemon cannot list ${noun} (not available).`; return []; }
    throw e;
  }
  const items = res.items || [];
  labelled($(body), items.map(row));
  const box = $(body).closest('.scroll');
  if (box) box.hidden = !items.length;
  $(count).textContent = items.length ? `${items.length} ${items.length === 1 ? noun.replace(/s$/, '') : noun}, newest first` : (none || `No ${noun} yet.`);
  return items;
}
