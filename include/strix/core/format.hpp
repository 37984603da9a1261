#pragma once
// strix::format: `{}` substitution for log lines and program output, typed and checked at compile
// time. Our own and small on purpose (std::format is not in GCC 12, and libfmt in a public header
// would make every consumer of strix::core depend on it): no width, precision or fill, only the
// argument types the engine and its programs print.
//
//   strix::format("shard {}: {} of {} sessions", id, trimmed, total)   // "shard 2: 3 of 10 sessions"
//   strix::format("{{literal braces}}")                                 // "{literal braces}"
//
// Arguments: integers of any width and sign (decimal), bool ("true"/"false"), char (the
// character), float and double (shortest text that reads back as the same value, as
// std::to_chars writes it), anything that converts to std::string_view (string literals,
// const char*, std::string), and std::error_code (its message()).
//
// Call it qualified (strix::format): with a std::string argument, argument-dependent lookup
// would also find std::format on compilers that have <format>.

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace strix {
namespace detail {

inline constexpr std::size_t bad_format = static_cast<std::size_t>(-1);

/// The number of `{}` placeholders in fmt, or bad_format when a brace is neither part of `{}`
/// nor an escape (`{{` for `{`, `}}` for `}`). Usable at compile time and run time.
constexpr std::size_t count_placeholders(std::string_view fmt) noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '{' && fmt[i] != '}') continue;
        const char next = i + 1 < fmt.size() ? fmt[i + 1] : '\0';
        if (fmt[i] == '{' && next == '}')
            ++n;
        else if (next != fmt[i])
            return bad_format;
        ++i;
    }
    return n;
}

// Not constexpr: reaching one during the compile-time check stops the build, and the compiler's
// message names the function, which says what is wrong.
inline void format_string_has_a_brace_that_is_not_a_placeholder_or_an_escape() {}
inline void format_placeholder_count_differs_from_the_argument_count() {}

/// One argument, its type erased so that the formatting itself is compiled once (src/core/format.cpp).
struct format_arg {
    enum class kind : std::uint8_t { boolean, character, signed_int, unsigned_int, single, floating, string, error };
    kind type;
    union {
        bool b;
        char c;
        long long i;
        unsigned long long u;
        float f;  // kept apart from double: the shortest text of 0.1f is "0.1", of (double)0.1f is not
        double d;
        std::string_view s;
        const std::error_code* ec;
    };
};

template <class T>
inline constexpr bool always_false = false;

/// Erases one argument; a type the formatter does not know fails to compile here.
template <class T>
format_arg make_format_arg(const T& v) noexcept {
    using K = format_arg::kind;
    format_arg a{};
    if constexpr (std::same_as<T, bool>) {
        a.type = K::boolean;
        a.b = v;
    } else if constexpr (std::same_as<T, char>) {
        a.type = K::character;
        a.c = v;
    } else if constexpr (std::same_as<T, wchar_t> || std::same_as<T, char8_t> || std::same_as<T, char16_t> ||
                         std::same_as<T, char32_t>) {
        static_assert(always_false<T>, "strix::format prints char, not wide or unicode characters");
    } else if constexpr (std::signed_integral<T>) {
        static_assert(sizeof(T) <= sizeof(long long), "strix::format: integer wider than long long");
        a.type = K::signed_int;
        a.i = v;
    } else if constexpr (std::unsigned_integral<T>) {
        static_assert(sizeof(T) <= sizeof(unsigned long long), "strix::format: integer wider than long long");
        a.type = K::unsigned_int;
        a.u = v;
    } else if constexpr (std::same_as<T, float>) {
        a.type = K::single;
        a.f = v;
    } else if constexpr (std::same_as<T, double>) {
        a.type = K::floating;
        a.d = v;
    } else if constexpr (std::same_as<T, std::error_code>) {
        a.type = K::error;
        a.ec = &v;
    } else if constexpr (std::is_convertible_v<const T&, const char*>) {
        // A null pointer prints as glibc's printf printed it rather than crashing the logger.
        const char* p = v;
        a.type = K::string;
        a.s = p ? std::string_view(p) : std::string_view("(null)");
    } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
        a.type = K::string;
        a.s = std::string_view(v);
    } else {
        static_assert(always_false<T>, "strix::format: unsupported argument type");
    }
    return a;
}

/// Appends fmt to out with the n args in place of its placeholders; fmt has been checked to
/// hold exactly n. Safe from any thread.
void vformat_to(std::string& out, std::string_view fmt, const format_arg* args, std::size_t n);

}  // namespace detail

/// A format string checked at compile time against the argument types A...: construct it from a
/// constant (a string literal) with as many `{}` as there are arguments, or the build fails.
template <class... A>
class format_string {
public:
    template <class S>
        requires std::convertible_to<const S&, std::string_view>
    consteval format_string(const S& s) : str_(s) {  // implicit, as std::format_string's is
        const std::size_t n = detail::count_placeholders(str_);
        if (n == detail::bad_format) detail::format_string_has_a_brace_that_is_not_a_placeholder_or_an_escape();
        if (n != sizeof...(A)) detail::format_placeholder_count_differs_from_the_argument_count();
    }

    constexpr std::string_view get() const noexcept { return str_; }

private:
    std::string_view str_;
};

/// The parameter type of a formatting function: the arguments drive deduction, and the format
/// string is then checked against them.
template <class... A>
using format_string_for = std::type_identity_t<format_string<A...>>;

/// Appends the formatted text to out. Safe from any thread (out is the caller's).
template <class... A>
void format_to(std::string& out, format_string_for<A...> fmt, const A&... args) {
    const std::array<detail::format_arg, sizeof...(A)> list{detail::make_format_arg(args)...};
    detail::vformat_to(out, fmt.get(), list.data(), list.size());
}

/// The formatted text as a new string. Safe from any thread.
template <class... A>
std::string format(format_string_for<A...> fmt, const A&... args) {
    std::string out;
    const std::array<detail::format_arg, sizeof...(A)> list{detail::make_format_arg(args)...};
    detail::vformat_to(out, fmt.get(), list.data(), list.size());
    return out;
}

/// Writes the formatted text to `to` in one fwrite, so that lines printed by different threads do
/// not interleave (stdio locks the stream per call). Safe from any thread.
template <class... A>
void print(std::FILE* to, format_string_for<A...> fmt, const A&... args) {
    const std::string text = strix::format(fmt, args...);
    std::fwrite(text.data(), 1, text.size(), to);
}

}  // namespace strix
