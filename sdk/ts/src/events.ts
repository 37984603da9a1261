// What ChatClient takes and tells: its options, the credentials of a login, the state it keeps
// of each room, and its events with their arguments.

import type { ChatError } from './errors';
import type { RoomSeqs } from './seqs';
import type { SocketConstructor } from './transport';
import type { ChatMessage, JoinedRoom, LoginResult, Member, Player, Room } from './types';

export type ConnectionState = 'connecting' | 'open' | 'closed';
/// Why the session is in a room: its own join, create or direct message, a login putting it back,
/// or the server (someone else's direct message to the account, another session's join).
export type JoinCause = 'join' | 'create' | 'direct' | 'login' | 'server';
/// Why the session is out of a room: its leave, a moderator (kick, ban), or gone at a re-login.
export type LeaveCause = 'leave' | 'removed' | 'gone';

export interface ChatClientOptions {
  /// The WebSocket class (default: the global one, else the `ws` package's).
  WebSocket?: SocketConstructor;
  /// How long a request waits for its answer (ms; default 10000, 0: forever).
  requestTimeoutMs?: number;
  /// Reconnects after a drop (default true), the first after about firstDelayMs (default 500),
  /// doubling up to maxDelayMs (default 10000), each within +-25 % (jitter).
  reconnect?: boolean | { firstDelayMs?: number; maxDelayMs?: number };
  /// A ping_req this often keeps a quiet session inside the server's idle timeout (ms; default
  /// 60000, 0: never).
  pingIntervalMs?: number;
  /// Keeps a password login's password in memory to log in again when a reconnect's resume token
  /// is refused (default true).
  keepPassword?: boolean;
}

/// A login: by password, by a resume token an earlier login gave, or by a JWT the application
/// signed (docs/protocol.md, "JWT logins").
export type Credentials =
  | { name: string; password: string }
  | { name: string; resumeToken: Uint8Array }
  | { jwt: string };

/// A room the session is in (or was, until a re-login puts it back).
export interface RoomState {
  room: Room;
  /// Every member, kept by the notices; empty in a large room (membersListed false), where
  /// room.members and room.online are the counts, kept by the notices that still come.
  members: Map<bigint, Member>;
  membersListed: boolean;
  /// The room's last seq at the latest join: messages above it are delivered live.
  joinSeq: bigint;
  /// The seqs delivered (and known lost): `seqs.have`, everything up to it; `seqs.top`, the newest.
  readonly seqs: RoomSeqs;
  /// False from a drop until the re-login puts the session back.
  joined: boolean;
}

export interface ChatEvents {
  state: [state: ConnectionState, detail: string];
  /// Every successful login, the automatic ones after a reconnect included.
  login: [result: LoginResult];
  /// A reconnect's resume token was refused: the client logs in with the password or JWT.
  loginFallback: [error: ChatError];
  /// The socket dropped; the next try comes after delayMs.
  reconnecting: [info: { attempt: number; delayMs: number; code: number; reason: string }];
  roomJoined: [joined: JoinedRoom & { cause: JoinCause; rejoined: boolean }];
  roomLeft: [left: { roomId: bigint; cause: LeaveCause }];
  /// A room message, once: live (recovered false) or from a resume (true). Live messages come in
  /// seq order; recovered ones too, but they may come after live ones with higher seqs.
  message: [message: ChatMessage, info: { recovered: boolean }];
  memberJoined: [event: { roomId: bigint; player: Player }];
  memberLeft: [event: { roomId: bigint; player: Player }];
  presence: [event: { roomId: bigint; player: Player; online: boolean }];
  typing: [event: { roomId: bigint; player: Player }];
  /// The account's read marker moved (another session of it read further).
  readMarker: [event: { roomId: bigint; seq: bigint }];
  /// A resume found more missed than the server gives at once (or some deleted): the client
  /// pages the history for them.
  resumeGap: [event: { roomId: bigint; missed: bigint; oldestSeq: bigint }];
  /// Seqs (fromSeq, toSeq] of a room will never be delivered: no longer stored, not recoverable,
  /// or lost by the server (a cluster gap).
  lost: [event: { roomId: bigint; fromSeq: bigint; toSeq: bigint; reason: 'notStored' | 'unrecoverable' | 'server' }];
  /// A room's resume is over: `recovered` messages delivered, the last of them lastRecoveredSeq.
  resumed: [event: { roomId: bigint; recovered: number; lastRecoveredSeq: bigint; toSeq: bigint }];
  /// The session's JWT expired: refresh(jwt) within graceSeconds or the server closes it.
  tokenExpired: [event: { expiresAt: bigint; graceSeconds: number }];
  /// An error no request waits for (typing, an automatic re-login, one that closes the connection).
  error: [error: ChatError];
}

