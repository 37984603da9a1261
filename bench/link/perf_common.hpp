#pragma once
// What both families of link perf tools share (the libzmq ones, zmq-*, in zmq/, and the strix
// ones, strix-link-*, in strix/): argument parsing, the sequence stamp every message carries, the
// checks on what arrives, the percentile and the output lines. Nothing here knows either library,
// so the two families can be swapped and crossed (a strix sender against a libzmq receiver and
// back) and a difference in their output is a difference in the libraries, not in the tools:
//
//   - Message i (from 0) carries i as a little-endian integer in its first min(size, 8) bytes;
//     message 0 of 16 bytes or more carries the marker "strixseq" in bytes 8-15; the other bytes
//     are unspecified. Every receiver checks each message's size, and its stamp when message 0
//     carried the marker (or --seq on), so a lost, duplicated or reordered message from one of
//     these tools fails the run (exit 1) instead of scoring, while libzmq's own perf programs
//     (whose messages carry no stamp) pair with the receivers as they pair with libzmq's.
//   - A receive that waits more than 30 s, or a send blocked for 30 s, says how many messages got
//     through and exits 1: a benchmark never hangs.
//   - Wrong arguments: usage on stderr, exit 2. --help: usage on stdout, exit 0.

#include <algorithm>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strix::link_perf {

inline constexpr int timeout_ms = 30000;
inline constexpr std::size_t max_message_size = std::size_t{1} << 30;

using perf_clock = std::chrono::steady_clock;

inline double seconds_between(perf_clock::time_point a, perf_clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

enum class pattern { pushpull, pubsub, dealerrouter };

/// When a receiver checks sequence numbers: auto (when message 0 carries the marker), on, off.
enum class seq_mode { automatic, on, off };

/// The marker in bytes 8-15 of message 0 that says "every message carries its stamp".
inline constexpr char seq_marker[8] = {'s', 't', 'r', 'i', 'x', 's', 'e', 'q'};
inline constexpr std::size_t seq_marker_min_size = 16;

/// The common tail of every tool's --help text.
inline constexpr std::string_view contract_help =
    "Every message carries its sequence number in its first 8 bytes (fewer when it is smaller),\n"
    "and message 0 of 16 bytes or more the marker \"strixseq\" in bytes 8-15. Receivers check\n"
    "each message's size, and its number when message 0 carried the marker (--seq auto, the\n"
    "default: libzmq's own perf programs send no numbers), always (--seq on) or never (--seq off);\n"
    "they exit 1 on a mismatch. A receive that waits 30 s, or a send blocked for 30 s, reports\n"
    "how many messages got through and exits 1.\n"
    "Exit status: 0 done, 1 failed run, 2 wrong arguments.\n";

struct parsed_args {
    std::vector<std::string> positional;
    pattern pat = pattern::pushpull;
    std::optional<int> hwm;
    seq_mode seq = seq_mode::automatic;
};

/// One tool: its name and usage text, the error exits and the argument parsing.
/// Not thread-safe to parse; fail() may be called from any thread.
class tool {
public:
    tool(std::string_view name, std::string_view usage) : name_(name), usage_(usage) {}

    std::string_view name() const { return name_; }

  /// Prints "<name>: <why>" and the usage on stderr, exits 2.
    [[noreturn]] void usage_error(const std::string& why) const {
        std::fprintf(stderr, "%.*s: %s\n\n%.*s", static_cast<int>(name_.size()), name_.data(), why.c_str(),
                     static_cast<int>(usage_.size()), usage_.data());
        std::exit(2);
    }

  /// Prints "<name>: <why>" on stderr and exits 1 at once (callable from any thread: no static
  /// destructors run while another thread is still inside the messaging library).
    [[noreturn]] void fail(const std::string& why) const {
        std::fflush(stdout);
        std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(name_.size()), name_.data(), why.c_str());
        std::fflush(stderr);
        std::_Exit(1);
    }

  /// Splits argv into exactly `npositional` positional arguments and, when `thr_options`, the
  /// --pattern and --hwm options (as "--opt value" or "--opt=value", anywhere on the line).
    parsed_args parse(int argc, char** argv, std::size_t npositional, bool thr_options) const {
        parsed_args a;
        for (int i = 1; i < argc; ++i) {
            const std::string_view arg = argv[i];
            if (arg == "--help" || arg == "-h") {
                std::fwrite(usage_.data(), 1, usage_.size(), stdout);
                std::exit(0);
            }
            if (arg.size() < 2 || arg.substr(0, 2) != "--") {
                a.positional.emplace_back(arg);
                continue;
            }
            std::string_view opt = arg;
            std::string value;
            if (const auto eq = arg.find('='); eq != std::string_view::npos) {
                opt = arg.substr(0, eq);
                value = std::string(arg.substr(eq + 1));
            } else if ((thr_options && (opt == "--pattern" || opt == "--hwm")) || opt == "--seq") {
                if (i + 1 >= argc) usage_error("option " + std::string(opt) + " needs a value");
                value = argv[++i];
            }
            if (thr_options && opt == "--pattern") {
                if (value == "pushpull") {
                    a.pat = pattern::pushpull;
                } else if (value == "pubsub") {
                    a.pat = pattern::pubsub;
                } else if (value == "dealerrouter") {
                    a.pat = pattern::dealerrouter;
                } else {
                    usage_error("--pattern must be pushpull, pubsub or dealerrouter, got '" + value + "'");
                }
            } else if (opt == "--seq") {
                if (value == "auto") {
                    a.seq = seq_mode::automatic;
                } else if (value == "on") {
                    a.seq = seq_mode::on;
                } else if (value == "off") {
                    a.seq = seq_mode::off;
                } else {
                    usage_error("--seq must be auto, on or off, got '" + value + "'");
                }
            } else if (thr_options && opt == "--hwm") {
                a.hwm = static_cast<int>(number(value, "--hwm", 0, 0x7fffffff));
            } else {
                usage_error("unknown option '" + std::string(arg) + "'");
            }
        }
        if (a.positional.size() != npositional) {
            usage_error("expected " + std::to_string(npositional) + " arguments, got " +
                        std::to_string(a.positional.size()));
        }
        return a;
    }

  /// A decimal integer in [lo, hi], or usage_error naming `what`.
    std::uint64_t number(const std::string& text, std::string_view what, std::uint64_t lo, std::uint64_t hi) const {
        std::uint64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || ec != std::errc{} || ptr != end || v < lo || v > hi) {
            usage_error(std::string(what) + " must be an integer in [" + std::to_string(lo) + ", " +
                        std::to_string(hi) + "], got '" + text + "'");
        }
        return v;
    }

    std::size_t message_size(const std::string& text) const {
        return static_cast<std::size_t>(number(text, "message-size", 0, max_message_size));
    }

    std::uint64_t message_count(const std::string& text, std::string_view what) const {
        return number(text, what, 1, 1'000'000'000'000ULL);
    }

private:
    std::string_view name_;
    std::string_view usage_;
};

/// The high-water mark the --pattern/--hwm contract asks for, or nullopt for the library's
/// default (1000 messages in both libzmq and strix): --hwm when given, else 0 (unlimited) for
/// pubsub, where a publisher drops what exceeds the mark and a dropped message fails the run.
inline std::optional<int> hwm_for(const parsed_args& a) {
    if (a.hwm) return a.hwm;
    if (a.pat == pattern::pubsub) return 0;
    return std::nullopt;
}

/// Writes message seq's stamp (and, in message 0, the marker) into a message of `size` bytes.
inline void stamp(void* data, std::size_t size, std::uint64_t seq) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(seq >> (8 * i));
    if (size > 0) std::memcpy(data, b, std::min<std::size_t>(size, 8));
    if (seq == 0 && size >= seq_marker_min_size) std::memcpy(static_cast<char*>(data) + 8, seq_marker, 8);
}

/// The sequence number in a message's first min(size, 8) bytes.
inline std::uint64_t stamp_of(const void* data, std::size_t size) {
    if constexpr (std::endian::native == std::endian::little) {
        if (size >= 8) {  // the common case, as one load
            std::uint64_t v;
            std::memcpy(&v, data, 8);
            return v;
        }
    }
    unsigned char b[8] = {};
    if (size > 0) std::memcpy(b, data, std::min<std::size_t>(size, 8));
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
    return v;
}

/// The stamp that message `seq` carries once truncated to `size` bytes.
inline std::uint64_t expected_stamp(std::uint64_t seq, std::size_t size) {
    return size >= 8 ? seq : (seq & ((std::uint64_t{1} << (8 * size)) - 1));
}

/// Why message `seq` failed check_message (kept out of line: the check runs per message).
[[noreturn, gnu::noinline, gnu::cold]] inline void fail_message(const tool& t, const void* data, std::size_t got,
                                                                std::size_t size, std::uint64_t seq,
                                                                std::string_view what) {
    const std::string prefix(what);
    if (got != size) {
        t.fail(prefix + "message " + std::to_string(seq) + " has " + std::to_string(got) + " bytes, expected " +
               std::to_string(size));
    }
    t.fail(prefix + "message " + std::to_string(seq) + " carries sequence number " +
           std::to_string(stamp_of(data, size)) + ": a message was lost, duplicated or reordered");
}

/// Checks that message `seq` (`got` bytes at data) has `size` bytes and carries seq's stamp;
/// fails the run otherwise. `what` names the stream in the messages ("subscriber 3: ").
inline void check_message(const tool& t, const void* data, std::size_t got, std::size_t size, std::uint64_t seq,
                          std::string_view what = {}) {
    if (got == size && stamp_of(data, size) == expected_stamp(seq, size)) [[likely]]
        return;
    fail_message(t, data, got, size, seq, what);
}

/// Fails the run unless message `seq` has `size` bytes (the check on messages without stamps).
inline void check_size(const tool& t, std::size_t got, std::size_t size, std::uint64_t seq,
                       std::string_view what = {}) {
    if (got == size) [[likely]]
        return;
    t.fail(std::string(what) + "message " + std::to_string(seq) + " has " + std::to_string(got) + " bytes, expected " +
           std::to_string(size));
}

/// One receiver's checks of a stream of messages: the size of each, and the stamp of each when
/// --seq says so (auto: when message 0 carries the marker, i.e. came from one of these tools).
/// Owner: the thread that receives the stream.
class stream_check {
public:
    explicit stream_check(seq_mode mode) : mode_(mode), stamps_(mode == seq_mode::on) {}

  /// Checks message `seq` (`got` bytes at data); fails the run on a mismatch.
    void operator()(const tool& t, const void* data, std::size_t got, std::size_t size, std::uint64_t seq,
                    std::string_view what = {}) {
        if (seq == 0 && mode_ == seq_mode::automatic) {
            stamps_ = got == size && size >= seq_marker_min_size &&
                      std::memcmp(static_cast<const char*>(data) + 8, seq_marker, 8) == 0;
        }
        if (stamps_) {
            check_message(t, data, got, size, seq, what);
        } else {
            check_size(t, got, size, seq, what);
        }
    }

  /// Whether stamps are being checked (decided at message 0 in auto mode).
    bool stamps() const { return stamps_; }

private:
    seq_mode mode_;
    bool stamps_;
};

/// "no message for 30 s; received 12 of 100 messages" (what a receive timeout reports).
inline std::string receive_timeout(std::uint64_t received, std::uint64_t count) {
    return "no message for " + std::to_string(timeout_ms / 1000) + " s; received " + std::to_string(received) + " of " +
           std::to_string(count) + " messages";
}

/// "send blocked for 30 s; sent 12 of 100 messages" (what a send timeout reports).
inline std::string send_timeout(std::uint64_t sent, std::uint64_t count) {
    return "send blocked for " + std::to_string(timeout_ms / 1000) + " s; sent " + std::to_string(sent) + " of " +
           std::to_string(count) + " messages";
}

/// "no subscription for 30 s; 3 of 8 subscribers subscribed" (a publisher waiting in vain).
inline std::string subscription_timeout(std::uint64_t got, std::uint64_t n) {
    return "no subscription for " + std::to_string(timeout_ms / 1000) + " s; " + std::to_string(got) + " of " +
           std::to_string(n) + " subscribers subscribed";
}

/// libzmq's local_thr output.
inline void print_thr(std::size_t size, std::uint64_t count, double seconds) {
    if (seconds <= 0) seconds = 1e-6;  // libzmq's stopwatch floor (1 us)
    const double throughput = static_cast<double>(count) / seconds;
    const double megabits = throughput * static_cast<double>(size) * 8 / 1e6;
    std::printf("message size: %zu [B]\n", size);
    std::printf("message count: %llu\n", static_cast<unsigned long long>(count));
    std::printf("mean throughput: %llu [msg/s]\n", static_cast<unsigned long long>(throughput));
    std::printf("mean throughput: %.3f [Mb/s]\n", megabits);
    std::fflush(stdout);
}

struct roundtrips {
    double total_seconds = 0;  // first send to last reply, as libzmq's remote_lat times it
    std::vector<double> us;    // each round trip, microseconds
};

/// Times `count` round trips of `size`-byte messages as a REQ: message seq is stamped into a
/// buffer, then `round_trip(buffer, seq)` sends it and receives and checks the reply; the clock
/// runs around each call and from the first to the last.
template <class RoundTrip>
roundtrips timed_round_trips(std::size_t size, std::uint64_t count, RoundTrip&& round_trip) {
    roundtrips r;
    r.us.reserve(static_cast<std::size_t>(count));
    std::vector<std::byte> buf(size);
    const auto start = perf_clock::now();
    for (std::uint64_t i = 0; i < count; ++i) {
        stamp(buf.data(), size, i);
        const auto t0 = perf_clock::now();
        round_trip(buf, i);
        r.us.push_back(seconds_between(t0, perf_clock::now()) * 1e6);
    }
    r.total_seconds = seconds_between(start, perf_clock::now());
    return r;
}

/// Nearest-rank percentile of sorted values: the smallest value with at least p % of all values
/// at or below it.
inline double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    const auto n = static_cast<double>(sorted.size());
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * n));
    rank = std::clamp<std::size_t>(rank, 1, sorted.size());
    return sorted[rank - 1];
}

/// libzmq's remote_lat output (average latency = half a round trip) plus p50 and p99 of the
/// whole round trips.
inline void print_lat(std::size_t size, std::uint64_t count, roundtrips r) {
    std::sort(r.us.begin(), r.us.end());
    const double average = r.total_seconds * 1e6 / (static_cast<double>(count) * 2);
    std::printf("message size: %zu [B]\n", size);
    std::printf("roundtrip count: %llu\n", static_cast<unsigned long long>(count));
    std::printf("average latency: %.3f [us]\n", average);
    std::printf("p50 roundtrip: %.3f [us]\n", percentile(r.us, 50));
    std::printf("p99 roundtrip: %.3f [us]\n", percentile(r.us, 99));
    std::fflush(stdout);
}

/// The fan-out tool's output: 'mean throughput' is messages published per second, 'aggregate
/// throughput' messages delivered (messages x subscribers) per second.
inline void print_fanout(int subscribers, std::size_t size, std::uint64_t count, double seconds) {
    if (seconds <= 0) seconds = 1e-6;
    const std::uint64_t deliveries = count * static_cast<std::uint64_t>(subscribers);
    std::printf("subscribers: %d\n", subscribers);
    std::printf("message size: %zu [B]\n", size);
    std::printf("message count: %llu\n", static_cast<unsigned long long>(count));
    std::printf("deliveries: %llu\n", static_cast<unsigned long long>(deliveries));
    std::printf("mean throughput: %llu [msg/s]\n",
                static_cast<unsigned long long>(static_cast<double>(count) / seconds));
    std::printf("aggregate throughput: %llu [deliveries/s]\n",
                static_cast<unsigned long long>(static_cast<double>(deliveries) / seconds));
    std::fflush(stdout);
}

}  // namespace strix::link_perf
