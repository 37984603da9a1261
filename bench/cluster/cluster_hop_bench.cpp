// strix-bench-cluster-hop: what the Redis backplane adds between two chat nodes. Shard 0 (the
// sending node) publishes with chat_publish at --rate messages/s over --rooms rooms; shard 1 (the
// receiving node) watches every room through a room_feed. Reported: messages/s delivered, the
// publish round trip (FCALL sent -> seq back) and the hop (FCALL sent -> delivered by the other
// node's feed) at p50/p99/p999, Redis's CPU, and the exact delivery check: every acknowledged
// publish delivered once and in seq order, or inside a gap the feed reported (a Redis restart
// during the run, driven by the script, loses the stream: those seqs come from the database in a
// real node; here they are counted).
//
//   strix-bench-cluster-hop --port P [--redis-pid PID] [--rooms 100] [--rate 20000] [--seconds 5]
//                           [--payload 128] [--label text]
// Prints one markdown table row (and the header with --header).
#include "apps/chat/cluster/room_backplane.hpp"
#include "apps/chat/cluster/room_feed.hpp"

#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

using namespace strix;
using namespace strix::chat;
using namespace std::chrono_literals;

namespace {

struct args {
    std::uint16_t port = 6379;
    long redis_pid = 0;
    unsigned rooms = 100;
    double rate = 20000;
    double seconds = 5;
    std::size_t payload = 128;
    std::string label = "steady";
    bool header = false;
    double kill_redis_at = 0;  // seconds into the run: SIGKILL --redis-pid (the script restarts it)
};

args parse(int argc, char** argv) {
    args a;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "strix-bench-cluster-hop: %s needs a value\n", k.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (k == "--port")
            a.port = static_cast<std::uint16_t>(std::stoul(next()));
        else if (k == "--redis-pid")
            a.redis_pid = std::stol(next());
        else if (k == "--rooms")
            a.rooms = static_cast<unsigned>(std::stoul(next()));
        else if (k == "--rate")
            a.rate = std::stod(next());
        else if (k == "--seconds")
            a.seconds = std::stod(next());
        else if (k == "--payload")
            a.payload = std::stoul(next());
        else if (k == "--label")
            a.label = next();
        else if (k == "--header")
            a.header = true;
        else if (k == "--kill-redis-at")
            a.kill_redis_at = std::stod(next());
        else {
            std::fprintf(stderr, "strix-bench-cluster-hop: unknown option %s\n", k.c_str());
            std::exit(2);
        }
    }
    if (a.rooms == 0 || !(a.rate > 0) || !(a.seconds > 0)) {
        std::fprintf(stderr, "strix-bench-cluster-hop: --rooms, --rate and --seconds must be positive\n");
        std::exit(2);
    }
    return a;
}

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// utime + stime of a process, in seconds (0 when unknown).
double cpu_s(long pid) {
    if (pid <= 0) return 0;
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto close = s.rfind(')');
    if (close == std::string::npos) return 0;
    std::vector<std::string> fields;
    std::size_t p = close + 2;
    while (p < s.size()) {
        const auto sp = s.find(' ', p);
        fields.push_back(s.substr(p, sp - p));
        if (sp == std::string::npos) break;
        p = sp + 1;
    }
    if (fields.size() < 13) return 0;
    return static_cast<double>(std::stoull(fields[11]) + std::stoull(fields[12])) /
           static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double pct(std::vector<std::int64_t>& v, double q) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return static_cast<double>(v[k]) / 1000.0;
}

// What the receiving node saw, per room.
struct room_check {
    std::uint64_t next = 0;  // 0: nothing yet
    std::uint64_t gap_seqs = 0;
};

}  // namespace

int main(int argc, char** argv) {
    const args a = parse(argc, argv);
    engine_config ec;
    ec.shards = 2;
    ec.pin_threads = false;
    ec.tick = 1ms;
    engine eng(ec);
    eng.start();

    redis_options ro;
    ro.target = endpoint::tcp("127.0.0.1", a.port);
    const std::string run_id = new_epoch().substr(0, 8);
    std::vector<std::string> rooms;
    for (unsigned r = 0; r < a.rooms; ++r) rooms.push_back("bench-" + run_id + "-" + std::to_string(r));

    // Receiving node (shard 1).
    std::mutex mu;
    std::vector<std::int64_t> hop;
    std::unordered_map<std::string, room_check> checks;
    std::uint64_t delivered = 0, disorder = 0, gap_reports = 0, gap_seqs = 0;
    std::unique_ptr<room_feed> feed;
    eng.run_on(1, [&] {
        feed = std::make_unique<room_feed>(
            eng.at(1), ro,
            room_feed::sink{[&](std::string_view room, std::uint64_t seq, std::string_view body) {
                                const auto t = now_ns();
                                std::lock_guard lk(mu);
                                ++delivered;
                                auto& c = checks[std::string(room)];
                                if (c.next != 0 && seq != c.next) ++disorder;
                                c.next = seq + 1;
                                hop.push_back(
                                    t - std::strtoll(std::string(body.substr(0, body.find('|'))).c_str(), nullptr, 10));
                            },
                            [&](std::string_view room, std::uint64_t from, std::uint64_t to, bool) {
                                std::lock_guard lk(mu);
                                ++gap_reports;
                                gap_seqs += to > from ? to - from : 0;
                                checks[std::string(room)].next = to + 1;
                            }},
            room_feed_options{.check_interval = 500ms});
        for (const auto& r : rooms) feed->watch(r, 0);
    });
    for (int i = 0; i < 500 && !eng.run_on(1, [&] { return feed->in_sync(); }); ++i) std::this_thread::sleep_for(10ms);

    // Sending node (shard 0): paced by a 1 ms timer.
    std::atomic<std::uint64_t> sent{0}, acked{0}, failed{0};
    std::vector<std::int64_t> rtt;  // shard 0 only, read after the run
    std::vector<std::uint64_t> floor(rooms.size(), 0);  // last seq acked per room: the floor after a Redis loss
    std::unique_ptr<redis_client> pub;
    timer_node pace;
    const std::string pad(a.payload, 'x');
    const auto start = now_ns();
    const auto end = start + static_cast<std::int64_t>(a.seconds * 1e9);
    std::atomic<bool> done_sending{false};
    const double cpu0 = cpu_s(a.redis_pid);
    eng.run_on(0, [&] {
        pub = std::make_unique<redis_client>(eng.at(0), ro,
                                             std::vector<std::vector<std::string>>{backplane_load_command()});
        pace.set_callback([&] {
            const auto t = now_ns();
            const auto due = static_cast<std::uint64_t>(static_cast<double>(std::min(t, end) - start) * 1e-9 * a.rate);
            while (sent.load() < due) {
                const auto i = sent.fetch_add(1);
                const std::size_t r = i % rooms.size();
                const auto sent_at = now_ns();
                const auto args =
                    publish_command(rooms[r], std::to_string(sent_at) + "|" + pad, 100000, new_epoch(), 0, floor[r]);
                std::vector<std::string_view> v(args.begin(), args.end());
                pub->command(v, [&, r, sent_at](std::error_code e, const resp_reply& reply) {
                    const auto p = e ? std::nullopt : parse_publish_reply(reply);
                    if (!p) {
                        ++failed;
                        return;
                    }
                    ++acked;
                    floor[r] = std::max(floor[r], p->seq);
                    rtt.push_back(now_ns() - sent_at);
                });
            }
            if (t < end) {
                eng.at(0).timers().schedule(pace, 1);
            } else {
                done_sending = true;
            }
        });
        eng.at(0).timers().schedule(pace, 1);
    });
    double resubscribed_ms = -1;
    if (a.kill_redis_at > 0 && a.redis_pid > 0) {
        const auto kill_at = start + static_cast<std::int64_t>(a.kill_redis_at * 1e9);
        while (now_ns() < kill_at) std::this_thread::sleep_for(1ms);
        ::kill(static_cast<pid_t>(a.redis_pid), SIGKILL);
        const auto killed = now_ns();
        // The feed notices, reconnects once the script restarted Redis, and subscribes again.
        while (eng.run_on(1, [&] { return feed->in_sync(); }) && now_ns() - killed < 2'000'000'000)
            std::this_thread::sleep_for(1ms);
        while (!eng.run_on(1, [&] { return feed->in_sync(); }) && now_ns() - killed < 10'000'000'000)
            std::this_thread::sleep_for(1ms);
        resubscribed_ms = static_cast<double>(now_ns() - killed) / 1e6;
    }
    while (!done_sending) std::this_thread::sleep_for(10ms);
    // Replies and deliveries drain.
    const auto drain_until = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < drain_until) {
        const auto settled = acked.load() + failed.load() == sent.load();
        std::uint64_t got = 0, gone = 0;
        {
            std::lock_guard lk(mu);
            got = delivered;
            gone = gap_seqs;
        }
        if (settled && got + gone >= acked.load()) break;
        std::this_thread::sleep_for(10ms);
    }
    const double elapsed = static_cast<double>(now_ns() - start) * 1e-9;
    const double cpu = cpu_s(a.redis_pid) - cpu0;
    eng.run_on(0, [&] {
        if (pace.armed()) eng.at(0).timers().cancel(pace);
        pub.reset();
    });
    const std::uint64_t from_stream = eng.run_on(1, [&] { return feed->stats().from_stream; });
    eng.run_on(1, [&] { feed.reset(); });
    eng.stop();
    eng.join();

    std::lock_guard lk(mu);
    // Every acked publish must be delivered or lie in a reported gap; more than that is a duplicate.
    const std::int64_t missing =
        static_cast<std::int64_t>(acked.load()) - static_cast<std::int64_t>(delivered + gap_seqs);
    if (a.header) {
        std::printf("| run | sent/s | delivered | acked | publish failed | lost | out of order | gap seqs (reports) | "
                    "refilled from stream | publish RTT p50/p99 us | hop p50/p99/p999 us | Redis CPU | kill -> "
                    "resubscribed |\n");
        std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    }
    const std::string cpu_text =
        a.redis_pid > 0 && a.kill_redis_at == 0 ? std::to_string(static_cast<int>(100 * cpu / elapsed)) + " %" : "-";
    const std::string resub_text =
        resubscribed_ms >= 0 ? std::to_string(static_cast<int>(resubscribed_ms)) + " ms" : "-";
    std::printf("| %s | %.0f | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRId64 " | %" PRIu64 " | %" PRIu64
                " (%" PRIu64 ") | %" PRIu64 " | %.0f / %.0f | %.0f / %.0f / %.0f | %s | %s |\n",
                a.label.c_str(), static_cast<double>(sent.load()) / a.seconds, delivered, acked.load(), failed.load(),
                missing > 0 ? missing : 0, disorder, gap_seqs, gap_reports, from_stream, pct(rtt, 0.5), pct(rtt, 0.99),
                pct(hop, 0.5), pct(hop, 0.99), pct(hop, 0.999), cpu_text.c_str(), resub_text.c_str());
    // Failure: a loss nobody reported, a duplicate or a reordering. (More delivered than acked
    // is fine: a publish whose reply a Redis crash swallowed.)
    return missing > 0 || disorder != 0 ? 1 : 0;
}
