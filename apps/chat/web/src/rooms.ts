// The rooms the session is in (protocol version 2: many at once, docs/protocol.md
// "Conversations"), each with its log, members, seqs, read marker and who is typing in it; and the
// side panel's list of them (#my-rooms: name, id, unread badge, the shown one highlighted). A
// direct room (two accounts, no name) is listed by the peer's name, marked data-kind="direct".

import { RoomKind } from '@strix/chat-client';
import type { Member, Player, Room, RoomSeqs } from '@strix/chat-client';
import { log_view } from './log_view';

const typing_shown_ms = 5000; // docs/protocol.md, "Typing"

export class room_view {
  members = new Map<bigint, Member>();
  /// False in a large room (docs/protocol.md, "Large rooms"): the join listed nobody, members
  /// stays empty and the panel shows room.members / room.online instead.
  listed = true;
  /// The account's read marker as the page knows it: unread = seqs.top - read.
  read: bigint;
  /// The highest seq a read_req of this page asked for (or a read_res / read_marker said).
  read_sent: bigint;
  /// False from a socket drop until the login's join_room_res puts the session back in.
  joined = true;
  /// Its place in the list (the login's order, then joins and creates as they come).
  order = 0;
  /// When the page last sent typing_req for the room (ms, performance.now()).
  typed_at = -Infinity;
  /// A direct room's other account (null: a group room).
  peer: Player | null = null;
  /// The room's last seq at the latest join_room_res: its member list and roles are as of then,
  /// and only notices above it change them.
  join_seq = 0n;
  /// A history_req for the messages up to this seq is out (a direct room entered with earlier
  /// messages in it); 0 when none.
  fetch_to = 0n;
  /// Mutes and bans the page saw notices of (account -> until_us, 0: no end; banned: its name).
  readonly muted = new Map<bigint, bigint>();
  readonly banned = new Map<bigint, string>();
  /// Why the session is about to leave the room (a notice of a kick or ban of the account).
  removed = '';
  private readonly typing = new Map<bigint, { name: string; until: number }>();

  constructor(public room: Room, public seqs: RoomSeqs, read: bigint, readonly log: log_view) {
    this.read = read;
    this.read_sent = read;
  }

  get id(): bigint {
    return this.room.id;
  }

  get direct(): boolean {
    return this.room.kind === RoomKind.direct;
  }

  /// What the page calls the room: a direct room by its peer's name.
  title(): string {
    return this.direct ? `@${this.peer?.name ?? '?'}` : this.room.name;
  }

  unread(): number {
    return this.seqs.top > this.read ? Number(this.seqs.top - this.read) : 0;
  }

  /// The account's marker is at least `seq` (read_res, read_marker, or this page's read_req).
  marked(seq: bigint): void {
    if (seq > this.read) this.read = seq;
    if (seq > this.read_sent) this.read_sent = seq;
  }

  /// `name` is typing now: shown until 5 s from now (`expired` is called then to redraw).
  typing_from(id: bigint, name: string, expired: () => void): void {
    this.typing.set(id, { name, until: performance.now() + typing_shown_ms });
    window.setTimeout(expired, typing_shown_ms + 20);
  }

  /// `id` said something: no longer shown as typing.
  spoke(id: bigint): void {
    this.typing.delete(id);
  }

  /// The names typing now, oldest first.
  typists(): string[] {
    const now = performance.now();
    for (const [id, t] of this.typing) if (t.until <= now) this.typing.delete(id);
    return [...this.typing.values()].map((t) => t.name);
  }

  /// The socket dropped: the login will put the session back (members and typing come again).
  went_offline(): void {
    this.joined = false;
    this.fetch_to = 0n; // the login's resume asks for what it would have brought
    this.members.clear();
    this.typing.clear();
  }
}

/// Draws the list of `rooms` into `ul` (by `order`); a click on one calls `open` with its id.
export function draw_room_list(ul: HTMLUListElement, rooms: Iterable<room_view>, shown: bigint | null,
                               open: (id: bigint) => void): void {
  ul.replaceChildren(...[...rooms].sort((a, b) => a.order - b.order).map((v) => {
    const li = document.createElement('li');
    const unread = v.unread();
    li.dataset.room = v.id.toString();
    li.dataset.unread = unread.toString();
    li.dataset.kind = v.direct ? 'direct' : 'group';
    if (v.id === shown) li.className = 'current';
    const b = document.createElement('button');
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = v.title();
    const id = document.createElement('span');
    id.className = 'id';
    id.textContent = ` #${v.id}`;
    const badge = document.createElement('span');
    badge.className = 'badge';
    badge.textContent = unread > 0 ? unread.toString() : '';
    b.append(name, id, badge);
    b.onclick = () => open(v.id);
    li.append(b);
    return li;
  }));
}

/// The typing line's text for `names` ('' for none).
export function typing_text(names: string[]): string {
  if (names.length === 0) return '';
  return `${names.join(', ')} ${names.length === 1 ? 'is' : 'are'} typing…`;
}
