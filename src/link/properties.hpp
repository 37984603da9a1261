#pragma once
// The properties a tcp:// or ipc:// connection's messages carry (message_properties in
// strix/link/message.hpp), built once when its handshake completes, and the peer address
// libzmq reports for a connection (ZAP's address frame and the Peer-Address property).
#include <strix/link/message.hpp>
#include <strix/link/security.hpp>

#include <string>

namespace strix::link::detail {

/// libzmq's peer address of the connected socket fd: the peer's IP address for tcp (no port,
/// IPv6 without brackets), "localhost:uid:gid:pid" for ipc (the peer's SO_PEERCRED), empty
/// when the kernel does not say. The connection's shard.
std::string peer_address_of(int fd);

/// The set for one connection: Peer-Address (when known), then ZAP's User-Id and metadata (when
/// ZAP answered: `zap` not null), then the properties the peer announced in its handshake
/// (`announced`, ZMTP's encoding; malformed entries are skipped). A name already present keeps
/// its first value, as libzmq's map does. The connection's shard.
message_properties_ptr make_properties(const std::string& peer_address, const zap_reply* zap, bytes_view announced);

}  // namespace strix::link::detail
