// zmq_setsockopt / zmq_getsockopt: libzmq 4.3's stable options with its types, ranges and
// defaults. Options strix acts on go into link::socket_options (and to the live socket through
// set_options: later connections, as in libzmq); the rest are kept and read back
// (docs/zmq-abi.md, "Options").
#include "zmq/zmq_shim.hpp"

#include <strix/link/security.hpp>

#include <cstring>
#include <stdexcept>

namespace strix::zmq_abi {
namespace {

using ms = std::chrono::milliseconds;

// DRAFT option numbers zmq.h declares only with ZMQ_BUILD_DRAFT_API.
constexpr int zap_enforce_domain = 93, loopback_fastpath = 94, multicast_loop = 96;

bool int_arg(const void* v, std::size_t len, int& out) noexcept {
    if (!v || len != sizeof(int)) return false;
    std::memcpy(&out, v, sizeof(int));
    return true;
}

// A CURVE key: 32 bytes, or 40 Z85 characters (41 with the NUL).
bool key_arg(const void* v, std::size_t len, std::string& out) {
    if (!v) return false;
    if (len == 32) {
        out.assign(static_cast<const char*>(v), 32);
        return true;
    }
    if (len != 40 && len != 41) return false;
    const auto raw = link::z85_decode(std::string_view(static_cast<const char*>(v), 40));
    if (!raw || raw->size() != 32) return false;
    out.assign(reinterpret_cast<const char*>(raw->data()), 32);
    return true;
}

int put_int(void* v, std::size_t* len, int x) noexcept {
    if (*len < sizeof(int)) return fail(EINVAL);
    std::memcpy(v, &x, sizeof(int));
    *len = sizeof(int);
    return 0;
}

template <class T>
int put_raw(void* v, std::size_t* len, T x) noexcept {
    if (*len < sizeof(T)) return fail(EINVAL);
    std::memcpy(v, &x, sizeof(T));
    *len = sizeof(T);
    return 0;
}

// A string with its NUL (libzmq's string options).
int put_string(void* v, std::size_t* len, const std::string& s) noexcept {
    if (*len < s.size() + 1) return fail(EINVAL);
    std::memcpy(v, s.c_str(), s.size() + 1);
    *len = s.size() + 1;
    return 0;
}

int put_key(void* v, std::size_t* len, const std::string& key) {
    const std::string raw = key.empty() ? std::string(32, '\0') : key;
    if (*len == 32) {
        std::memcpy(v, raw.data(), 32);
        return 0;
    }
    if (*len < 41) return fail(EINVAL);
    const std::string z = link::z85_encode(std::as_bytes(std::span(raw.data(), 32)));
    std::memcpy(v, z.c_str(), 41);
    *len = 41;
    return 0;
}

int ms_of(ms d) noexcept { return static_cast<int>(d.count()); }

}  // namespace

// Security as libzmq derives it: the mechanism set last, with its own fields only.
link::security_options effective_security(const sock& s) {
    link::security_options sec;
    sec.zap_domain = s.sec.zap_domain;
    if (s.so.mechanism == ZMQ_CURVE) {
        sec.curve_server = s.sec.as_server;
        sec.curve_publickey = s.sec.curve_public;
        sec.curve_secretkey = s.sec.curve_secret;
        if (!s.sec.as_server) sec.curve_serverkey = s.sec.curve_server;
    } else if (s.so.mechanism == ZMQ_PLAIN) {
        sec.plain_server = s.sec.as_server;
        if (!s.sec.as_server) {
            sec.plain_username = s.sec.plain_username;
            sec.plain_password = s.sec.plain_password;
        }
    }
    return sec;
}

namespace {

// Options that only apply to one socket type (libzmq's xsetsockopt): EINVAL elsewhere.
bool type_has(const sock& s, int option) noexcept {
    switch (option) {
        case ZMQ_SUBSCRIBE:
        case ZMQ_UNSUBSCRIBE: return s.type == ZMQ_SUB || s.type == ZMQ_XSUB;
        case ZMQ_ROUTER_MANDATORY:
        case ZMQ_ROUTER_HANDOVER:
        case ZMQ_ROUTER_RAW: return s.type == ZMQ_ROUTER;
        case ZMQ_PROBE_ROUTER: return s.type == ZMQ_ROUTER || s.type == ZMQ_DEALER || s.type == ZMQ_REQ;
        case ZMQ_CONNECT_ROUTING_ID: return s.type == ZMQ_ROUTER;
        case ZMQ_XPUB_VERBOSE:
        case ZMQ_XPUB_VERBOSER:
        case ZMQ_XPUB_NODROP:
        case ZMQ_XPUB_MANUAL:
        case ZMQ_XPUB_WELCOME_MSG: return s.type == ZMQ_XPUB || s.type == ZMQ_PUB;
        case ZMQ_REQ_CORRELATE:
        case ZMQ_REQ_RELAXED: return s.type == ZMQ_REQ;
        default: return true;
    }
}

// SUBSCRIBE / UNSUBSCRIBE: now on a live socket, in order at creation otherwise.
int subscription(sock& s, bool on, const void* v, std::size_t len) {
    if (!v && len) return fail(EFAULT);
    std::string topic(static_cast<const char*>(v ? v : ""), len);
    if (!s.bs) {
        s.early_subs.emplace_back(on, std::move(topic));
        return 0;
    }
    if (on)
        s.bs->subscribe(topic);
    else
        s.bs->unsubscribe(topic);
    return 0;
}

// Options acted on by link: the value goes into s.opts; true when it was one of these.
bool set_link_option(sock& s, int option, int x, bool is_int, int& rc) {
    auto& o = s.opts;
    auto ok = [&](bool valid) {
        rc = valid ? 0 : fail(EINVAL);
        return true;
    };
    switch (option) {
        case ZMQ_SNDHWM: return ok(is_int && x >= 0) && (rc || (o.sndhwm = static_cast<std::uint32_t>(x), true));
        case ZMQ_RCVHWM: return ok(is_int && x >= 0) && (rc || (o.rcvhwm = static_cast<std::uint32_t>(x), true));
        case ZMQ_LINGER: return ok(is_int && x >= -1) && (rc || (o.linger = ms(x), true));
        case ZMQ_RECONNECT_IVL: return ok(is_int && x >= -1) && (rc || (o.reconnect_ivl = ms(x), true));
        case ZMQ_RECONNECT_IVL_MAX: return ok(is_int && x >= 0) && (rc || (o.reconnect_ivl_max = ms(x), true));
        case ZMQ_HANDSHAKE_IVL: return ok(is_int && x >= 0) && (rc || (o.handshake_ivl = ms(x), true));
        case ZMQ_HEARTBEAT_IVL: return ok(is_int && x >= 0) && (rc || (o.heartbeat_ivl = ms(x), true));
        case ZMQ_HEARTBEAT_TIMEOUT: return ok(is_int && x >= 0) && (rc || (o.heartbeat_timeout = ms(x), true));
        case ZMQ_HEARTBEAT_TTL:
            // Carried in deciseconds on the wire, as libzmq rounds it.
            return ok(is_int && x >= 0 && x / 100 <= 0xffff) && (rc || (o.heartbeat_ttl = ms(x / 100 * 100), true));
        case ZMQ_TCP_KEEPALIVE:
            return ok(is_int && (x == -1 || x == 0 || x == 1)) && (rc || (o.tcp_keepalive = x, true));
        case ZMQ_TCP_KEEPALIVE_CNT: return ok(is_int && x >= -1) && (rc || (o.tcp_keepalive_cnt = x, true));
        case ZMQ_TCP_KEEPALIVE_IDLE: return ok(is_int && x >= -1) && (rc || (o.tcp_keepalive_idle = x, true));
        case ZMQ_TCP_KEEPALIVE_INTVL: return ok(is_int && x >= -1) && (rc || (o.tcp_keepalive_intvl = x, true));
        case ZMQ_IMMEDIATE: return ok(is_int && (x == 0 || x == 1)) && (rc || (o.immediate = x, true));
        case ZMQ_CONFLATE: return ok(is_int && (x == 0 || x == 1)) && (rc || (o.conflate = x, true));
        case ZMQ_ROUTER_MANDATORY: return ok(is_int && x >= 0) && (rc || (o.router_mandatory = x != 0, true));
        case ZMQ_PROBE_ROUTER: return ok(is_int && x >= 0) && (rc || (o.probe_router = x != 0, true));
        case ZMQ_XPUB_VERBOSE: return ok(is_int && x >= 0) && (rc || (o.xpub_verbose = x != 0, true));
        case ZMQ_XPUB_MANUAL: return ok(is_int && x >= 0) && (rc || (o.xpub_manual = x != 0, true));
        default: return false;
    }
}

// Options kept for getsockopt only (no behaviour behind them in strix; docs/zmq-abi.md).
bool set_stored_int(sock& s, int option, int x, bool is_int, int& rc) {
    auto& so = s.so;
    int* field = nullptr;
    bool valid = is_int;
    switch (option) {
        case ZMQ_SNDTIMEO:
            field = &so.sndtimeo;
            valid = valid && x >= -1;
            break;
        case ZMQ_RCVTIMEO:
            field = &so.rcvtimeo;
            valid = valid && x >= -1;
            break;
        case ZMQ_RATE:
            field = &so.rate;
            valid = valid && x > 0;
            break;
        case ZMQ_RECOVERY_IVL:
            field = &so.recovery_ivl;
            valid = valid && x >= 0;
            break;
        case ZMQ_SNDBUF:
            field = &so.sndbuf;
            valid = valid && x >= -1;
            break;
        case ZMQ_RCVBUF:
            field = &so.rcvbuf;
            valid = valid && x >= -1;
            break;
        case ZMQ_TOS:
            field = &so.tos;
            valid = valid && x >= 0;
            break;
        case ZMQ_BACKLOG:
            field = &so.backlog;
            valid = valid && x >= 0;
            break;
        case ZMQ_MULTICAST_HOPS:
            field = &so.multicast_hops;
            valid = valid && x > 0;
            break;
        case ZMQ_MULTICAST_MAXTPDU:
            field = &so.multicast_maxtpdu;
            valid = valid && x > 0;
            break;
        case ZMQ_CONNECT_TIMEOUT:
            field = &so.connect_timeout;
            valid = valid && x >= 0;
            break;
        case ZMQ_TCP_MAXRT:
            field = &so.tcp_maxrt;
            valid = valid && x >= 0;
            break;
        case ZMQ_IPV6:
            field = &so.ipv6;
            valid = valid && (x == 0 || x == 1);
            break;
        case ZMQ_INVERT_MATCHING: field = &so.invert_matching; break;
        case ZMQ_USE_FD:
            field = &so.use_fd;
            valid = valid && x >= -1;
            break;
        case ZMQ_REQ_CORRELATE:
            field = &so.req_correlate;
            valid = valid && x >= 0;
            break;
        case ZMQ_REQ_RELAXED:
            field = &so.req_relaxed;
            valid = valid && x >= 0;
            break;
        case ZMQ_ROUTER_HANDOVER:
            field = &so.router_handover;
            valid = valid && x >= 0;
            break;
        case ZMQ_ROUTER_RAW:
            field = &so.router_raw;
            valid = valid && x >= 0;
            break;
        case ZMQ_STREAM_NOTIFY:
            field = &so.stream_notify;
            valid = valid && x >= 0;
            break;
        case ZMQ_XPUB_NODROP:
            field = &so.xpub_nodrop;
            valid = valid && x >= 0;
            break;
        case ZMQ_XPUB_VERBOSER:
            field = &so.xpub_verboser;
            valid = valid && x >= 0;
            break;
        // libzmq 4.3's DRAFT options that its stable build still answers (pyzmq reads them).
        case zap_enforce_domain:
            field = &so.zap_enforce_domain;
            valid = valid && x >= 0;
            break;
        case loopback_fastpath:
            field = &so.loopback_fastpath;
            valid = valid && x >= 0;
            break;
        case multicast_loop:
            field = &so.multicast_loop;
            valid = valid && x >= 0;
            break;
        case ZMQ_IPV4ONLY:  // stored inverted in ipv6: no field of its own
            if (!is_int || (x != 0 && x != 1)) {
                rc = fail(EINVAL);
                return true;
            }
            so.ipv6 = !x;
            rc = 0;
            return true;
        default: return false;
    }
    if (!valid) {
        rc = fail(EINVAL);
        return true;
    }
    *field = x;
    rc = 0;
    return true;
}

// The security options (libzmq's as_server / mechanism bookkeeping).
bool set_security(sock& s, int option, const void* v, std::size_t len, int x, bool is_int, int& rc) {
    auto& sec = s.sec;
    rc = 0;
    switch (option) {
        case ZMQ_PLAIN_SERVER:
        case ZMQ_CURVE_SERVER:
            if (!is_int || (x != 0 && x != 1)) break;
            sec.as_server = x;
            s.so.mechanism = x ? (option == ZMQ_PLAIN_SERVER ? ZMQ_PLAIN : ZMQ_CURVE) : ZMQ_NULL;
            return true;
        case ZMQ_PLAIN_USERNAME:
        case ZMQ_PLAIN_PASSWORD:
            if (!v && len == 0) {
                s.so.mechanism = ZMQ_NULL;
                return true;
            }
            if (!v || len == 0 || len > 255) break;
            (option == ZMQ_PLAIN_USERNAME ? sec.plain_username : sec.plain_password)
                .assign(static_cast<const char*>(v), len);
            sec.as_server = 0;
            s.so.mechanism = ZMQ_PLAIN;
            return true;
        case ZMQ_CURVE_PUBLICKEY:
        case ZMQ_CURVE_SECRETKEY:
        case ZMQ_CURVE_SERVERKEY: {
            std::string& dst = option == ZMQ_CURVE_PUBLICKEY   ? sec.curve_public
                               : option == ZMQ_CURVE_SECRETKEY ? sec.curve_secret
                                                               : sec.curve_server;
            if (!key_arg(v, len, dst)) break;
            if (option == ZMQ_CURVE_SERVERKEY) sec.as_server = 0;
            s.so.mechanism = ZMQ_CURVE;
            return true;
        }
        case ZMQ_ZAP_DOMAIN:
            if (!v) break;  // libzmq: EINVAL even with size 0
            if (len > 255) break;
            sec.zap_domain.assign(static_cast<const char*>(v ? v : ""), len);
            return true;
        default: return false;
    }
    rc = fail(EINVAL);
    return true;
}

// Byte-string options.
bool set_bytes(sock& s, int option, const void* v, std::size_t len, int& rc) {
    rc = 0;
    const char* p = static_cast<const char*>(v);
    switch (option) {
        case ZMQ_ROUTING_ID:
            if (!v || len == 0 || len > 255) break;
            s.opts.routing_id.assign(p, len);
            return true;
        case ZMQ_CONNECT_ROUTING_ID:
            if (!v || len == 0 || len > 255) break;
            s.so.connect_routing_id.assign(p, len);
            return true;
        case ZMQ_XPUB_WELCOME_MSG:
            if (!v && len) break;
            s.opts.xpub_welcome_msg.assign(p ? p : "", len);
            return true;
        case ZMQ_SOCKS_PROXY:
            if (!v && len) break;
            s.so.socks_proxy.assign(p ? p : "", len);
            return true;
        case ZMQ_BINDTODEVICE:
            if (!v || len > 15) break;
            s.so.bindtodevice.assign(p, len);
            return true;
        case ZMQ_AFFINITY:
            if (!v || len != sizeof(std::uint64_t)) break;
            std::memcpy(&s.so.affinity, v, len);
            return true;
        case ZMQ_MAXMSGSIZE:
            if (!v || len != sizeof(std::int64_t)) break;
            std::memcpy(&s.so.maxmsgsize, v, len);
            s.opts.max_msg_size = s.so.maxmsgsize < 0 ? unlimited_msg_size : static_cast<std::size_t>(s.so.maxmsgsize);
            return true;
        case ZMQ_TCP_ACCEPT_FILTER:
        case ZMQ_IPC_FILTER_PID:
        case ZMQ_IPC_FILTER_UID:
        case ZMQ_IPC_FILTER_GID:
            // Deprecated in libzmq; strix has no filters behind them (docs/zmq-abi.md).
            return true;
        default: return false;
    }
    rc = fail(EINVAL);
    return true;
}

}  // namespace

// The live socket takes the new options. Security set halfway (a CURVE server without its
// secret key yet) is not applied: the socket keeps the last complete one until it is, as
// libzmq only looks at the keys when a connection starts.
void push_options(sock& s) {
    link::socket_options o = effective_options(s);
    try {
        s.bs->set_options(o);
    } catch (const std::invalid_argument&) {
        o.security = s.applied_security;
        s.bs->set_options(o);
        return;
    }
    s.applied_security = o.security;
}

int set_option(sock& s, int option, const void* v, std::size_t len) {
    if (!type_has(s, option)) return fail(EINVAL);
    if (!v && len) return fail(EFAULT);  // libzmq would copy from it
    if (option == ZMQ_SUBSCRIBE || option == ZMQ_UNSUBSCRIBE) return subscription(s, option == ZMQ_SUBSCRIBE, v, len);
    int x = 0;
    const bool is_int = int_arg(v, len, x);
    int rc = 0;
    const bool handled = set_link_option(s, option, x, is_int, rc) || set_security(s, option, v, len, x, is_int, rc) ||
                         set_bytes(s, option, v, len, rc);
    if (!handled) {
        if (!set_stored_int(s, option, x, is_int, rc)) return fail(EINVAL);
        return rc;
    }
    if (rc == 0 && s.bs) push_options(s);
    return rc;
}

link::socket_options effective_options(const sock& s) {
    link::socket_options o = s.opts;
    if (o.reconnect_ivl_max.count() == 0) o.reconnect_ivl_max = o.reconnect_ivl;  // libzmq: 0 = no backoff
    if (o.reconnect_ivl.count() < 0) o.reconnect_ivl = o.reconnect_ivl_max = ms(3'600'000);  // -1: never (an hour)
    o.security = effective_security(s);
    return o;
}

int get_option(sock& s, int option, void* v, std::size_t* len) {
    const auto& o = s.opts;
    const auto& so = s.so;
    switch (option) {
        case ZMQ_TYPE: return put_int(v, len, s.type);
        case ZMQ_RCVMORE: return put_int(v, len, s.rcvmore ? 1 : 0);
        case ZMQ_SNDHWM: return put_int(v, len, static_cast<int>(o.sndhwm));
        case ZMQ_RCVHWM: return put_int(v, len, static_cast<int>(o.rcvhwm));
        case ZMQ_LINGER: return put_int(v, len, ms_of(o.linger));
        case ZMQ_RECONNECT_IVL: return put_int(v, len, ms_of(o.reconnect_ivl));
        case ZMQ_RECONNECT_IVL_MAX: return put_int(v, len, ms_of(o.reconnect_ivl_max));
        case ZMQ_HANDSHAKE_IVL: return put_int(v, len, ms_of(o.handshake_ivl));
        case ZMQ_HEARTBEAT_IVL: return put_int(v, len, ms_of(o.heartbeat_ivl));
        case ZMQ_HEARTBEAT_TIMEOUT: return put_int(v, len, ms_of(o.heartbeat_timeout));
        case ZMQ_HEARTBEAT_TTL: return put_int(v, len, ms_of(o.heartbeat_ttl));
        case ZMQ_TCP_KEEPALIVE: return put_int(v, len, o.tcp_keepalive);
        case ZMQ_TCP_KEEPALIVE_CNT: return put_int(v, len, o.tcp_keepalive_cnt);
        case ZMQ_TCP_KEEPALIVE_IDLE: return put_int(v, len, o.tcp_keepalive_idle);
        case ZMQ_TCP_KEEPALIVE_INTVL: return put_int(v, len, o.tcp_keepalive_intvl);
        case ZMQ_IMMEDIATE: return put_int(v, len, o.immediate ? 1 : 0);
        case ZMQ_CONFLATE: return put_int(v, len, o.conflate ? 1 : 0);
        case ZMQ_SNDTIMEO: return put_int(v, len, so.sndtimeo);
        case ZMQ_RCVTIMEO: return put_int(v, len, so.rcvtimeo);
        case ZMQ_RATE: return put_int(v, len, so.rate);
        case ZMQ_RECOVERY_IVL: return put_int(v, len, so.recovery_ivl);
        case ZMQ_SNDBUF: return put_int(v, len, so.sndbuf);
        case ZMQ_RCVBUF: return put_int(v, len, so.rcvbuf);
        case ZMQ_TOS: return put_int(v, len, so.tos);
        case ZMQ_BACKLOG: return put_int(v, len, so.backlog);
        case ZMQ_MULTICAST_HOPS: return put_int(v, len, so.multicast_hops);
        case ZMQ_MULTICAST_MAXTPDU: return put_int(v, len, so.multicast_maxtpdu);
        case ZMQ_CONNECT_TIMEOUT: return put_int(v, len, so.connect_timeout);
        case ZMQ_TCP_MAXRT: return put_int(v, len, so.tcp_maxrt);
        case ZMQ_IPV6: return put_int(v, len, so.ipv6);
        case ZMQ_IPV4ONLY: return put_int(v, len, so.ipv6 ? 0 : 1);
        case ZMQ_INVERT_MATCHING: return put_int(v, len, so.invert_matching);
        case zap_enforce_domain: return put_int(v, len, so.zap_enforce_domain);
        case loopback_fastpath: return put_int(v, len, so.loopback_fastpath);
        case multicast_loop: return put_int(v, len, so.multicast_loop);
        case ZMQ_USE_FD: return put_int(v, len, so.use_fd);
        case ZMQ_MECHANISM: return put_int(v, len, so.mechanism);
        case ZMQ_PLAIN_SERVER: return put_int(v, len, so.mechanism == ZMQ_PLAIN && s.sec.as_server ? 1 : 0);
        case ZMQ_CURVE_SERVER: return put_int(v, len, so.mechanism == ZMQ_CURVE && s.sec.as_server ? 1 : 0);
        case ZMQ_PLAIN_USERNAME: return put_string(v, len, s.sec.plain_username);
        case ZMQ_PLAIN_PASSWORD: return put_string(v, len, s.sec.plain_password);
        case ZMQ_ZAP_DOMAIN: return put_string(v, len, s.sec.zap_domain);
        case ZMQ_CURVE_PUBLICKEY: return put_key(v, len, s.sec.curve_public);
        case ZMQ_CURVE_SECRETKEY: return put_key(v, len, s.sec.curve_secret);
        case ZMQ_CURVE_SERVERKEY: return put_key(v, len, s.sec.curve_server);
        case ZMQ_LAST_ENDPOINT: return put_string(v, len, s.last_endpoint);
        case ZMQ_SOCKS_PROXY: return put_string(v, len, so.socks_proxy);
        case ZMQ_BINDTODEVICE: return put_string(v, len, so.bindtodevice);
        case ZMQ_THREAD_SAFE: return put_int(v, len, 0);
        case ZMQ_AFFINITY: return put_raw(v, len, so.affinity);
        case ZMQ_MAXMSGSIZE: return put_raw(v, len, so.maxmsgsize);
        case ZMQ_ROUTING_ID:
            if (*len < o.routing_id.size()) return fail(EINVAL);
            if (!o.routing_id.empty()) std::memcpy(v, o.routing_id.data(), o.routing_id.size());
            *len = o.routing_id.size();
            return 0;
        case ZMQ_FD:
            if (*len < sizeof(int)) return fail(EINVAL);
            return put_int(v, len, s.live().notify_fd());
        case ZMQ_EVENTS: {
            if (*len < sizeof(int)) return fail(EINVAL);
            return put_int(v, len, socket_events(s));
        }
        default: return fail(EINVAL);
    }
}

int socket_events(sock& s) {
    link::blocking_socket& bs = s.live();
    bs.clear_notify();
    int ev = 0;
    if (s.in_next < s.in.size() || (s.type != ZMQ_PUB && s.type != ZMQ_PUSH && link::readable(bs))) ev |= ZMQ_POLLIN;
    if (link::writable(bs) && !s.waits_for_a_peer()) ev |= ZMQ_POLLOUT;
    return ev;
}

}  // namespace strix::zmq_abi
