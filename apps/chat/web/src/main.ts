// The web chat page: log in, list / create / join rooms, be in many at once (a list with unread
// counts; protocol version 2), chat, see who comes and goes, who is online and who is typing,
// leave; message someone by name (a direct room, listed by the peer's name), block them; see
// members' roles and, as the owner or an admin, kick, ban, mute and erase (conversations.ts).
// No framework: a few DOM nodes (index.html) and one state object. The page talks to the
// server it was served from, at ws(s)://<host>/<path> (the path is a <meta name="strix-ws-path">).
// After a reconnect it logs in with its resume token and gets back what it missed in each room
// (resume.ts).

import * as proto from './protocol';
import { msg_type, error_code, resume_status, member_role, mod_action, msg_kind, room_kind } from './protocol';
import { chat_connection, conn_state } from './connection';
import { log_view } from './log_view';
import { recovery, room_seqs } from './resume';
import { draw_room_list, room_view, typing_text } from './rooms';
import { apply_notice, draw_members, mute_seconds, notice_text, role_of } from './conversations';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const typing_every_ms = 3000; // typing_req while the user types (docs/protocol.md, "Typing")
const read_delay_ms = 250; // read_req for live messages in the shown room: a few a second at most
const history_page = 200; // history_req's largest limit

interface page_state {
  name: string;
  password: string; // kept for a login when the resume token is refused
  token: Uint8Array | null; // the newest login_res's resume token: single use
  login_by: 'password' | 'token' | '';
  me: proto.player | null;
  rooms: Map<bigint, room_view>; // the rooms the session is in (or was, until the login puts it back)
  shown: bigint | null; // the room whose log is shown and which the input talks to
  login_reads: Map<bigint, bigint>; // login_res.rooms's read markers, until each room's join_room_res
  login_first: bigint | null; // the room a login shows when none is shown: the first it lists
  login_order: Map<bigint, number>; // the list's order: the login's (oldest join first), then joins
  order_next: number;
  read_timer: number | undefined;
  seq: bigint;
  dm_asked: Set<string>; // names a direct_req went to whose direct room has not come yet
  blocked: Set<bigint>; // accounts this page blocked (block_res; the server keeps no list for it)
}

const st: page_state = { name: '', password: '', token: null, login_by: '', me: null, rooms: new Map(), shown: null,
                         login_reads: new Map(), login_first: null, login_order: new Map(), order_next: 0, read_timer: undefined, seq: 0n,
                         dm_asked: new Set(), blocked: new Set() };
const log_el = $('log');
const lobby = new log_view(log_el, null); // the log while no room is shown
const shown_view = (): room_view | null => (st.shown !== null ? st.rooms.get(st.shown) ?? null : null);
// A notice in the shown room's log.
const line = (text: string, cls = '') => (shown_view()?.log ?? lobby).line(text, cls);

function ws_url(): string {
  const meta = document.querySelector('meta[name="strix-ws-path"]') as HTMLMetaElement | null;
  const path = meta?.content || '/ws';
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`;
}

function show(): void {
  const v = shown_view();
  document.body.dataset.login = st.me ? 'yes' : 'no';
  document.body.dataset.room = v ? v.id.toString() : '';
  document.body.dataset.loginBy = st.me ? st.login_by : '';
  $('me').textContent = st.me ? `${st.me.name} (player ${st.me.id})` : '';
  document.body.dataset.kind = v ? (v.direct ? 'direct' : 'group') : '';
  const me = st.me?.id ?? null;
  document.body.dataset.mod = v && !v.direct && role_of(v, me) >= member_role.admin ? 'yes' : 'no';
  $('room-name').textContent = v ? `${v.title()} #${v.id}` : 'no room';
  draw_room_list($<HTMLUListElement>('my-rooms'), st.rooms.values(), st.shown, open_room);
  draw_members($<HTMLUListElement>('members'), v, me, moderate);
  const peer = v?.peer;
  $('block').textContent = peer ? `${st.blocked.has(peer.id) ? 'unblock' : 'block'} ${peer.name}` : '';
  $('leave').textContent = v?.direct ? 'leave conversation' : 'leave room';
  $('typing').textContent = v ? typing_text(v.typists()) : '';
}

/// A moderator's action on `target` in the shown room (a mute: for mute_seconds).
function moderate(action: mod_action, target: proto.player): void {
  const v = shown_view();
  if (v) send(proto.moderate(v.id, action, target.id, 0n, action === mod_action.mute ? mute_seconds : 0));
}

function set_state(s: conn_state, detail: string): void {
  const el = $('conn');
  el.textContent = s === 'open' ? 'connected' : s === 'connecting' ? 'connecting...' : detail;
  el.dataset.state = s;
  if (s !== 'open') {
    // The login will put the session back in its rooms: each keeps what the page has of it.
    for (const v of st.rooms.values()) v.went_offline();
    st.me = null;
    show();
  }
}

/// Shows room `id`'s log (the lobby's for null) and marks what it has as read.
function open_room(id: bigint | null): void {
  st.shown = id !== null && st.rooms.has(id) ? id : null;
  const v = shown_view();
  (v?.log ?? lobby).show();
  if (v) read_up(v, true);
  show();
}

/// The shown room `v` is read up to its newest seq: the badge goes to 0 and read_req tells the
/// server, at once (`now`: the user opened it) or within read_delay_ms (a live message).
function read_up(v: room_view, now: boolean): void {
  if (v.seqs.top > v.read) v.read = v.seqs.top;
  if (!now) {
    st.read_timer ??= window.setTimeout(() => {
      st.read_timer = undefined;
      const s = shown_view();
      if (s) read_up(s, true);
    }, read_delay_ms);
    return;
  }
  if (!v.joined || !st.me || v.read <= v.read_sent) return;
  v.read_sent = v.read;
  conn.send(proto.read(v.id, v.read));
}

function rooms_listed(rooms: proto.room[]): void {
  const ul = $<HTMLUListElement>('rooms');
  ul.replaceChildren(...rooms.filter((r) => r.kind !== room_kind.direct).map((r) => {
    const li = document.createElement('li');
    const b = document.createElement('button');
    const mine = st.rooms.has(r.id);
    b.textContent = `${mine ? 'open' : 'join'} ${r.name}`;
    b.dataset.room = r.id.toString();
    b.onclick = () => (st.rooms.has(r.id) ? open_room(r.id) : send(proto.join_room(r.id)));
    li.append(b, ` #${r.id} (${r.members} member${r.members === 1 ? '' : 's'})`);
    return li;
  }));
}

/// In `room` now: by a join, create or direct message of the user's (shown), put back by a login
/// (a room the page had before its socket dropped recovers what it missed), or put in a direct
/// room by someone's first message to the account (listed, not shown: its badge counts it).
function entered(room: proto.room, members: proto.member[], last_seq: bigint): void {
  const by_login = st.login_reads.get(room.id);
  st.login_reads.delete(room.id);
  const peer = room.kind === room_kind.direct ? members.find((m) => m.id !== st.me?.id) ?? null : null;
  const asked = by_login === undefined && (peer === null || st.dm_asked.delete(peer.name));
  let v = st.rooms.get(room.id);
  if (v && !v.joined) {
    v.room = room;
    v.log.line(`back in room ${room.id} '${v.title()}'`, 'notice');
    v.seqs.rejoined(last_seq);
    const w = v;
    v.rec = new recovery(room.id, last_seq, v.seqs, {
      send,
      chat: (m) => show_chat(w, m),
      note: (text, cls = 'notice', after = null) => w.log.line(text, cls, after),
    });
  } else if (!v) {
    // A user's join starts the account's marker at the join point, a login's at its stored one;
    // a direct room someone else opened has not been read (its marker starts at 0).
    const read = by_login ?? (asked ? last_seq : 0n);
    // A direct room entered with messages in it shows them: a history_req brings them.
    const fetch = peer !== null && by_login === undefined && last_seq > 0n;
    const seqs = new room_seqs(fetch ? 0n : last_seq);
    seqs.rejoined(last_seq);
    v = new room_view(room, seqs, read, new log_view(log_el, room.id));
    st.rooms.set(room.id, v);
    v.peer = peer;
    v.log.line(peer ? `direct messages with ${peer.name} (room ${room.id})` : `joined room ${room.id} '${room.name}'`,
               'notice');
    if (fetch) {
      v.fetch_to = last_seq;
      send(proto.history(room.id, 0n, 0n, history_page));
    }
  }
  if (by_login !== undefined) v.marked(by_login);
  if (peer) v.peer = peer;
  v.order = st.login_order.get(room.id) ?? st.order_next++;
  v.joined = true;
  v.join_seq = last_seq;
  v.members = new Map(members.map((m) => [m.id, m]));
  // The login's rooms come from their shards in any order: show the first listed (or, were it
  // deleted meanwhile, whichever comes).
  const first = st.login_first === null || st.login_first === room.id || !st.login_reads.has(st.login_first);
  if (by_login === undefined ? asked : shown_view() === null && first) open_room(room.id);
  else if (v.id === st.shown) read_up(v, true);
}

// A chat message of room `v`, unless shown already; its log line or null. A notice is shown as
// its text and applied (conversations.ts).
function show_chat(v: room_view, m: proto.chat_line): HTMLElement | null {
  if (!v.seqs.add(m.seq)) return null;
  v.spoke(m.sender.id);
  if (m.kind !== msg_kind.notice) return v.log.chat(m);
  const me = st.me?.id ?? null;
  const el = v.log.chat(m, `* ${notice_text(m, me)}`);
  apply_notice(v, m, me);
  return el;
}

// The answer to the history_req of a direct room entered with messages in it: those up to the
// join are shown; any older than the page the server gave are never coming.
function fetched(v: room_view, m: Extract<proto.message, { type: msg_type.history_res }>): void {
  const to = v.fetch_to;
  v.fetch_to = 0n;
  const first = m.messages.length > 0 && m.messages[0].seq <= to ? m.messages[0].seq : to + 1n;
  v.seqs.lose(0n, first - 1n);
  for (const c of m.messages) if (c.seq <= to) show_chat(v, c);
  if (v.id === st.shown) read_up(v, true);
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

function logged_in(m: Extract<proto.message, { type: msg_type.login_res }>): void {
  st.me = m.player;
  st.token = m.resume_token;
  line(`logged in as ${m.player.name}${m.created ? ' (new account)' : ''}` +
       (st.login_by === 'token' ? ' with the resume token' : ''), 'notice');
  // A join_room_res follows for each listed room; one the account left meanwhile is gone.
  st.login_reads = new Map(m.rooms.map((r) => [r.id, r.last_read_seq]));
  st.login_first = m.rooms.length > 0 ? m.rooms[0].id : null;
  st.login_order = new Map(m.rooms.map((r, i) => [r.id, i]));
  st.order_next = m.rooms.length;
  for (const v of [...st.rooms.values()]) {
    if (st.login_reads.has(v.id)) continue;
    st.rooms.delete(v.id);
    line(`no longer in room ${v.id} '${v.room.name}'`, 'notice');
  }
  if (st.shown !== null && !st.rooms.has(st.shown)) open_room(null);
  send(proto.list_rooms());
}

function left(room_id: bigint): void {
  const v = st.rooms.get(room_id);
  st.rooms.delete(room_id);
  if (st.shown === room_id) open_room(st.rooms.keys().next().value ?? null);
  const what = `room ${room_id}${v ? ` '${v.title()}'` : ''}`;
  line(v?.removed ? `removed from ${what}: ${v.removed}` : `left ${what}`, 'notice');
  send(proto.list_rooms());
}

// A room notice about a member: joined or presence (`online`), or left (null).
function set_member(m: { room_id: bigint; player: proto.player }, online: boolean | null, what: string): void {
  const v = st.rooms.get(m.room_id);
  if (!v) return;
  if (online === null) v.members.delete(m.player.id);
  else v.members.set(m.player.id, { ...m.player, online, role: v.members.get(m.player.id)?.role ?? member_role.member });
  v.log.line(`* ${m.player.name} ${what}`, 'notice');
}

function received(m: proto.message): void {
  switch (m.type) {
    case msg_type.login_res:
      logged_in(m);
      break;
    case msg_type.create_room_res:
      // The creator is the room's owner.
      entered(m.room, st.me ? [{ ...st.me, online: true, role: member_role.owner }] : [], 0n);
      break;
    case msg_type.join_room_res:
      entered(m.room, m.members, m.last_seq);
      break;
    case msg_type.leave_room_res:
      left(m.room_id);
      break;
    case msg_type.list_rooms_res:
      rooms_listed(m.rooms);
      break;
    case msg_type.chat_msg: {
      const v = st.rooms.get(m.room_id);
      if (v && show_chat(v, m) && v.id === st.shown) read_up(v, false);
      break;
    }
    case msg_type.resume_res: {
      const v = st.rooms.get(m.room_id);
      if (!v || v.rec?.resumed(m)) break;
      if (m.status === resume_status.gap && m.to_seq > v.seqs.top) {
        // Unrequested: a cluster node could deliver these seqs from neither Redis nor the database.
        v.log.line(`messages #${v.seqs.top + 1n}..#${m.to_seq} were lost by the server`, 'error');
        v.seqs.lose(v.seqs.top, m.to_seq);
      }
      break;
    }
    case msg_type.history_res: {
      const v = st.rooms.get(m.room_id);
      if (v && v.fetch_to > 0n) fetched(v, m);
      else v?.rec?.paged(m);
      break;
    }
    case msg_type.block_res:
      if (m.blocked) st.blocked.add(m.player.id);
      else st.blocked.delete(m.player.id);
      line(m.blocked ? `blocked ${m.player.name}: no direct messages from them` : `unblocked ${m.player.name}`, 'notice');
      break;
    case msg_type.read_res:
    case msg_type.read_marker:
      st.rooms.get(m.room_id)?.marked(m.seq);
      break;
    case msg_type.typing:
      if (m.player.id !== st.me?.id) st.rooms.get(m.room_id)?.typing_from(m.player.id, m.player.name, show);
      break;
    case msg_type.member_joined:
      set_member(m, true, 'joined');
      break;
    case msg_type.member_presence:
      if (st.rooms.get(m.room_id)?.members.has(m.player.id)) {
        set_member(m, m.online, m.online ? 'is back online' : 'went offline');
      }
      break;
    case msg_type.member_left:
      set_member(m, null, 'left');
      break;
    case msg_type.error_res:
      line(`error: ${msg_type[m.request] ?? m.request}: ${error_code[m.code] ?? m.code}: ${m.reason}`, 'error');
      if (m.request === msg_type.direct_req) st.dm_asked.clear();
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
  // the server puts the session back into each of its rooms and says so with a join_room_res.
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
  // Perhaps another account: its rooms come with its login.
  st.rooms.clear();
  st.blocked.clear();
  st.dm_asked.clear();
  open_room(null);
  log_in();
});
form('create-form', () => {
  const input = $<HTMLInputElement>('new-room');
  send(proto.create_room(input.value.trim()));
  input.value = '';
});
// A message to someone by name: in the direct room the page has with them, or a direct_req
// (the server opens the room, and the page shows it when its join_room_res comes).
form('dm-form', () => {
  const to = $<HTMLInputElement>('dm-to');
  const text = $<HTMLInputElement>('dm-text');
  const name = to.value.trim();
  if (!name || !text.value) return;
  st.seq += 1n;
  const known = [...st.rooms.values()].find((v) => v.joined && v.peer?.name === name);
  if (known) {
    open_room(known.id);
    send(proto.chat(known.id, text.value, st.seq));
  } else {
    st.dm_asked.add(name);
    send(proto.direct(name, text.value, st.seq));
  }
  to.value = '';
  text.value = '';
});
form('chat-form', () => {
  const input = $<HTMLInputElement>('text');
  const v = shown_view();
  if (!input.value || !v) return;
  st.seq += 1n;
  send(proto.chat(v.id, input.value, st.seq));
  input.value = '';
  v.typed_at = -Infinity; // typing again after this is news
});
// While the user types: typing_req for the shown room, at most every 3 s (the others show the
// line for 5 s after each).
$('text').oninput = () => {
  const v = shown_view();
  const now = performance.now();
  if (!v || !v.joined || !st.me || now - v.typed_at < typing_every_ms) return;
  v.typed_at = now;
  conn.send(proto.typing_in(v.id));
};
$('refresh').onclick = () => send(proto.list_rooms());
$('leave').onclick = () => {
  if (st.shown !== null) send(proto.leave_room(st.shown));
};
$('block').onclick = () => {
  const peer = shown_view()?.peer;
  if (peer) send(proto.block(peer.name, !st.blocked.has(peer.id)));
};
// A moderator's erase button on a message line (log_view.ts).
log_el.onclick = (ev) => {
  const b = (ev.target as HTMLElement).closest('button.erase');
  const seq = (b?.closest('div.chat') as HTMLElement | null)?.dataset.seq;
  const v = shown_view();
  if (v && seq !== undefined) send(proto.moderate(v.id, mod_action.erase, 0n, BigInt(seq)));
};
$('drop').onclick = () => conn.drop();
// A ping now and then keeps the connection inside the server's --idle-timeout-ms.
window.setInterval(() => conn.send(proto.ping(BigInt(Date.now()))), 60000);

show();
conn.open();
