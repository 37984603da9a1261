// The errors the client's promises reject with: the server's refusals (error_res: the request's
// type, its error code and the server's reason) and the client's own (a timeout, no connection).

import { msg_type } from './gen/strix/chat/proto/msg-type';
import { error_code } from './gen/strix/chat/proto/error-code';

/// A request the server refused: `code` is error_code's name ('wrong_password', 'muted', ...),
/// `codeNumber` the number on the wire, `request` the request type's name ('chat_req', or 'none'
/// for an error that closes the connection), `reason` the server's sentence.
export class ChatError extends Error {
  readonly request: string;
  readonly code: string;
  constructor(readonly requestType: msg_type, readonly codeNumber: number, readonly reason: string) {
    const request = msg_type[requestType] ?? String(requestType);
    const code = error_code[codeNumber] ?? String(codeNumber);
    super(`${request}: ${code}: ${reason}`);
    this.name = 'ChatError';
    this.request = request;
    this.code = code;
  }
}

/// No answer within the request timeout (the request may still take effect).
export class ChatTimeoutError extends Error {
  constructor(readonly request: string, readonly ms: number) {
    super(`${request}: no answer within ${ms} ms`);
    this.name = 'ChatTimeoutError';
  }
}

/// The socket is not open, or closed before the answer came (the request may have taken effect).
export class ChatConnectionError extends Error {
  constructor(readonly request: string, message: string) {
    super(`${request}: ${message}`);
    this.name = 'ChatConnectionError';
  }
}
