// The plain objects the client hands out: what the protocol's tables say (docs/protocol.md), with
// camelCase names. Ids and seqs are bigint (ulong on the wire).

import type { member_role } from './gen/strix/chat/proto/member-role';
import type { room_kind } from './gen/strix/chat/proto/room-kind';
import type { msg_kind } from './gen/strix/chat/proto/msg-kind';
import type { mod_action } from './gen/strix/chat/proto/mod-action';

/// An account: its id (stable) and name.
export interface Player { id: bigint; name: string }
/// A member of a room as a join lists it: online while a session of it is in the room.
export interface Member extends Player { online: boolean; role: member_role }
/// A room: a group, or the direct room of two accounts (kind direct, an empty name).
export interface Room { id: bigint; name: string; members: number; online: number; kind: room_kind }
/// A room the account belongs to, as a login lists it, with how far the account has read it.
export interface RoomRef { id: bigint; lastReadSeq: bigint }
/// What a moderator did (a message of kind notice): target absent (id 0) for erase, seq the
/// erased message, untilUs when a ban or mute ends (0: never), role the target's new one.
export interface Notice { action: mod_action; target: Player; seq: bigint; untilUs: bigint; role: member_role }
/// A room message: a member's text, a notice (notice set, the moderator as sender) or an erased
/// message's tombstone (kind deleted, empty text). clientTs / clientSeq are 0 in history and resume.
export interface ChatMessage {
  roomId: bigint; seq: bigint; sender: Player; text: string; serverTsUs: bigint; clientTs: bigint;
  clientSeq: bigint; kind: msg_kind; notice: Notice | null;
}
/// How the session logged in.
export type LoginMethod = 'password' | 'resumeToken' | 'jwt';
/// A successful login: the account, the rooms the server puts the session back in (a roomJoined
/// event follows for each that still exists), and the tokens it handed out.
export interface LoginResult {
  player: Player; created: boolean; rooms: RoomRef[]; resumeToken: Uint8Array | null;
  deviceToken: Uint8Array | null; displayName: string; expiresAt: bigint; method: LoginMethod;
}
/// A room the session is in now, with every member and the room's last seq at the join.
/// A join's outcome. In a large room (more members than the server's --member-list-limit) the
/// server lists nobody: `members` is empty, `membersListed` false, and room.members / room.online
/// give the counts (docs/protocol.md, "Large rooms").
export interface JoinedRoom { room: Room; members: Member[]; lastSeq: bigint; membersListed: boolean }
/// One history answer: messages ascending by seq; more: further ones exist in the direction asked.
export interface HistoryPage { roomId: bigint; messages: ChatMessage[]; more: boolean; oldestSeq: bigint; lastSeq: bigint }
