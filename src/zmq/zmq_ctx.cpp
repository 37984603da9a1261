// Contexts, sockets' lifecycle, errors and version: zmq_ctx_*, zmq_socket, zmq_close,
// zmq_errno, zmq_strerror, zmq_version, zmq_has and the deprecated zmq_init/term.
#include "zmq/zmq_shim.hpp"

#include <strix/core/log.hpp>

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace strix::zmq_abi {

link::context& ctx::link_locked() {
    if (!lc) lc = std::make_unique<link::context>(static_cast<unsigned>(io_threads < 1 ? 1 : io_threads));
    return *lc;
}

sock::sock(ctx* c, int t, link::socket_type lt) : owner(c), type(t), ltype(lt) {
    // libzmq's defaults where strix's differ: no message size limit (as far as strix has one).
    opts.max_msg_size = unlimited_msg_size;
    // libzmq's reconnect and handshake defaults are strix's (100 ms, max 0 = 100 ms, 30 s).
    opts.reconnect_ivl_max = std::chrono::milliseconds(0);
}

link::blocking_socket& sock::live() {
    if (bs) return *bs;
    link::context* lc;
    {
        std::lock_guard lk(owner->mu);
        lc = &owner->link_locked();
    }
    link::socket_options o = effective_options(*this);
    applied_security = o.security;
    bs = std::make_unique<link::blocking_socket>(*lc, ltype, o);
    {
        // A context terminated meanwhile ends this socket's waits too (pyzmq's devices make
        // their sockets live on their own thread while another terminates the context).
        std::lock_guard lk(owner->mu);
        live_bs = bs.get();
        if (owner->terminating) bs->interrupt();
    }
    for (auto& [on, topic] : early_subs) {
        if (on)
            bs->subscribe(topic);
        else
            bs->unsubscribe(topic);
    }
    early_subs.clear();
    return *bs;
}

bool sock::terminated() const { return owner->terminating.load(std::memory_order_acquire); }

bool sock::waits_for_a_peer() const noexcept {
    if (type != ZMQ_PUSH && type != ZMQ_DEALER && type != ZMQ_REQ && type != ZMQ_PAIR) return false;
    return connects == 0 && (!bs || bs->peers_seen() == 0);
}

int errno_of(const std::error_code& ec) noexcept {
    if (ec.category() == link::link_category()) {
        switch (static_cast<link::link_errc>(ec.value())) {
            case link::link_errc::would_block: return EAGAIN;
            case link::link_errc::no_peer: return EHOSTUNREACH;
            case link::link_errc::bad_state: return EFSM;
            case link::link_errc::not_supported: return ENOTSUP;
            case link::link_errc::address_in_use: return EADDRINUSE;
            case link::link_errc::closed: return ENOTSOCK;
            case link::link_errc::message_too_large: return EMSGSIZE;
            default: return EPROTO;
        }
    }
    if (ec.category() == std::generic_category() || ec.category() == std::system_category()) return ec.value();
    return EINVAL;
}

int errno_of_exception() noexcept {
    try {
        throw;
    } catch (const std::system_error& e) {
        return errno_of(e.code());
    } catch (const std::bad_alloc&) {
        return ENOMEM;
    } catch (...) {
        return EINVAL;
    }
}

sock* as_sock(void* s) noexcept {
    if (!s || static_cast<sock*>(s)->tag != sock_tag) {
        errno = ENOTSOCK;
        return nullptr;
    }
    return static_cast<sock*>(s);
}

ctx* as_ctx(void* c) noexcept {
    if (!c || static_cast<ctx*>(c)->tag != ctx_tag) {
        errno = EFAULT;
        return nullptr;
    }
    return static_cast<ctx*>(c);
}

namespace {

bool to_link_type(int t, link::socket_type& out) noexcept {
    using st = link::socket_type;
    switch (t) {
        case ZMQ_PAIR: out = st::pair; return true;
        case ZMQ_PUB: out = st::pub; return true;
        case ZMQ_SUB: out = st::sub; return true;
        case ZMQ_REQ: out = st::req; return true;
        case ZMQ_REP: out = st::rep; return true;
        case ZMQ_DEALER: out = st::dealer; return true;
        case ZMQ_ROUTER: out = st::router; return true;
        case ZMQ_PULL: out = st::pull; return true;
        case ZMQ_PUSH: out = st::push; return true;
        case ZMQ_XPUB: out = st::xpub; return true;
        case ZMQ_XSUB: out = st::xsub; return true;
        default: return false;  // ZMQ_STREAM among them: docs/zmq-abi.md says why
    }
}

// Terminated contexts are kept (marked dead) a while, so a call on one gets libzmq's EFAULT
// instead of touching freed memory.
void quarantine(ctx* c) {
    static std::mutex mu;
    static std::deque<std::unique_ptr<ctx>> dead;
    std::lock_guard lk(mu);
    dead.emplace_back(c);
    if (dead.size() > 64) dead.pop_front();
}

// Ends every wait of the context's sockets (ETERM from now on).
void interrupt_all(ctx& c) {
    c.terminating = true;
    for (sock* s : c.sockets)
        if (s->live_bs) s->live_bs->interrupt();
}

}  // namespace

}  // namespace strix::zmq_abi

using namespace strix::zmq_abi;

extern "C" {

int zmq_errno(void) { return errno; }

const char* zmq_strerror(int errnum) {
    switch (errnum) {
        case EFSM: return "Operation cannot be accomplished in current state";
        case ENOCOMPATPROTO: return "The protocol is not compatible with the socket type";
        case ETERM: return "Context was terminated";
        case EMTHREAD: return "No thread available";
        default: return std::strerror(errnum);
    }
}

void zmq_version(int* major, int* minor, int* patch) {
    if (major) *major = ZMQ_VERSION_MAJOR;
    if (minor) *minor = ZMQ_VERSION_MINOR;
    if (patch) *patch = ZMQ_VERSION_PATCH;
}

int zmq_has(const char* capability) {
    if (!capability) return 0;
    // Transports and mechanisms strix has; pgm, tipc, norm, vmci, ws, gssapi and draft it has not.
    for (const char* c : {"ipc", "curve"})
        if (std::strcmp(capability, c) == 0) return 1;
    return 0;
}

void* zmq_ctx_new(void) {
    // libzmq writes nothing to stderr; strix's engine logs connection retries at info. Quiet
    // below errors unless STRIX_LOG asks for more.
    static std::once_flag quiet;
    std::call_once(quiet, [] {
        if (!std::getenv("STRIX_LOG")) strix::set_log_level(strix::log_level::error);
    });
    try {
        return new ctx;
    } catch (...) {
        errno = ENOMEM;
        return nullptr;
    }
}

int zmq_ctx_shutdown(void* c_) {
    ctx* c = as_ctx(c_);
    if (!c) return -1;
    std::lock_guard lk(c->mu);
    interrupt_all(*c);
    return 0;
}

int zmq_ctx_term(void* c_) {
    ctx* c = as_ctx(c_);
    if (!c) return -1;
    {
        std::unique_lock lk(c->mu);
        interrupt_all(*c);
        // libzmq waits for the application to close every socket (its blocked calls get ETERM).
        c->cv.wait(lk, [&] { return c->sockets.empty(); });
    }
    // The link context waits for what closed sockets still deliver (their linger).
    c->lc.reset();
    c->tag = dead_tag;
    quarantine(c);
    return 0;
}

int zmq_ctx_destroy(void* c) { return zmq_ctx_term(c); }
int zmq_term(void* c) { return zmq_ctx_term(c); }

void* zmq_init(int io_threads) {
    if (io_threads < 0) {
        errno = EINVAL;
        return nullptr;
    }
    void* c = zmq_ctx_new();
    if (c) static_cast<ctx*>(c)->io_threads = io_threads;
    return c;
}

int zmq_ctx_set(void* c_, int option, int value) {
    ctx* c = as_ctx(c_);
    if (!c) return -1;
    std::lock_guard lk(c->mu);
    switch (option) {
        case ZMQ_IO_THREADS:
            if (value < 0) break;
            c->io_threads = value;  // applies when the first socket makes the engine
            return 0;
        case ZMQ_MAX_SOCKETS:
            if (value < 1) break;
            c->max_sockets = value;
            return 0;
        case ZMQ_IPV6:
            if (value != 0 && value != 1) break;
            c->ipv6 = value;
            return 0;
        case ZMQ_BLOCKY:
            if (value != 0 && value != 1) break;
            c->blocky = value;
            return 0;
        case ZMQ_MAX_MSGSZ:
            if (value < 0) break;
            c->max_msgsz = value;
            return 0;
        case ZMQ_THREAD_PRIORITY:
            if (value < 0) break;
            c->thread_priority = value;
            return 0;
        case ZMQ_THREAD_SCHED_POLICY:
            if (value < 0) break;
            c->thread_sched_policy = value;
            return 0;
        default: break;
    }
    errno = EINVAL;
    return -1;
}

int zmq_ctx_get(void* c_, int option) {
    ctx* c = as_ctx(c_);
    if (!c) return -1;
    std::lock_guard lk(c->mu);
    switch (option) {
        case ZMQ_IO_THREADS: return c->io_threads;
        case ZMQ_MAX_SOCKETS: return c->max_sockets;
        case ZMQ_SOCKET_LIMIT: return 65535;
        case ZMQ_IPV6: return c->ipv6;
        case ZMQ_BLOCKY: return c->blocky;
        case ZMQ_MAX_MSGSZ: return c->max_msgsz;
        case ZMQ_MSG_T_SIZE: return static_cast<int>(sizeof(zmq_msg_t));
        default: errno = EINVAL; return -1;
    }
}

void* zmq_socket(void* c_, int type) {
    ctx* c = as_ctx(c_);
    if (!c) return nullptr;
    strix::link::socket_type lt;
    if (!to_link_type(type, lt)) {
        errno = EINVAL;
        return nullptr;
    }
    std::lock_guard lk(c->mu);
    if (c->terminating) {
        errno = ETERM;
        return nullptr;
    }
    if (static_cast<int>(c->sockets.size()) >= c->max_sockets) {
        errno = EMFILE;
        return nullptr;
    }
    try {
        auto* s = new sock(c, type, lt);
        s->so.ipv6 = c->ipv6;
        c->sockets.insert(s);
        return s;
    } catch (...) {
        errno = ENOMEM;
        return nullptr;
    }
}

int zmq_close(void* s_) {
    sock* s = as_sock(s_);
    if (!s) return -1;
    stop_monitor(*s);
    ctx* c = s->owner;
    {
        std::lock_guard lk(c->mu);
        s->live_bs = nullptr;
    }
    s->bs.reset();  // closes: queued output keeps going for the linger (the link context waits)
    s->tag = dead_tag;
    s->mon.reset();
    s->out = strix::link::message();
    s->in.clear();
    std::lock_guard lk(c->mu);
    c->sockets.erase(s);
    // Kept dead for a while: libzmq's sockets outlive zmq_close until its reaper gets them.
    c->closed.emplace_back(s);
    if (c->closed.size() > ctx::quarantined_max) c->closed.pop_front();
    c->cv.notify_all();
    return 0;
}

}  // extern "C"
