#include <strix/net/server.hpp>

#include "net/listener.hpp"
#include "net/net_shard.hpp"
#include "net/socket_util.hpp"

#include <unistd.h>

namespace strix {

void net_stats::add(const net_counters& c) noexcept {
    auto r = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    accepted += r(c.accepted);
    closed += r(c.closed);
    active += r(c.active);
    reads += r(c.reads);
    writes += r(c.writes);
    bytes_in += r(c.bytes_in);
    bytes_out += r(c.bytes_out);
    frames_in += r(c.frames_in);
    sends += r(c.sends);
    frame_errors += r(c.frame_errors);
    slow_consumers += r(c.slow_consumers);
    idle_timeouts += r(c.idle_timeouts);
    accept_pauses += r(c.accept_pauses);
    read_pauses += r(c.read_pauses);
    recv_buffers_in_use += r(c.recv_buffers_in_use);
    recv_buffers_peak += r(c.recv_buffers_peak);
    recv_buffer_takes += r(c.recv_buffer_takes);
    recv_buffer_returns += r(c.recv_buffer_returns);
}

server::server(engine& e, server_config cfg, const handler_factory& make_handler)
    : engine_(e), cfg_(std::move(cfg)) {
    peers_ = std::make_unique<std::vector<detail::net_shard*>>();
    for (unsigned i = 0; i < e.shard_count(); ++i) {
        shards_.push_back(std::make_unique<detail::net_shard>(e.at(i), cfg_.limits, cfg_.format, make_handler(e.at(i)), *peers_));
        peers_->push_back(shards_.back().get());
    }
}

server::~server() {
    engine_.stop();
    engine_.join();
}

void server::start() {
    if (started_) return;
    started_ = true;
    std::vector<int> fds;
    try {
        if (cfg_.tcp) {
            // Shard 0 binds first so an ephemeral port is known for the others.
            for (unsigned i = 0; i < shards_.size(); ++i) {
                int fd = detail::listen_tcp(cfg_.host, i == 0 ? cfg_.port : port_, cfg_.backlog);
                if (i == 0) port_ = detail::local_port(fd);
                fds.push_back(fd);
            }
        }
        if (!cfg_.unix_path.empty()) fds.push_back(detail::listen_unix(cfg_.unix_path, cfg_.backlog));
    } catch (...) {
        for (int fd : fds) ::close(fd);
        throw;
    }
    for (unsigned i = 0; i < shards_.size(); ++i) {
        detail::net_shard* ns = shards_[i].get();
        int tcp_fd = cfg_.tcp ? fds[i] : -1;
        int unix_fd = (!cfg_.unix_path.empty() && i == 0) ? fds.back() : -1;
        engine_.post(i, [ns, tcp_fd, unix_fd] {
            ns->install_hooks();
            if (tcp_fd >= 0) ns->add_listener(make_intrusive<detail::listener>(*ns, tcp_fd, false));
            if (unix_fd >= 0) ns->add_listener(make_intrusive<detail::listener>(*ns, unix_fd, true));
        });
    }
}

net_stats server::stats() const noexcept {
    net_stats s;
    for (auto& ns : shards_) s.add(ns->counters);
    return s;
}

session_handler& server::handler(unsigned shard_index) noexcept { return *shards_[shard_index]->handler; }

}  // namespace strix
