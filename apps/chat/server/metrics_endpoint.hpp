#pragma once
// metrics_endpoint: a tiny HTTP/1.0 server on 127.0.0.1 that answers GET /metrics with whatever
// render() returns (Prometheus text format). One dedicated thread with a blocking accept loop:
// it is not a shard, and a scrape every few seconds needs nothing more. Connections are served
// one at a time with short timeouts, so a stuck scraper cannot pin the thread for long.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

namespace strix::chat {

class metrics_endpoint {
public:
    using renderer = std::function<std::string()>;

    /// Binds 127.0.0.1:port now (0 = any free port). Throws std::runtime_error with one sentence
    /// when the port cannot be bound. The owning thread.
    metrics_endpoint(std::uint16_t port, renderer render);
    /// stop().
    ~metrics_endpoint();
    metrics_endpoint(const metrics_endpoint&) = delete;
    metrics_endpoint& operator=(const metrics_endpoint&) = delete;

    /// Starts the serving thread. The owning thread, once.
    void start();
    /// Stops serving and joins the thread. Idempotent. The owning thread.
    void stop();

    /// The port actually bound. Any thread.
    std::uint16_t port() const noexcept { return port_; }

private:
    void run();
    void serve(int fd);

    renderer render_;
    int listen_fd_ = -1;
    int wake_fd_ = -1;  // eventfd: stop() rings it to end the accept loop
    std::uint16_t port_ = 0;
    std::thread thread_;
};

}  // namespace strix::chat
