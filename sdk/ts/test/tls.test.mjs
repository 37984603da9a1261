// The SDK over wss://: strix-chat-server with --tls-cert (a self-signed certificate the test makes
// with openssl), the client given a WebSocket class (the `ws` package's, trusting that
// certificate): a login, a room and a message over TLS.
//   STRIX_BUILD=<build dir> node --test sdk/ts/test/
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build, sdk, start_server } from './helpers.mjs';

const WebSocket = createRequire(path.join(build, 'sdk/ts/package.json'))('ws');
const dir = mkdtempSync(path.join(tmpdir(), 'strix-sdk-tls-'));
let server;

before(async () => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
    '-keyout', `${dir}/key.pem`, '-out', `${dir}/cert.pem`], { stdio: 'ignore' });
  server = await start_server(['--tls-cert', `${dir}/cert.pem`, '--tls-key', `${dir}/key.pem`]);
});
after(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('wss://: login, a room and a message over TLS', async () => {
  assert.match(server.url, /^wss:\/\//);
  const ca = readFileSync(`${dir}/cert.pem`);
  class trusting extends WebSocket {
    constructor(url) { super(url, { ca }); }
  }
  const c = new sdk.ChatClient(server.url, { WebSocket: trusting, pingIntervalMs: 0 });
  try {
    await c.connect();
    const me = await c.login({ name: 'tess', password: 'tess-pw' });
    assert.equal(me.player.name, 'tess');
    const room = await c.createRoom('vault');
    const m = await c.send(room.id, 'sealed');
    assert.deepEqual([m.seq, m.text, m.sender.name], [1n, 'sealed', 'tess']);
  } finally {
    c.close();
  }
  // Without the certificate trusted the connection is refused.
  const plain = new sdk.ChatClient(server.url, { pingIntervalMs: 0 });
  await assert.rejects(plain.connect(), (e) => e instanceof sdk.ChatConnectionError);
});
