#include <strix/core/log.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace strix {
namespace {

log_level level_from_env() noexcept {
    const char* v = std::getenv("STRIX_LOG");
    if (!v) return log_level::info;
    if (!std::strcmp(v, "debug")) return log_level::debug;
    if (!std::strcmp(v, "warn")) return log_level::warn;
    if (!std::strcmp(v, "error")) return log_level::error;
    if (!std::strcmp(v, "off")) return log_level::off;
    return log_level::info;
}

std::atomic<log_level> g_level{level_from_env()};

const char* level_name(log_level l) noexcept {
    switch (l) {
        case log_level::debug: return "debug";
        case log_level::info: return "info";
        case log_level::warn: return "warn";
        case log_level::error: return "error";
        default: return "";
    }
}

constexpr int limited_per_second = 10;

// A line's text is cut here, as the fixed buffer of the printf-based logger cut it, so that a
// string a peer controls cannot make one log line arbitrarily long.
constexpr std::size_t max_line = 1023;

}  // namespace

void set_log_level(log_level level) noexcept { g_level.store(level, std::memory_order_relaxed); }
log_level get_log_level() noexcept { return g_level.load(std::memory_order_relaxed); }

namespace detail {

void log_write(log_level level, std::string_view fmt, const format_arg* args, std::size_t n,
               unsigned long suppressed) noexcept {
    try {
        std::string line;
        vformat_to(line, fmt, args, n);
        if (line.size() > max_line) line.resize(max_line);
        const int len = static_cast<int>(line.size());
        if (suppressed)
            std::fprintf(stderr, "strix %s: %.*s (%lu similar lines suppressed)\n", level_name(level), len, line.data(),
                         suppressed);
        else
            std::fprintf(stderr, "strix %s: %.*s\n", level_name(level), len, line.data());
    } catch (...) {
        // Out of memory while formatting: the line is lost, the caller is not.
    }
}

bool log_limited_admit(unsigned long& suppressed) noexcept {
    thread_local std::int64_t window = 0;
    thread_local int used = 0;
    thread_local unsigned long dropped = 0;
    auto now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
    if (now != window) {
        window = now;
        used = 0;
    }
    if (used >= limited_per_second) {
        ++dropped;
        return false;
    }
    ++used;
    suppressed = dropped;
    dropped = 0;
    return true;
}

}  // namespace detail
}  // namespace strix
