#include "notice.hpp"

#include <charconv>

namespace strix::chat {
namespace {

// One decimal number and the space after it, consumed from the front of `s`.
template <class T>
bool take(std::string_view& s, T& out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec != std::errc{} || end == s.data() + s.size() || *end != ' ') return false;
    s.remove_prefix(static_cast<std::size_t>(end - s.data()) + 1);
    return true;
}

}  // namespace

std::string encode_notice(const notice& n) {
    std::string out = std::to_string(static_cast<unsigned>(n.action));
    out += ' ';
    out += std::to_string(n.target);
    out += ' ';
    out += std::to_string(n.seq);
    out += ' ';
    out += std::to_string(n.until_us);
    out += ' ';
    out += std::to_string(static_cast<unsigned>(n.role));
    out += ' ';
    out += n.target_name;
    return out;
}

std::optional<notice> decode_notice(std::string_view text) {
    notice n;
    unsigned action = 0, role = 0;
    if (!take(text, action) || !take(text, n.target) || !take(text, n.seq) || !take(text, n.until_us) ||
        !take(text, role))
        return std::nullopt;
    if (action == 0 || action > static_cast<unsigned>(proto::mod_action::MAX) ||
        role > static_cast<unsigned>(proto::member_role::MAX))
        return std::nullopt;
    n.action = static_cast<proto::mod_action>(action);
    n.role = static_cast<proto::member_role>(role);
    n.target_name = text;
    return n;
}

}  // namespace strix::chat
