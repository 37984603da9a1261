// What the SDK's tests share: a real strix-chat-server (from the build directory in $STRIX_BUILD)
// on free ports with a fresh SQLite database, a TCP relay in front of its WebSocket port that a
// test can cut (both sides closed at once, as a network failure or a server dropping the
// connection would) and hold (connections refused), the built package (<build>/sdk/ts/dist), and
// waits on events.
import { spawn } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const build = path.resolve(process.env.STRIX_BUILD || 'build');
export const sdk = await import(path.join(build, 'sdk/ts/dist/index.js'));

/// A port nothing listens on now (the server's --metrics-port has no 'any port').
async function free_port() {
  const srv = createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/// strix-chat-server with --ws-port on a fresh database, and `args`; { url, stop() }. `again`: a
/// stopped server's { work, port } to start on its database and WebSocket port once more.
export async function start_server(args = [], again = null) {
  const work = again?.work ?? mkdtempSync(path.join(tmpdir(), 'strix-sdk-'));
  const ws_port = String(again?.port ?? 0);
  const p = spawn(path.join(build, 'bin/strix-chat-server'), ['--port', '0', '--ws-port', ws_port, '--db',
    `sqlite:${work}/chat.db`, '--password-cost', 'fast', '--metrics-port', String(await free_port()), '--no-pin',
    '--shards', '2', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d) => { out += d; });
  p.stderr.on('data', (d) => { out += d; });
  const until = Date.now() + 10000;
  let m;
  while (!(m = out.match(/web chat page https?:\/\/127\.0\.0\.1:(\d+)\//))) {
    if (p.exitCode !== null || Date.now() > until) throw new Error(`the server did not start; its output:\n${out}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const port = Number(m[1]);
  return {
    port,
    work,
    url: `${args.includes('--tls-cert') ? 'wss' : 'ws'}://127.0.0.1:${port}/ws`,
    output: () => out,
    /// Ends the server (SIGTERM); its database stays when `keep`.
    async stop(keep = false) {
      if (p.exitCode === null) {
        p.kill('SIGTERM');
        await new Promise((r) => p.once('exit', r));
      }
      if (!keep) rmSync(work, { recursive: true, force: true });
    },
  };
}

/// A TCP relay to 127.0.0.1:`port`: `url` for clients; cut() closes every relayed connection,
/// `held` = true refuses new ones (closed at once), `swallow` = true drops what clients send.
export async function relay(port, ws_path = '/ws') {
  const pairs = new Set();
  const r = { held: false, swallow: false, connections: 0 };
  const srv = createServer((c) => {
    if (r.held) return void c.destroy();
    r.connections += 1;
    const up = connect(port, '127.0.0.1');
    const pair = [c, up];
    pairs.add(pair);
    const end = () => { c.destroy(); up.destroy(); pairs.delete(pair); };
    c.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
    c.on('data', (d) => { if (!r.swallow) up.write(d); });
    up.pipe(c);
  });
  await new Promise((res) => srv.listen(0, '127.0.0.1', res));
  r.url = `ws://127.0.0.1:${srv.address().port}${ws_path}`;
  r.cut = () => { for (const [a, b] of [...pairs]) { a.destroy(); b.destroy(); } pairs.clear(); };
  r.close = () => new Promise((res) => { r.cut(); srv.close(res); });
  return r;
}

/// The next `event` of `client` that `pred` accepts (its arguments), within `ms`.
export function next(client, event, pred = () => true, ms = 10000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { off(); reject(new Error(`no '${event}' event within ${ms} ms`)); }, ms);
    const off = client.on(event, (...args) => {
      if (!pred(...args)) return;
      clearTimeout(timer);
      off();
      resolve(args);
    });
  });
}

/// Waits until `cond()` holds (every 10 ms), at most `ms`.
export async function until(what, cond, ms = 10000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/// A client connected to `url` and logged in as `name` (password `name`-pw); options as given.
export async function logged_in(url, name, options = {}) {
  const c = new sdk.ChatClient(url, { requestTimeoutMs: 5000, pingIntervalMs: 0, ...options });
  await c.connect();
  await c.login({ name, password: `${name}-pw` });
  return c;
}

/// Records every message event of `client` as 'room#seq sender: text' (recovered ones marked).
export function record(client) {
  const seen = [];
  client.on('message', (m, info) => seen.push({ key: `${m.roomId}#${m.seq} ${m.sender.name}: ${m.text}`, m, ...info }));
  return seen;
}
