#include "wire_chat.hpp"

#include <charconv>

namespace strix::chat {
namespace {

bool take_number(std::string_view& s, std::uint64_t& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p == s.data() + s.size() || *p != ' ') return false;
    s.remove_prefix(static_cast<std::size_t>(p - s.data()) + 1);
    return true;
}

}  // namespace

std::string encode_wire_chat(const wire_chat& w) {
    std::string out;
    for (std::uint64_t v : {w.sender_id, w.server_ts_us, w.client_ts, w.client_seq, w.node, w.no, w.kind,
                            static_cast<std::uint64_t>(w.name.size())}) {
        out += std::to_string(v);
        out += ' ';
    }
    out.append(w.name);
    out.append(w.text);
    return out;
}

std::optional<wire_chat> decode_wire_chat(std::string_view s) {
    wire_chat w;
    std::uint64_t name_len = 0;
    for (std::uint64_t* v :
         {&w.sender_id, &w.server_ts_us, &w.client_ts, &w.client_seq, &w.node, &w.no, &w.kind, &name_len})
        if (!take_number(s, *v)) return std::nullopt;
    if (w.kind > 2) return std::nullopt;
    if (name_len > s.size()) return std::nullopt;
    w.name = s.substr(0, name_len);
    w.text = s.substr(name_len);
    return w;
}

}  // namespace strix::chat
