// Sockets' endpoints and traffic: zmq_bind/connect/unbind/disconnect, zmq_send/recv and their
// zmq_msg_ forms, zmq_send_const, zmq_setsockopt/getsockopt (the options are in zmq_options.cpp).
#include "zmq/zmq_msg.hpp"
#include "zmq/zmq_shim.hpp"

#include <strix/link/poll.hpp>

#include <arpa/inet.h>
#include <sys/uio.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace strix::zmq_abi {
namespace {

// libzmq checks the transport before anything else: ENOCOMPATPROTO for one it knows but
// strix has not, EPROTONOSUPPORT for one nobody has.
int check_transport(const char* addr) noexcept {
    if (!addr) return EINVAL;
    const char* sep = std::strstr(addr, "://");
    if (!sep || sep == addr || !sep[3]) return EINVAL;  // no "://", or nothing before or after it
    const std::string_view proto(addr, static_cast<std::size_t>(sep - addr));
    if (proto == "tcp" || proto == "ipc" || proto == "inproc") return 0;
    if (proto == "pgm" || proto == "epgm" || proto == "norm" || proto == "tipc" || proto == "vmci" || proto == "ws" ||
        proto == "wss" || proto == "udp")
        return ENOCOMPATPROTO;
    return EPROTONOSUPPORT;
}

// A context made with ZMQ_IO_THREADS 0 serves inproc only, as libzmq's: EMTHREAD otherwise.
int needs_io_thread(const sock& s, const char* addr) noexcept {
    if (std::strncmp(addr, "inproc://", 9) == 0) return 0;
    std::lock_guard lk(s.owner->mu);
    return s.owner->io_threads == 0 ? EMTHREAD : 0;
}

// tcp://<host>:<port> whose host is neither "*" nor an IP address.
bool names_an_interface(const char* addr) noexcept {
    if (std::strncmp(addr, "tcp://", 6) != 0) return false;
    const std::string_view rest(addr + 6);
    const auto colon = rest.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    std::string host(rest.substr(0, colon));
    if (host == "*") return false;
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    unsigned char buf[16];
    return ::inet_pton(AF_INET, host.c_str(), buf) != 1 && ::inet_pton(AF_INET6, host.c_str(), buf) != 1;
}

// zmq_unbind and zmq_disconnect: libzmq ends a bind or a connect through either, trying the one
// named first.
void end_endpoint(sock& s, const char* addr, bool bound_first) {
    auto once = [&](bool bound) {
        if (bound) {
            s.bs->unbind(addr);
        } else {
            s.bs->disconnect(addr);
            if (s.connects > 0) --s.connects;
        }
    };
    try {
        once(bound_first);
    } catch (const std::system_error& e) {
        if (e.code() != std::errc::no_such_file_or_directory) throw;
        once(!bound_first);
    }
}

// zmq_unbind / zmq_disconnect's checks, then end_endpoint.
int end_by_address(void* s_, const char* addr, bool bound_first) {
    sock* s = as_sock(s_);
    if (!s) return -1;
    if (s->terminated()) return fail(ETERM);
    if (const int e = check_transport(addr)) return fail(e);  // as libzmq: EINVAL for NULL too
    if (!s->bs) return fail(ENOENT);
    try {
        end_endpoint(*s, addr, bound_first);
        return 0;
    } catch (...) {
        return fail(errno_of_exception());
    }
}

// The state a wait that came back empty-handed means: a terminated context or a timeout.
int wait_failed(const sock& s) noexcept { return s.terminated() ? ETERM : EAGAIN; }

int send_error(const sock& s, const std::error_code& ec) noexcept {
    const int e = errno_of(ec);
    return e == EAGAIN ? wait_failed(s) : e;
}

// REQ and REP take turns; libzmq says EFSM to a call out of turn.
bool send_in_turn(const sock& s) noexcept {
    if (s.type == ZMQ_REQ) return !s.req_sent || s.so.req_relaxed;
    if (s.type == ZMQ_REP) return s.rep_holding;
    return true;
}

bool recv_in_turn(const sock& s) noexcept {
    if (s.type == ZMQ_REQ) return s.req_sent;
    if (s.type == ZMQ_REP) return !s.rep_holding;
    return true;
}

void sent_whole(sock& s) noexcept {
    if (s.type == ZMQ_REQ) s.req_sent = true;
    if (s.type == ZMQ_REP) s.rep_holding = false;
}

void received_whole(sock& s) noexcept {
    if (s.type == ZMQ_REQ) s.req_sent = false;
    if (s.type == ZMQ_REP) s.rep_holding = true;
}

// Sends what `out` holds plus p as its last part; on failure `out` is as before.
std::error_code send_last(sock& s, link::part p, link::blocking_socket::duration wait) {
    s.out.add(std::move(p));
    const std::error_code ec = s.bs->send(s.out, wait);
    if (!ec) {
        s.out = link::message();
        s.out_open = false;
        return ec;
    }
    link::message keep;
    for (std::size_t i = 0; i + 1 < s.out.size(); ++i) keep.add(s.out[i]);
    s.out = std::move(keep);
    return ec;
}

// libzmq takes a multipart message whole or not at all and decides at its first part: once that
// is accepted, no later part is refused for the high-water mark. strix queues the parts and sends
// them with the last, so the room is looked for at the first part of the socket types a full pipe
// blocks (EAGAIN, or after waiting up to ZMQ_SNDTIMEO); the last part then finds it, since only
// the application's thread adds to the pipe. Without this a full pipe refused the last part and
// the parts before it were lost to the peer (found by the zmq_api fuzz target).
bool first_part_fits(sock& s, link::blocking_socket& bs, int flags) {
    switch (s.type) {
        case ZMQ_PAIR:
        case ZMQ_PUSH:
        case ZMQ_DEALER:
        case ZMQ_REQ:
        case ZMQ_REP: break;
        default: return true;  // ROUTER and PUB drop rather than block; the rest send no parts
    }
    link::poll_item item{&bs, link::poll_out, 0};
    return link::poll(std::span<link::poll_item>(&item, 1), wait_for(flags, s.so.sndtimeo)) > 0;
}

// One part from the application: queued while more follow, sent with the last.
int send_part(sock& s, link::bytes_view b, msg_rep* m, int flags) {
    if (s.terminated()) return fail(ETERM);
    if (!s.out_open && !send_in_turn(s)) return fail(EFSM);
    try {
        link::blocking_socket& bs = s.live();
        if (flags & ZMQ_SNDMORE) {
            if (!s.out_open && s.waits_for_a_peer() && !bs.wait_for_peers(1, wait_for(flags, s.so.sndtimeo)))
                return fail(wait_failed(s));
            if (!s.out_open && !first_part_fits(s, bs, flags)) return fail(wait_failed(s));
            // A mandatory ROUTER answers for the routing id at the first part, as libzmq's: the id
            // alone goes to the socket, which checks the peer and its room and sends nothing.
            if (!s.out_open && s.type == ZMQ_ROUTER && s.opts.router_mandatory) {
                if (const std::error_code ec = bs.send(b, wait_for(flags, s.so.sndtimeo)))
                    return fail(send_error(s, ec));
            }
            s.out.add(m ? msg_take_part(*m) : link::part::copy(b));
            s.out_open = true;
            return 0;
        }
        const auto wait = wait_for(flags, s.so.sndtimeo);
        if (s.waits_for_a_peer() && !bs.wait_for_peers(1, wait)) return fail(wait_failed(s));
        std::error_code ec;
        if (s.out_open) {
            ec = send_last(s, m ? msg_take_part(*m) : link::part::copy(b), wait);
            if (ec && m) msg_set_part(*m, std::move(const_cast<link::part&>(s.out[0])));  // unreachable: kept below
        } else if (m && m->kind == msg_kind::user) {
            link::message one;
            one.add(msg_share_user(*m));  // by reference: the free function runs once it has left
            ec = bs.send(one, wait);
        } else if (!m || b.size() <= 512 || m->kind != msg_kind::shared) {
            ec = bs.send(b, wait);  // small parts are copied into the pipe: no message object
        } else {
            link::message one;
            one.add(m->part);  // a reference; m keeps its own until the send succeeds
            ec = bs.send(one, wait);
        }
        if (ec) return fail(send_error(s, ec));
        sent_whole(s);
        return 0;
    } catch (...) {
        return fail(errno_of_exception());
    }
}

struct recv_target {
    sock* s;
    msg_rep* m;  // zmq_msg_recv
    void* buf;   // zmq_recv
    std::size_t len;
    std::size_t first_size = 0;
    bool first = true;
    bool more = false;
};

void take_part(void* user, link::bytes_view b, link::part* ref, bool more) {
    auto& t = *static_cast<recv_target*>(user);
    if (t.first) {
        t.first = false;
        t.more = more;
        t.first_size = b.size();
        if (t.m) {
            if (ref)
                msg_set_part(*t.m, std::move(*ref));
            else
                msg_set_copy(*t.m, b);
        } else if (t.len && !b.empty()) {
            std::memcpy(t.buf, b.data(), std::min(t.len, b.size()));
        }
        return;
    }
    t.s->in.push_back(ref ? std::move(*ref) : link::part::copy(b));
}

// The next part for the application: one left from the message being read, or a new message.
int recv_part(sock& s, recv_target& t, int flags) {
    if (s.terminated()) return fail(ETERM);
    if (s.type == ZMQ_PUB || s.type == ZMQ_PUSH) return fail(ENOTSUP);  // send-only types
    if (s.in_next < s.in.size()) {
        link::part& p = s.in[s.in_next++];
        t.first_size = p.size();
        if (t.m)
            msg_set_part(*t.m, std::move(p));
        else if (t.len && p.size())
            std::memcpy(t.buf, p.bytes().data(), std::min(t.len, p.size()));
        s.rcvmore = s.in_next < s.in.size();
    } else {
        if (s.type == ZMQ_PUB || s.type == ZMQ_PUSH) return fail(ENOTSUP);
        if (!recv_in_turn(s)) return fail(EFSM);
        try {
            link::blocking_socket& bs = s.live();
            s.in.clear();
            s.in_next = 0;
            if (!bs.recv_into(&take_part, &t, wait_for(flags, s.so.rcvtimeo))) return fail(wait_failed(s));
            s.in_props = bs.received_properties();
        } catch (...) {
            return fail(errno_of_exception());
        }
        s.rcvmore = t.more;
    }
    if (t.m) {
        t.m->flags = s.rcvmore ? msg_rep::more_flag : 0;
        msg_set_props(*t.m, s.in_props);  // every part of a message carries them, as in libzmq
    }
    if (!s.rcvmore) {
        s.in.clear();
        s.in_next = 0;
        s.in_props.reset();
        received_whole(s);
    }
    return 0;
}

}  // namespace
}  // namespace strix::zmq_abi

using namespace strix::zmq_abi;

extern "C" {

int zmq_bind(void* s_, const char* addr) {
    sock* s = as_sock(s_);
    if (!s) return -1;
    if (s->terminated()) return fail(ETERM);
    if (const int e = check_transport(addr)) return fail(e);
    if (const int e = needs_io_thread(*s, addr)) return fail(e);
    try {
        s->last_endpoint = s->live().bind(addr);
        // libzmq names a wildcard interface by its address.
        if (s->last_endpoint.rfind("tcp://*:", 0) == 0) s->last_endpoint.replace(0, 7, "tcp://0.0.0.0");
        return 0;
    } catch (...) {
        const int e = errno_of_exception();
        // libzmq takes a tcp host it cannot parse as an address for an interface name: ENODEV.
        return fail(e == EINVAL && names_an_interface(addr) ? ENODEV : e);
    }
}

int zmq_connect(void* s_, const char* addr) {
    sock* s = as_sock(s_);
    if (!s) return -1;
    if (s->terminated()) return fail(ETERM);
    if (const int e = check_transport(addr)) return fail(e);
    if (const int e = needs_io_thread(*s, addr)) return fail(e);
    try {
        s->live().connect(addr);
        s->last_endpoint = addr;
        ++s->connects;
        return 0;
    } catch (...) {
        return fail(errno_of_exception());
    }
}

int zmq_unbind(void* s_, const char* addr) { return end_by_address(s_, addr, true); }

int zmq_disconnect(void* s_, const char* addr) { return end_by_address(s_, addr, false); }

int zmq_send(void* s_, const void* buf, size_t len, int flags) {
    sock* s = as_sock(s_);
    if (!s) return -1;
    if (!buf && len) return fail(EFAULT);
    const strix::link::bytes_view b(static_cast<const std::byte*>(buf), len);
    if (send_part(*s, b, nullptr, flags) < 0) return -1;
    return static_cast<int>(len > INT_MAX ? INT_MAX : len);
}

int zmq_send_const(void* s_, const void* buf, size_t len, int flags) { return zmq_send(s_, buf, len, flags); }

int zmq_msg_send(zmq_msg_t* m_, void* s_, int flags) {
    sock* s = as_sock(s_);
    if (!s) return -1;
    msg_rep* m = valid(m_);
    if (!m) return -1;
    const auto b = msg_bytes(*m);
    const std::size_t size = b.size();
    if (send_part(*s, b, m, flags) < 0) return -1;
    // Sent: the message is the socket's; the caller's is empty again.
    msg_reset(*m);
    return static_cast<int>(size > INT_MAX ? INT_MAX : size);
}

int zmq_sendmsg(void* s, zmq_msg_t* m, int flags) { return zmq_msg_send(m, s, flags); }

int zmq_recv(void* s_, void* buf, size_t len, int flags) {
    sock* s = as_sock(s_);
    if (!s) return -1;
    if (!buf && len) return fail(EFAULT);
    recv_target t{s, nullptr, buf, len};
    if (recv_part(*s, t, flags) < 0) return -1;
    return static_cast<int>(t.first_size > INT_MAX ? INT_MAX : t.first_size);
}

int zmq_msg_recv(zmq_msg_t* m_, void* s_, int flags) {
    sock* s = as_sock(s_);
    if (!s) return -1;
    msg_rep* m = valid(m_);
    if (!m) return -1;
    recv_target t{s, m, nullptr, 0};
    if (recv_part(*s, t, flags) < 0) return -1;
    return static_cast<int>(t.first_size > INT_MAX ? INT_MAX : t.first_size);
}

int zmq_recvmsg(void* s, zmq_msg_t* m, int flags) { return zmq_msg_recv(m, s, flags); }

int zmq_setsockopt(void* s_, int option, const void* v, size_t len) {
    sock* s = as_sock(s_);
    if (!s) return -1;
    if (s->terminated()) return fail(ETERM);
    try {
        return set_option(*s, option, v, len);
    } catch (...) {
        return fail(errno_of_exception());
    }
}

int zmq_getsockopt(void* s_, int option, void* v, size_t* len) {
    sock* s = as_sock(s_);
    if (!s) return -1;
    if (s->terminated()) return fail(ETERM);
    if (!v || !len) return fail(EFAULT);
    try {
        return get_option(*s, option, v, len);
    } catch (...) {
        return fail(errno_of_exception());
    }
}

}  // extern "C"

// The deprecated scatter/gather forms, still exported by libzmq 4.3.
extern "C" int zmq_sendiov(void* s_, struct iovec* iov, size_t count, int flags) {
    sock* s = as_sock(s_);
    if (!s) return -1;
    if (count == 0 || !iov) return fail(EINVAL);
    int rc = 0;
    for (size_t i = 0; i < count; ++i) {
        // libzmq's own rule: the vectors go with the caller's flags, the last without SNDMORE.
        const int f = i + 1 < count ? flags : (flags & ~ZMQ_SNDMORE);
        rc = zmq_send(s_, iov[i].iov_base, iov[i].iov_len, f);
        if (rc < 0) return -1;
    }
    return rc;
}

// Receives up to *count parts of one message into buffers it allocates (the caller frees
// them); *count says how many it filled.
extern "C" int zmq_recviov(void* s_, struct iovec* iov, size_t* count, int flags) {
    sock* s = as_sock(s_);
    if (!s) return -1;
    if (!iov || !count || *count == 0) return fail(EINVAL);
    size_t n = 0;
    bool more = true;
    while (more && n < *count) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        const int rc = zmq_msg_recv(&m, s_, flags);
        if (rc < 0) {
            zmq_msg_close(&m);
            *count = n;
            return -1;
        }
        const size_t size = zmq_msg_size(&m);
        iov[n].iov_base = std::malloc(size ? size : 1);
        if (size) std::memcpy(iov[n].iov_base, zmq_msg_data(&m), size);
        iov[n].iov_len = size;
        more = zmq_msg_more(&m) != 0;
        zmq_msg_close(&m);
        ++n;
    }
    *count = n;
    return static_cast<int>(n);  // libzmq returns the parts received, not their bytes
}
