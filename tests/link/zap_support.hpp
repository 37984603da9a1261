#pragma once
// The ZAP tests' pieces (zap_test.cpp, zap_edges_test.cpp): a ZAP handler served by a thread of
// the test (a blocking REP bound at inproc://zeromq.zap.01, as pyzmq's ThreadAuthenticator and
// czmq's zauth serve one), waiting for a socket's events, and security options.
#include "link/interop_support.hpp"

#include <strix/link/blocking.hpp>
#include <strix/link/security.hpp>

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace strix::test::zap {

using link::blocking_socket;
using link::socket_event;
using link::socket_type;
using strs = std::vector<std::string>;

inline bool zmq_curve() { return zmq_has("curve") != 0; }

inline link::socket_options quick(link::socket_options o = {}) {
    o.linger = std::chrono::milliseconds(0);
    o.reconnect_ivl = std::chrono::milliseconds(50);
    return o;
}

// A ZAP handler: a blocking REP bound at inproc://zeromq.zap.01, served by its own thread.
// `decide` turns a request's frames into the reply's (version, request id, status code, status
// text, user id, metadata); an empty answer leaves the request unanswered.
class zap_thread {
public:
    using decide_fn = std::function<strs(const strs& request)>;
    zap_thread(link::context& ctx, decide_fn decide)
        : rep_(ctx, socket_type::rep, quick()), decide_(std::move(decide)) {
        rep_.bind("inproc://zeromq.zap.01");
        thread_ = std::thread([this] { serve(); });
    }
    ~zap_thread() {
        stop_ = true;
        thread_.join();
    }
    std::vector<strs> requests() {
        std::lock_guard lk(mu_);
        return requests_;
    }
    std::size_t count() {
        std::lock_guard lk(mu_);
        return requests_.size();
    }

private:
    void serve() {
        while (!stop_) {
            auto m = rep_.recv(std::chrono::milliseconds(20));
            if (!m) continue;
            strs req;
            for (auto& p : *m) req.emplace_back(p.text());
            {
                std::lock_guard lk(mu_);
                requests_.push_back(req);
            }
            const strs reply = decide_(req);
            if (reply.empty()) continue;  // never answered: the REP stays in its turn
            link::message r;
            for (auto& p : reply) r.add(p);
            rep_.send(r, std::chrono::seconds(5));
        }
    }

    blocking_socket rep_;
    decide_fn decide_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::vector<strs> requests_;
};

// ZAP's metadata frame: properties as ZMTP encodes them.
inline std::string metadata(const std::string& name, const std::string& value) {
    std::string m(1, static_cast<char>(name.size()));
    m += name;
    for (int s = 24; s >= 0; s -= 8) m.push_back(static_cast<char>((value.size() >> s) & 0xff));
    return m + value;
}

// The first event of socket s that pred accepts, within `within`.
inline std::optional<socket_event> wait_event(blocking_socket& s, const std::function<bool(const socket_event&)>& pred,
                                              std::chrono::milliseconds within = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < deadline) {
        auto e = s.next_event(std::chrono::milliseconds(20));
        if (e && pred(*e)) return e;
    }
    return std::nullopt;
}

inline auto failed_with(link::link_errc ec, std::string detail_prefix) {
    return [ec, detail_prefix](const socket_event& e) {
        return e.what == socket_event::kind::handshake_failed && e.error == ec && e.detail.starts_with(detail_prefix);
    };
}

inline link::socket_options curve_server(const link::curve_keypair& k) {
    auto o = quick();
    o.security.curve_server = true;
    o.security.curve_secretkey = k.secret_z85();
    return o;
}

inline link::socket_options curve_client(const link::curve_keypair& mine, const std::string& server_pub) {
    auto o = quick();
    o.security.curve_publickey = mine.public_z85();
    o.security.curve_secretkey = mine.secret_z85();
    o.security.curve_serverkey = server_pub;
    return o;
}

inline link::socket_options plain_client(const std::string& user, const std::string& pass) {
    auto o = quick();
    o.security.plain_username = user;
    o.security.plain_password = pass;
    return o;
}

inline std::string prop(const link::message& m, std::string_view name) {
    if (!m.properties()) return "(no properties)";
    const std::string* v = m.properties()->get(name);
    return v ? *v : "(none)";
}

}  // namespace strix::test::zap
