#include <strix/net/server.hpp>

#include "net/socket_util.hpp"

namespace strix {

server::server(engine& e, server_config cfg, const handler_factory& make_handler) : engine_(e), cfg_(std::move(cfg)) {
    for (unsigned i = 0; i < e.shard_count(); ++i) {
        owned_handlers_.push_back(make_handler(e.at(i)));
        handlers_.push_back(owned_handlers_.back().get());
    }
    make_groups();
}

server::server(engine& e, server_config cfg, std::vector<session_handler*> handlers, std::nullptr_t)
    : engine_(e), cfg_(std::move(cfg)), handlers_(std::move(handlers)) {
    make_groups();
}

void server::make_groups() {
    if (cfg_.max_sessions || cfg_.max_sessions_per_address)
        admission_ = std::make_unique<admission>(admission_limits{cfg_.max_sessions, cfg_.max_sessions_per_address});
    session_group_config gcfg{cfg_.limits, cfg_.framing, admission_.get(), cfg_.tls, cfg_.keepalive};
    for (unsigned i = 0; i < engine_.shard_count(); ++i) {
        alive_.push_back(std::make_shared<bool>(true));
        groups_.push_back(std::make_unique<session_group>(engine_.at(i), *handlers_[i], gcfg));
    }
}

server::~server() {
    metric_regs_.clear();  // a scrape in progress finishes before the groups go
    // Each shard closes its part (the handler hears on_close for each session) and finishes the
    // loop turn, so nothing it runs refers to the groups any more; then they are freed here.
    // Tasks still in flight to a shard (listeners not yet installed, connections handed over
    // from the Unix listener) find the shard's flag down and do nothing.
    engine_.run_on_all_shards([this](shard& sh) {
        *alive_[sh.id()] = false;
        groups_[sh.id()].reset();
        if (!owned_handlers_.empty()) owned_handlers_[sh.id()].reset();
    });
    groups_.clear();
    owned_handlers_.clear();
}

void server::start() {
    if (started_) return;
    started_ = true;
    std::vector<unique_fd> tcp;
    unique_fd unix_fd;
    if (cfg_.tcp) {
        // Shard 0 binds first so an ephemeral port is known for the others.
        for (unsigned i = 0; i < groups_.size(); ++i) {
            tcp.push_back(detail::listen_on(endpoint::tcp(cfg_.host, i == 0 ? cfg_.port : port_), cfg_.backlog, true));
            if (i == 0) port_ = detail::local_port(tcp[0].get());
        }
    }
    if (!cfg_.unix_path.empty())
        unix_fd = detail::listen_on(endpoint::unix_socket(cfg_.unix_path), cfg_.backlog, false);

    for (unsigned i = 0; i < groups_.size(); ++i) {
        session_group* g = groups_[i].get();
        int tcp_fd = cfg_.tcp ? tcp[i].release() : -1;
        int ufd = (i == 0 && unix_fd) ? unix_fd.release() : -1;
        // Unix sockets have no SO_REUSEPORT spreading: shard 0 hands connections round-robin.
        session_group::accept_fn handoff;
        if (ufd >= 0) {
            std::vector<std::pair<session_group*, std::shared_ptr<bool>>> all;
            for (unsigned k = 0; k < groups_.size(); ++k) all.emplace_back(groups_[k].get(), alive_[k]);
            handoff = [all, next = 0u](unique_fd fd, std::string peer) mutable {
                auto [dest, alive] = all[next++ % all.size()];
                if (&dest->owner() == shard::current()) {
                    dest->adopt(std::move(fd), std::move(peer));
                    return;
                }
                dest->owner().owner().post(dest->owner().id(),
                                           [dest, alive, f = std::move(fd), p = std::move(peer)]() mutable {
                                               if (*alive) dest->adopt(std::move(f), std::move(p));
                                           });
            };
        }
        engine_.post(i, [g, alive = alive_[i], tcp_fd, ufd, handoff = std::move(handoff)]() mutable {
            unique_fd t(tcp_fd), u(ufd);
            if (!*alive) return;
            if (t) g->add_listener(std::move(t));
            if (u) g->add_listener(std::move(u), std::move(handoff));
        });
    }
}

net_stats server::stats() const {
    net_stats s;
    for (auto& g : groups_)
        if (g) s.merge(g->counters());
    return s;
}

void server::register_metrics(metrics_registry& r) {
    for (auto& g : groups_) metric_regs_.push_back(r.add(g->counters()));
}

}  // namespace strix
