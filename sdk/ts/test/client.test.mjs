// The SDK against a real strix-chat-server: logins and their errors, rooms (create, list, join,
// leave) with member events, chat order and acknowledgements, history pages, read markers,
// typing, direct messages, blocks, moderation, and the client's own errors (timeouts, no
// connection).
//   STRIX_BUILD=<build dir> node --test sdk/ts/test/
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { logged_in, next, record, relay, sdk, start_server, until } from './helpers.mjs';

const { ChatClient, ChatError, ChatTimeoutError, ChatConnectionError, ErrorCode, MemberRole, ModAction, MsgKind, RoomKind } = sdk;
let server;
const clients = [];
const client = async (name, options) => {
  const c = await logged_in(server.url, name, options);
  clients.push(c);
  return c;
};

before(async () => { server = await start_server(); });
after(async () => {
  for (const c of clients) c.close();
  await server.stop();
});

test('password logins: a new account, the same again, a wrong password', async () => {
  const c = new ChatClient(server.url, { pingIntervalMs: 0 });
  clients.push(c);
  const states = [];
  c.on('state', (s) => states.push(s));
  await c.connect();
  const logins = [];
  c.on('login', (r) => logins.push(r));
  const res = await c.login({ name: 'ann', password: 'ann-pw' });
  assert.equal(res.player.name, 'ann');
  assert.equal(res.created, true);
  assert.equal(res.method, 'password');
  assert.equal(res.resumeToken?.length, 32);
  assert.deepEqual(res.rooms, []);
  assert.equal(logins.length, 1);
  assert.equal(c.player?.id, res.player.id);
  assert.deepEqual(states, ['connecting', 'open']);

  // A second login on the session is refused: the server's code and reason come with the error.
  await assert.rejects(c.login({ name: 'ann', password: 'ann-pw' }),
    (e) => e instanceof ChatError && e.code === 'already_logged_in' && e.codeNumber === ErrorCode.already_logged_in &&
      e.request === 'login_req' && e.reason.length > 0);

  const again = await client('ann');
  assert.equal(again.player.id, res.player.id);
  const wrong = new ChatClient(server.url, { pingIntervalMs: 0 });
  clients.push(wrong);
  await wrong.connect();
  await assert.rejects(wrong.login({ name: 'ann', password: 'not-it' }),
    (e) => e instanceof ChatError && e.code === 'wrong_password' && e.codeNumber === 4);
  assert.equal(wrong.player, null);
  // After a failed login the session may try again.
  const ok = await wrong.login({ name: 'ann', password: 'ann-pw' });
  assert.equal(ok.player.id, res.player.id);
});

test('rooms: create, list, join with members and events, leave', async () => {
  const a = await client('rosa');
  const b = await client('ravi');
  const joined = next(a, 'roomJoined');
  const room = await a.createRoom('porch');
  const [ev] = await joined;
  assert.equal(ev.cause, 'create');
  assert.equal(ev.room.id, room.id);
  assert.equal(room.name, 'porch');
  assert.equal(room.kind, RoomKind.group);
  assert.equal(a.rooms.get(room.id)?.members.get(a.player.id)?.role, MemberRole.owner);

  const listed = await b.listRooms();
  assert.ok(listed.some((r) => r.id === room.id && r.name === 'porch' && r.members === 1));

  const seen_join = next(a, 'memberJoined', (e) => e.roomId === room.id);
  const j = await b.joinRoom(room.id);
  assert.deepEqual(j.members.map((m) => m.name), ['rosa', 'ravi']);
  assert.equal(j.lastSeq, 0n);
  assert.equal((await seen_join)[0].player.name, 'ravi');
  assert.ok(b.rooms.get(room.id)?.joined);

  await assert.rejects(b.joinRoom(room.id), (e) => e instanceof ChatError && e.code === 'already_in_room');
  await assert.rejects(b.joinRoom(999999n), (e) => e instanceof ChatError && e.code === 'unknown_room' && e.codeNumber === 7);

  const seen_left = next(a, 'memberLeft', (e) => e.roomId === room.id);
  const left = next(b, 'roomLeft');
  await b.leaveRoom(room.id);
  assert.deepEqual((await left)[0], { roomId: room.id, cause: 'leave' });
  assert.equal((await seen_left)[0].player.name, 'ravi');
  assert.equal(b.rooms.has(room.id), false);
  assert.equal(a.rooms.get(room.id)?.members.has(b.player.id), false);
  await assert.rejects(b.send(room.id, 'not a member'), (e) => e instanceof ChatError && e.code === 'not_in_room');
});

test('chat: pipelined sends are acknowledged in order; the other member gets each once, in seq order', async () => {
  const a = await client('cleo');
  const b = await client('cody');
  const room = await a.createRoom('bench');
  await b.joinRoom(room.id);
  const got = record(b);
  const n = 30;
  const texts = Array.from({ length: n }, (_, i) => `line ${i + 1} of ${n}`);
  const acks = await Promise.all(texts.map((t) => a.send(room.id, t)));
  assert.deepEqual(acks.map((m) => m.seq), texts.map((_, i) => BigInt(i + 1)));
  assert.deepEqual(acks.map((m) => m.text), texts);
  await until('cody has every line', () => got.length >= n);
  assert.deepEqual(got.map((g) => g.key), texts.map((t, i) => `${room.id}#${i + 1} cleo: ${t}`));
  assert.ok(got.every((g) => !g.recovered));
  assert.equal(b.rooms.get(room.id)?.seqs.have, BigInt(n));

  // History: the newest page, then pages backwards and forwards.
  const newest = await b.history(room.id, { limit: 10 });
  assert.deepEqual(newest.messages.map((m) => m.seq), Array.from({ length: 10 }, (_, i) => BigInt(n - 9 + i)));
  assert.equal(newest.more, true);
  assert.equal(newest.lastSeq, BigInt(n));
  const older = await b.history(room.id, { beforeSeq: newest.messages[0].seq, limit: 5 });
  assert.deepEqual(older.messages.map((m) => m.text), texts.slice(n - 15, n - 10));
  const first = await b.history(room.id, { afterSeq: 0n, beforeSeq: 3n });
  assert.deepEqual(first.messages.map((m) => m.seq), [1n, 2n]);
  const tail = await b.history(room.id, { afterSeq: BigInt(n - 2) });
  assert.deepEqual(tail.messages.map((m) => m.seq), [BigInt(n - 1), BigInt(n)]);
  assert.equal(tail.more, false);
  await assert.rejects(b.history(room.id, { afterSeq: 1n, beforeSeq: 9n }), (e) => e instanceof ChatError && e.code === 'bad_request');

  // Read markers: the account's other session hears of it.
  const b2 = await client('cody');
  const marker = next(b2, 'readMarker', (e) => e.roomId === room.id);
  assert.equal(await b.markRead(room.id, 12n), 12n);
  assert.deepEqual((await marker)[0], { roomId: room.id, seq: 12n });
  assert.equal(await b.markRead(room.id, 5n), 12n); // only rises

  // Typing: the other member's session hears it; not ours.
  const typing = next(a, 'typing', (e) => e.roomId === room.id);
  assert.equal(b.typing(room.id), true);
  assert.equal((await typing)[0].player.name, 'cody');
  // typing_req has no answer: its refusal is an error event.
  const refused = next(b, 'error');
  b.typing(424242n);
  const [err] = await refused;
  assert.deepEqual([err.request, err.code], ['typing_req', 'not_in_room']);
});

test('direct messages, blocks and moderation', async () => {
  const a = await client('dora');
  const b = await client('dean');
  const peer_joined = next(b, 'roomJoined', (e) => e.room.kind === RoomKind.direct);
  const own_joined = next(a, 'roomJoined', (e) => e.room.kind === RoomKind.direct);
  const dm = await a.sendDirect('dean', 'psst');
  assert.equal((await own_joined)[0].cause, 'direct');
  const [pj] = await peer_joined;
  assert.equal(pj.cause, 'server');
  assert.equal(pj.room.id, dm.roomId);
  assert.equal(dm.seq, 1n);
  await assert.rejects(a.sendDirect('nobody-here', 'hi'), (e) => e instanceof ChatError && e.code === 'unknown_account');

  assert.deepEqual((await b.block('dora')).blocked, true);
  await assert.rejects(a.send(dm.roomId, 'hello?'), (e) => e instanceof ChatError && e.code === 'blocked' && e.request === 'chat_req');
  assert.deepEqual((await b.block('dora', false)).blocked, false);
  assert.equal((await a.send(dm.roomId, 'hello again')).seq >= 2n, true);

  // Moderation in a group room: mute (the notice is the answer), a muted send, kick.
  const room = await a.createRoom('hall');
  await b.joinRoom(room.id);
  const notice = await a.moderate(room.id, ModAction.mute, b.player.id, { seconds: 60 });
  assert.equal(notice.kind, MsgKind.notice);
  assert.equal(notice.notice?.target.name, 'dean');
  await assert.rejects(b.send(room.id, 'can I?'), (e) => e instanceof ChatError && e.code === 'muted');
  await assert.rejects(b.moderate(room.id, ModAction.kick, a.player.id), (e) => e instanceof ChatError && e.code === 'forbidden');
  const removed = next(b, 'roomLeft', (e) => e.roomId === room.id);
  await a.moderate(room.id, ModAction.kick, b.player.id);
  assert.deepEqual((await removed)[0], { roomId: room.id, cause: 'removed' });
});

test("the client's own errors: no connection, a request timeout, a refused connect", async () => {
  const c = new ChatClient(server.url, { pingIntervalMs: 0 });
  await assert.rejects(c.listRooms(), (e) => e instanceof ChatConnectionError);
  assert.equal(c.typing(1n), false);

  // Through a relay the test cuts: a request after the cut fails with the connection.
  const r = await relay(server.port);
  const slow = new ChatClient(r.url, { pingIntervalMs: 0, requestTimeoutMs: 300, reconnect: false });
  clients.push(slow);
  await slow.connect();
  // Before a login only login_req and ping_req are answered; list_rooms_req gets not_logged_in.
  await assert.rejects(slow.listRooms(), (e) => e instanceof ChatError && e.code === 'not_logged_in');
  assert.ok((await slow.ping()) >= 0);
  r.cut();
  await until('the cut reaches the client', () => !slow.connected);
  await assert.rejects(slow.ping(), (e) => e instanceof ChatConnectionError);
  await r.close();

  // A timeout: the relay drops what the client sends, so its ping is never answered.
  const mute = await relay(server.port);
  const quiet = new ChatClient(mute.url, { pingIntervalMs: 0, requestTimeoutMs: 200, reconnect: false });
  clients.push(quiet);
  await quiet.connect();
  mute.swallow = true;
  const t0 = Date.now();
  await assert.rejects(quiet.ping(), (e) => e instanceof ChatTimeoutError && e.ms === 200);
  assert.ok(Date.now() - t0 >= 190);
  await mute.close();

  const nowhere = new ChatClient('ws://127.0.0.1:1/ws', { pingIntervalMs: 0 });
  await assert.rejects(nowhere.connect(), (e) => e instanceof ChatConnectionError);
});
