#pragma once
// What the CURVE perf tools share (strix-link-curve-thr, strix-link-curve-lat): the command line
// `<tool> strix|zmq <message-size> <count>`, one fresh pair of CURVE keys per run, and the CURVE
// settings on either library (the server side binds, the client side connects). Each tool runs
// both halves in one process over tcp loopback, so one binary compares the two libraries under
// the same keys, sizes and checks; the arguments, stamps, checks and output lines are those of
// every other link perf tool (../perf_common.hpp).

#include <strix/link/security.hpp>
#include <strix/link/socket.hpp>

#include <zmq.h>

#include "../perf_common.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace strix::link_perf::curve {

/// Where each tool binds its server: loopback, a port the kernel picks.
inline constexpr const char* bind_endpoint = "tcp://127.0.0.1:*";

/// The library a run measures.
enum class impl { strix, zmq };

/// A run's command line: the library, the message size and the message (or round-trip) count.
struct command {
    impl lib = impl::strix;
    std::size_t size = 0;
    std::uint64_t count = 0;
};

/// Parses `strix|zmq <message-size> <count-name>`; wrong arguments exit 2 with the usage, and a
/// libzmq without CURVE (zmq_has("curve") is 0) fails the run. Main thread.
inline command parse_command(const tool& t, int argc, char** argv, std::string_view count_name) {
    const parsed_args a = t.parse(argc, argv, 3, false);
    command c;
    if (a.positional[0] == "zmq") {
        c.lib = impl::zmq;
    } else if (a.positional[0] != "strix") {
        t.usage_error("the library must be strix or zmq, got '" + a.positional[0] + "'");
    }
    c.size = t.message_size(a.positional[1]);
    c.count = t.message_count(a.positional[2], count_name);
    // Both libraries run in every invocation's comparison, so a libzmq without CURVE is refused
    // whichever one this run measures.
    if (!zmq_has("curve")) t.fail("this libzmq has no CURVE (zmq_has(\"curve\") is 0)");
    return c;
}

/// The run's keys: the server's pair and the client's, generated afresh (libsodium).
struct keys {
    link::curve_keypair server = link::curve_keypair::generate();
    link::curve_keypair client = link::curve_keypair::generate();
};

/// strix: the CURVE server's security settings (no ZAP handler: every client key is accepted,
/// as libzmq does without one).
inline link::security_options server_security(const keys& k) {
    link::security_options s;
    s.curve_server = true;
    s.curve_secretkey = k.server.secret_z85();
    return s;
}

/// strix: the CURVE client's security settings (its own secret key and the server's public key).
inline link::security_options client_security(const keys& k) {
    link::security_options s;
    s.curve_secretkey = k.client.secret_z85();
    s.curve_serverkey = k.server.public_z85();
    return s;
}

/// strix: socket options with `security` and a maximum message size that admits `size`.
inline link::socket_options options_with(link::security_options security, std::size_t size) {
    link::socket_options o;
    o.security = std::move(security);
    o.max_msg_size = std::max(o.max_msg_size, size);
    return o;
}

/// libzmq: sets a string option, failing the run with libzmq's reason.
inline void zmq_set(const tool& t, void* s, int option, const std::string& value, std::string_view name) {
    if (zmq_setsockopt(s, option, value.data(), value.size()) != 0) {
        t.fail(std::string(name) + ": " + zmq_strerror(zmq_errno()));
    }
}

/// libzmq: makes `s` a CURVE server with the run's server key. Before it binds.
inline void zmq_curve_server(const tool& t, void* s, const keys& k) {
    const int one = 1;
    if (zmq_setsockopt(s, ZMQ_CURVE_SERVER, &one, sizeof one) != 0) {
        t.fail(std::string("ZMQ_CURVE_SERVER: ") + zmq_strerror(zmq_errno()));
    }
    zmq_set(t, s, ZMQ_CURVE_SECRETKEY, k.server.secret_z85(), "ZMQ_CURVE_SECRETKEY");
}

/// libzmq: makes `s` a CURVE client of the run's server. Before it connects.
inline void zmq_curve_client(const tool& t, void* s, const keys& k) {
    zmq_set(t, s, ZMQ_CURVE_SERVERKEY, k.server.public_z85(), "ZMQ_CURVE_SERVERKEY");
    zmq_set(t, s, ZMQ_CURVE_PUBLICKEY, k.client.public_z85(), "ZMQ_CURVE_PUBLICKEY");
    zmq_set(t, s, ZMQ_CURVE_SECRETKEY, k.client.secret_z85(), "ZMQ_CURVE_SECRETKEY");
}

/// strix-link-curve-lat's two halves, one per library, each in its own source file (the strix
/// and libzmq perf headers cannot share a translation unit): `count` REQ/REP round trips of
/// `size` bytes over CURVE, every reply checked. Main thread.
roundtrips strix_roundtrips(const tool& t, const keys& k, std::size_t size, std::uint64_t count);
roundtrips zmq_roundtrips(const tool& t, const keys& k, std::size_t size, std::uint64_t count);

}  // namespace strix::link_perf::curve
