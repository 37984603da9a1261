#pragma once
// A strix::http server on one shard for the HTTP tests, with a handler that answers at once, late
// (from a worker thread that posts back to the shard, as a database read does) or never.
#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>
#include <strix/net/http_router.hpp>
#include <strix/net/http_server.hpp>
#include <strix/net/server.hpp>
#include <support/http_client.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strix::test {

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
