// strix-chat-hold: holds N idle logged-in connections to strix-chat-server and measures what that
// costs and how a broadcast to all of them goes (docs/load-tool.md, "Holding connections").
//
//   1. a control connection logs in and finds or creates --hold-room;
//   2. --threads workers connect N accounts (JWT logins) from many loopback source addresses, at
//      most --in-flight at once and --rate per second, each joining the room;
//   3. once all are held: the tool's RSS per connection; with --broadcast K, K messages posted one
//      after another, each timed from its first to its last delivery and verified at every member;
//   4. --hold-seconds of holding (pings at --ping-interval), ended early by SIGINT or SIGTERM, then
//      a JSON summary. Exit 0 only when all N were held to the end and nothing was lost,
//      duplicated, reordered or corrupted.
//   With --reconnect, connections the server closes while held (a restart) connect, log in and
//   rejoin again, the control connection too; the tool times the first drop to all back
//   (reconnect_all_s), checks the room's last seq against what each member saw, and posts one
//   more broadcast that must reach all of them.
//
// It is a sibling of strix-chat-load rather than a mode of it: that tool keeps a worker object,
// buffers and a delivery checker per client (kilobytes each) to verify a chat workload, while this
// one must stay within ~1 KiB per connection at a million of them (hold_shared.hpp: 32 bytes).

#include "hold_control.hpp"
#include "hold_options.hpp"
#include "hold_shared.hpp"
#include "hold_worker.hpp"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace strix::chat;
using namespace strix::chat::hold;

namespace {

std::uint64_t vm_rss_bytes() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    return 0;
}

// Raises RLIMIT_NOFILE for the connections. When its hard limit cannot fit them all in one
// descriptor table, each worker thread gets a table of its own (the limit caps each table), and
// --threads grows to as many as the connections need. False when even 64 tables cannot.
bool fit_descriptors(hold_options& o) {
    constexpr rlim_t spare = 64;  // the control connection, epoll, files
    rlimit rl{};
    ::getrlimit(RLIMIT_NOFILE, &rl);
    const rlim_t want = static_cast<rlim_t>(o.connections) + spare;
    if (rl.rlim_cur >= want) return true;
    if (rl.rlim_max < want) {
        rlimit raised{want, want};
        if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) return true;
    }
    rl.rlim_cur = std::min(want, rl.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur >= want) return true;
    const rlim_t per_table = rl.rlim_cur > spare ? rl.rlim_cur - spare : 0;
    const rlim_t tables = per_table == 0 ? 0 : (o.connections + per_table - 1) / per_table;
    if (tables == 0 || tables > 64) {
        std::fprintf(stderr,
                     "strix-chat-hold: %u connections need %llu descriptors; RLIMIT_NOFILE's hard limit is %llu "
                     "and could not be raised, and 64 threads with a descriptor table each hold at most %llu\n",
                     o.connections, static_cast<unsigned long long>(want), static_cast<unsigned long long>(rl.rlim_max),
                     static_cast<unsigned long long>(per_table * 64));
        return false;
    }
    o.fd_table_per_thread = true;
    if (o.threads < tables) o.threads = static_cast<std::uint32_t>(tables);
    std::fprintf(stderr,
                 "strix-chat-hold: RLIMIT_NOFILE's hard limit %llu cannot fit %u connections in one table; "
                 "%u threads hold them with a descriptor table each\n",
                 static_cast<unsigned long long>(rl.rlim_max), o.connections, o.threads);
    return true;
}

sockaddr_in resolve(const hold_options& o) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(o.host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr)
        throw std::runtime_error("cannot resolve --host " + o.host);
    sockaddr_in in = *reinterpret_cast<const sockaddr_in*>(res->ai_addr);
    ::freeaddrinfo(res);
    in.sin_port = htons(o.ws_port != 0 ? o.ws_port : o.port);
    return in;
}

std::atomic<bool> stop_requested{false};

extern "C" void on_stop_signal(int) { stop_requested.store(true, std::memory_order_relaxed); }

struct totals {
    std::uint64_t held = 0, in_room = 0, failed = 0, dropped = 0, connect_errors = 0, login_retries = 0;
    std::uint64_t down = 0, reconnects = 0, seq_gaps = 0;
    std::uint64_t pings = 0, pongs = 0, notices = 0, errors = 0, foreign = 0;
    std::uint64_t lost = 0, duplicated = 0, out_of_order = 0, corrupt = 0;
};

totals sum(const std::vector<std::unique_ptr<worker_counters>>& ws) {
    totals t;
    for (const auto& w : ws) {
        t.held += w->held.get(), t.in_room += w->in_room.get(), t.failed += w->failed.get();
        t.dropped += w->dropped.get(), t.connect_errors += w->connect_errors.get();
        t.login_retries += w->login_retries.get(), t.pings += w->pings.get(), t.pongs += w->pongs.get();
        t.notices += w->notices.get(), t.errors += w->errors.get(), t.foreign += w->foreign.get();
        t.lost += w->lost.get(), t.duplicated += w->duplicated.get(), t.out_of_order += w->out_of_order.get();
        t.corrupt += w->corrupt.get(), t.down += w->down.get(), t.reconnects += w->reconnects.get();
        t.seq_gaps += w->seq_gaps.get();
    }
    return t;
}

struct broadcast_result {
    std::uint64_t delivered = 0;
    double first_s = 0, last_s = 0;  // from the post
};

// Posts message k and waits until every member has it (or the timeout).
broadcast_result broadcast_one(hold_shared& sh, hold_control& ctl,
                               const std::vector<std::unique_ptr<worker_counters>>& ws, std::uint32_t k) {
    const std::int64_t sent = now_ns();
    sh.broadcast_sent.store(k + 1, std::memory_order_release);
    ctl.post(k, sh.texts[k]);
    const std::int64_t deadline = sent + static_cast<std::int64_t>(sh.opt.broadcast_timeout_s * 1e9);
    broadcast_result r;
    for (;;) {
        ctl.pump(2);
        r.delivered = 0;
        for (const auto& w : ws) r.delivered += w->delivered[k].get();
        if ((r.delivered >= sum(ws).in_room && ctl.seq_of(k) != 0) || now_ns() > deadline) break;
    }
    std::int64_t first = 0, last = 0;
    for (const auto& w : ws) {
        const std::int64_t f = w->first_ns[k].load(std::memory_order_relaxed);
        if (f != 0 && (first == 0 || f < first)) first = f;
        last = std::max(last, w->last_ns[k].load(std::memory_order_relaxed));
    }
    if (first != 0)
        r.first_s = static_cast<double>(first - sent) / 1e9, r.last_s = static_cast<double>(last - sent) / 1e9;
    if (ctl.seq_of(k) != sh.broadcast_base.load() + 1 + k)
        sh.note_error("the control's own copy of broadcast message " + std::to_string(k) + " has seq " +
                      std::to_string(ctl.seq_of(k)) + ": other traffic in --hold-room, or none came back");
    return r;
}

// The ramp: until every connection is held or has failed (or --ramp-timeout); progress each
// second on stderr. Returns when it ended.
std::int64_t run_ramp(hold_shared& sh, hold_control& ctl, const std::vector<std::unique_ptr<worker_counters>>& counters,
                      std::int64_t t0) {
    const hold_options& o = sh.opt;
    std::int64_t next_report = t0 + 1'000'000'000, ramp_end = 0;
    std::uint64_t last_held = 0;
    const std::int64_t ramp_limit = t0 + static_cast<std::int64_t>(o.ramp_timeout_s * 1e9);
    try {
        while (ramp_end == 0) {
            ctl.pump(20);
            const totals t = sum(counters);
            const std::int64_t now = now_ns();
            if (t.held + t.failed >= o.connections || now > ramp_limit) ramp_end = now;
            if (now >= next_report || ramp_end != 0) {
                std::fprintf(stderr, "held %llu / %u (+%llu/s), failed %llu, retries %llu, connect errors %llu\n",
                             static_cast<unsigned long long>(t.held), o.connections,
                             static_cast<unsigned long long>(t.held - last_held),
                             static_cast<unsigned long long>(t.failed),
                             static_cast<unsigned long long>(t.login_retries),
                             static_cast<unsigned long long>(t.connect_errors));
                last_held = t.held;
                next_report += 1'000'000'000;
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strix-chat-hold: %s\n", e.what());
        sh.note_error(e.what());
    }
    return ramp_end;
}

struct figures {
    double ramp_s = 0, held_s = 0, reconnect_all_s = -1;
    std::uint64_t rss_base = 0, rss_held = 0, ramped_held = 0;
    std::vector<broadcast_result> bcast;
};

// The JSON summary (docs/load-tool.md lists its fields), less first_error and ok.
nlohmann::json summary(const hold_shared& sh, const totals& t, const figures& f) {
    const hold_options& o = sh.opt;
    nlohmann::json j;
    const std::uint64_t connections = t.held - t.dropped - t.down;
    j["transport"] = o.ws_port != 0 ? "ws" : "tcp";
    j["target"] = o.connections;
    j["connections"] = connections;
    j["ramp_s"] = f.ramp_s;
    j["connect_per_s"] = f.ramp_s > 0 ? static_cast<double>(f.ramped_held) / f.ramp_s : 0;
    j["held_s"] = f.held_s;
    j["client_rss_bytes"] = f.rss_held;
    j["client_rss_per_conn"] = f.ramped_held > 0 ? static_cast<double>(f.rss_held - std::min(f.rss_held, f.rss_base)) /
                                                       static_cast<double>(f.ramped_held)
                                                 : 0;
    j["room_members"] = t.in_room;
    j["failed"] = t.failed, j["dropped"] = t.dropped, j["connect_errors"] = t.connect_errors;
    j["login_retries"] = t.login_retries, j["pings"] = t.pings, j["pongs"] = t.pongs, j["notices"] = t.notices;
    j["errors"] = t.errors, j["foreign"] = t.foreign, j["lost"] = t.lost, j["duplicated"] = t.duplicated;
    j["out_of_order"] = t.out_of_order, j["corrupt"] = t.corrupt;
    j["reconnects"] = t.reconnects, j["down"] = t.down, j["seq_gaps"] = t.seq_gaps;
    if (f.reconnect_all_s >= 0) j["reconnect_all_s"] = f.reconnect_all_s;
    double all_s = 0;
    j["broadcast"] = nlohmann::json::array();
    for (std::size_t k = 0; k < f.bcast.size(); ++k) {
        j["broadcast"].push_back({{"k", k},
                                  {"delivered", f.bcast[k].delivered},
                                  {"first_s", f.bcast[k].first_s},
                                  {"last_s", f.bcast[k].last_s},
                                  {"spread_s", f.bcast[k].last_s - f.bcast[k].first_s}});
        all_s = std::max(all_s, f.bcast[k].last_s - f.bcast[k].first_s);
    }
    j["broadcast_all_s"] = all_s;
    return j;
}

// The control connection again after a restart: connect, log in, find the room; its last seq
// must be what was acknowledged before (the broadcast so far). Null while the server is down.
std::unique_ptr<hold_control> control_again(hold_shared& sh) {
    try {
        auto ctl = std::make_unique<hold_control>(sh);
        ctl->enter_room(sh.opt.hold_room);
        const std::uint64_t want = sh.broadcast_base.load() + sh.broadcast_sent.load();
        if (ctl->last_seq() != want)
            sh.note_error("after the restart the room's last seq is " + std::to_string(ctl->last_seq()) +
                          ", the last acknowledged was " + std::to_string(want));
        return ctl;
    } catch (const std::exception&) {
        return nullptr;
    }
}

// Holds until hold_end or a stop signal. With --reconnect, a restart's drops are waited out: the
// control connection is opened again, and once every connection is back one more message is
// broadcast to all. Returns the seconds from the first drop to all back (-1: no drop).
double hold_phase(hold_shared& sh, std::unique_ptr<hold_control>& ctl,
                  const std::vector<std::unique_ptr<worker_counters>>& counters, std::vector<broadcast_result>& bcast,
                  std::int64_t hold_end) {
    const hold_options& o = sh.opt;
    std::int64_t first_drop = 0, next_report = 0, next_control = 0;
    double back_s = -1;
    while (now_ns() < hold_end && !stop_requested.load(std::memory_order_relaxed)) {
        if (ctl == nullptr) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            if (now_ns() >= next_control && (ctl = control_again(sh)) == nullptr) next_control = now_ns() + 200'000'000;
        } else {
            try {
                ctl->pump(20);
            } catch (const std::exception& e) {
                if (!o.reconnect) throw;
                ctl.reset();  // the server went away: reconnect it like the others
            }
        }
        const totals t = sum(counters);
        const std::int64_t now = now_ns();
        if (!o.reconnect) continue;
        if (t.down > 0 && first_drop == 0) first_drop = now;
        if (first_drop != 0 && back_s < 0 && now >= next_report) {
            std::fprintf(stderr, "reconnecting: %llu down, %llu reconnects\n", static_cast<unsigned long long>(t.down),
                         static_cast<unsigned long long>(t.reconnects));
            next_report = now + 1'000'000'000;
        }
        if (first_drop == 0 || back_s >= 0 || t.down > 0 || ctl == nullptr) continue;
        back_s = static_cast<double>(now - first_drop) / 1e9;
        std::fprintf(stderr, "reconnected all %llu in %.3f s\n", static_cast<unsigned long long>(t.held - t.dropped),
                     back_s);
        if (o.broadcast > 0) bcast.push_back(broadcast_one(sh, *ctl, counters, o.broadcast));
        std::fprintf(stderr, "verified after reconnect\n");
    }
    return back_s;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);
    hold_shared sh;
    sh.opt = parse_hold_options(argc, argv);
    // Before the threads and the control connection, as it may change --threads.
    if (!fit_descriptors(sh.opt)) return 2;
    const hold_options& o = sh.opt;
    try {
        sh.jwt = jwt_signer::load(o.jwt_key, o.jwt_audience, o.jwt_issuer, o.jwt_ttl_s);
        sh.target = resolve(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strix-chat-hold: %s\n", e.what());
        return 2;
    }
    in_addr base{};
    ::inet_pton(AF_INET, o.source_base.c_str(), &base);
    sh.source_base = ntohl(base.s_addr);
    const std::uint32_t texts = o.broadcast + (o.reconnect && o.broadcast > 0 ? 1 : 0);
    for (std::uint32_t k = 0; k < texts; ++k) sh.texts.push_back(broadcast_text(k, o.broadcast_bytes));
    std::signal(SIGINT, on_stop_signal);
    std::signal(SIGTERM, on_stop_signal);

    std::unique_ptr<hold_control> ctl;
    try {
        ctl = std::make_unique<hold_control>(sh);
        sh.control_player = ctl->player();
        if (!o.hold_room.empty()) {
            ctl->enter_room(o.hold_room);
            sh.room_id = ctl->room();
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strix-chat-hold: %s\n", e.what());
        return 2;
    }
    const std::uint64_t rss_base = vm_rss_bytes();

    std::vector<std::unique_ptr<worker_counters>> counters;
    std::vector<std::unique_ptr<hold_worker>> workers;
    for (std::uint32_t t = 0; t < o.threads; ++t) {
        counters.push_back(std::make_unique<worker_counters>());
        workers.push_back(std::make_unique<hold_worker>(sh, *counters.back(), t, o.threads));
    }
    const std::int64_t t0 = now_ns();
    std::vector<std::thread> threads;
    // A worker that cannot start (its own descriptor table refused) ends the run with a clear
    // error, not std::terminate from an uncaught exception.
    for (auto& w : workers)
        threads.emplace_back([&w] {
            try {
                w->run();
            } catch (const std::exception& e) {
                std::fprintf(stderr, "strix-chat-hold: a worker thread failed: %s\n", e.what());
                std::fflush(stderr);
                std::_Exit(2);
            }
        });

    const std::int64_t ramp_end = run_ramp(sh, *ctl, counters, t0);
    const totals ramped = sum(counters);
    const double ramp_s = static_cast<double>(ramp_end - t0) / 1e9;
    const std::uint64_t rss_held = vm_rss_bytes();

    std::vector<broadcast_result> bcast;
    sh.broadcast_base.store(ctl->last_seq(), std::memory_order_release);
    double reconnect_all_s = -1;
    try {
        for (std::uint32_t k = 0; k < o.broadcast; ++k) bcast.push_back(broadcast_one(sh, *ctl, counters, k));
        std::fprintf(stderr, "holding %llu\n", static_cast<unsigned long long>(sum(counters).held));
        const std::int64_t hold_end = ramp_end + static_cast<std::int64_t>(o.hold_s * 1e9);
        reconnect_all_s = hold_phase(sh, ctl, counters, bcast, hold_end);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strix-chat-hold: %s\n", e.what());
        sh.note_error(e.what());
    }
    const double held_s = static_cast<double>(now_ns() - ramp_end) / 1e9;
    // The pings in flight get their pongs (5 s at most) before the count, so a busy server's
    // last answers are not counted as missing.
    sh.quiet.store(true, std::memory_order_release);
    for (int waited_ms = 0; waited_ms < 5000; waited_ms += 10) {
        const totals now = sum(counters);
        if (now.pongs >= now.pings) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    sh.stop.store(true, std::memory_order_release);
    for (auto& t : threads) t.join();
    const totals t = sum(counters);

    figures f{ramp_s, held_s, reconnect_all_s, rss_base, rss_held, ramped.held, std::move(bcast)};
    nlohmann::json j = summary(sh, t, f);
    const std::uint64_t connections = t.held - t.dropped - t.down;
    // A restart loses the pongs of pings in flight then: at most one per connection.
    const std::uint64_t unanswered = connections + (o.reconnect ? t.reconnects : 0);
    const bool ok = connections == o.connections && t.lost == 0 && t.duplicated == 0 && t.out_of_order == 0 &&
                    t.corrupt == 0 && t.errors == 0 && t.seq_gaps == 0 && sh.first_error.empty() &&
                    t.pongs + unanswered >= t.pings;
    j["first_error"] = sh.first_error;
    j["ok"] = ok;
    std::printf("%s\n", j.dump().c_str());
    if (!o.json.empty()) std::ofstream(o.json) << j.dump(2) << "\n";
    std::fflush(stdout);
    // Leaving closes every socket at once; closing N one by one would only take longer.
    std::_Exit(ok ? 0 : 1);
}
