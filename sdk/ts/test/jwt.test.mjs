// The SDK's JWT logins against strix-chat-server with --jwt-key (an HS256 secret the test writes;
// tokens signed here with node:crypto): a login by token (display name, expiry), a refused token,
// refresh, and an expiry: tokenExpired, then a refresh keeps one session while another that does
// not refresh is closed with token_expired and does not reconnect; a JWT session whose connection
// is cut comes back (by its resume token when the login gave one, else by its JWT) and resumes its
// room. Skipped on a server without JWT logins.
//   STRIX_BUILD=<build dir> node --test sdk/ts/test/
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build, next, record, relay, sdk, start_server, until } from './helpers.mjs';

const help = execFileSync(path.join(build, 'bin/strix-chat-server'), ['--help'], { encoding: 'utf8' });
const skip = help.includes('--jwt-key') ? false : 'this server has no JWT logins (--jwt-key)';
const secret = randomBytes(32).toString('hex');
const dir = mkdtempSync(path.join(tmpdir(), 'strix-sdk-jwt-'));
let server;
const clients = [];

const b64url = (x) => Buffer.from(typeof x === 'string' ? x : JSON.stringify(x)).toString('base64url');
/// An HS256 token with `claims` (exp in seconds from now).
function jwt(claims, key = secret) {
  const body = `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url(claims)}`;
  return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
}
const now = () => Math.floor(Date.now() / 1000);

before(async () => {
  if (skip) return;
  writeFileSync(`${dir}/secret`, secret);
  server = await start_server(['--jwt-key', `${dir}/secret`, '--jwt-leeway', '0', '--jwt-grace', '2', '--logins', 'both']);
});
after(async () => {
  for (const c of clients) c.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function client(options = {}) {
  const c = new sdk.ChatClient(server.url, { pingIntervalMs: 0, reconnect: { firstDelayMs: 50 }, ...options });
  clients.push(c);
  await c.connect();
  return c;
}

test('a JWT login, a refused token, refresh', { skip }, async () => {
  const exp = now() + 600;
  const c = await client();
  const res = await c.login({ jwt: jwt({ sub: 'jade', name: 'Jade Doe', exp }) });
  assert.equal(res.method, 'jwt');
  assert.equal(res.player.name, 'jade');
  assert.equal(res.displayName, 'Jade Doe');
  assert.equal(res.expiresAt, BigInt(exp));
  const room = await c.createRoom('app-room');
  assert.equal((await c.send(room.id, 'signed in')).seq, 1n);
  assert.equal(await c.refresh(jwt({ sub: 'jade', exp: exp + 600 })), BigInt(exp + 600));

  const forged = await client();
  await assert.rejects(forged.login({ jwt: jwt({ sub: 'jade', exp }, 'x'.repeat(64)) }),
    (e) => e instanceof sdk.ChatError && e.code === 'invalid_token' && e.reason.length > 0);
  assert.equal(forged.player, null);
});

test('expiry: tokenExpired, a refresh keeps the session; without one it is closed for good', { skip }, async () => {
  // 1 to 2 s of life (whole seconds): a token made to last 1 s could expire before its login.
  const exp = now() + 2;
  const kept = await client();
  const lapsed = await client();
  await kept.login({ jwt: jwt({ sub: 'kim', exp }) });
  await lapsed.login({ jwt: jwt({ sub: 'lee', exp }) });
  kept.on('tokenExpired', () => void kept.refresh(jwt({ sub: 'kim', exp: now() + 600 })));
  const errors = [];
  const reconnects = [];
  lapsed.on('error', (e) => errors.push(e));
  lapsed.on('reconnecting', (r) => reconnects.push(r));
  const [expired] = await next(lapsed, 'tokenExpired', () => true, 5000);
  assert.equal(expired.expiresAt, BigInt(exp));
  await until('the lapsed session is closed', () => !lapsed.connected, 5000);
  assert.deepEqual(errors.map((e) => e.code), ['token_expired']);
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(reconnects, []);
  assert.ok(kept.connected);
  assert.ok((await kept.ping()) >= 0);
});

test('a cut JWT session logs in again by itself and resumes', { skip }, async () => {
  const r = await relay(server.port);
  try {
    const c = await client();
    const w = new sdk.ChatClient(r.url, { pingIntervalMs: 0, reconnect: { firstDelayMs: 50 } });
    clients.push(w);
    await w.connect();
    const first = await w.login({ jwt: jwt({ sub: 'wren', exp: now() + 600 }) });
    await c.login({ jwt: jwt({ sub: 'cole', exp: now() + 600 }) });
    const room = await w.createRoom('den');
    await c.joinRoom(room.id);
    const seen = record(w);
    r.held = true;
    r.cut();
    await until('wren sees the cut', () => !w.connected);
    await c.send(room.id, 'while wren was away');
    const login = next(w, 'login');
    const resumed = next(w, 'resumed');
    r.held = false;
    const [res] = await login;
    assert.equal(res.method, first.resumeToken ? 'resumeToken' : 'jwt');
    assert.equal(res.player.name, 'wren');
    assert.equal((await resumed)[0].recovered, 1);
    assert.deepEqual(seen.map((x) => [x.m.text, x.recovered]), [['while wren was away', true]]);
  } finally {
    await r.close();
  }
});
