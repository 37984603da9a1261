#pragma once
// The libzmq side of the interop tests: a context and sockets over libzmq's C API, used from the
// test thread only, every receive and send bounded (ZMQ_RCVTIMEO / ZMQ_SNDTIMEO) and closed with
// ZMQ_LINGER 0, plus a monitor that records libzmq's connection events. The strix side is
// link_fixture.hpp's engine.
#include "link/link_fixture.hpp"

#include <zmq.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace strix::test::zmq {

using strs = std::vector<std::string>;

inline std::runtime_error failure(const std::string& what) {
    return std::runtime_error(what + ": " + zmq_strerror(zmq_errno()));
}

/// One libzmq context (one I/O thread), terminated at scope end after its sockets.
class context {
public:
    context() : ctx_(zmq_ctx_new()) {
        if (!ctx_) throw failure("zmq_ctx_new");
    }
    ~context() { zmq_ctx_term(ctx_); }
    context(const context&) = delete;
    context& operator=(const context&) = delete;
    void* get() const noexcept { return ctx_; }

private:
    void* ctx_;
};

/// A libzmq socket for the test thread: 5 s send and receive timeouts, linger 0.
class socket {
public:
    socket(context& ctx, int type) : s_(zmq_socket(ctx.get(), type)) {
        if (!s_) throw failure("zmq_socket");
        set(ZMQ_LINGER, 0);
        set(ZMQ_SNDTIMEO, 5000);
        set(ZMQ_RCVTIMEO, 5000);
    }
    ~socket() { close(); }
    socket(const socket&) = delete;
    socket& operator=(const socket&) = delete;

    void close() {
        if (s_) zmq_close(s_);
        s_ = nullptr;
    }
    void* raw() const noexcept { return s_; }

    void set(int opt, int v) {
        if (zmq_setsockopt(s_, opt, &v, sizeof v) != 0) throw failure("zmq_setsockopt " + std::to_string(opt));
    }
    void set(int opt, const std::string& v) {
        if (zmq_setsockopt(s_, opt, v.data(), v.size()) != 0) throw failure("zmq_setsockopt " + std::to_string(opt));
    }
    void subscribe(const std::string& topic) { set(ZMQ_SUBSCRIBE, topic); }
    void unsubscribe(const std::string& topic) { set(ZMQ_UNSUBSCRIBE, topic); }

    /// Binds and returns the bound address (the real port for tcp://127.0.0.1:*).
    std::string bind(const std::string& address) {
        if (zmq_bind(s_, address.c_str()) != 0) throw failure("zmq_bind " + address);
        char buf[512];
        size_t len = sizeof buf;
        if (zmq_getsockopt(s_, ZMQ_LAST_ENDPOINT, buf, &len) != 0) throw failure("ZMQ_LAST_ENDPOINT");
        return std::string(buf);  // NUL-terminated
    }
    void connect(const std::string& address) {
        if (zmq_connect(s_, address.c_str()) != 0) throw failure("zmq_connect " + address);
    }

    /// Lets libzmq's socket process its commands (ZMQ_EVENTS does): a binding socket attaches a
    /// new peer, and a bound SUB sends it its subscriptions, only when its application thread
    /// calls into it, so a test that waits on the strix side keeps calling this.
    int events() {
        int ev = 0;
        size_t len = sizeof ev;
        zmq_getsockopt(s_, ZMQ_EVENTS, &ev, &len);
        return ev;
    }

    /// Sends a message; the error number (EAGAIN on timeout, EHOSTUNREACH, ...) or 0.
    int send(const strs& parts) {
        for (std::size_t i = 0; i < parts.size(); ++i) {
            const int flags = i + 1 < parts.size() ? ZMQ_SNDMORE : 0;
            if (zmq_send(s_, parts[i].data(), parts[i].size(), flags) < 0) return zmq_errno();
        }
        return 0;
    }
    /// Sends without waiting: false if the socket would block (its high-water mark).
    bool try_send(const strs& parts) {
        for (std::size_t i = 0; i < parts.size(); ++i) {
            const int flags = (i + 1 < parts.size() ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT;
            if (zmq_send(s_, parts[i].data(), parts[i].size(), flags) < 0) return false;
        }
        return true;
    }

    /// The next message, or nothing after `within`.
    std::optional<strs> recv(std::chrono::milliseconds within = std::chrono::seconds(5)) {
        set(ZMQ_RCVTIMEO, static_cast<int>(within.count()));
        strs parts;
        for (;;) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, s_, 0) < 0) {
                zmq_msg_close(&m);
                if (parts.empty()) return std::nullopt;
                throw failure("zmq_msg_recv in the middle of a multipart message");
            }
            parts.emplace_back(static_cast<const char*>(zmq_msg_data(&m)), zmq_msg_size(&m));
            const bool more = zmq_msg_more(&m) != 0;
            zmq_msg_close(&m);
            if (!more) return parts;
        }
    }

private:
    void* s_;
};

/// libzmq's monitor of one socket: the events it reported (ZMQ_EVENT_*), read on demand.
class monitor {
public:
    monitor(context& ctx, socket& s) : watched_(s.raw()) {
        static std::atomic<int> n{0};
        const std::string addr = "inproc://interop-monitor-" + std::to_string(++n);
        if (zmq_socket_monitor(watched_, addr.c_str(), ZMQ_EVENT_ALL) != 0) throw failure("zmq_socket_monitor");
        pair_ = zmq_socket(ctx.get(), ZMQ_PAIR);
        int zero = 0;
        zmq_setsockopt(pair_, ZMQ_LINGER, &zero, sizeof zero);
        if (zmq_connect(pair_, addr.c_str()) != 0) throw failure("monitor connect");
    }
    ~monitor() {
        zmq_socket_monitor(watched_, nullptr, 0);
        zmq_close(pair_);
    }
    monitor(const monitor&) = delete;
    monitor& operator=(const monitor&) = delete;

    /// How many times `event` was reported so far (waits up to `within` for at least `at_least`).
    int count(int event, int at_least = 0, std::chrono::milliseconds within = std::chrono::milliseconds(0)) {
        const auto deadline = std::chrono::steady_clock::now() + within;
        for (;;) {
            drain();
            int c = 0;
            for (int e : seen_) c += e == event;
            if (c >= at_least || std::chrono::steady_clock::now() >= deadline) return c;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    bool saw(int event, std::chrono::milliseconds within = std::chrono::seconds(5)) {
        return count(event, 1, within) >= 1;
    }

private:
    // Each event is two frames: 2-byte event number and 4-byte value, then the endpoint.
    void drain() {
        for (;;) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, pair_, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&m);
                return;
            }
            if (zmq_msg_size(&m) >= 2) {
                std::uint16_t ev;
                std::memcpy(&ev, zmq_msg_data(&m), 2);
                seen_.push_back(ev);
            }
            const bool more = zmq_msg_more(&m) != 0;
            zmq_msg_close(&m);
            if (more) {
                zmq_msg_t addr;
                zmq_msg_init(&addr);
                zmq_msg_recv(&addr, pair_, 0);
                zmq_msg_close(&addr);
            }
        }
    }

    void* watched_;
    void* pair_ = nullptr;
    std::vector<int> seen_;
};

}  // namespace strix::test::zmq

namespace strix::test {

enum class transport { tcp, ipc };
inline const char* name(transport t) { return t == transport::tcp ? "tcp" : "ipc"; }

/// n bytes that differ per seed, with every byte value represented and a printable first byte
/// (never 0 or 1, which would read as a subscription upstream of an XSUB).
inline std::string payload(std::size_t n, int seed) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>((i * 131 + static_cast<std::size_t>(seed) * 7 + 3) & 0xff);
    if (n) s[0] = static_cast<char>('a' + seed % 26);
    return s;
}

/// A reply derived from a request part, so a round trip checks both directions byte-exact.
inline std::string flip(const std::string& s) {
    std::string r(s);
    for (auto& c : r) c = static_cast<char>(c ^ 0x5a);
    return r;
}
inline std::vector<std::string> flip(const std::vector<std::string>& m) {
    std::vector<std::string> r;
    for (auto& p : m) r.push_back(flip(p));
    return r;
}

/// The process's resident set size in bytes (/proc/self/statm).
inline std::size_t resident_bytes() {
    std::ifstream f("/proc/self/statm");
    std::size_t pages = 0, resident = 0;
    f >> pages >> resident;
    return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

/// "tcp://127.0.0.1:*" or an ipc path in dir, unique per call.
class address_maker {
public:
    std::string operator()(transport t) {
        if (t == transport::tcp) return "tcp://127.0.0.1:*";
        return "ipc://" + dir_.path() + "/s" + std::to_string(++n_) + ".sock";
    }

private:
    temp_dir dir_;
    int n_ = 0;
};

/// Shortens a message for a failure report (1 MiB parts would flood the log).
inline std::string describe(const std::vector<std::string>& m) {
    std::string d = "[";
    for (std::size_t i = 0; i < m.size(); ++i) {
        if (i) d += ", ";
        d += std::to_string(m[i].size()) + "B";
        if (!m[i].empty()) d += " '" + m[i].substr(0, 8) + (m[i].size() > 8 ? "...'" : "'");
    }
    return d + "]";
}

/// A test with an engine (2 shards) for strix sockets and a libzmq context for their peers.
class interop_test_base : public ::testing::Test {
protected:
    // Destroyed in reverse: monitors, libzmq sockets, the engine with its sockets, the context.
    zmq::context ctx;
    link_env env;
    address_maker where;
    std::vector<std::unique_ptr<zmq::socket>> zsockets_;
    std::vector<std::unique_ptr<zmq::monitor>> monitors_;

    /// A libzmq socket closed at the end of the test (or earlier with close()).
    zmq::socket& zsock(int type) { return *zsockets_.emplace_back(std::make_unique<zmq::socket>(ctx, type)); }
    zmq::monitor& watch(zmq::socket& s) { return *monitors_.emplace_back(std::make_unique<zmq::monitor>(ctx, s)); }

    /// Runs f on s's shard.
    template <class F>
    auto on(link::socket& s, F&& f) {
        return env.on(env.shard_of(s), std::forward<F>(f));
    }
    std::size_t peers(link::socket& s) {
        return on(s, [&] { return s.peers(); });
    }
    link::socket_stats stats(link::socket& s) {
        return on(s, [&] { return s.stats(); });
    }
    /// Waits until s has n peers, letting a libzmq socket process its commands meanwhile.
    bool wait_peers(link::socket& s, std::size_t n, zmq::socket* z = nullptr,
                    std::chrono::milliseconds within = std::chrono::seconds(5)) {
        return eventually(
            [&] {
                if (z) z->events();
                return peers(s) == n;
            },
            within);
    }
};

/// got == want, reported by size and first bytes with the first difference (not 1 MiB dumps).
inline ::testing::AssertionResult same(const std::vector<std::string>& got, const std::vector<std::string>& want) {
    if (got == want) return ::testing::AssertionSuccess();
    auto r = ::testing::AssertionFailure() << "got " << describe(got) << ", want " << describe(want);
    for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
        if (got[i] == want[i]) continue;
        std::size_t k = 0;
        while (k < got[i].size() && k < want[i].size() && got[i][k] == want[i][k]) ++k;
        r << "; part " << i << " first differs at byte " << k;
        break;
    }
    return r;
}
inline ::testing::AssertionResult same(const std::optional<std::vector<std::string>>& got,
                                       const std::vector<std::string>& want) {
    if (!got) return ::testing::AssertionFailure() << "nothing arrived, want " << describe(want);
    return same(*got, want);
}

}  // namespace strix::test

namespace strix::test {

/// A socket's events, one per line, for failure messages.
inline std::string describe(event_log& log) {
    std::string d;
    for (auto& e : log.all()) {
        d += link::to_string(e.what);
        d += " " + e.endpoint;
        if (e.error) d += " (" + e.error.message() + ")";
        if (!e.detail.empty()) d += " [" + e.detail + "]";
        d += "\n";
    }
    return d;
}

}  // namespace strix::test
