// @strix/chat-client: a client for strix-chat-server over WebSocket (README.md).

export { ChatClient } from './client';
export type {
  ChatClientOptions, ChatEvents, ConnectionState, Credentials, JoinCause, LeaveCause, RoomState,
} from './events';
export { ChatError, ChatTimeoutError, ChatConnectionError } from './errors';
export { Emitter } from './emitter';
export type { Listener } from './emitter';
export { RoomSeqs } from './seqs';
export type { SocketConstructor, SocketLike } from './transport';
export type {
  ChatMessage, HistoryPage, JoinedRoom, LoginMethod, LoginResult, Member, Notice, Player, Room, RoomRef,
} from './types';
export { msg_type as MsgType } from './gen/strix/chat/proto/msg-type';
export { error_code as ErrorCode } from './gen/strix/chat/proto/error-code';
export { member_role as MemberRole } from './gen/strix/chat/proto/member-role';
export { room_kind as RoomKind } from './gen/strix/chat/proto/room-kind';
export { msg_kind as MsgKind } from './gen/strix/chat/proto/msg-kind';
export { mod_action as ModAction } from './gen/strix/chat/proto/mod-action';
export { protocol_version } from './protocol';
