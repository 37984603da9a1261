// strix-link-fanout: one PUB to N SUB sockets in one process, on strix::link (the ServerLink
// porting log's 8-subscriber fan-out; zmq-fanout's command line and output). The PUB lives on shard
// 0, the subscribers are spread over both shards; every message is encoded once and referenced by
// every subscriber's connection. The clock runs from the first send to the last subscriber's last
// receive.

#include "strix_perf.hpp"

#include <atomic>
#include <memory>

namespace lp = strix::link_perf;
namespace sl = strix::link;

static const std::string usage =
    std::string("usage: strix-link-fanout <bind-to> <subscribers> <message-size> <message-count>\n"
                "\n"
                "PUB/SUB fan-out inside one process: a PUB on shard 0 binds at <bind-to> (tcp://HOST:PORT,\n"
                "ipc://PATH or inproc://NAME), <subscribers> SUB sockets subscribed to everything connect\n"
                "from the engine's two shards (round robin); once the PUB has every subscription\n"
                "(subscribers() == N) it sends <message-count> messages of <message-size> bytes, and every\n"
                "subscriber must receive all of them. HWM is 0 (unlimited) on both sides so nothing is\n"
                "dropped. The clock runs from the first send to the last subscriber's last message; 'mean\n"
                "throughput' is messages published per second, 'aggregate throughput' is messages delivered\n"
                "(messages x subscribers) per second.\n"
                "\n") +
    std::string(lp::contract_help);

namespace {

constexpr unsigned shards = 2;

sl::socket_options unlimited(std::size_t size) {
    lp::parsed_args a;
    a.pat = lp::pattern::pubsub;  // HWM 0
    return lp::options_for(a, size);
}

// One SUB on its shard: checks every message; the last subscriber to finish stops the engine.
class subscriber {
public:
    subscriber(const lp::tool& t, strix::shard& sh, int index, std::size_t size, std::uint64_t count,
               std::atomic<int>& finished, int total)
        : t_(t),
          sh_(sh),
          s_(sh, sl::socket_type::sub, unlimited(size)),
          who_("subscriber " + std::to_string(index) + ": "),
          size_(size),
          count_(count),
          finished_(finished),
          total_(total),
          dog_(t, sh, got_, [this] { return who_ + lp::receive_timeout(got_, count_); }) {
        s_.subscribe(std::string_view());
        s_.on_message([this](sl::message_view m) { on_message(m); });
    }

  /// Connects to the publisher. On the subscriber's shard.
    void start(const std::string& endpoint) { s_.connect(endpoint); }
  /// When the last message arrived; after the engine stopped.
    lp::perf_clock::time_point done() const { return done_; }
    bool complete() const { return got_ == count_; }

private:
    void on_message(sl::message_view m) {
        if (got_ == count_) return;
        lp::check_received(t_, m, size_, got_, who_);
        if (++got_ < count_) return;
        done_ = lp::perf_clock::now();
        dog_.stop();
    // The thread that joins the engine reads done_ after the join, which orders it.
        if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == total_) sh_.owner().stop();
    }

    const lp::tool& t_;
    strix::shard& sh_;
    sl::socket s_;
    const std::string who_;
    const std::size_t size_;
    const std::uint64_t count_;
    std::atomic<int>& finished_;
    const int total_;
    std::uint64_t got_ = 0;
    lp::perf_clock::time_point done_;
    lp::watchdog dog_;
};

// The PUB on shard 0: waits for `total` subscribers, then publishes `count` messages, one batch
// per loop turn (a PUB with an unlimited HWM never says would_block).
class publisher {
public:
    publisher(const lp::tool& t, strix::shard& sh, const std::string& endpoint, int total, std::size_t size,
              std::uint64_t count)
        : sh_(sh),
          s_(sh, sl::socket_type::pub, unlimited(size)),
          total_(static_cast<std::size_t>(total)),
          buf_(size),
          count_(count),
          batch_(std::max<std::size_t>(1, batch_bytes / (size + 9))),
          dog_(t, sh, subscribed_, [this] { return lp::subscription_timeout(s_.subscribers(), total_); }) {
        s_.on_event([this](const sl::socket_event& e) {
            if (e.what != sl::socket_event::kind::subscribed) return;
            ++subscribed_;
            if (s_.subscribers() == total_ && sent_ == 0) {
                dog_.stop();
                start_ = lp::perf_clock::now();
                pump();
            }
        });
        bound_ = s_.bind(endpoint);
    }

  /// The address bound (a tcp port given as 0 or * resolved): what subscribers connect to.
    const std::string& endpoint() const { return bound_; }
    lp::perf_clock::time_point started() const { return start_; }

private:
    static constexpr std::size_t batch_bytes = 256 * 1024;

    void pump() {
        for (std::size_t k = 0; k < batch_ && sent_ < count_; ++k) {
            lp::stamp(buf_.data(), buf_.size(), sent_);
            s_.send(sl::bytes_view(buf_));  // PUB: never would_block; a full subscriber would miss it
            ++sent_;
        }
        if (sent_ < count_) sh_.post_local([this] { pump(); });
    }

    strix::shard& sh_;
    sl::socket s_;
    std::string bound_;
    const std::size_t total_;
    std::vector<std::byte> buf_;
    const std::uint64_t count_;
    const std::size_t batch_;
    std::uint64_t sent_ = 0;
    std::uint64_t subscribed_ = 0;
    lp::perf_clock::time_point start_;
    lp::watchdog dog_;
};

}  // namespace

int main(int argc, char** argv) {
    const lp::tool t("strix-link-fanout", usage);
    const lp::parsed_args a = t.parse(argc, argv, 4, false);
    const int n = static_cast<int>(t.number(a.positional[1], "subscribers", 1, 1024));
    const std::size_t size = t.message_size(a.positional[2]);
    const std::uint64_t count = t.message_count(a.positional[3], "message-count");

    try {
        strix::engine eng(lp::engine_for(shards));
        publisher pub(t, eng.at(0), a.positional[0], n, size, count);
        std::atomic<int> finished{0};
        std::vector<std::unique_ptr<subscriber>> subs;
        for (int i = 0; i < n; ++i)
            subs.push_back(std::make_unique<subscriber>(t, eng.at(static_cast<unsigned>(i) % shards), i, size, count,
                                                        finished, n));
        eng.start();
        for (int i = 0; i < n; ++i) {
            subscriber* s = subs[static_cast<std::size_t>(i)].get();
            lp::post_checked(t, eng, static_cast<unsigned>(i) % shards, [s, &pub] { s->start(pub.endpoint()); });
        }
        eng.join();  // the last subscriber to finish stops the engine
        lp::perf_clock::time_point last = pub.started();
        for (auto& s : subs) {
            if (!s->complete()) t.fail("the engine stopped before every subscriber had every message");
            last = std::max(last, s->done());
        }
        lp::print_fanout(n, size, count, lp::seconds_between(pub.started(), last));
    } catch (const std::exception& e) {
        t.fail(e.what());
    }
    return 0;
}
