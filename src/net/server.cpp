#include <strix/net/server.hpp>

#include "net/socket_util.hpp"

#include <strix/core/log.hpp>

#include <sys/resource.h>

#include <atomic>
#include <fstream>

namespace strix {
namespace {

// Descriptors a process needs besides its sessions: listeners, epoll or io_uring, eventfds, log
// and database files, outbound connections.
constexpr std::size_t fd_reserve = 256;

// The connection caps of every server started in this process, summed (caps that servers share,
// once): they share one RLIMIT_NOFILE, or with fd_table_per_shard one per shard (each table holds
// its shard's part of the caps, the caps split evenly). Raises the soft limit toward the hard one as far as they need;
// when the hard limit is too low, says so once, in one sentence, rather than failing accepts later.
void check_descriptors(std::size_t max_sessions, const engine_config& ec, unsigned shards) {
    static std::atomic<std::size_t> capped{0};
    static std::atomic<bool> warned{false};
    if (max_sessions == 0) return;
    const std::size_t all = capped.fetch_add(max_sessions) + max_sessions;
    const std::size_t tables = ec.fd_table_per_shard ? shards : 1;
    const std::size_t need = (all + tables - 1) / tables + fd_reserve;
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need) return;
    rlimit raised = rl;
    raised.rlim_cur = std::min<rlim_t>(rl.rlim_max, need);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
    if (rl.rlim_cur >= need || warned.exchange(true)) return;
    const std::size_t fit = (rl.rlim_cur > fd_reserve ? rl.rlim_cur - fd_reserve : 0) * tables;
    if (tables > 1) {
        const std::size_t shards_needed = (all + (fit / tables) - 1) / std::max<std::size_t>(1, fit / tables);
        log(log_level::warn,
            "the connection caps ({} in all) need about {} file descriptors per shard's table but RLIMIT_NOFILE "
            "allows {} (hard limit {}): past about {} connections accepts fail until some close; raise the hard "
            "limit, lower the caps, or run at least {} shards",
            all, need, rl.rlim_cur, rl.rlim_max, fit, shards_needed);
        return;
    }
    log(log_level::warn,
        "the connection caps ({} in all) need about {} file descriptors but RLIMIT_NOFILE allows {} (hard "
        "limit {}): past about {} connections accepts fail until some close; raise the hard limit "
        "(ulimit -Hn as root, systemd LimitNOFILE=), lower the caps, or give each shard its own "
        "descriptor table (--fd-table-per-shard) and enough shards",
        all, need, rl.rlim_cur, rl.rlim_max, fit);
}

// The kernel cuts a listen backlog to net.core.somaxconn: a burst of connects beyond it waits for
// SYN retransmits (a second or more). Said once per process.
void check_backlog(int backlog) {
    static std::atomic<bool> warned{false};
    std::ifstream f("/proc/sys/net/core/somaxconn");
    long somaxconn = 0;
    if (!(f >> somaxconn) || somaxconn >= backlog || warned.exchange(true)) return;
    log(log_level::warn,
        "listen backlog {} is cut to net.core.somaxconn = {}: a burst of more connects than that per "
        "listener waits for SYN retries; raise it (sysctl -w net.core.somaxconn={})",
        backlog, somaxconn, backlog);
}

}  // namespace

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
    if (cfg_.shared_caps)
        admission_ = cfg_.shared_caps;
    else if (cfg_.max_sessions || cfg_.max_sessions_per_address)
        admission_ = std::make_shared<admission>(admission_limits{cfg_.max_sessions, cfg_.max_sessions_per_address});
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
    // Caps shared by several servers count once, with the first of them to start.
    if (admission_ && admission_->claim_descriptor_check())
        check_descriptors(admission_->limits().max_sessions, engine_.config(), engine_.shard_count());
    if (cfg_.tcp || !cfg_.unix_path.empty()) check_backlog(cfg_.backlog);
    std::vector<unique_fd> tcp;
    unique_fd unix_fd;
    if (cfg_.tcp) {
        // Shard 0 binds first so an ephemeral port is known for the others.
        for (unsigned i = 0; i < groups_.size(); ++i) {
            tcp.push_back(detail::listen_on(endpoint::tcp(cfg_.host, i == 0 ? cfg_.port : port_), cfg_.backlog, true));
            engine_.note_shard_fd(i, tcp.back().get());
            if (i == 0) port_ = detail::local_port(tcp[0].get());
        }
    }
    if (!cfg_.unix_path.empty()) {
        unix_fd = detail::listen_on(endpoint::unix_socket(cfg_.unix_path), cfg_.backlog, false);
        engine_.note_shard_fd(0, unix_fd.get());
    }
    // With a descriptor table per shard an accepted descriptor cannot move to another shard, so
    // the Unix socket's connections all stay on shard 0.
    const bool spread_unix = !engine_.config().fd_table_per_shard && groups_.size() > 1;

    for (unsigned i = 0; i < groups_.size(); ++i) {
        session_group* g = groups_[i].get();
        int tcp_fd = cfg_.tcp ? tcp[i].release() : -1;
        int ufd = (i == 0 && unix_fd) ? unix_fd.release() : -1;
        // Unix sockets have no SO_REUSEPORT spreading: shard 0 hands connections round-robin.
        session_group::accept_fn handoff;
        if (ufd >= 0 && spread_unix) {
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
