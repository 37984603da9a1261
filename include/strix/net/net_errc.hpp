#pragma once
// Why a session ended. Values of the "strix.net" error category.

#include <system_error>

namespace strix {

enum class net_errc {
    peer_closed = 1,     // orderly close by the peer (read returned 0)
    frame_too_small,     // a length field below the header size
    frame_too_large,     // a length field above the session's max_frame (rejected before buffering)
    bad_frame,           // the codec rejected the header or CRC (see frame_errc in strix/codec)
    slow_consumer,       // queued output passed max_queued: the peer does not read
    idle_timeout,        // nothing received for idle_timeout
    shutdown,            // the engine is stopping
    closed_by_app,       // the application called close()
    frame_timeout,       // a frame was not complete within frame_timeout of its first byte
    handshake_timeout,   // the application's handshake (e.g. a login) did not complete in time
    tls_handshake_failed,   // the TLS handshake failed: not TLS, no common version or cipher, a
                            // certificate refused, the peer left mid-handshake
    tls_handshake_timeout,  // the TLS handshake did not complete within its timeout
    tls_handshakes_capped,  // too many TLS handshakes in progress (on the shard or from the address)
    tls_record_error,       // a TLS record failed to decrypt or verify after the handshake
};

const std::error_category& net_category() noexcept;
inline std::error_code make_error_code(net_errc e) noexcept { return {static_cast<int>(e), net_category()}; }

}  // namespace strix

template <>
struct std::is_error_code_enum<strix::net_errc> : std::true_type {};
