// The web chat page: log in, list / create / join rooms, be in many at once (a list with unread
// counts), chat, see who comes and goes, who is online and who is typing, leave; message someone
// by name (a direct room, listed by the peer's name), block them; see members' roles and, as the
// owner or an admin, kick, ban, mute and erase (conversations.ts). No framework: a few DOM nodes
// (index.html) and one state object. The protocol, the connection, reconnects and the resume of
// what was missed are the chat client SDK's (sdk/ts, @strix/chat-client); the page draws its
// events. It talks to the server it was served from, at ws(s)://<host>/<path> (the path is a
// <meta name="strix-ws-path">).

import {
  ChatClient, ChatConnectionError, ChatError, MemberRole as member_role, ModAction as mod_action,
  MsgKind as msg_kind, RoomKind as room_kind,
} from '@strix/chat-client';
import type { ChatEvents, ChatMessage, LoginResult, Player, Room } from '@strix/chat-client';
import { log_view } from './log_view';
import { draw_room_list, room_view, typing_text } from './rooms';
import { apply_notice, draw_members, mute_seconds, notice_text, role_of } from './conversations';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const typing_every_ms = 3000; // typing_req while the user types (docs/protocol.md, "Typing")
const read_delay_ms = 250; // read_req for live messages in the shown room: a few a second at most
const history_page = 200; // history_req's largest limit

interface page_state {
  login_by: 'password' | 'token' | 'jwt' | '';
  me: Player | null;
  rooms: Map<bigint, room_view>; // the rooms the session is in (or was, until the login puts it back)
  shown: bigint | null; // the room whose log is shown and which the input talks to
  login_reads: Map<bigint, bigint>; // the login's read markers, until each room's roomJoined
  login_first: bigint | null; // the room a login shows when none is shown: the first it lists
  login_order: Map<bigint, number>; // the list's order: the login's (oldest join first), then joins
  order_next: number;
  read_timer: number | undefined;
  blocked: Set<bigint>; // accounts this page blocked (block_res; the server keeps no list for it)
}

const st: page_state = { login_by: '', me: null, rooms: new Map(), shown: null, login_reads: new Map(),
                         login_first: null, login_order: new Map(), order_next: 0, read_timer: undefined,
                         blocked: new Set() };
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

const client = new ChatClient(ws_url());

/// Runs a request; a refusal is shown as 'error: <request>: <code>: <reason>'.
function act<T>(p: Promise<T>, then?: (v: T) => void): void {
  p.then((v) => {
    then?.(v);
    show();
  }, (e: unknown) => {
    if (e instanceof ChatError) line(`error: ${e.request}: ${e.code}: ${e.reason}`, 'error');
    else if (e instanceof ChatConnectionError) line('not connected: try again once the page says connected', 'error');
    else line(`error: ${(e as Error).message}`, 'error');
    show();
  });
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
function moderate(action: mod_action, target: Player): void {
  const v = shown_view();
  if (v) act(client.moderate(v.id, action, target.id, { seconds: action === mod_action.mute ? mute_seconds : 0 }));
}

function set_state(s: ChatEvents['state'][0], detail: string): void {
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
  act(client.markRead(v.id, v.read), (seq) => v.marked(seq));
}

function rooms_listed(rooms: Room[]): void {
  const ul = $<HTMLUListElement>('rooms');
  ul.replaceChildren(...rooms.filter((r) => r.kind !== room_kind.direct).map((r) => {
    const li = document.createElement('li');
    const b = document.createElement('button');
    const mine = st.rooms.has(r.id);
    b.textContent = `${mine ? 'open' : 'join'} ${r.name}`;
    b.dataset.room = r.id.toString();
    b.onclick = () => (st.rooms.has(r.id) ? open_room(r.id) : act(client.joinRoom(r.id)));
    li.append(b, ` #${r.id} (${r.members} member${r.members === 1 ? '' : 's'})`);
    return li;
  }));
}

/// In a room now: by a join, create or direct message of the user's (shown), put back by a login
/// (a room the page had before its socket dropped: the client resumes it), or put in a direct
/// room by someone's first message to the account (listed, not shown: its badge counts it).
function entered(j: ChatEvents['roomJoined'][0]): void {
  const { room, members, lastSeq: last_seq } = j;
  const state = client.rooms.get(room.id);
  if (!state) return;
  const by_login = j.cause === 'login' ? st.login_reads.get(room.id) : undefined;
  st.login_reads.delete(room.id);
  const peer = room.kind === room_kind.direct ? members.find((m) => m.id !== st.me?.id) ?? null : null;
  const asked = j.cause === 'join' || j.cause === 'create' || j.cause === 'direct' || (j.cause === 'server' && !peer);
  let v = st.rooms.get(room.id);
  if (v && !v.joined) {
    v.room = room;
    v.log.line(`back in room ${room.id} '${v.title()}'`, 'notice');
  } else if (!v) {
    // A user's join starts the account's marker at the join point, a login's at its stored one;
    // a direct room someone else opened has not been read (its marker starts at 0).
    const read = by_login ?? (asked ? last_seq : 0n);
    v = new room_view(room, state.seqs, read, new log_view(log_el, room.id));
    st.rooms.set(room.id, v);
    v.peer = peer;
    v.log.line(peer ? `direct messages with ${peer.name} (room ${room.id})` : `joined room ${room.id} '${room.name}'`,
               'notice');
    // A direct room entered with messages in it shows them: a history_req brings them.
    if (peer !== null && j.cause !== 'login' && last_seq > 0n) {
      const w = v;
      w.fetch_to = last_seq;
      act(client.history(room.id, { limit: history_page }), (page) => fetched(w, page.messages));
    }
  }
  v.seqs = state.seqs;
  if (by_login !== undefined) v.marked(by_login);
  if (peer) v.peer = peer;
  v.order = st.login_order.get(room.id) ?? st.order_next++;
  v.joined = true;
  v.join_seq = last_seq;
  v.members = new Map(members.map((m) => [m.id, m]));
  v.listed = j.membersListed;
  v.room = room;
  // The login's rooms come from their shards in any order: show the first listed (or, were it
  // deleted meanwhile, whichever comes).
  const first = st.login_first === null || st.login_first === room.id || !st.login_reads.has(st.login_first);
  if (j.cause !== 'login' ? asked : shown_view() === null && first) open_room(room.id);
  else if (v.id === st.shown) read_up(v, true);
  show();
}

// A chat message of room `v` (the client delivers each once); its log line. A notice is shown as
// its text and applied (conversations.ts).
function show_chat(v: room_view, m: ChatMessage): HTMLElement {
  v.spoke(m.sender.id);
  if (m.kind !== msg_kind.notice) return v.log.chat(m);
  const me = st.me?.id ?? null;
  const el = v.log.chat(m, `* ${notice_text(m, me)}`);
  apply_notice(v, m, me);
  return el;
}

// The history of a direct room entered with messages in it: those up to the join are shown
// (the ones above it came live).
function fetched(v: room_view, messages: ChatMessage[]): void {
  const to = v.fetch_to;
  v.fetch_to = 0n;
  for (const c of messages) if (c.seq <= to) show_chat(v, c);
  if (v.id === st.shown) read_up(v, true);
}

function logged_in(res: LoginResult): void {
  st.me = res.player;
  st.login_by = res.method === 'resumeToken' ? 'token' : res.method;
  line(`logged in as ${res.player.name}${res.created ? ' (new account)' : ''}` +
       (res.method === 'resumeToken' ? ' with the resume token' : ''), 'notice');
  // A roomJoined follows for each listed room (the client has dropped those no longer listed).
  st.login_reads = new Map(res.rooms.map((r) => [r.id, r.lastReadSeq]));
  st.login_first = res.rooms.length > 0 ? res.rooms[0].id : null;
  st.login_order = new Map(res.rooms.map((r, i) => [r.id, i]));
  st.order_next = res.rooms.length;
  if (st.shown !== null && !st.rooms.has(st.shown)) open_room(null);
  act(client.listRooms(), rooms_listed);
  show();
}

function left(room_id: bigint, cause: ChatEvents['roomLeft'][0]['cause']): void {
  const v = st.rooms.get(room_id);
  st.rooms.delete(room_id);
  if (st.shown === room_id) open_room(st.rooms.keys().next().value ?? null);
  const what = `room ${room_id}${v ? ` '${v.title()}'` : ''}`;
  if (cause === 'gone') line(`no longer in ${what}`, 'notice');
  else line(v?.removed ? `removed from ${what}: ${v.removed}` : `left ${what}`, 'notice');
  if (cause !== 'gone') act(client.listRooms(), rooms_listed);
  show();
}

// A room notice about a member: joined or presence (`online`), or left (null).
function set_member(m: { roomId: bigint; player: Player }, online: boolean | null, what: string): void {
  const v = st.rooms.get(m.roomId);
  if (!v) return;
  const state = client.rooms.get(m.roomId);
  if (!v.listed && state) v.room = state.room;  // a large room: the client kept the counts
  else if (online === null) v.members.delete(m.player.id);
  else v.members.set(m.player.id, { ...m.player, online, role: v.members.get(m.player.id)?.role ?? member_role.member });
  v.log.line(`* ${m.player.name} ${what}`, 'notice');
  show();
}

// A room's resume after a reconnect (the client's events): notes in the room's log.
function resume_notes(): void {
  const room = (id: bigint) => st.rooms.get(id);
  client.on('resumeGap', (e) => room(e.roomId)?.log.line(`${e.missed} messages missed: fetching them from the history`, 'notice'));
  client.on('lost', (e) => {
    const text = e.reason === 'notStored' ? `messages #${e.fromSeq + 1n}..#${e.toSeq} are no longer stored`
      : e.reason === 'unrecoverable' ? `messages after #${e.fromSeq} up to #${e.toSeq} could not be recovered`
      : `messages #${e.fromSeq + 1n}..#${e.toSeq} were lost by the server`;
    room(e.roomId)?.log.line(text, 'error');
    show();
  });
  client.on('resumed', (e) => {
    const v = room(e.roomId);
    if (!v) return;
    const n = e.recovered;
    // The summary goes right after the last recovered line.
    const after = n > 0 ? v.log.el.querySelector(`div[data-seq="${e.lastRecoveredSeq}"]`) as HTMLElement | null : null;
    v.log.line(n > 0 ? `recovered ${n} missed message${n === 1 ? '' : 's'}` : 'nothing was missed', 'notice', after);
    show();
  });
}

client.on('state', set_state);
client.on('reconnecting', (r) => {
  $('conn').textContent = `closed (${r.reason ? `${r.code} ${r.reason}` : r.code}); reconnecting in ${(r.delayMs / 1000).toFixed(1)} s`;
});
client.on('login', logged_in);
client.on('loginFallback', () => line('the resume token was refused: logging in with the password', 'notice'));
client.on('roomJoined', entered);
client.on('roomLeft', (e) => left(e.roomId, e.cause));
client.on('message', (m, info) => {
  const v = st.rooms.get(m.roomId);
  if (!v) return;
  show_chat(v, m);
  if (!info.recovered && v.id === st.shown) read_up(v, false);
  show();
});
client.on('memberJoined', (m) => set_member(m, true, 'joined'));
client.on('presence', (m) => {
  const v = st.rooms.get(m.roomId);
  if (v && (!v.listed || v.members.has(m.player.id))) set_member(m, m.online, m.online ? 'is back online' : 'went offline');
});
client.on('memberLeft', (m) => set_member(m, null, 'left'));
client.on('typing', (m) => {
  if (m.player.id !== st.me?.id) st.rooms.get(m.roomId)?.typing_from(m.player.id, m.player.name, show);
  show();
});
client.on('readMarker', (m) => {
  st.rooms.get(m.roomId)?.marked(m.seq);
  show();
});
client.on('error', (e) => line(`error: ${e.request}: ${e.code}: ${e.reason}`, 'error'));
resume_notes();

function form(id: string, on_submit: () => void): void {
  $<HTMLFormElement>(id).onsubmit = (ev) => {
    ev.preventDefault();
    on_submit();
  };
}

form('login-form', () => {
  const name = $<HTMLInputElement>('name').value.trim();
  const password = $<HTMLInputElement>('password').value;
  if (!name) return;
  // Perhaps another account: its rooms come with its login.
  st.rooms.clear();
  st.blocked.clear();
  open_room(null);
  st.login_by = 'password';
  act(client.login({ name, password }));
});
form('create-form', () => {
  const input = $<HTMLInputElement>('new-room');
  act(client.createRoom(input.value.trim()));
  input.value = '';
});
// A message to someone by name: in the direct room the page has with them, or a direct_req
// (the server opens the room, and the page shows it when its roomJoined comes).
form('dm-form', () => {
  const to = $<HTMLInputElement>('dm-to');
  const text = $<HTMLInputElement>('dm-text');
  const name = to.value.trim();
  if (!name || !text.value) return;
  const known = [...st.rooms.values()].find((v) => v.joined && v.peer?.name === name);
  if (known) {
    open_room(known.id);
    act(client.send(known.id, text.value));
  } else {
    act(client.sendDirect(name, text.value));
  }
  to.value = '';
  text.value = '';
});
form('chat-form', () => {
  const input = $<HTMLInputElement>('text');
  const v = shown_view();
  if (!input.value || !v) return;
  act(client.send(v.id, input.value));
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
  client.typing(v.id);
};
$('refresh').onclick = () => act(client.listRooms(), rooms_listed);
$('leave').onclick = () => {
  if (st.shown !== null) act(client.leaveRoom(st.shown));
};
$('block').onclick = () => {
  const peer = shown_view()?.peer;
  if (!peer) return;
  act(client.block(peer.name, !st.blocked.has(peer.id)), (r) => {
    if (r.blocked) st.blocked.add(r.player.id);
    else st.blocked.delete(r.player.id);
    line(r.blocked ? `blocked ${r.player.name}: no direct messages from them` : `unblocked ${r.player.name}`, 'notice');
  });
};
// A moderator's erase button on a message line (log_view.ts).
log_el.onclick = (ev) => {
  const b = (ev.target as HTMLElement).closest('button.erase');
  const seq = (b?.closest('div.chat') as HTMLElement | null)?.dataset.seq;
  const v = shown_view();
  if (v && seq !== undefined) act(client.moderate(v.id, mod_action.erase, 0n, { seq: BigInt(seq) }));
};
$('drop').onclick = () => client.drop();

show();
// The client reconnects by itself once it has been open; until then the page tries every 2 s.
const start = () => client.connect().catch(() => window.setTimeout(start, 2000));
start();
