#pragma once
// What the libzmq perf tools (zmq-local-thr, zmq-remote-thr, ...) share: argument parsing, the
// sequence stamp every message carries, the checks on what arrives, the send/receive loops, the
// percentile and the output lines. The strix-link-* tools follow the same contract, so the two
// families can be swapped and crossed (a strix sender against a libzmq receiver and back):
//
//   - Message i (from 0) carries i as a little-endian integer in its first min(size, 8) bytes;
//     the other bytes are unspecified. Every receiver checks each message's size and stamp, so a
//     lost, duplicated or reordered message fails the run (exit 1) instead of scoring.
//   - A receive that waits more than 30 s (ZMQ_RCVTIMEO), or a send blocked for 30 s
//     (ZMQ_SNDTIMEO), says how many messages got through and exits 1: a benchmark never hangs.
//   - Sockets close with a 30 s linger (libzmq's default is forever): pending messages are
//     delivered, but a dead peer cannot hold the process.
//   - Wrong arguments: usage on stderr, exit 2. --help: usage on stdout, exit 0.

#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
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
inline constexpr int linger_ms = 30000;
inline constexpr std::size_t max_message_size = std::size_t{1} << 30;

using perf_clock = std::chrono::steady_clock;

inline double seconds_between(perf_clock::time_point a, perf_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

enum class pattern { pushpull, pubsub };

/// The common tail of every tool's --help text.
inline constexpr std::string_view contract_help =
    "Every message carries its sequence number in its first 8 bytes (fewer when it is smaller);\n"
    "receivers check each message's size and number and exit 1 on a mismatch. A receive that\n"
    "waits 30 s, or a send blocked for 30 s, reports how many messages got through and exits 1.\n"
    "Exit status: 0 done, 1 failed run, 2 wrong arguments.\n";

/// The throughput tools' options (--pattern, --hwm), explained once.
inline constexpr std::string_view thr_options_help =
    "  --pattern pushpull|pubsub   PUSH -> PULL (default), or XPUB -> SUB subscribed to \"\";\n"
    "                              the XPUB sends only after it has received the subscription,\n"
    "                              so no message is lost to a slow joiner\n"
    "  --hwm N                     ZMQ_SNDHWM on the sender and ZMQ_RCVHWM on the receiver;\n"
    "                              default: libzmq's (1000) for pushpull, 0 (unlimited) for\n"
    "                              pubsub, since PUB drops what exceeds the HWM and a dropped\n"
    "                              message would fail the run\n";

struct parsed_args {
  std::vector<std::string> positional;
  pattern pat = pattern::pushpull;
  std::optional<int> hwm;
};

/// One tool: its name and usage text, the error exits and the argument parsing.
/// Not thread-safe to parse; fail() may be called from any thread.
class tool {
 public:
  tool(std::string_view name, std::string_view usage) : name_(name), usage_(usage) {}

  std::string_view name() const { return name_; }

  /// Prints "<name>: <why>" and the usage on stderr, exits 2.
  [[noreturn]] void usage_error(const std::string& why) const {
    std::fprintf(stderr, "%.*s: %s\n\n%.*s", static_cast<int>(name_.size()), name_.data(),
                 why.c_str(), static_cast<int>(usage_.size()), usage_.data());
    std::exit(2);
  }

  /// Prints "<name>: <why>" on stderr and exits 1 at once (callable from any thread: no static
  /// destructors run while another thread is still inside libzmq).
  [[noreturn]] void fail(const std::string& why) const {
    std::fflush(stdout);
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(name_.size()), name_.data(), why.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }

  /// fail() with libzmq's description of errno when rc is -1.
  void check(int rc, const std::string& what) const {
    if (rc == -1) fail(what + ": " + zmq_strerror(errno));
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
      } else if (thr_options && (opt == "--pattern" || opt == "--hwm")) {
        if (i + 1 >= argc) usage_error("option " + std::string(opt) + " needs a value");
        value = argv[++i];
      }
      if (thr_options && opt == "--pattern") {
        if (value == "pushpull") {
          a.pat = pattern::pushpull;
        } else if (value == "pubsub") {
          a.pat = pattern::pubsub;
        } else {
          usage_error("--pattern must be pushpull or pubsub, got '" + value + "'");
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
  std::uint64_t number(const std::string& text, std::string_view what, std::uint64_t lo,
                       std::uint64_t hi) const {
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

/// A libzmq context, terminated (after its sockets' linger) when it goes out of scope.
class zcontext {
 public:
  explicit zcontext(const tool& t) : ctx_(zmq_ctx_new()) {
    if (ctx_ == nullptr) t.fail(std::string("zmq_ctx_new: ") + zmq_strerror(errno));
  }
  ~zcontext() {
    while (zmq_ctx_term(ctx_) == -1 && errno == EINTR) {
    }
  }
  zcontext(const zcontext&) = delete;
  zcontext& operator=(const zcontext&) = delete;
  void* get() const { return ctx_; }

 private:
  void* ctx_;
};

/// One libzmq socket with the contract's timeouts and linger; closed when it goes out of scope.
/// Used by one thread at a time, like any libzmq socket.
class zsocket {
 public:
  zsocket(const tool& t, const zcontext& ctx, int type) : t_(t), s_(zmq_socket(ctx.get(), type)) {
    if (s_ == nullptr) t.fail(std::string("zmq_socket: ") + zmq_strerror(errno));
    set(ZMQ_RCVTIMEO, timeout_ms);
    set(ZMQ_SNDTIMEO, timeout_ms);
    set(ZMQ_LINGER, linger_ms);
  }
  ~zsocket() { zmq_close(s_); }
  zsocket(const zsocket&) = delete;
  zsocket& operator=(const zsocket&) = delete;

  void* get() const { return s_; }

  void set(int option, int value) {
    t_.check(zmq_setsockopt(s_, option, &value, sizeof value),
             "zmq_setsockopt(" + std::to_string(option) + ")");
  }
  void subscribe_all() { t_.check(zmq_setsockopt(s_, ZMQ_SUBSCRIBE, "", 0), "ZMQ_SUBSCRIBE"); }
  void bind(const std::string& ep) { t_.check(zmq_bind(s_, ep.c_str()), "zmq_bind " + ep); }
  void connect(const std::string& ep) {
    t_.check(zmq_connect(s_, ep.c_str()), "zmq_connect " + ep);
  }

  /// The endpoint actually bound (a tcp port given as * resolved).
  std::string last_endpoint() const {
    char buf[512];
    std::size_t len = sizeof buf;
    t_.check(zmq_getsockopt(s_, ZMQ_LAST_ENDPOINT, buf, &len), "ZMQ_LAST_ENDPOINT");
    return std::string(buf, len > 0 ? len - 1 : 0);
  }

 private:
  const tool& t_;
  void* s_;
};

/// Sets the HWMs the --pattern/--hwm contract asks for on one side (sender or receiver).
inline void apply_hwm(zsocket& s, const parsed_args& a, bool sender) {
  std::optional<int> hwm = a.hwm;
  if (!hwm && a.pat == pattern::pubsub) hwm = 0;
  if (hwm) s.set(sender ? ZMQ_SNDHWM : ZMQ_RCVHWM, *hwm);
}

/// A zmq_msg_t closed when it goes out of scope.
struct zmessage {
  zmq_msg_t m;
  zmessage() { zmq_msg_init(&m); }
  ~zmessage() { zmq_msg_close(&m); }
  zmessage(const zmessage&) = delete;
  zmessage& operator=(const zmessage&) = delete;
};

inline void stamp(void* data, std::size_t size, std::uint64_t seq) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(seq >> (8 * i));
  if (size > 0) std::memcpy(data, b, std::min<std::size_t>(size, 8));
}

/// The sequence number in a message's first min(size, 8) bytes.
inline std::uint64_t stamp_of(const void* data, std::size_t size) {
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

/// Receives one message into msg (message `seq` of `count`); fails on timeout, wrong size or
/// wrong sequence number. `what` names the stream in the messages ("subscriber 3: ").
inline void receive_checked(const tool& t, void* s, zmessage& msg, std::size_t size,
                            std::uint64_t seq, std::uint64_t count, const std::string& what = "") {
  while (zmq_msg_recv(&msg.m, s, 0) == -1) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      t.fail(what + "no message for " + std::to_string(timeout_ms / 1000) + " s; received " +
             std::to_string(seq) + " of " + std::to_string(count) + " messages");
    }
    t.fail(what + "zmq_msg_recv: " + zmq_strerror(errno));
  }
  const std::size_t got = zmq_msg_size(&msg.m);
  if (got != size) {
    t.fail(what + "message " + std::to_string(seq) + " has " + std::to_string(got) +
           " bytes, expected " + std::to_string(size));
  }
  const std::uint64_t n = stamp_of(zmq_msg_data(&msg.m), size);
  if (n != expected_stamp(seq, size)) {
    t.fail(what + "message " + std::to_string(seq) + " carries sequence number " +
           std::to_string(n) + ": a message was lost, duplicated or reordered");
  }
}

/// Sends msg; fails on a send blocked for the timeout. Closes/reuses msg as zmq_msg_send does.
inline void send_checked(const tool& t, void* s, zmq_msg_t* msg, std::uint64_t seq,
                         std::uint64_t count) {
  while (zmq_msg_send(msg, s, 0) == -1) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      t.fail("send blocked for " + std::to_string(timeout_ms / 1000) + " s; sent " +
             std::to_string(seq) + " of " + std::to_string(count) + " messages");
    }
    t.fail(std::string("zmq_msg_send: ") + zmq_strerror(errno));
  }
}

/// Receives and checks `count` messages; returns the seconds from the first message's arrival
/// to the last's (libzmq's local_thr clock).
inline double receive_all(const tool& t, void* s, std::size_t size, std::uint64_t count) {
  zmessage msg;
  receive_checked(t, s, msg, size, 0, count);
  const auto start = perf_clock::now();
  for (std::uint64_t i = 1; i < count; ++i) receive_checked(t, s, msg, size, i, count);
  return seconds_between(start, perf_clock::now());
}

/// Sends `count` stamped messages of `size` bytes, each freshly allocated as libzmq's
/// remote_thr does.
inline void send_all(const tool& t, void* s, std::size_t size, std::uint64_t count) {
  for (std::uint64_t i = 0; i < count; ++i) {
    zmq_msg_t msg;
    t.check(zmq_msg_init_size(&msg, size), "zmq_msg_init_size");
    stamp(zmq_msg_data(&msg), size, i);
    send_checked(t, s, &msg, i, count);
    zmq_msg_close(&msg);
  }
}

/// On an XPUB: blocks until `n` subscription messages (first byte 1) have arrived. With
/// ZMQ_XPUB_VERBOSE set, each subscriber's "" subscription arrives, not only the first.
inline void wait_subscriptions(const tool& t, void* xpub, int n) {
  zmessage msg;
  for (int got = 0; got < n;) {
    if (zmq_msg_recv(&msg.m, xpub, 0) == -1) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        t.fail("no subscription for " + std::to_string(timeout_ms / 1000) + " s; " +
               std::to_string(got) + " of " + std::to_string(n) + " subscribers subscribed");
      }
      t.fail(std::string("zmq_msg_recv (subscription): ") + zmq_strerror(errno));
    }
    if (zmq_msg_size(&msg.m) >= 1 && *static_cast<const unsigned char*>(zmq_msg_data(&msg.m)) == 1)
      ++got;
  }
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

/// The REP side: receives, checks and echoes `count` requests.
inline void echo_all(const tool& t, void* rep, std::size_t size, std::uint64_t count) {
  zmessage msg;
  for (std::uint64_t i = 0; i < count; ++i) {
    receive_checked(t, rep, msg, size, i, count);
    send_checked(t, rep, &msg.m, i, count);
  }
}

struct roundtrips {
  double total_seconds = 0;   // first send to last reply, as libzmq's remote_lat times it
  std::vector<double> us;     // each round trip, microseconds
};

/// The REQ side: `count` stamped requests, each reply checked, each round trip timed alone.
inline roundtrips request_all(const tool& t, void* req, std::size_t size, std::uint64_t count) {
  roundtrips r;
  r.us.reserve(static_cast<std::size_t>(count));
  zmessage reply;
  const auto start = perf_clock::now();
  for (std::uint64_t i = 0; i < count; ++i) {
    zmq_msg_t msg;
    t.check(zmq_msg_init_size(&msg, size), "zmq_msg_init_size");
    std::memset(zmq_msg_data(&msg), 0, size);
    stamp(zmq_msg_data(&msg), size, i);
    const auto t0 = perf_clock::now();
    send_checked(t, req, &msg, i, count);
    zmq_msg_close(&msg);
    receive_checked(t, req, reply, size, i, count, "reply: ");
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

}  // namespace strix::link_perf
