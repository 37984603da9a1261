#pragma once
// Minimal leveled logging to stderr. One fprintf per line (stdio locks the stream), so lines from
// different shards never interleave. Warnings about peers are rate-limited per thread so a flood
// of bad clients cannot turn the log into the bottleneck.

#include <cstdint>

namespace strix {

enum class log_level : std::uint8_t { debug = 0, info = 1, warn = 2, error = 3, off = 4 };

/// Sets the process-wide threshold (default info, or STRIX_LOG=debug|info|warn|error|off).
/// Safe from any thread.
void set_log_level(log_level level) noexcept;
log_level get_log_level() noexcept;

/// printf-style log line. Safe from any thread.
void log(log_level level, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));

/// Like log(), but at most `per_second` lines per second per thread; the rest are counted and the
/// count is reported on the next line that gets through. For events a peer can trigger at will.
void log_limited(log_level level, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));

}  // namespace strix
