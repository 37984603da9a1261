// The web chat page: log in, list / create / join rooms, chat, see who comes and goes and who is
// online, leave. No framework: a few DOM nodes (index.html) and one state object. The page talks
// to the server it was served from, at ws(s)://<host>/<path> (the path is a <meta
// name="strix-ws-path">). After a reconnect it logs in with its resume token and gets back what it
// missed (resume.ts).

import * as proto from './protocol';
import { msg_type, error_code, resume_status } from './protocol';
import { chat_connection, conn_state } from './connection';
import { log_view } from './log_view';
import { recovery, room_seqs } from './resume';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

interface page_state {
  name: string;
  password: string; // kept for a login when the resume token is refused
  token: Uint8Array | null; // the newest login_res's resume token: single use
  login_by: 'password' | 'token' | '';
  me: proto.player | null;
  room: proto.room | null;
  members: Map<bigint, proto.member>;
  seqs: room_seqs | null; // of `room`
  back_to: { room: bigint; seqs: room_seqs } | null; // the room the page was in when the socket dropped
  rec: recovery | null;
  seq: bigint;
}

const st: page_state = { name: '', password: '', token: null, login_by: '', me: null, room: null, members: new Map(),
                         seqs: null, back_to: null, rec: null, seq: 0n };
const log = new log_view($('log'));
const line = (text: string, cls = '') => log.line(text, cls);

function ws_url(): string {
  const meta = document.querySelector('meta[name="strix-ws-path"]') as HTMLMetaElement | null;
  const path = meta?.content || '/ws';
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`;
}

function show(): void {
  document.body.dataset.login = st.me ? 'yes' : 'no';
  document.body.dataset.room = st.room ? st.room.id.toString() : '';
  document.body.dataset.loginBy = st.me ? st.login_by : '';
  $('me').textContent = st.me ? `${st.me.name} (player ${st.me.id})` : '';
  $('room-name').textContent = st.room ? `room ${st.room.id} '${st.room.name}'` : 'no room';
  const ul = $<HTMLUListElement>('members');
  ul.replaceChildren(...[...st.members.values()].map((m) => {
    const li = document.createElement('li');
    li.textContent = m.name;
    li.dataset.name = m.name;
    li.dataset.online = m.online ? 'yes' : 'no';
    if (!m.online) li.className = 'offline';
    return li;
  }));
}

function set_state(s: conn_state, detail: string): void {
  const el = $('conn');
  el.textContent = s === 'open' ? 'connected' : s === 'connecting' ? 'connecting...' : detail;
  el.dataset.state = s;
  if (s !== 'open') {
    // The login will put the account back in its room: remember what the page has of it.
    if (st.room && st.seqs) st.back_to = { room: st.room.id, seqs: st.seqs };
    st.rec = null;
    st.seqs = null;
    st.me = null;
    st.room = null;
    st.members.clear();
    show();
  }
}

function rooms_listed(rooms: proto.room[]): void {
  const ul = $<HTMLUListElement>('rooms');
  ul.replaceChildren(...rooms.map((r) => {
    const li = document.createElement('li');
    const b = document.createElement('button');
    b.textContent = `join ${r.name}`;
    b.dataset.room = r.id.toString();
    b.onclick = () => send(proto.join_room(r.id));
    li.append(b, ` ${r.id} (${r.members} member${r.members === 1 ? '' : 's'})`);
    return li;
  }));
}

function entered(room: proto.room, members: proto.member[], last_seq: bigint): void {
  st.room = room;
  st.members = new Map(members.map((m) => [m.id, m]));
  const back = st.back_to?.room === room.id ? st.back_to : null;
  st.back_to = null;
  if (back) {
    // Put back by the login after a reconnect: ask for what was missed.
    line(`back in room ${room.id} '${room.name}'`, 'notice');
    st.seqs = back.seqs;
    st.seqs.rejoined(last_seq);
    st.rec = new recovery(room.id, last_seq, st.seqs, {
      send,
      chat: show_chat,
      note: (text, cls = 'notice', after = null) => log.line(text, cls, after),
    });
  } else {
    line(`joined room ${room.id} '${room.name}'`, 'notice');
    st.seqs = new room_seqs(last_seq);
  }
  show();
}

// A chat message of the room the page is in, unless shown already; its log line or null.
function show_chat(m: proto.chat_line): HTMLElement | null {
  if (!st.seqs || m.room_id !== st.room?.id || !st.seqs.add(m.seq)) return null;
  return log.chat(m);
}

function log_in(): void {
  if (!st.name) return;
  if (st.token) {
    st.login_by = 'token';
    send(proto.login(st.name, '', st.token));
    st.token = null; // spent, whatever the answer
  } else if (st.password) {
    st.login_by = 'password';
    send(proto.login(st.name, st.password));
  }
}

function set_member(p: proto.player, online: boolean, what: string): void {
  st.members.set(p.id, { ...p, online });
  line(`* ${p.name} ${what}`, 'notice');
}

function received(m: proto.message): void {
  switch (m.type) {
    case msg_type.login_res:
      st.me = m.player;
      st.token = m.resume_token;
      line(`logged in as ${m.player.name}${m.created ? ' (new account)' : ''}` +
           (st.login_by === 'token' ? ' with the resume token' : ''), 'notice');
      send(proto.list_rooms());
      break;
    case msg_type.create_room_res:
      entered(m.room, st.me ? [{ ...st.me, online: true }] : [], 0n);
      break;
    case msg_type.join_room_res:
      entered(m.room, m.members, m.last_seq);
      break;
    case msg_type.leave_room_res:
      line(`left room ${m.room_id}`, 'notice');
      st.room = null;
      st.seqs = null;
      st.rec = null;
      st.members.clear();
      send(proto.list_rooms());
      break;
    case msg_type.list_rooms_res:
      rooms_listed(m.rooms);
      break;
    case msg_type.chat_msg:
      show_chat(m);
      break;
    case msg_type.resume_res:
      if (st.rec?.resumed(m)) break;
      if (m.status === resume_status.gap && st.seqs && m.room_id === st.room?.id && m.to_seq > st.seqs.top) {
        // Unrequested: a cluster node could deliver these seqs from neither Redis nor the database.
        line(`messages #${st.seqs.top + 1n}..#${m.to_seq} were lost by the server`, 'error');
        st.seqs.lose(st.seqs.top, m.to_seq);
      }
      break;
    case msg_type.history_res:
      st.rec?.paged(m);
      break;
    case msg_type.member_joined:
      set_member(m.player, true, 'joined');
      break;
    case msg_type.member_presence:
      if (st.members.has(m.player.id)) set_member(m.player, m.online, m.online ? 'is back online' : 'went offline');
      break;
    case msg_type.member_left:
      st.members.delete(m.player.id);
      line(`* ${m.player.name} left`, 'notice');
      break;
    case msg_type.error_res:
      line(`error: ${msg_type[m.request] ?? m.request}: ${error_code[m.code] ?? m.code}: ${m.reason}`, 'error');
      if (m.request !== msg_type.login_req) break;
      if (m.code === error_code.invalid_token && st.password) {
        line('the resume token was refused: logging in with the password', 'notice');
        log_in();
      } else {
        st.password = '';
      }
      break;
    case msg_type.pong_res:
      break;
  }
  show();
}

const conn = new chat_connection(ws_url(), {
  state: set_state,
  // After every (re)connect: log in again, with the resume token (the password if there is none);
  // the server puts the account back into its room and says so with a join_room_res.
  opened: log_in,
  frame: (bytes) => {
    try {
      const m = proto.decode(bytes);
      if (m) received(m);
    } catch (e) {
      line(`bad frame from the server: ${(e as Error).message}`, 'error');
    }
  },
});

function send(frame: Uint8Array): void {
  if (!conn.send(frame)) line('not connected: try again once the page says connected', 'error');
}

function form(id: string, act: () => void): void {
  $<HTMLFormElement>(id).onsubmit = (ev) => {
    ev.preventDefault();
    act();
  };
}

form('login-form', () => {
  st.name = $<HTMLInputElement>('name').value.trim();
  st.password = $<HTMLInputElement>('password').value;
  st.token = null;
  st.back_to = null;
  log_in();
});
form('create-form', () => send(proto.create_room($<HTMLInputElement>('new-room').value.trim())));
form('chat-form', () => {
  const input = $<HTMLInputElement>('text');
  if (!input.value) return;
  st.seq += 1n;
  send(proto.chat(input.value, st.seq));
  input.value = '';
});
$('refresh').onclick = () => send(proto.list_rooms());
$('leave').onclick = () => send(proto.leave_room());
$('drop').onclick = () => conn.drop();
// A ping now and then keeps the connection inside the server's --idle-timeout-ms.
window.setInterval(() => conn.send(proto.ping(BigInt(Date.now()))), 60000);

show();
conn.open();
