#include <strix/net/http_server.hpp>

#include <http_parser.h>
#include <strings.h>

namespace strix::http {

std::string_view request::path() const noexcept {
    const std::string_view t(target);
    return t.substr(0, t.find_first_of("?#"));
}

std::string_view request::query() const noexcept {
    const std::string_view t(target);
    const std::size_t q = t.find('?');
    if (q == std::string_view::npos) return {};
    const std::string_view rest = t.substr(q + 1);
    return rest.substr(0, rest.find('#'));
}

std::string_view request::header(std::string_view name) const noexcept {
    for (const auto& [k, v] : headers)
        if (k.size() == name.size() && strncasecmp(k.data(), name.data(), name.size()) == 0) return v;
    return {};
}

std::string_view request::param(std::string_view name) const noexcept {
    for (const auto& [k, v] : params)
        if (k == name) return v;
    return {};
}

std::string_view status_text(int status) noexcept {
    switch (status) {
#define STRIX_HTTP_STATUS(num, name, text) \
    case num: return #text;
        HTTP_STATUS_MAP(STRIX_HTTP_STATUS)
#undef STRIX_HTTP_STATUS
        default: return "Unknown";
    }
}

std::string json_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 8);
    for (const char ch : s) {
        const auto u = static_cast<unsigned char>(ch);
        if (ch == '"' || ch == '\\') {
            out.push_back('\\');
            out.push_back(ch);
        } else if (u < 0x20) {
            static constexpr char hex[] = "0123456789abcdef";
            out.append("\\u00");
            out.push_back(hex[u >> 4]);
            out.push_back(hex[u & 15]);
        } else {
            out.push_back(ch);
        }
    }
    return out;
}

response json_error(int status, std::string_view reason) {
    std::string name;
    for (const char ch : status_text(status)) {
        if (ch == ' ' || ch == '-')
            name.push_back('_');
        else
            name.push_back(static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch));
    }
    response r;
    r.status = status;
    r.body = "{\"error\":\"" + json_escape(name) + "\",\"reason\":\"" + json_escape(reason) + "\"}";
    return r;
}

}  // namespace strix::http
