#include <strix/core/format.hpp>

#include <charconv>
#include <system_error>

namespace strix::detail {
namespace {

template <class T>
void append_number(std::string& out, T v) {
    // 24 holds any 64-bit integer with its sign, and any double in to_chars' shortest form
    // ("-2.2250738585072014e-308" is 24); 32 leaves room.
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

void append_arg(std::string& out, const format_arg& a) {
    using K = format_arg::kind;
    switch (a.type) {
        case K::boolean: out += a.b ? "true" : "false"; break;
        case K::character: out += a.c; break;
        case K::signed_int: append_number(out, a.i); break;
        case K::unsigned_int: append_number(out, a.u); break;
        case K::single: append_number(out, a.f); break;
        case K::floating: append_number(out, a.d); break;
        case K::string: out += a.s; break;
        case K::error: out += a.ec->message(); break;
    }
}

}  // namespace

void vformat_to(std::string& out, std::string_view fmt, const format_arg* args, std::size_t n) {
    // The format string was checked at compile time: every brace is `{}`, `{{` or `}}`, and there
    // are exactly n placeholders. The bound on `next` is kept anyway so that no string can make
    // this read past args.
    std::size_t next = 0;
    std::size_t i = 0;
    while (i < fmt.size()) {
        const std::size_t brace = fmt.find_first_of("{}", i);
        if (brace == std::string_view::npos || brace + 1 >= fmt.size()) {
            out.append(fmt.substr(i));
            break;
        }
        out.append(fmt.substr(i, brace - i));
        if (fmt[brace] == '{' && fmt[brace + 1] == '}') {
            if (next < n) append_arg(out, args[next++]);
        } else {
            out += fmt[brace];  // `{{` or `}}`
        }
        i = brace + 2;
    }
}

}  // namespace strix::detail
