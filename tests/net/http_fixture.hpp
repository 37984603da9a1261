#pragma once
// A strix::http server on one shard for the HTTP tests, with a handler that answers at once, late
// (from a worker thread that posts back to the shard, as a database read does) or never, and a
// blocking client that reads pipelined responses one at a time.
#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>
#include <strix/net/http_router.hpp>
#include <strix/net/http_server.hpp>
#include <strix/net/server.hpp>
#include <support/loopback.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strix::test {

/// One parsed response; status 0 when none could be read (closed, timeout, garbage).
struct http_reply {
    int status = 0;
    std::string head;
    std::string body;
    bool has_header(std::string_view line) const { return head.find(line) != std::string::npos; }
};

/// A blocking HTTP/1.1 client connection that reads responses one at a time (pipelined ones
/// arrive together and are split here by Content-Length).
class http_client {
public:
    explicit http_client(std::uint16_t port) : fd_(connect_tcp(port)) {}
    ~http_client() {
        if (fd_ >= 0) ::close(fd_);
    }
    http_client(const http_client&) = delete;
    http_client& operator=(const http_client&) = delete;

    bool ok() const { return fd_ >= 0; }
    int fd() const { return fd_; }
    bool send(const std::string& s) { return send_all(fd_, s.data(), s.size()); }

    /// The next response; head_only: a HEAD's answer (Content-Length but no body).
    http_reply read(bool head_only = false) {
        http_reply r;
        std::size_t end;
        while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
            if (!fill()) return r;
        r.head = buf_.substr(0, end + 4);
        buf_.erase(0, end + 4);
        if (r.head.rfind("HTTP/1.1 ", 0) != 0) return r;
        r.status = std::stoi(r.head.substr(9, 3));
        std::size_t length = 0;
        const auto cl = r.head.find("Content-Length: ");
        if (cl != std::string::npos && !head_only) length = std::stoul(r.head.substr(cl + 16));
        while (buf_.size() < length)
            if (!fill()) return http_reply{};
        r.body = buf_.substr(0, length);
        buf_.erase(0, length);
        return r;
    }
    /// Whether the server closes the connection within `within` (nothing else arriving first).
    bool closed_within(std::chrono::milliseconds within) { return buf_.empty() && wait_closed(fd_, within); }

private:
    bool fill() {
        char tmp[4096];
        ssize_t n;  // a signal (another test's engine) must not read as a closed connection
        do n = ::recv(fd_, tmp, sizeof tmp, 0);
        while (n < 0 && errno == EINTR);
        if (n <= 0) return false;
        buf_.append(tmp, static_cast<std::size_t>(n));
        return true;
    }
    int fd_;
    std::string buf_;
};

inline std::string get(const std::string& path, const std::string& extra = "") {
    return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
}

/// The server: GET /hello -> "hello"; GET /echo-target -> the target; POST /echo -> the body;
/// GET /late?ms=N&tag=T -> T from a worker thread after N ms; GET /drop -> the responder dropped;
/// GET /held -> answered only by release_held().
class http_fixture {
public:
    explicit http_fixture(http::options opts = {}, std::size_t max_sessions = 0) {
        engine_config ec;
        ec.shards = 1;
        eng_ = std::make_unique<engine>(ec);
        router_.add("GET", "/hello", [](http::request&, http::responder res) {
            res.send({.status = 200, .content_type = "text/plain", .body = "hello"});
        });
        router_.add("GET", "/echo-target", [](http::request& req, http::responder res) {
            res.send({.status = 200, .content_type = "text/plain", .body = req.target});
        });
        router_.add("POST", "/echo", [](http::request& req, http::responder res) {
            res.send({.status = 200, .content_type = "application/octet-stream", .body = std::move(req.body)});
        });
        router_.add("GET", "/late", [this](http::request& req, http::responder res) { late(req, std::move(res)); });
        router_.add("GET", "/drop", [](http::request&, http::responder) {});
        router_.add("GET", "/held", [this](http::request&, http::responder res) {
            ++seen_held_;
            held_.push_back(std::move(res));
        });
        server_config cfg;
        cfg.max_sessions = max_sessions;
        opts.apply(cfg);
        srv_ = std::make_unique<server>(*eng_, cfg, [this, opts](shard&) {
            auto p = std::make_unique<http::protocol>(router_.handler(), opts);
            proto_ = p.get();
            return p;
        });
        srv_->start();
        eng_->start();
    }
    ~http_fixture() {
        for (auto& t : workers_) t.join();
        eng_->stop();
        eng_->join();
    }

    std::uint16_t port() const { return srv_->port(); }
    const http::protocol_stats& stats() const { return proto_->stats(); }
    /// Requests /held saw so far. Any thread.
    int seen_held() const { return seen_held_.load(); }
    /// Answers every held request (on the shard), each with its place in arrival order.
    void release_held() {
        eng_->at(0).post_external([this] {
            // Answering makes room for more requests, whose handler holds them here: take these first.
            std::vector<http::responder> now = std::move(held_);
            held_.clear();
            for (auto& r : now) r.send({.status = 200, .content_type = "text/plain", .body = "held"});
        });
    }

private:
    void late(http::request& req, http::responder res) {
        auto q = http::parse_query(req.query()).value_or(std::vector<std::pair<std::string, std::string>>{});
        const int ms = std::stoi(std::string(http::query_value(q, "ms").value_or("0")));
        std::string tag(http::query_value(q, "tag").value_or(""));
        auto holder = std::make_shared<http::responder>(std::move(res));
        shard* sh = &eng_->at(0);
        workers_.emplace_back([sh, ms, tag, holder] {
            std::this_thread::sleep_for(std::chrono::milliseconds(ms));
            sh->post_external(
                [tag, holder] { holder->send({.status = 200, .content_type = "text/plain", .body = tag}); });
        });
    }

    std::unique_ptr<engine> eng_;
    http::router router_;
    std::unique_ptr<server> srv_;
    http::protocol* proto_ = nullptr;
    std::vector<std::thread> workers_;  // shard thread only (joined after it stopped)
    std::vector<http::responder> held_;
    std::atomic<int> seen_held_{0};
};

}  // namespace strix::test
