// The backend's webhook checks (webhooks.mjs) on their own, without a server: the worked example
// of docs/webhooks.md, a changed body or signature, an old or a future timestamp, and a retried
// batch kept once.
//   node --test examples/chat_app/test/webhooks.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { event_log, verify_signature } from '../webhooks.mjs';

// docs/webhooks.md, "Verifying a request".
const doc = {
  secret: Buffer.from('whsec-example-0123456789'),
  timestamp: '1700000000',
  body: Buffer.from('{"id":"x","events":[]}'),
  signature: 'v1=354b2b88ff972684a1e346fd63e74023d194b692a0042553b0db922dba00661f',
};

test("the documentation's worked example verifies, and nothing changed does", () => {
  const at = Number(doc.timestamp);
  assert.equal(verify_signature(doc.secret, doc.timestamp, doc.signature, doc.body, at), true);
  assert.equal(verify_signature(doc.secret, doc.timestamp, doc.signature, Buffer.from('{"id":"y","events":[]}'), at), false);
  assert.equal(verify_signature(doc.secret, doc.timestamp, doc.signature.replace(/.$/, '0'), doc.body, at), false);
  assert.equal(verify_signature(Buffer.from('another-secret-0123'), doc.timestamp, doc.signature, doc.body, at), false);
  assert.equal(verify_signature(doc.secret, doc.timestamp, doc.signature.slice(3), doc.body, at), false);
  assert.equal(verify_signature(doc.secret, undefined, doc.signature, doc.body, at), false);
});

test('a timestamp more than five minutes away is refused', () => {
  const at = Number(doc.timestamp);
  assert.equal(verify_signature(doc.secret, doc.timestamp, doc.signature, doc.body, at + 300), true);
  assert.equal(verify_signature(doc.secret, doc.timestamp, doc.signature, doc.body, at + 301), false);
  assert.equal(verify_signature(doc.secret, doc.timestamp, doc.signature, doc.body, at - 301), false);
});

test('a retried batch is kept once; a bad one is refused and counted', () => {
  const secret = Buffer.from('a-secret-of-some-length');
  const signed = (batch) => {
    const body = Buffer.from(JSON.stringify(batch));
    const ts = String(Math.floor(Date.now() / 1000));
    const mac = createHmac('sha256', secret).update(`${ts}.`).update(body).digest('hex');
    return [{ 'x-strix-timestamp': ts, 'x-strix-signature': `v1=${mac}` }, body];
  };
  const log = new event_log();
  const user = { id: 1, name: 'ann' };
  const first = { id: 'b1', events: [{ id: 'e1', type: 'user.online', user }, { id: 'e2', type: 'user.offline', user }] };
  const second = { id: 'b2', events: [{ id: 'e2', type: 'user.offline', user }, { id: 'e3', type: 'user.online', user }] };
  assert.equal(log.receive(secret, ...signed(first)), 204);
  assert.equal(log.receive(secret, ...signed(first)), 204);
  assert.equal(log.receive(secret, ...signed(second)), 204);
  const [headers, body] = signed(first);
  assert.equal(log.receive(secret, { ...headers, 'x-strix-signature': 'v1=00' }, body), 401);
  assert.deepEqual(log.events.map((e) => e.id), ['e1', 'e2', 'e3']);
  assert.deepEqual([log.duplicates, log.refused], [3, 1]);
});
