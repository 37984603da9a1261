// Roles and moderation on the page (docs/protocol.md, "Roles and moderation"): what a notice says
// and what it changes in a room, and the member list with each member's role and the actions the
// user's own role allows on it (kick, ban, mute for 10 minutes, unmute; promote and demote for the
// owner; unban for a ban the page saw).

import { MemberRole as member_role, ModAction as mod_action } from '@strix/chat-client';
import type { ChatMessage, Member, Player } from '@strix/chat-client';
import type { room_view } from './rooms';

/// The page's mute: 10 minutes.
export const mute_seconds = 600;

/// A duration in microseconds as a person reads it ("10 min").
export function duration_text(us: bigint): string {
  const s = Number(us / 1000000n);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} days`;
}

/// What notice `m` says, from the side of account `me` ("you" for it): "ben was kicked by ann".
export function notice_text(m: ChatMessage, me: bigint | null): string {
  const n = m.notice;
  const who = (p: Player) => (p.id === me ? 'you' : p.name || `player ${p.id}`);
  const by = who(m.sender);
  if (!n) return `${by} did something this page does not know`;
  const t = who(n.target);
  const was = t === 'you' ? 'were' : 'was';
  const until = n.untilUs > m.serverTsUs ? ` for ${duration_text(n.untilUs - m.serverTsUs)}` : '';
  switch (n.action) {
    case mod_action.kick: return `${t} ${was} kicked by ${by}`;
    case mod_action.ban: return `${t} ${was} banned by ${by}${until}`;
    case mod_action.unban: return `${t} ${was} unbanned by ${by}`;
    case mod_action.mute: return `${t} ${was} muted by ${by}${until}`;
    case mod_action.unmute: return `${t} ${was} unmuted by ${by}`;
    case mod_action.erase: return `a message was removed by ${by}`;
    case mod_action.promote: return `${t} ${was} made an admin by ${by}`;
    case mod_action.demote: return `${t} ${was} made a member again by ${by}`;
    case mod_action.transfer: return `${by} handed the room over to ${t}`;
    default: return `${by} did something this page does not know`;
  }
}

/// Notice `m` of room `v` is shown: an erase turns the message into a tombstone; a notice after
/// the join (`join_seq`: the member list is as of then) changes roles, mutes, bans and members (a
/// kick or ban takes the target out), and a kick or ban of `me` says why the leave_room_res that
/// follows comes.
export function apply_notice(v: room_view, m: ChatMessage, me: bigint | null): void {
  const n = m.notice;
  if (!n) return;
  if (n.action === mod_action.erase) v.log.erase(n.seq);
  if (m.seq <= v.join_seq) return;
  const set_role = (id: bigint, role: member_role) => {
    const old = v.members.get(id);
    if (old) v.members.set(id, { ...old, role });
  };
  switch (n.action) {
    case mod_action.kick:
    case mod_action.ban:
      // No member_left follows: the notice is the word that the account is out.
      v.members.delete(n.target.id);
      if (n.action === mod_action.ban) v.banned.set(n.target.id, n.target.name);
      if (n.target.id === me) v.removed = notice_text(m, me);
      break;
    case mod_action.unban: v.banned.delete(n.target.id); break;
    case mod_action.mute: v.muted.set(n.target.id, n.untilUs); break;
    case mod_action.unmute: v.muted.delete(n.target.id); break;
    case mod_action.promote:
    case mod_action.demote: set_role(n.target.id, n.role); break;
    case mod_action.transfer:
      set_role(m.sender.id, member_role.admin);
      set_role(n.target.id, member_role.owner);
      break;
    default: break;
  }
}

/// The account `me`'s role in room `v` (member when it is not listed).
export function role_of(v: room_view, me: bigint | null): member_role {
  return (me !== null ? v.members.get(me)?.role : undefined) ?? member_role.member;
}

/// Whether a mute the page saw is in force (until_us 0: no end).
function muted(v: room_view, id: bigint): boolean {
  const until = v.muted.get(id);
  return until !== undefined && (until === 0n || until > BigInt(Date.now()) * 1000n);
}

function button(act: string, label: string, onclick: () => void): HTMLButtonElement {
  const b = document.createElement('button');
  b.type = 'button';
  b.dataset.act = act;
  b.textContent = label;
  b.onclick = onclick;
  return b;
}

/// The actions `mine` (a role) allows on a member of role `theirs` in a group room.
function actions(v: room_view, m: Member, mine: member_role,
                 act: (a: mod_action, target: Player) => void): HTMLButtonElement[] {
  if (v.direct || mine < member_role.admin || m.role >= mine) return [];
  const on = (a: mod_action) => () => act(a, m);
  const out = [button('kick', 'kick', on(mod_action.kick)), button('ban', 'ban', on(mod_action.ban))];
  out.push(muted(v, m.id) ? button('unmute', 'unmute', on(mod_action.unmute))
                          : button('mute', 'mute 10 min', on(mod_action.mute)));
  if (mine === member_role.owner) {
    out.push(m.role === member_role.admin ? button('demote', 'demote', on(mod_action.demote))
                                          : button('promote', 'make admin', on(mod_action.promote)));
  }
  return out;
}

/// Draws room `v`'s members into `ul` (null: none): name, role, online state, and the actions
/// account `me` may take on each; then the bans the page saw, with unban. `act` sends one.
export function draw_members(ul: HTMLUListElement, v: room_view | null, me: bigint | null,
                             act: (a: mod_action, target: Player) => void): void {
  if (!v) {
    ul.replaceChildren();
    return;
  }
  if (!v.listed) {
    // A large room: the server lists nobody; the counts it gave (and its notices keep) instead.
    const li = document.createElement('li');
    li.className = 'counts';
    li.dataset.members = String(v.room.members);
    li.dataset.online = String(v.room.online);
    li.textContent = `${v.room.members} members, ${v.room.online} online (too many to list)`;
    ul.replaceChildren(li);
    return;
  }
  const mine = role_of(v, me);
  const items = [...v.members.values()].map((m) => {
    const li = document.createElement('li');
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = m.name;
    li.dataset.name = m.name;
    li.dataset.online = m.online ? 'yes' : 'no';
    li.dataset.role = member_role[m.role] ?? 'member';
    if (!m.online) li.className = 'offline';
    li.append(name);
    if (!v.direct && m.role !== member_role.member) {
      const role = document.createElement('span');
      role.className = 'role';
      role.textContent = member_role[m.role] ?? '';
      li.append(' ', role);
    }
    if (muted(v, m.id)) li.append(' (muted)');
    const acts = actions(v, m, mine, act);
    if (acts.length > 0) {
      const span = document.createElement('span');
      span.className = 'acts';
      span.append(...acts);
      li.append(span);
    }
    return li;
  });
  for (const [id, name] of v.banned) {
    if (v.members.has(id)) continue;
    const li = document.createElement('li');
    li.className = 'banned';
    li.dataset.name = name;
    li.dataset.banned = 'yes';
    li.append(`${name} (banned)`);
    if (mine >= member_role.admin) li.append(' ', button('unban', 'unban', () => act(mod_action.unban, { id, name })));
    items.push(li);
  }
  ul.replaceChildren(...items);
}
