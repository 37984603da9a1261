// ChatClient: one session with strix-chat-server over WebSocket (docs/protocol.md). It logs in
// (password, resume token or JWT; protocol version 2, many rooms), sends requests whose promises
// settle with the answer or a ChatError, delivers what the server pushes as typed events, and
// when the socket drops reconnects with exponential backoff and jitter, logs in again with the
// resume token (the password or JWT when the token is refused), is put back in its rooms by the
// server and resumes each one (recovery.ts) so that every message is delivered once.

import { msg_type } from './gen/strix/chat/proto/msg-type';
import { error_code } from './gen/strix/chat/proto/error-code';
import { member_role } from './gen/strix/chat/proto/member-role';
import { mod_action } from './gen/strix/chat/proto/mod-action';
import { msg_kind } from './gen/strix/chat/proto/msg-kind';
import { resume_status } from './gen/strix/chat/proto/resume-status';
import { room_kind } from './gen/strix/chat/proto/room-kind';
import * as proto from './protocol';
import type { message } from './protocol';
import { Emitter } from './emitter';
import { ChatConnectionError, ChatError } from './errors';
import { request_table } from './requests';
import type { take_result } from './requests';
import { recover } from './recovery';
import type { recovery_host, resume_answer } from './recovery';
import { RoomSeqs } from './seqs';
import { chat_socket } from './connection';
import type { ChatClientOptions, ChatEvents, Credentials, JoinCause, LeaveCause, RoomState } from './events';
import type {
  ChatMessage, HistoryPage, JoinedRoom, LoginMethod, LoginResult, Member, Player, Room,
} from './types';

const defaults = { requestTimeoutMs: 10000, firstDelayMs: 500, maxDelayMs: 10000, pingIntervalMs: 60000 };

export class ChatClient extends Emitter<ChatEvents> {
  private readonly sock: chat_socket;
  private readonly request_timeout_ms: number;
  private readonly keep_password: boolean;
  private epoch = 0; // one per socket: work of an earlier one stops when it closes
  private readonly requests = new request_table();
  private readonly room_map = new Map<bigint, RoomState>();
  private login_rooms = new Set<bigint>(); // listed by the latest login, until their join_room_res
  private next_client_seq = BigInt(Math.floor(Math.random() * 2 ** 31)) << 20n;
  private creds: { name: string; password: string; jwt: string } | null = null;
  private token: Uint8Array | null = null;
  private me: Player | null = null;
  private logged_in = false;

  constructor(readonly url: string, options: ChatClientOptions = {}) {
    super();
    const rc = typeof options.reconnect === 'object' ? options.reconnect : {};
    this.request_timeout_ms = options.requestTimeoutMs ?? defaults.requestTimeoutMs;
    this.keep_password = options.keepPassword ?? true;
    this.sock = new chat_socket(url, {
      WebSocket: options.WebSocket,
      reconnect: options.reconnect !== false,
      firstDelayMs: rc.firstDelayMs ?? defaults.firstDelayMs,
      maxDelayMs: rc.maxDelayMs ?? defaults.maxDelayMs,
      pingIntervalMs: options.pingIntervalMs ?? defaults.pingIntervalMs,
    }, {
      connecting: () => this.emit('state', 'connecting', url),
      opened: (first) => {
        this.emit('state', 'open', url);
        // A reconnect logs in again, and the server puts the session back in its rooms.
        if (!first && this.creds) void this.relogin(this.epoch);
      },
      frame: (bytes) => this.on_frame(bytes),
      closed: (detail) => this.went_down(detail),
      reconnecting: (attempt, delayMs, code, reason) => this.emit('reconnecting', { attempt, delayMs, code, reason }),
    });
  }

  /// The account logged in (null before a login and while reconnecting).
  get player(): Player | null {
    return this.logged_in ? this.me : null;
  }

  /// Whether the socket is open.
  get connected(): boolean {
    return this.sock.connected;
  }

  /// The newest resume token (spent by the next re-login).
  get resumeToken(): Uint8Array | null {
    return this.token;
  }

  /// The rooms the session is in, or was until the drop (joined false).
  get rooms(): ReadonlyMap<bigint, RoomState> {
    return this.room_map;
  }

  /// Opens the socket; resolves once it is open, rejects when the first try fails.
  connect(): Promise<void> {
    return this.sock.connect();
  }

  /// Closes the session for good (no reconnect); waiting requests fail.
  close(): void {
    this.sock.close();
  }

  /// Drops the socket as a network failure would (the client reconnects): for tests and demos.
  drop(): void {
    this.sock.drop();
  }

  /// Logs in (protocol version 2); the server then puts the session in each of the account's
  /// rooms (a roomJoined event each). Rejects with ChatError: wrong_password, invalid_token, ...
  async login(c: Credentials): Promise<LoginResult> {
    // Kept for re-logins once the login succeeded (a refused one is not tried again).
    let res: LoginResult;
    if ('jwt' in c) {
      res = await this.send_login('jwt', '', '', null, c.jwt);
      this.creds = { name: res.player.name, password: '', jwt: c.jwt };
    } else if ('password' in c) {
      res = await this.send_login('password', c.name, c.password, null, '');
      this.creds = { name: c.name, password: this.keep_password ? c.password : '', jwt: '' };
    } else {
      res = await this.send_login('resumeToken', c.name, '', c.resumeToken, '');
      this.creds = { name: c.name, password: '', jwt: '' };
    }
    return res;
  }

  /// A fresh JWT for a session that logged in with one (before or after tokenExpired); the new
  /// token's expiry (Unix seconds). Later re-logins use it.
  async refresh(jwt: string): Promise<bigint> {
    const out = this.request<bigint>(msg_type.refresh_req, 'refresh_req', proto.refresh(jwt), (m, done) => {
      if (m.type !== msg_type.refresh_res) return 'no';
      return done(m.expiresAt);
    });
    const expires = await out;
    if (this.creds) this.creds.jwt = jwt;
    return expires;
  }

  /// Every room on the server (at most 500, by id).
  listRooms(): Promise<Room[]> {
    return this.request<Room[]>(msg_type.list_rooms_req, 'list_rooms_req', proto.list_rooms(),
      (m, done) => (m.type === msg_type.list_rooms_res ? done(m.rooms) : 'no'));
  }

  /// Creates a room (the account its owner); a roomJoined event (cause create) comes first.
  createRoom(name: string): Promise<Room> {
    return this.request<Room>(msg_type.create_room_req, 'create_room_req', proto.create_room(name),
      (m, done) => (m.type === msg_type.create_room_res ? done(m.room) : 'no'));
  }

  /// Joins room `id`: its members and last seq (messages above it are delivered live).
  joinRoom(id: bigint): Promise<JoinedRoom> {
    return this.request<JoinedRoom>(msg_type.join_room_req, `join_room_req:${id}`, proto.join_room(id),
      (m, done) => (m.type === msg_type.join_room_res && m.room.id === id ? done(this.joined_view(m)) : 'no'));
  }

  /// Leaves room `id` (the membership ends).
  async leaveRoom(id: bigint): Promise<void> {
    await this.request<bigint>(msg_type.leave_room_req, `leave_room_req:${id}`, proto.leave_room(id),
      (m, done) => (m.type === msg_type.leave_room_res && m.roomId === id ? done(id) : 'no'));
  }

  /// Says `text` in room `roomId`; resolves with the message as delivered (its seq), once the
  /// server has stored it.
  send(roomId: bigint, text: string): Promise<ChatMessage> {
    const seq = ++this.next_client_seq;
    return this.request<ChatMessage>(msg_type.chat_req, 'chat_req', proto.chat(roomId, text, seq),
      (m, done) => (m.type === msg_type.chat_msg && this.mine(m.message, seq) ? done(m.message) : 'no'));
  }

  /// A direct message to the account called `to`: the pair's direct room is opened (a roomJoined
  /// event, cause direct, the first time) and the message sent there.
  sendDirect(to: string, text: string): Promise<ChatMessage> {
    const seq = ++this.next_client_seq;
    return this.request<ChatMessage>(msg_type.direct_req, `direct_req:${to}`, proto.direct(to, text, seq),
      (m, done) => (m.type === msg_type.chat_msg && this.mine(m.message, seq) ? done(m.message) : 'no'));
  }

  /// Stored messages of a room: with beforeSeq the newest `limit` below it, with afterSeq the
  /// oldest above it, with neither the newest (limit: 50 by default, at most 200).
  history(roomId: bigint, q: { beforeSeq?: bigint; afterSeq?: bigint; limit?: number } = {}): Promise<HistoryPage> {
    return this.history_req(roomId, q.afterSeq ?? 0n, q.beforeSeq ?? 0n, q.limit ?? 0);
  }

  /// Marks room `roomId` read up to `seq`; the account's marker after it (never lower than before).
  markRead(roomId: bigint, seq: bigint): Promise<bigint> {
    return this.request<bigint>(msg_type.read_req, 'read_req', proto.read(roomId, seq),
      (m, done) => (m.type === msg_type.read_res && m.roomId === roomId ? done(m.seq) : 'no'));
  }

  /// Tells the room's other sessions the user is typing (repeat every few seconds while typing).
  /// No answer: a refusal comes as an error event. False when the socket is not open.
  typing(roomId: bigint): boolean {
    return this.raw_send(proto.typing_in(roomId));
  }

  /// Blocks (or, with on = false, unblocks) direct messages from the account called `name`.
  block(name: string, on = true): Promise<{ player: Player; blocked: boolean }> {
    return this.request(msg_type.block_req, 'block_req', proto.block(name, on),
      (m, done) => (m.type === msg_type.block_res ? done({ player: m.player, blocked: m.blocked }) : 'no'));
  }

  /// A moderator's action in a group room on account `target` (erase: on message `seq`; ban and
  /// mute: for `seconds`, a ban 0 for no end). Resolves with the notice every member gets.
  moderate(roomId: bigint, action: mod_action, target: bigint, o: { seq?: bigint; seconds?: number } = {}): Promise<ChatMessage> {
    const seq = o.seq ?? 0n;
    const frame = proto.moderate(roomId, action, target, seq, o.seconds ?? 0);
    return this.request<ChatMessage>(msg_type.moderate_req, 'moderate_req', frame, (m, done) => {
      if (m.type !== msg_type.chat_msg) return 'no';
      const c = m.message;
      const n = c.notice;
      if (c.roomId !== roomId || c.kind !== msg_kind.notice || !n || c.sender.id !== this.me?.id || n.action !== action) return 'no';
      if (action === mod_action.erase ? n.seq !== seq : n.target.id !== target) return 'no';
      return done(c);
    });
  }

  /// A round trip to the server; its time in ms.
  async ping(): Promise<number> {
    const t0 = Date.now();
    await this.request<bigint>(msg_type.ping_req, 'ping_req', proto.ping(BigInt(t0)),
      (m, done) => (m.type === msg_type.pong_res ? done(m.ts) : 'no'));
    return Date.now() - t0;
  }

  private went_down(detail: string): void {
    ++this.epoch;
    this.logged_in = false;
    for (const r of this.room_map.values()) r.joined = false;
    this.login_rooms.clear();
    this.requests.drop_all('the connection closed');
    this.emit('state', 'closed', detail);
  }

  private raw_send(frame: Uint8Array): boolean {
    return this.sock.send(frame);
  }

  /// Sends `frame` and waits for the answer `take` accepts; `done(v)` settles the promise with v.
  private request<T>(type: msg_type, label: string, frame: Uint8Array,
                     take: (m: message, done: (v: T) => take_result) => take_result): Promise<T> {
    if (!this.connected) return Promise.reject(new ChatConnectionError(label.split(':')[0], 'not connected'));
    let value: T;
    const done = (v: T): take_result => {
      value = v;
      return 'done';
    };
    const p = this.requests.add<T>(type, label, this.request_timeout_ms, (m) => take(m, done), () => value);
    this.sock.send(frame);
    return p;
  }

  // ---- logins

  private send_login(method: LoginMethod, name: string, password: string, token: Uint8Array | null,
                     jwt: string): Promise<LoginResult> {
    const frame = proto.login(name, password, token, jwt);
    return this.request<LoginResult>(msg_type.login_req, 'login_req', frame, (m, done) => {
      if (m.type !== msg_type.login_res) return 'no';
      return done(this.logged_in_as(m, method));
    });
  }

  /// After a reconnect: the resume token, else (or when refused) the password or JWT.
  private async relogin(epoch: number): Promise<void> {
    const c = this.creds!;
    const token = this.token;
    this.token = null; // single use, whatever the answer
    try {
      if (token && this.me) {
        try {
          await this.send_login('resumeToken', this.me.name, '', token, '');
          return;
        } catch (e) {
          const fallback = c.password !== '' || c.jwt !== '';
          if (!(e instanceof ChatError) || e.codeNumber !== error_code.invalid_token || !fallback) throw e;
          if (epoch !== this.epoch) return;
          this.emit('loginFallback', e);
        }
      }
      if (c.jwt) await this.send_login('jwt', '', '', null, c.jwt);
      else if (c.password) await this.send_login('password', c.name, c.password, null, '');
    } catch (e) {
      if (epoch === this.epoch && e instanceof ChatError) this.emit('error', e);
    }
  }

  private logged_in_as(m: Extract<message, { type: msg_type.login_res }>, method: LoginMethod): LoginResult {
    this.me = m.player;
    this.logged_in = true;
    this.token = m.resumeToken;
    // A join_room_res follows for each listed room; one the account left meanwhile is gone.
    this.login_rooms = new Set(m.rooms.map((r) => r.id));
    const res: LoginResult = { player: m.player, created: m.created, rooms: m.rooms, resumeToken: m.resumeToken,
                               deviceToken: m.deviceToken, displayName: m.displayName, expiresAt: m.expiresAt, method };
    for (const id of [...this.room_map.keys()]) {
      if (this.login_rooms.has(id)) continue;
      this.room_map.delete(id);
      this.emit('roomLeft', { roomId: id, cause: 'gone' });
    }
    this.emit('login', res);
    return res;
  }

  // ---- what the server sends

  private on_frame(bytes: Uint8Array): void {
    let m: message | null;
    try {
      m = proto.decode(bytes);
    } catch (e) {
      this.emit('error', new ChatError(msg_type.none, error_code.bad_request, `bad frame from the server: ${(e as Error).message}`));
      return;
    }
    if (!m) return;
    // State first, then the events, then the waiting request's promise.
    this.apply(m);
    if (m.type === msg_type.error_res) {
      if (m.code === error_code.token_expired) {
        // The session's JWT expired without a refresh: no reconnect logs in again with anything
        // of this session's; the application logs in with a fresh JWT.
        this.sock.stay_down();
        this.creds = null;
        this.token = null;
      }
      const consumed = m.request !== msg_type.none && this.requests.fail(m);
      if (!consumed) this.emit('error', new ChatError(m.request, m.code, m.reason));
      return;
    }
    this.requests.answer(m);
  }

  private apply(m: message): void {
    switch (m.type) {
      case msg_type.create_room_res:
        this.entered(m.room, this.me ? [{ ...this.me, online: true, role: member_role.owner }] : [], 0n, 'create');
        break;
      case msg_type.join_room_res:
        this.entered(m.room, m.members, m.lastSeq, null);
        break;
      case msg_type.leave_room_res: {
        const cause: LeaveCause = this.requests.has(msg_type.leave_room_req, (l) => l === `leave_room_req:${m.roomId}`)
          ? 'leave' : 'removed';
        if (this.room_map.delete(m.roomId)) this.emit('roomLeft', { roomId: m.roomId, cause });
        break;
      }
      case msg_type.chat_msg:
        this.live(m.message);
        break;
      case msg_type.resume_res:
        this.unrequested_gap(m);
        break;
      default:
        this.pushed(m);
    }
  }

  private pushed(m: message): void {
    switch (m.type) {
      case msg_type.member_joined:
      case msg_type.member_presence: {
        const online = m.type === msg_type.member_presence ? m.online : true;
        const r = this.room_map.get(m.roomId);
        if (r && !r.membersListed) {
          // A large room lists nobody: the notices (sent again once it shrank) keep the counts.
          const joined = m.type === msg_type.member_joined ? 1 : 0;
          r.room = { ...r.room, members: r.room.members + joined, online: Math.max(0, r.room.online + (online ? 1 : -1)) };
        } else {
          const role = r?.members.get(m.player.id)?.role ?? member_role.member;
          r?.members.set(m.player.id, { ...m.player, online, role });
        }
        if (m.type === msg_type.member_joined) this.emit('memberJoined', { roomId: m.roomId, player: m.player });
        else this.emit('presence', { roomId: m.roomId, player: m.player, online });
        break;
      }
      case msg_type.member_left: {
        const r = this.room_map.get(m.roomId);
        if (r && !r.membersListed)
          r.room = { ...r.room, members: Math.max(0, r.room.members - 1), online: Math.max(0, r.room.online - 1) };
        else r?.members.delete(m.player.id);
        this.emit('memberLeft', { roomId: m.roomId, player: m.player });
        break;
      }
      case msg_type.typing:
        this.emit('typing', { roomId: m.roomId, player: m.player });
        break;
      case msg_type.read_marker:
        this.emit('readMarker', { roomId: m.roomId, seq: m.seq });
        break;
      case msg_type.token_expired:
        this.emit('tokenExpired', { expiresAt: m.expiresAt, graceSeconds: m.graceSeconds });
        break;
      default:
        break;
    }
  }

  private joined_view(m: Extract<message, { type: msg_type.join_room_res }>): JoinedRoom {
    return { room: m.room, members: m.members, lastSeq: m.lastSeq, membersListed: m.membersListed };
  }

  /// In `room` now: by a request of this session, a login, or the server's doing.
  private entered(room: Room, members: Member[], last_seq: bigint, cause: JoinCause | null): void {
    const by_login = this.login_rooms.delete(room.id);
    if (!cause) cause = this.join_cause(room, members, by_login);
    let r = this.room_map.get(room.id);
    const rejoined = r !== undefined && !r.joined;
    if (!r) {
      r = { room, members: new Map(), membersListed: true, joinSeq: last_seq, seqs: new RoomSeqs(last_seq), joined: true };
      this.room_map.set(room.id, r);
    }
    r.room = room;
    r.members = new Map(members.map((x) => [x.id, x]));
    r.membersListed = members.length > 0;  // a listing has the joiner: empty means a large room
    r.joinSeq = last_seq;
    r.joined = true;
    r.seqs.rejoined(last_seq);
    this.emit('roomJoined', { room, members, lastSeq: last_seq, membersListed: r.membersListed, cause, rejoined });
    if (!rejoined) return;
    const host = this.recovery_host(r);
    recover(room.id, last_seq, r.seqs, host).catch((e) => {
      // A closed connection ends it quietly: the next login resumes again.
      if (host.alive() && e instanceof ChatError) this.emit('error', e);
    });
  }

  private join_cause(room: Room, members: Member[], by_login: boolean): JoinCause {
    if (this.requests.has(msg_type.join_room_req, (l) => l === `join_room_req:${room.id}`)) return 'join';
    if (by_login) return 'login';
    if (room.kind === room_kind.direct) {
      const peer = members.find((x) => x.id !== this.me?.id);
      if (peer && this.requests.has(msg_type.direct_req, (l) => l === `direct_req:${peer.name}`)) return 'direct';
    }
    return 'server';
  }

  private mine(c: ChatMessage, client_seq: bigint): boolean {
    return c.clientSeq === client_seq && c.sender.id === this.me?.id;
  }

  // A live chat_msg: delivered once (a kick or ban notice also ends the target's membership).
  private live(c: ChatMessage): void {
    const r = this.room_map.get(c.roomId);
    if (!r || !r.seqs.add(c.seq)) return;
    if (c.kind === msg_kind.notice && c.notice && c.seq > r.joinSeq &&
        (c.notice.action === mod_action.kick || c.notice.action === mod_action.ban)) {
      r.members.delete(c.notice.target.id);
    }
    this.emit('message', c, { recovered: false });
  }

  // A resume_res no resume of this client asked for (docs/protocol.md, "Cluster gaps").
  private unrequested_gap(m: Extract<message, { type: msg_type.resume_res }>): void {
    const r = this.room_map.get(m.roomId);
    if (!r || m.status !== resume_status.gap || m.toSeq <= r.seqs.top) return;
    if (this.requests.has(msg_type.resume_req, (l) => l === `resume_req:${m.roomId}:${m.toSeq}`)) return;
    const from = r.seqs.top;
    r.seqs.lose(from, m.toSeq);
    this.emit('lost', { roomId: m.roomId, fromSeq: from, toSeq: m.toSeq, reason: 'server' });
  }

  private history_req(room: bigint, after: bigint, before: bigint, limit: number): Promise<HistoryPage> {
    return this.request<HistoryPage>(msg_type.history_req, 'history_req', proto.history(room, after, before, limit),
      (m, done) => (m.type === msg_type.history_res && m.roomId === room
        ? done({ roomId: m.roomId, messages: m.messages, more: m.more, oldestSeq: m.oldestSeq, lastSeq: m.lastSeq })
        : 'no'));
  }

  private resume_req(room: bigint, last_seq: bigint, to: bigint): Promise<resume_answer> {
    const answer: resume_answer = { status: resume_status.complete, messages: [], oldestSeq: 0n };
    return this.request<resume_answer>(msg_type.resume_req, `resume_req:${room}:${to}`, proto.resume(room, last_seq),
      (m, done) => {
        // An unrequested gap notice is about seqs above the join's (its to_seq is higher).
        if (m.type !== msg_type.resume_res || m.roomId !== room || m.toSeq !== to) return 'no';
        answer.status = m.status;
        answer.oldestSeq = m.oldestSeq;
        answer.messages.push(...m.messages);
        return m.more && m.status === resume_status.complete ? 'more' : done(answer);
      });
  }

  private recovery_host(r: RoomState): recovery_host {
    const epoch = this.epoch;
    const id = r.room.id;
    return {
      resume: (room, last, to) => this.resume_req(room, last, to),
      history: (room, after, before, limit) => this.history_req(room, after, before, limit),
      deliver: (c) => {
        if (!r.seqs.add(c.seq)) return false;
        this.emit('message', c, { recovered: true });
        return true;
      },
      alive: () => epoch === this.epoch && this.room_map.get(id) === r,
      gap: (roomId, missed, oldestSeq) => this.emit('resumeGap', { roomId, missed, oldestSeq }),
      lost: (roomId, fromSeq, toSeq, reason) => this.emit('lost', { roomId, fromSeq, toSeq, reason }),
      done: (roomId, recovered, lastRecoveredSeq, toSeq) => this.emit('resumed', { roomId, recovered, lastRecoveredSeq, toSeq }),
    };
  }
}

