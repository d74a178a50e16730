// The try-it form: generated from a tool's input schema (strings, numbers,
// integers, booleans, enums; anything else as JSON), checked in the browser
// with messages drawn from the schema's own keywords, and sent as a real
// call. A SCHEMA_VIOLATION from the daemon is shown on the field its JSON
// pointer names.
import { el, api, badge, statusKind, ApiError } from './lib.js';

let seq = 0;

function kindOf(s) {
  if (Array.isArray(s.enum)) return 'enum';
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') : s.type;
  return ['string', 'number', 'integer', 'boolean'].includes(t) ? t : 'json';
}

function control(name, s, required) {
  const kind = kindOf(s);
  let c;
  if (kind === 'enum' || (kind === 'boolean' && !required)) {
    c = el('select');
    const opts = kind === 'enum' ? s.enum : [true, false];
    c.append(el('option', required ? 'choose…' : '(leave out)'));
    c.firstChild.value = '';
    for (const v of opts) { const o = el('option', JSON.stringify(v).replace(/^"|"$/g, '')); o.value = JSON.stringify(v); c.append(o); }
  } else if (kind === 'boolean') {
    c = el('input'); c.type = 'checkbox';
  } else if (kind === 'json') {
    c = el('textarea'); c.rows = 3; c.placeholder = 'JSON';
  } else {
    c = el('input');
    // A JSON Schema date is YYYY-MM-DD, which is exactly a date input's value.
    c.type = kind !== 'string' ? 'number' : s.format === 'date' ? 'date' : 'text';
    if (kind !== 'string') c.step = kind === 'integer' ? '1' : 'any';
    if (s.default !== undefined) c.placeholder = String(s.default);
  }
  c.name = name;
  c.dataset.kind = kind;
  return c;
}

// read returns [present, value] for a control, or throws a message.
function read(c) {
  const k = c.dataset.kind;
  if (k === 'boolean' && c.type === 'checkbox') return [true, c.checked];
  if (c.value === '') return [false];
  if (k === 'enum' || k === 'boolean') return [true, JSON.parse(c.value)];
  if (k === 'number' || k === 'integer') {
    const n = Number(c.value);
    if (!Number.isFinite(n)) throw new Error('must be a number');
    return [true, n];
  }
  if (k === 'json') {
    try { return [true, JSON.parse(c.value)]; } catch { throw new Error('is not valid JSON'); }
  }
  return [true, c.value];
}

// check applies the schema's keywords to one value; '' means it passes.
export function check(s, v) {
  const k = kindOf(s);
  if (k === 'integer' && !Number.isInteger(v)) return 'must be a whole number';
  if (typeof v === 'number') {
    if (s.minimum !== undefined && v < s.minimum) return `must be at least ${s.minimum}`;
    if (s.maximum !== undefined && v > s.maximum) return `must be at most ${s.maximum}`;
    if (s.exclusiveMinimum !== undefined && v <= s.exclusiveMinimum) return `must be more than ${s.exclusiveMinimum}`;
    if (s.exclusiveMaximum !== undefined && v >= s.exclusiveMaximum) return `must be less than ${s.exclusiveMaximum}`;
  }
  if (typeof v === 'string') {
    const n = [...v].length;
    if (s.minLength !== undefined && n < s.minLength) return `must be at least ${s.minLength} character${s.minLength === 1 ? '' : 's'}`;
    if (s.maxLength !== undefined && n > s.maxLength) return `must be at most ${s.maxLength} character${s.maxLength === 1 ? '' : 's'}`;
    if (s.pattern !== undefined) {
      try { if (!new RegExp(s.pattern, 'u').test(v)) return `must match ${s.pattern}`; } catch { /* the daemon checks it */ }
    }
  }
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) return 'must be one of ' + s.enum.map((e) => JSON.stringify(e)).join(', ');
  return '';
}

function fieldOf(pointer, message) {
  const m = /^\/([^/]+)/.exec(pointer || '');
  if (m) return m[1].replace(/~1/g, '/').replace(/~0/g, '~');
  const miss = /missing propert(?:y|ies) '([^']+)'/.exec(message || '');
  return miss ? miss[1] : '';
}

// tryIt builds the form for tool t into a fresh element.
export function tryIt(t) {
  const schema = t.inputSchema || {};
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const form = el('form', undefined, 'tryit');
  form.noValidate = true; // our messages, from the schema, not the browser's
  form.append(el('h3', 'Try it'));
  const fields = {};
  for (const [name, s] of Object.entries(props)) {
    const id = `try-${++seq}`;
    const c = control(name, s || {}, required.has(name));
    c.id = id;
    const label = el('label', name + (required.has(name) ? ' *' : ''));
    label.htmlFor = id;
    const msg = el('span', '', 'field-error');
    msg.id = id + '-msg';
    msg.setAttribute('aria-live', 'polite');
    c.setAttribute('aria-describedby', msg.id);
    const row = el('div', undefined, 'field');
    row.dataset.field = name;
    row.append(label, c);
    if (s && s.description) row.append(el('small', s.description, 'muted'));
    row.append(msg);
    form.append(row);
    fields[name] = { c, msg, s: s || {} };
  }
  if (!Object.keys(props).length) form.append(el('p', 'This tool takes no input.', 'muted'));
  const skip = el('input'); skip.type = 'checkbox'; skip.id = `try-${++seq}`;
  const skipLabel = el('label', ' send without checking in the browser', 'muted');
  skipLabel.prepend(skip);
  const send = el('button', 'Call ' + t.name); send.type = 'submit';
  const out = el('div', undefined, 'result');
  out.setAttribute('aria-live', 'polite');
  form.append(el('div', undefined, 'row'), out);
  form.children[form.children.length - 2].append(send, skipLabel);

  const mark = (name, text) => {
    const f = fields[name];
    if (!f) return false;
    f.msg.textContent = text ? `${name} ${text}` : '';
    f.c.setAttribute('aria-invalid', text ? 'true' : 'false');
    return true;
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    out.replaceChildren();
    const input = {};
    let bad = null;
    for (const [name, f] of Object.entries(fields)) {
      mark(name, '');
      let present, v;
      try { [present, v] = read(f.c); } catch (e) { if (!skip.checked) { mark(name, e.message); bad = bad || f.c; } continue; }
      if (!present) {
        if (required.has(name) && !skip.checked) { mark(name, 'is required'); bad = bad || f.c; }
        continue;
      }
      const why = skip.checked ? '' : check(f.s, v);
      if (why) { mark(name, why); bad = bad || f.c; continue; }
      input[name] = v;
    }
    if (bad) { bad.focus(); return; }
    send.disabled = true;
    out.append(el('p', 'calling…', 'muted'));
    try {
      const body = { input };
      if (t.sessionId || (t.origin && t.origin.sessionId)) body.sessionId = t.sessionId || t.origin.sessionId;
      const res = await api('POST', '/api/v1/tools/' + encodeURIComponent(t.name) + '/call', body);
      showResult(out, res);
    } catch (e) {
      const b = e instanceof ApiError ? e.body : null;
      const d = e.details || {};
      if (e.code === 'SCHEMA_VIOLATION') {
        const vs = d.violations || [{ pointer: d.pointer, message: e.message }];
        let first = null;
        for (const v of vs) {
          const name = fieldOf(v.pointer, v.message);
          if (mark(name, `${v.message} (${v.pointer || '/'})`) && !first) first = fields[name].c;
        }
        if (first) first.focus();
      }
      if (b && b.invocationId) showResult(out, b);
      else out.replaceChildren(el('p', e.message, 'error'));
    } finally {
      send.disabled = false;
    }
  });
  return form;
}

function showResult(out, res) {
  const head = el('p');
  head.append(badge(res.status, statusKind(res.status)), el('span', ' invocation ' + res.invocationId, 'muted'));
  out.replaceChildren(head);
  if (res.error) out.append(el('p', `${res.error.code}: ${res.error.message}`, 'error'));
  if (res.result !== undefined) out.append(el('pre', JSON.stringify(res.result, null, 2)));
  if (res.status === 'awaiting_approval') out.append(el('p', 'Waiting for approval: see Approvals.', 'muted'));
}
