// The example application's backend: the part of an app that owns its users and trusts
// strix-chat-server with the chat. Plain node:http, one file to read from top to bottom:
//
//   POST /login      {username, password} -> a session cookie (demo users, password "demo")
//   GET  /session    who the cookie belongs to
//   POST /token      a JWT for the chat server (HS256, the secret of the server's --jwt-key):
//                    the page logs in with it, and asks again when the SDK says tokenExpired
//   POST /announce   {room_id, text}: a message posted through the server API (--api-url)
//   POST /webhooks   the server's signed events (webhooks.mjs); GET /events: the newest ones
//   GET  /, /app.js  the page (page/, built with esbuild on the chat client SDK)
//
//   node server.mjs --chat-url ws://127.0.0.1:8081/ws --jwt-key var/jwt.key \
//        --webhook-secret var/webhook.secret [--port 8080] [--api-url http://127.0.0.1:8082 --api-key var/api.key]
// (run.sh starts it with the chat server; README.md.)
import { createServer } from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SignJWT } from 'jose';
import { event_log } from './webhooks.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: opt } = parseArgs({ options: {
  host: { type: 'string', default: '127.0.0.1' },
  port: { type: 'string', default: '8080' }, // 0: any free port (printed)
  'chat-url': { type: 'string', default: 'ws://127.0.0.1:8081/ws' }, // what the page connects to
  'jwt-key': { type: 'string' }, // the file strix-chat-server's --jwt-key reads
  'webhook-secret': { type: 'string' }, // the file strix-chat-server's --webhook-secret reads
  'api-url': { type: 'string' }, // strix-chat-server's --api-port, e.g. http://127.0.0.1:8082
  'api-key': { type: 'string' }, // a file whose first line starts with one of the server's --api-keys
  'token-ttl': { type: 'string', default: '600' }, // seconds a chat JWT is valid
  dist: { type: 'string', default: path.join(here, 'dist') }, // the built page
} });
if (!opt['jwt-key'] || !opt['webhook-secret']) {
  console.error('usage: node server.mjs --jwt-key FILE --webhook-secret FILE [--chat-url URL] [--port N] [--api-url URL --api-key FILE]');
  process.exit(2);
}

// The secrets are read as the chat server reads them: the file's bytes less trailing line breaks
// (JWT key), or less trailing line breaks and spaces (webhook secret).
function read_secret(file, trailing) {
  const bytes = readFileSync(file);
  let n = bytes.length;
  while (n > 0 && trailing.includes(String.fromCharCode(bytes[n - 1]))) --n;
  return bytes.subarray(0, n);
}
const jwt_secret = read_secret(opt['jwt-key'], '\r\n');
const webhook_secret = read_secret(opt['webhook-secret'], '\r\n \t');
const api_key = opt['api-key'] ? readFileSync(opt['api-key'], 'utf8').trim().split(/\s+/)[0] : null;
const token_ttl_s = Number(opt['token-ttl']);
const chat_origin = new URL(opt['chat-url']).origin.replace(/^http/, 'ws');

// The app's users. A real app has its own user store and password hashes; here every demo user's
// password is "demo". The user name is the chat account (the token's `sub`), the display name its
// `name` claim.
const users = new Map([['alice', 'Alice Example'], ['bob', 'Bob Example'], ['carol', 'Carol Example']]);
const demo_password = 'demo';
const sessions = new Map(); // cookie value -> user name (in memory: a restart logs everyone out)
const webhooks = new event_log();

/// A JWT the chat server accepts for `user`: HS256 with the shared secret; sub, name, iat, exp.
async function chat_token(user) {
  const exp = Math.floor(Date.now() / 1000) + token_ttl_s;
  const token = await new SignJWT({ name: users.get(user) })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(user)
    .setIssuedAt()
    .setExpirationTime(exp)
    .sign(jwt_secret);
  return { token, expires_at: exp, chat_url: opt['chat-url'] };
}

/// Posts `text` into a room through the server API. The idempotency key makes a retry safe: when
/// an answer is lost and we post again, the server stores the message once and answers the first
/// seq.
async function announce(room_id, text) {
  if (!opt['api-url'] || !api_key) return [501, { error: 'no_api', reason: 'the backend was started without --api-url and --api-key' }];
  const body = JSON.stringify({ text, idempotency_key: randomUUID() });
  let last;
  for (let attempt = 0; attempt < 3; ++attempt) {
    try {
      const res = await fetch(`${opt['api-url']}/api/v1/rooms/${room_id}/messages`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${api_key}`, 'Content-Type': 'application/json' },
        body,
      });
      const answer = await res.json();
      if (res.status < 500) return [res.status, answer]; // done, or refused for good (4xx)
      last = answer;
    } catch (e) {
      last = { error: 'unreachable', reason: String(e.message) };
    }
    await new Promise((r) => setTimeout(r, 200 * (attempt + 1)));
  }
  return [502, last];
}

async function route(req, res, body) {
  const url = new URL(req.url, 'http://backend');
  const user = sessions.get(cookie(req, 'sid')) ?? null;
  const at = `${req.method} ${url.pathname}`;

  if (at === 'GET /' || at === 'GET /app.js') return page(res, url.pathname === '/' ? 'index.html' : 'app.js');
  if (at === 'POST /webhooks') return send(res, webhooks.receive(webhook_secret, req.headers, body));
  if (at === 'GET /events') {
    return json(res, 200, { events: webhooks.events, refused: webhooks.refused, duplicates: webhooks.duplicates });
  }
  if (at === 'POST /login') {
    const { username, password } = parse(body);
    if (!users.has(username) || password !== demo_password) return json(res, 401, { error: 'wrong user name or password' });
    const sid = randomBytes(32).toString('hex');
    sessions.set(sid, username);
    res.setHeader('Set-Cookie', `sid=${sid}; HttpOnly; SameSite=Strict; Path=/`);
    console.log(`login ${username}`);
    return json(res, 200, { user: username, name: users.get(username) });
  }
  if (!user) return json(res, 401, { error: 'log in first' });
  if (at === 'GET /session') return json(res, 200, { user, name: users.get(user) });
  if (at === 'POST /logout') {
    sessions.delete(cookie(req, 'sid'));
    return json(res, 200, {});
  }
  if (at === 'POST /token') return json(res, 200, await chat_token(user));
  if (at === 'POST /announce') {
    const { room_id, text } = parse(body);
    if (!/^\d+$/.test(String(room_id)) || typeof text !== 'string' || !text || text.length > 1000) {
      return json(res, 400, { error: 'room_id (digits) and text (1-1000 characters) please' });
    }
    const [status, answer] = await announce(room_id, `${users.get(user)} announces: ${text}`);
    console.log(`announce by ${user} in room ${room_id}: ${status} ${JSON.stringify(answer)}`);
    return json(res, status, answer);
  }
  return json(res, 404, { error: 'not found' });
}

function page(res, file) {
  const type = file.endsWith('.js') ? 'text/javascript' : 'text/html';
  res.writeHead(200, {
    'Content-Type': `${type}; charset=utf-8`,
    'Cache-Control': 'no-cache',
    // The page loads its own script and talks to this backend and the chat server, nothing else.
    'Content-Security-Policy': `default-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self' ${chat_origin}`,
  });
  res.end(readFileSync(path.join(opt.dist, file)));
}

const json = (res, status, value) => {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(value));
};
const send = (res, status) => {
  res.writeHead(status);
  res.end();
};
const parse = (body) => {
  try {
    return JSON.parse(body.toString('utf8')) ?? {};
  } catch {
    return {};
  }
};
const cookie = (req, name) => (req.headers.cookie ?? '').split(/;\s*/).find((c) => c.startsWith(`${name}=`))?.slice(name.length + 1);

const max_body = 1 << 20; // the webhook batches are the largest bodies (100 events)
const server = createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size > max_body) {
      json(res, 413, { error: 'body too large' });
      req.destroy();
    } else {
      chunks.push(c);
    }
  });
  req.on('end', () => {
    route(req, res, Buffer.concat(chunks)).catch((e) => {
      console.error(e);
      if (!res.headersSent) json(res, 500, { error: 'internal error' });
    });
  });
});
server.listen(Number(opt.port), opt.host, () => {
  console.log(`chat app backend http://${opt.host}:${server.address().port}/ (chat server ${opt['chat-url']}, ` +
    `server API ${opt['api-url'] ?? 'off'})`);
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
