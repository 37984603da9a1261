// strix-chat-load: the Chat server portfolio's DummyClient load test against strix-chat-server.
//
// Connects and logs in --clients accounts (PREFIX0, PREFIX1, ...: re-runs reuse them), lets the
// first --rooms clients create a room each and every other client i join room i % rooms, then sends
// chat at --rps per client with text lengths from --payload-mix, and verifies every delivery:
// each receiver must see its room's seq go up by exactly one, every sender's messages in
// client_seq order with exactly the text that was sent, and every message must reach every member
// of its room exactly once. Latency is send (client_ts) to receipt, in the same process.
// Prints the Chat server portfolio's interval table every --report-every seconds and a summary;
// --sweep raises the rate step by step until p99 or delivery fails. Exit status 0 only when the run
// verified clean (--sweep: when no step showed what no overload excuses: duplicates, reordering,
// seq gaps, corrupt texts, error replies other than rate_limited / server_busy).
//
// Threads: --threads event loops (default 1, so the tool shares a small machine with the server
// fairly); the controller that sequences the run is ticked from worker 0's loop.

#include "load_clock.hpp"
#include "load_controller.hpp"
#include "load_options.hpp"
#include "load_report.hpp"
#include "load_shared.hpp"
#include "load_worker.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/resource.h>
#include <sys/un.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace strix::chat;

namespace {

bool resolve(const std::string& host, std::uint16_t port, peer_address& out) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return false;
    sockaddr_in in = *reinterpret_cast<const sockaddr_in*>(res->ai_addr);
    in.sin_port = htons(port);
    ::freeaddrinfo(res);
    std::memcpy(&out.addr, &in, sizeof in);
    out.len = sizeof in;
    return true;
}

bool unix_address(const std::string& path, peer_address& out) {
    sockaddr_un un{};
    if (path.empty() || path.size() >= sizeof un.sun_path) return false;
    un.sun_family = AF_UNIX;
    std::memcpy(un.sun_path, path.c_str(), path.size() + 1);
    std::memcpy(&out.addr, &un, sizeof un);
    out.len = sizeof un;
    return true;
}

// Each client needs a descriptor; the soft limit is often 1024.
void raise_fd_limit(std::uint32_t clients) {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    const rlim_t want = static_cast<rlim_t>(clients) + 64;
    if (rl.rlim_cur >= want) return;
    rl.rlim_cur = std::min(want, rl.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &rl);
}

}  // namespace

int main(int argc, char** argv) {
    const load_options opt = parse_load_options(argc, argv);
    // A write to a connection the server closed must be an error value, not a signal.
    std::signal(SIGPIPE, SIG_IGN);
    std::vector<peer_address> addrs(1);
    peer_address& addr = addrs.front();
    if (!opt.unix_path.empty()) {
        if (!unix_address(opt.unix_path, addr)) {
            std::fprintf(stderr, "strix-chat-load: --unix path must be 1 to %zu bytes\n",
                         sizeof(sockaddr_un::sun_path) - 1);
            return 2;
        }
    } else if (!opt.targets.empty()) {
        addrs.resize(opt.targets.size());
        for (std::size_t i = 0; i < opt.targets.size(); ++i) {
            const std::string& t = opt.targets[i];
            const auto colon = t.rfind(':');
            if (!resolve(t.substr(0, colon), static_cast<std::uint16_t>(std::stoul(t.substr(colon + 1))), addrs[i])) {
                std::fprintf(stderr, "strix-chat-load: cannot resolve --targets host %s to an IPv4 address\n",
                             t.substr(0, colon).c_str());
                return 2;
            }
        }
    } else if (!resolve(opt.host, opt.port, addr)) {
        std::fprintf(stderr, "strix-chat-load: cannot resolve --host %s to an IPv4 address\n", opt.host.c_str());
        return 2;
    }
    raise_fd_limit(opt.clients);
    std::unique_ptr<client_tls_context> tls;
    if (opt.tls) {
        try {
            tls = std::make_unique<client_tls_context>(client_tls_config{.ca_file = opt.ca_file});
        } catch (const std::runtime_error& e) {
            std::fprintf(stderr, "strix-chat-load: %s\n", e.what());
            return 2;
        }
    }

    std::string target;
    for (const auto& a : addrs) target += (target.empty() ? "" : ", ") + describe(a);
    std::printf("strix-chat-load: %u clients, %u rooms, %.1f rps per client, payload %s (mean %.0f B), %s, "
                "%u thread(s)%s\n",
                opt.clients, opt.rooms, opt.rps, opt.mix.to_string().c_str(), opt.mix.mean_len(),
                (target + (opt.tls ? " over TLS" : "")).c_str(), opt.threads, opt.sweep ? ", sweep" : "");
    std::fflush(stdout);

    load_shared shared(opt, opt.threads);
    shared.tls = tls.get();
    std::vector<std::unique_ptr<load_worker>> workers;
    for (std::uint32_t w = 0; w < opt.threads; ++w) {
        workers.push_back(std::make_unique<load_worker>(shared, addrs, w, opt.threads));
    }
    load_controller ctl(shared, *workers.front());
    std::vector<std::thread> threads;
    for (std::uint32_t w = 1; w < opt.threads; ++w) {
        threads.emplace_back([&workers, w] { workers[w]->run(nullptr); });
    }
    workers.front()->run(&ctl);
    for (std::thread& t : threads) t.join();

    const std::vector<step_result>& steps = ctl.results();
    std::string failure;
    bool ok = true;
    if (shared.failed()) {
        failure = shared.fatal();
        ok = false;
    }
    // A normal run must verify completely. A sweep ends by overloading the server on purpose, so
    // there only what no overload excuses (duplicates, reordering, gaps, corruption, bad replies)
    // fails the run; loss, refusals and disconnects just end the sweep.
    for (const step_result& r : steps) {
        if (opt.sweep ? r.hard_failure : !r.verified) {
            ok = false;
            if (failure.empty()) failure = "step " + std::to_string(r.plan.index + 1) + ": " + r.verdict;
        }
    }
    if (ok && steps.empty()) {
        ok = false;
        failure = "no step completed";
    }
    if (!opt.sweep && !steps.empty()) print_run_summary(opt, steps.front(), ctl.setup_s());
    if (opt.sweep) print_sweep_summary(opt, steps);
    if (!ok) std::fprintf(stderr, "strix-chat-load: FAILED: %s\n", failure.c_str());
    if (!opt.json.empty() && !write_json(opt, steps, ctl.setup_s(), ok, failure)) return 1;
    return ok ? 0 : 1;
}
