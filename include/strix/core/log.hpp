#pragma once
// Minimal leveled logging to stderr. One fprintf per line (stdio locks the stream), so lines from
// different shards never interleave. Warnings about peers are rate-limited per thread so a flood
// of bad clients cannot turn the log into the bottleneck.
//
//   log(log_level::warn, "session {}: slow consumer ({} bytes queued)", peer, queued);
//
// The format string is strix::format's: `{}` placeholders, counted against the arguments at
// compile time. A line below the threshold is not formatted at all.

#include <strix/core/format.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strix {

enum class log_level : std::uint8_t { debug = 0, info = 1, warn = 2, error = 3, off = 4 };

/// Sets the process-wide threshold (default info, or STRIX_LOG=debug|info|warn|error|off).
/// Safe from any thread.
void set_log_level(log_level level) noexcept;
log_level get_log_level() noexcept;

namespace detail {

/// Formats and writes one line ("strix <level>: <text>", and the count of lines log_limited()
/// suppressed before it when not zero). A line that cannot be formatted (out of memory) is
/// dropped. Safe from any thread.
void log_write(log_level level, std::string_view fmt, const format_arg* args, std::size_t n,
               unsigned long suppressed) noexcept;

/// log_limited()'s budget for the calling thread: true when a line may be written now, with
/// `suppressed` set to the lines dropped since the last one written (and that count reset);
/// false when this second's budget is spent (the line is counted). Safe from any thread.
bool log_limited_admit(unsigned long& suppressed) noexcept;

}  // namespace detail

/// Writes one log line when `level` is at or above the threshold. Safe from any thread.
template <class... A>
void log(log_level level, format_string_for<A...> fmt, const A&... args) noexcept {
    if (level < get_log_level()) return;
    const std::array<detail::format_arg, sizeof...(A)> list{detail::make_format_arg(args)...};
    detail::log_write(level, fmt.get(), list.data(), list.size(), 0);
}

/// Like log(), but at most 10 lines per second per thread; the rest are counted and the count is
/// reported on the next line that gets through. For events a peer can trigger at will; a line
/// over the budget is not formatted. Safe from any thread.
template <class... A>
void log_limited(log_level level, format_string_for<A...> fmt, const A&... args) noexcept {
    if (level < get_log_level()) return;
    unsigned long suppressed = 0;
    if (!detail::log_limited_admit(suppressed)) return;
    const std::array<detail::format_arg, sizeof...(A)> list{detail::make_format_arg(args)...};
    detail::log_write(level, fmt.get(), list.data(), list.size(), suppressed);
}

}  // namespace strix
