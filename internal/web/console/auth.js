// Signing in as a user: the console is a public OAuth client
// (switchboard-console) of the daemon's embedded authorization server.
// Authorization code with PKCE (S256): the verifier and state wait in this
// tab's sessionStorage while the browser goes through the host app's
// sign-in and the consent page, and comes back to /console/?code=&state=.
// The access token is for <origin>/api/v1 with scope console; it lives 15
// minutes and is renewed with the refresh token when the daemon refuses
// it (lib.js). The token's payload is read only to say who is signed in;
// the daemon decides what the token may do.
import { KEY, MODE, REFRESH } from './lib.js';

const CLIENT = 'switchboard-console';
const PKCE = 'switchboard.console.pkce';
const redirectURI = () => location.origin + '/console/';
const resource = () => location.origin + '/api/v1';

function b64url(bytes) {
  let s = '';
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function random() {
  const b = new Uint8Array(32);
  crypto.getRandomValues(b);
  return b64url(b);
}

// userSignIn says whether this daemon runs its own authorization server
// (its metadata is served): {offered: true} or {offered: false, why}.
export async function userSignIn() {
  let res;
  try {
    res = await fetch('/.well-known/oauth-authorization-server');
  } catch (e) {
    return { offered: false, why: 'Could not ask the daemon whether users can sign in here: ' + e.message };
  }
  if (res.status === 404) {
    return { offered: false, why: 'Users cannot sign in here: this daemon runs no authorization server of its own (docs/oauth.md, “Mode 2”).' };
  }
  if (!res.ok) return { offered: false, why: `Could not ask the daemon whether users can sign in here (${res.status} ${res.statusText}).` };
  if (!crypto.subtle) return { offered: false, why: 'Signing in as a user needs the console over HTTPS (or on localhost).' };
  return { offered: true };
}

// startUserSignIn sends the browser to the authorization server; view is
// the console view to come back to.
export async function startUserSignIn(view) {
  const verifier = random();
  const state = random();
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  sessionStorage.setItem(PKCE, JSON.stringify({ verifier, state, view }));
  const q = new URLSearchParams({
    response_type: 'code', client_id: CLIENT, redirect_uri: redirectURI(), scope: 'console',
    resource: resource(), code_challenge: challenge, code_challenge_method: 'S256', state,
  });
  location.assign('/oauth/authorize?' + q);
}

// tokenRequest posts to the token endpoint: its JSON, or {error} saying
// why there is no token.
async function tokenRequest(params) {
  let res;
  try {
    res = await fetch('/oauth/token', {
      method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params),
    });
  } catch (e) {
    return { error: e.message };
  }
  const data = await res.json().catch(() => null);
  if (res.ok && data && data.access_token) return data;
  if (data && data.error) return { error: data.error + (data.error_description ? ': ' + data.error_description : '') };
  return { error: `${res.status} ${res.statusText}` };
}

function keep(t) {
  sessionStorage.setItem(KEY, t.access_token);
  sessionStorage.setItem(MODE, 'user');
  if (t.refresh_token) sessionStorage.setItem(REFRESH, t.refresh_token);
}

// finishUserSignIn completes a sign-in the authorization server sent back
// to this page (?code=&state=, or ?error=). It answers null when the URL
// carries no answer, '' once signed in, else what went wrong. The answer
// leaves the address bar either way (a code is good once).
export async function finishUserSignIn() {
  const q = new URLSearchParams(location.search);
  if (!q.has('code') && !q.has('error')) return null;
  let saved = null;
  try { saved = JSON.parse(sessionStorage.getItem(PKCE) || 'null'); } catch { /* none */ }
  sessionStorage.removeItem(PKCE);
  history.replaceState(null, '', location.pathname + (saved && saved.view ? '#' + saved.view : location.hash));
  if (q.has('error')) {
    return 'The sign-in did not complete: ' + q.get('error') + (q.get('error_description') ? ' — ' + q.get('error_description') : '') + '.';
  }
  if (!saved || !saved.state || saved.state !== q.get('state')) {
    return 'That sign-in answer was not started in this tab (its state does not match); sign in again.';
  }
  const t = await tokenRequest({
    grant_type: 'authorization_code', code: q.get('code'), redirect_uri: redirectURI(), client_id: CLIENT,
    code_verifier: saved.verifier, resource: resource(),
  });
  if (t.error) return 'The sign-in was refused: ' + t.error;
  keep(t);
  return '';
}

// renewUserToken trades the refresh token for new tokens: null once they
// are stored, else why the sign-in is over.
export async function renewUserToken() {
  const rt = sessionStorage.getItem(REFRESH);
  if (!rt) return 'Your sign-in has expired; sign in again.';
  const t = await tokenRequest({ grant_type: 'refresh_token', refresh_token: rt, client_id: CLIENT, resource: resource() });
  if (sessionStorage.getItem(REFRESH) !== rt) return 'Signed out.'; // signed out (or in again) meanwhile
  if (t.error) return 'Your sign-in has ended (' + t.error + '); sign in again.';
  keep(t);
  return null;
}

// signedInAs is the token's subject ("user:alice"), read from the JWT's
// payload for display only.
export function signedInAs() {
  try {
    const part = (sessionStorage.getItem(KEY) || '').split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const bytes = Uint8Array.from(atob(part), (c) => c.charCodeAt(0));
    const sub = JSON.parse(new TextDecoder().decode(bytes)).sub;
    return typeof sub === 'string' ? sub : '';
  } catch {
    return '';
  }
}
