#include <strix/core/format.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace {

// The compile-time check, seen from outside: a format string is accepted as format_string<A...>
// only when the constant evaluation of its constructor succeeds. The literal travels as a
// template argument so that the check happens during substitution, where failing is an answer
// (false) instead of a build error.
template <std::size_t N>
struct literal {
    char text[N];
    constexpr literal(const char (&s)[N]) { std::copy_n(s, N, text); }  // implicit: literal<"...">
};

template <literal L, class... A>
concept accepted = requires { typename std::bool_constant<(strix::format_string<A...>(L.text), true)>; };

static_assert(accepted<"no placeholders">);
static_assert(accepted<"{} and {}", int, const char*>);
static_assert(accepted<"{{escaped}} {}", double>);
static_assert(!accepted<"{} and {}", int>, "one argument short");
static_assert(!accepted<"{}", int, int>, "one argument too many");
static_assert(!accepted<"no placeholders", int>);
static_assert(!accepted<"{", int>, "a lone opening brace");
static_assert(!accepted<"} {}", int>, "a lone closing brace");
static_assert(!accepted<"{:d}", int>, "format specs are not supported");
static_assert(!accepted<"{0}", int>, "neither are argument indexes");

static_assert(strix::detail::count_placeholders("") == 0);
static_assert(strix::detail::count_placeholders("{}{}") == 2);
static_assert(strix::detail::count_placeholders("{{}}") == 0);
static_assert(strix::detail::count_placeholders("{{{}}}") == 1);
static_assert(strix::detail::count_placeholders("{x}") == strix::detail::bad_format);
static_assert(strix::detail::count_placeholders("}") == strix::detail::bad_format);
static_assert(strix::detail::count_placeholders("{") == strix::detail::bad_format);

template <class T>
std::string limits_line() {
    return strix::format("{} {}", std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
}

TEST(format, integers_of_every_width_and_sign) {
    EXPECT_EQ(limits_line<signed char>(), "-128 127");
    EXPECT_EQ(limits_line<unsigned char>(), "0 255");  // a number, not a character
    EXPECT_EQ(limits_line<std::int8_t>(), "-128 127");
    EXPECT_EQ(limits_line<std::uint8_t>(), "0 255");
    EXPECT_EQ(limits_line<short>(), "-32768 32767");
    EXPECT_EQ(limits_line<unsigned short>(), "0 65535");
    EXPECT_EQ(limits_line<int>(), "-2147483648 2147483647");
    EXPECT_EQ(limits_line<unsigned>(), "0 4294967295");
    EXPECT_EQ(limits_line<long>(), "-9223372036854775808 9223372036854775807");
    EXPECT_EQ(limits_line<unsigned long>(), "0 18446744073709551615");
    EXPECT_EQ(limits_line<long long>(), "-9223372036854775808 9223372036854775807");
    EXPECT_EQ(limits_line<unsigned long long>(), "0 18446744073709551615");
    EXPECT_EQ(limits_line<std::int64_t>(), "-9223372036854775808 9223372036854775807");
    EXPECT_EQ(limits_line<std::uint64_t>(), "0 18446744073709551615");
    EXPECT_EQ(limits_line<std::size_t>(), "0 18446744073709551615");
    EXPECT_EQ(strix::format("{} {} {}", 0, -1, 42u), "0 -1 42");
}

TEST(format, bool_and_char) {
    EXPECT_EQ(strix::format("{} {}", true, false), "true false");
    EXPECT_EQ(strix::format("[{}{}]", 'a', 'Z'), "[aZ]");
}

TEST(format, floating_point_shortest_round_trip) {
    EXPECT_EQ(strix::format("{}", 0.5), "0.5");
    EXPECT_EQ(strix::format("{}", 0.1), "0.1");
    EXPECT_EQ(strix::format("{}", -2.25), "-2.25");
    EXPECT_EQ(strix::format("{}", 100.0), "100");
    EXPECT_EQ(strix::format("{}", 1e300), "1e+300");
    EXPECT_EQ(strix::format("{}", 1.5f), "1.5");
    EXPECT_EQ(strix::format("{}", 0.1f), "0.1");  // the float's shortest text, not the double's
    EXPECT_EQ(strix::format("{}", std::numeric_limits<double>::lowest()), "-1.7976931348623157e+308");
    EXPECT_EQ(strix::format("{}", std::numeric_limits<double>::denorm_min()), "5e-324");
    EXPECT_EQ(strix::format("{} {}", std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()),
              "inf -inf");
    EXPECT_EQ(strix::format("{}", std::nan("")), "nan");
}

TEST(format, strings) {
    const char* p = "pointer";
    const char* null = nullptr;
    const std::string s = "string";
    const std::string_view v = std::string_view("view and more").substr(0, 4);
    EXPECT_EQ(strix::format("{} {} {} {} {}", "literal", p, s, v, null), "literal pointer string view (null)");
    EXPECT_EQ(strix::format("<{}>", std::string()), "<>");
    // A string_view is printed by its size, embedded NUL included, not up to the first NUL.
    EXPECT_EQ(strix::format("{}", std::string_view("a\0b", 3)), std::string("a\0b", 3));
    // Text that looks like a format is printed as it is.
    EXPECT_EQ(strix::format("{}", "{} %s {{"), "{} %s {{");
}

TEST(format, error_code_prints_its_message) {
    const auto ec = std::make_error_code(std::errc::connection_reset);
    EXPECT_EQ(strix::format("read: {}", ec), "read: " + ec.message());
    EXPECT_EQ(strix::format("read: {}", ec), "read: Connection reset by peer");
}

TEST(format, escapes) {
    EXPECT_EQ(strix::format("{{}}"), "{}");
    EXPECT_EQ(strix::format("{{{}}}", 7), "{7}");
    EXPECT_EQ(strix::format("}}{}{{", 1), "}1{");
    EXPECT_EQ(strix::format("a{{b}}c{}d", 'x'), "a{b}cxd");
}

TEST(format, lines_without_placeholders) {
    EXPECT_EQ(strix::format("plain line"), "plain line");
    EXPECT_EQ(strix::format(""), "");
    EXPECT_EQ(strix::format("100% done, %s stays as it is"), "100% done, %s stays as it is");
}

TEST(format, placeholders_at_the_edges_and_side_by_side) {
    EXPECT_EQ(strix::format("{}", 1), "1");
    EXPECT_EQ(strix::format("{}{}{}", 1, "-", 2), "1-2");
    EXPECT_EQ(strix::format("{} middle {}", "start", "end"), "start middle end");
}

TEST(format, format_to_appends) {
    std::string out = "prefix: ";
    strix::format_to(out, "{} of {}", 3, 10u);
    strix::format_to(out, "; done");
    EXPECT_EQ(out, "prefix: 3 of 10; done");
}

TEST(format, long_output) {
    const std::string big(5000, 'x');
    const std::string line = strix::format("[{}] {}", big, big.size());
    EXPECT_EQ(line, "[" + big + "] 5000");
}

}  // namespace
