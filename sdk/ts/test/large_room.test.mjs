// A large room (docs/protocol.md, "Large rooms"): past the server's --member-list-limit the join
// lists nobody; the client says so (membersListed false), keeps room.members / room.online from
// the join and the notices that come once the room is small again, and chat flows as before.
//   STRIX_BUILD=<build dir> node --test sdk/ts/test/
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { logged_in, next, record, start_server, until } from './helpers.mjs';

let server;
const clients = [];
const client = async (name) => {
  const c = await logged_in(server.url, name);
  clients.push(c);
  return c;
};

before(async () => { server = await start_server(['--member-list-limit', '2', '--notice-delay-ms', '0']); });
after(async () => {
  for (const c of clients) c.close();
  await server.stop();
});

test('a join past the limit lists nobody, gives the counts, and chat reaches everyone', async () => {
  const a = await client('lara');
  const b = await client('lena');
  const c = await client('lola');
  const room = await a.createRoom('hall');
  const seen_b = next(a, 'memberJoined', (e) => e.roomId === room.id);
  const jb = await b.joinRoom(room.id);
  assert.equal(jb.membersListed, true);
  assert.deepEqual(jb.members.map((m) => m.name), ['lara', 'lena']);
  await seen_b;

  const heard = [];
  a.on('memberJoined', (e) => heard.push(e.player.name));
  const jc = await c.joinRoom(room.id);
  assert.equal(jc.membersListed, false);
  assert.deepEqual(jc.members, []);
  assert.equal(jc.room.members, 3);
  assert.equal(jc.room.online, 3);
  const state = c.rooms.get(room.id);
  assert.equal(state?.membersListed, false);
  assert.equal(state?.members.size, 0);

  const got = [a, b, c].map(record);
  await a.send(room.id, 'hello all');
  for (const g of got) await until('the message', () => g.length === 1);
  for (const g of got) assert.equal(g[0].m.text, 'hello all');
  assert.deepEqual(heard, [], 'lola joined a large room: not announced');

  // lena leaves: two members, announced again; lola's counts follow the notice.
  const seen_left = next(c, 'memberLeft', (e) => e.roomId === room.id);
  await b.leaveRoom(room.id);
  await seen_left;
  assert.equal(c.rooms.get(room.id)?.room.members, 2);
  assert.equal(c.rooms.get(room.id)?.room.online, 2);
  assert.equal(c.rooms.get(room.id)?.members.size, 0, 'no partial list');
});
