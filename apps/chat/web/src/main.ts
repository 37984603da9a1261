// The web chat page: log in, list / create / join rooms, chat, see who comes and goes, leave.
// No framework: a few DOM nodes (index.html) and one state object. The page talks to the server
// it was served from, at ws(s)://<host>/<path> (the path is a <meta name="strix-ws-path">).

import * as proto from './protocol';
import { msg_type, error_code } from './protocol';
import { chat_connection, conn_state } from './connection';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

interface page_state {
  name: string;
  password: string;
  me: proto.player | null;
  room: proto.room | null;
  members: Map<bigint, string>;
  seq: bigint;
}

const st: page_state = { name: '', password: '', me: null, room: null, members: new Map(), seq: 0n };

function ws_url(): string {
  const meta = document.querySelector('meta[name="strix-ws-path"]') as HTMLMetaElement | null;
  const path = meta?.content || '/ws';
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`;
}

function line(text: string, cls = ''): void {
  const log = $<HTMLDivElement>('log');
  const div = document.createElement('div');
  div.textContent = text;
  if (cls) div.className = cls;
  log.appendChild(div);
  log.scrollTop = log.scrollHeight;
}

function show(): void {
  document.body.dataset.login = st.me ? 'yes' : 'no';
  document.body.dataset.room = st.room ? st.room.id.toString() : '';
  $('me').textContent = st.me ? `${st.me.name} (player ${st.me.id})` : '';
  $('room-name').textContent = st.room ? `room ${st.room.id} '${st.room.name}'` : 'no room';
  const ul = $<HTMLUListElement>('members');
  ul.replaceChildren(...[...st.members.values()].map((n) => {
    const li = document.createElement('li');
    li.textContent = n;
    return li;
  }));
}

function set_state(s: conn_state, detail: string): void {
  const el = $('conn');
  el.textContent = s === 'open' ? 'connected' : s === 'connecting' ? 'connecting...' : detail;
  el.dataset.state = s;
  if (s !== 'open') {
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

function entered(room: proto.room, members: proto.player[]): void {
  st.room = room;
  st.members = new Map(members.map((m) => [m.id, m.name]));
  line(`joined room ${room.id} '${room.name}'`, 'notice');
  show();
}

function received(m: proto.message): void {
  switch (m.type) {
    case msg_type.login_res:
      st.me = m.player;
      line(`logged in as ${m.player.name}${m.created ? ' (new account)' : ''}`, 'notice');
      send(proto.list_rooms());
      break;
    case msg_type.create_room_res:
      entered(m.room, st.me ? [st.me] : []);
      break;
    case msg_type.join_room_res:
      entered(m.room, m.members);
      break;
    case msg_type.leave_room_res:
      line(`left room ${m.room_id}`, 'notice');
      st.room = null;
      st.members.clear();
      send(proto.list_rooms());
      break;
    case msg_type.list_rooms_res:
      rooms_listed(m.rooms);
      break;
    case msg_type.chat_msg:
      line(`[${m.room_id}#${m.seq}] ${m.sender.name}: ${m.text}`, 'chat');
      break;
    case msg_type.member_joined:
      st.members.set(m.player.id, m.player.name);
      line(`* ${m.player.name} joined`, 'notice');
      break;
    case msg_type.member_left:
      st.members.delete(m.player.id);
      line(`* ${m.player.name} left`, 'notice');
      break;
    case msg_type.error_res:
      line(`error: ${msg_type[m.request] ?? m.request}: ${error_code[m.code] ?? m.code}: ${m.reason}`, 'error');
      if (m.request === msg_type.login_req) st.password = '';
      break;
    case msg_type.pong_res:
      break;
  }
  show();
}

const conn = new chat_connection(ws_url(), {
  state: set_state,
  // After every (re)connect: log in again with what the form was given; the server puts the
  // account back into its room and says so with a join_room_res.
  opened: () => {
    if (st.name && st.password) send(proto.login(st.name, st.password));
  },
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
  send(proto.login(st.name, st.password));
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
