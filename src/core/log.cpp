#include <strix/core/log.hpp>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

void vlog(log_level level, const char* fmt, va_list ap, unsigned long suppressed) noexcept {
    char line[1024];
    int n = std::vsnprintf(line, sizeof line, fmt, ap);
    if (n < 0) return;
    if (suppressed)
        std::fprintf(stderr, "strix %s: %s (%lu similar lines suppressed)\n", level_name(level), line, suppressed);
    else
        std::fprintf(stderr, "strix %s: %s\n", level_name(level), line);
}

constexpr int limited_per_second = 10;

}  // namespace

void set_log_level(log_level level) noexcept { g_level.store(level, std::memory_order_relaxed); }
log_level get_log_level() noexcept { return g_level.load(std::memory_order_relaxed); }

void log(log_level level, const char* fmt, ...) noexcept {
    if (level < g_level.load(std::memory_order_relaxed)) return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap, 0);
    va_end(ap);
}

void log_limited(log_level level, const char* fmt, ...) noexcept {
    if (level < g_level.load(std::memory_order_relaxed)) return;
    thread_local std::int64_t window = 0;
    thread_local int used = 0;
    thread_local unsigned long suppressed = 0;
    auto now = std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::steady_clock::now().time_since_epoch()).count();
    if (now != window) {
        window = now;
        used = 0;
    }
    if (used >= limited_per_second) {
        ++suppressed;
        return;
    }
    ++used;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap, suppressed);
    va_end(ap);
    suppressed = 0;
}

}  // namespace strix
