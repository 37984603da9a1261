#include "apps/chat/cluster/presence_backplane.hpp"

#include "apps/chat/cluster/resp.hpp"

#include <charconv>

namespace strix::chat {

namespace {

template <class T>
bool parse_uint(std::string_view s, T& out) noexcept {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc{} && r.ptr == s.data() + s.size() && !s.empty();
}

// The next space-separated word of s, removed from it (nothing when no space follows).
std::optional<std::string_view> take_word(std::string_view& s) {
    const auto sp = s.find(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    std::string_view w = s.substr(0, sp);
    s.remove_prefix(sp + 1);
    return w;
}

}  // namespace

std::string online_key(std::string_view room) { return "chat:{" + std::string(room) + "}:o"; }

std::string presence_channel(std::string_view room) { return "chat:{" + std::string(room) + "}:p"; }

std::string signal_channel(std::string_view room) { return "chat:{" + std::string(room) + "}:e"; }

bool is_signal_channel(std::string_view channel) {
    return channel == control_channel || (channel.size() > 2 && channel.substr(channel.size() - 2) == ":e");
}

std::string encode_presence(const presence_message& m) {
    std::string out = std::to_string(m.node);
    out += ' ';
    out += static_cast<char>(m.change);
    out += ' ';
    out += std::to_string(m.account);
    out += ' ';
    out.append(m.incarnation);
    out += ' ';
    out.append(m.name);
    return out;
}

std::optional<presence_message> parse_presence(std::string_view s) {
    presence_message m;
    auto version = take_word(s);
    if (!version || !parse_uint(*version, m.version)) return std::nullopt;
    auto node = take_word(s);
    auto change = take_word(s);
    auto account = take_word(s);
    auto inc = take_word(s);
    if (!node || !change || !account || !inc || change->size() != 1 || !parse_uint(*node, m.node) ||
        !parse_uint(*account, m.account))
        return std::nullopt;
    switch ((*change)[0]) {
        case 'j':
        case 'l':
        case 'n':
        case 'f':
        case 'd': m.change = static_cast<presence_change>((*change)[0]); break;
        default: return std::nullopt;
    }
    m.incarnation = *inc;
    m.name = s;
    return m;
}

std::vector<std::string> presence_command(std::string_view room, const presence_message& m) {
    std::string value(m.incarnation);
    value += ' ';
    value.append(m.name);
    return {"FCALL",
            "chat_presence",
            "1",
            online_key(room),
            presence_channel(room),
            std::string(1, static_cast<char>(m.change)),
            std::to_string(m.account),
            std::to_string(m.node),
            std::move(value),
            encode_presence(m)};
}

std::vector<std::string> presence_clear_command(std::span<const std::string> rooms, std::uint32_t node,
                                                std::string_view keep) {
    std::vector<std::string> args{"FCALL", "chat_presence_clear", std::to_string(rooms.size() + 1),
                                  "chat:node:" + std::to_string(node)};
    for (const auto& r : rooms) args.push_back(online_key(r));
    args.push_back(std::to_string(node));
    args.emplace_back(keep);
    return args;
}

std::vector<std::string> online_counts_command(std::span<const std::string> rooms,
                                               const std::map<std::uint32_t, std::string>& alive) {
    std::vector<std::string> args{"FCALL_RO", "chat_online_counts", std::to_string(rooms.size())};
    for (const auto& r : rooms) args.push_back(online_key(r));
    for (const auto& [node, inc] : alive) {
        args.push_back(std::to_string(node));
        args.push_back(inc);
    }
    return args;
}

std::optional<std::vector<std::uint32_t>> parse_online_counts(const resp_reply& r, std::size_t rooms) {
    if (r.type != resp_reply::kind::array || r.elements.size() != rooms) return std::nullopt;
    std::vector<std::uint32_t> out;
    out.reserve(rooms);
    for (const auto& e : r.elements) {
        if (e.type != resp_reply::kind::integer || e.integer < 0) return std::nullopt;
        out.push_back(static_cast<std::uint32_t>(e.integer));
    }
    return out;
}

std::vector<online_entry> parse_online_hash(const resp_reply& r, std::uint64_t* version,
                                            std::vector<std::uint64_t>* left) {
    std::vector<online_entry> out;
    if (version != nullptr) *version = 0;
    if (r.type != resp_reply::kind::array) return out;
    for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) {
        std::string_view field = r.elements[i].str, value = r.elements[i + 1].str;
        if (field == "#") {
            if (version != nullptr) parse_uint(value, *version);
            continue;
        }
        const auto colon = field.find(':'), sp = value.find(' ');
        std::uint64_t account = 0;
        if (colon != std::string_view::npos && field.substr(colon + 1) == "left") {
            if (left != nullptr && parse_uint(field.substr(0, colon), account)) left->push_back(account);
            continue;
        }
        online_entry e;
        if (colon == std::string_view::npos || sp == std::string_view::npos ||
            !parse_uint(field.substr(0, colon), e.account) || !parse_uint(field.substr(colon + 1), e.node))
            continue;
        e.incarnation.assign(value.substr(0, sp));
        e.name.assign(value.substr(sp + 1));
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace strix::chat
