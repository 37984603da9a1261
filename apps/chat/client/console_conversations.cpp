// chat_console (chat_console.hpp): direct messages, blocks and moderation. /dm sends direct_req
// (the server answers with the direct room's join_room_res unless the session is in it, then the
// message's chat_msg, which ends the wait like a chat line's); /block and /unblock wait for
// block_res; a moderation command sends moderate_req for the current room and waits for its
// notice (every member gets it, the moderator too) or an error. Notices and erased messages are
// printed as lines a person reads.
#include "chat_console.hpp"

#include "console_text.hpp"

#include <charconv>
#include <optional>

namespace strix::chat {

using namespace console;
using proto::mod_action;

namespace {

// A span in microseconds as a person reads it ("10 min").
std::string duration_text(std::uint64_t us) {
    const std::uint64_t s = us / 1'000'000;
    if (s < 120) return strix::format("{} s", s);
    if (s < 7200) return strix::format("{} min", (s + 30) / 60);
    if (s < 172800) return strix::format("{} h", (s + 1800) / 3600);
    return strix::format("{} days", (s + 43200) / 86400);
}

// `s` as a whole decimal number, or nothing.
std::optional<std::uint64_t> number(std::string_view s) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return v;
}

// `arg` split at its first blank: (first word, the rest without leading blanks).
std::pair<std::string, std::string> split(const std::string& arg) {
    const std::size_t sp = arg.find_first_of(" \t");
    if (sp == std::string::npos) return {arg, {}};
    const std::size_t rest = arg.find_first_not_of(" \t", sp);
    return {arg.substr(0, sp), rest == std::string::npos ? std::string() : arg.substr(rest)};
}

enum class seconds_arg { none, optional, required };

struct mod_command {
    std::string_view name;
    mod_action action;
    seconds_arg seconds;
};

constexpr mod_command mod_commands[] = {
    {"/kick", mod_action::kick, seconds_arg::none},     {"/ban", mod_action::ban, seconds_arg::optional},
    {"/unban", mod_action::unban, seconds_arg::none},   {"/mute", mod_action::mute, seconds_arg::required},
    {"/unmute", mod_action::unmute, seconds_arg::none}, {"/promote", mod_action::promote, seconds_arg::none},
    {"/demote", mod_action::demote, seconds_arg::none}, {"/transfer", mod_action::transfer, seconds_arg::none},
};

}  // namespace

bool chat_console::conversation_command(const std::string& cmd, const std::string& arg) {
    if (cmd == "/dm") {
        auto [name, text] = split(arg);
        if (name.empty() || text.empty()) {
            out("usage: /dm NAME TEXT (a message to the account NAME, in your direct room with it)");
            return true;
        }
        fbb_.Clear();
        const auto to = fbb_.CreateString(name);
        const auto t = fbb_.CreateString(text);
        fbb_.Finish(proto::Createdirect_req(fbb_, to, t, steady_us() * 1000, ++client_seq_));
        send(proto::msg_type::direct_req);
        direct_to_ = name;
        waiting_ = waiting::direct;
        waiting_since_ = std::chrono::steady_clock::now();
        return true;
    }
    if (cmd == "/block" || cmd == "/unblock") {
        if (arg.empty() || arg.find(' ') != std::string::npos) {
            out("usage: {} NAME", cmd);
            return true;
        }
        fbb_.Clear();
        fbb_.Finish(proto::Createblock_req(fbb_, fbb_.CreateString(arg), cmd == "/block"));
        send(proto::msg_type::block_req);
        waiting_ = waiting::block;
        waiting_since_ = std::chrono::steady_clock::now();
        return true;
    }
    if (cmd == "/erase") {
        const auto seq = number(arg);
        if (!seq || *seq == 0) {
            out("usage: /erase SEQ (the number after # in [room#SEQ])");
        } else if (room_id_ == 0) {
            out("not in a room: /create NAME or /join ID first");
        } else {
            moderate(mod_action::erase, {}, *seq, 0);
        }
        return true;
    }
    for (const mod_command& c : mod_commands) {
        if (cmd != c.name) continue;
        auto [name, rest] = split(arg);
        const auto seconds = number(rest);
        const bool bad = name.empty() || (c.seconds == seconds_arg::none && !rest.empty()) ||
                         (c.seconds == seconds_arg::required && !seconds) || (!rest.empty() && !seconds);
        if (bad) {
            out("usage: {} NAME{}", cmd,
                c.seconds == seconds_arg::required   ? " SECONDS"
                : c.seconds == seconds_arg::optional ? " [SECONDS] (none: no end)"
                                                     : "");
        } else if (room_id_ == 0) {
            out("not in a room: /create NAME or /join ID first");
        } else {
            moderate(c.action, name, 0, static_cast<std::uint32_t>(std::min<std::uint64_t>(seconds.value_or(0), ~0u)));
        }
        return true;
    }
    return false;
}

// moderate_req in the current room on the account called `name` (none for erase).
void chat_console::moderate(mod_action action, const std::string& name, std::uint64_t seq, std::uint32_t seconds) {
    std::uint64_t target = 0;
    if (!name.empty()) {
        const room_view& room = rooms_[room_id_];
        const auto it = room.known.find(name);
        if (it == room.known.end()) {
            out("no account called {} seen in room {} (a member, or one that spoke or left there)", name, room_id_);
            return;
        }
        target = it->second;
    }
    fbb_.Clear();
    fbb_.Finish(proto::Createmoderate_req(fbb_, room_id_, action, target, seq, seconds));
    send(proto::msg_type::moderate_req);
    moderated_room_ = room_id_;
    waiting_ = waiting::moderate;
    waiting_since_ = std::chrono::steady_clock::now();
}

std::string chat_console::message_line(const proto::chat_msg& m) const {
    const std::string_view name = m.sender() != nullptr ? str(m.sender()->name()) : std::string_view{};
    switch (m.kind()) {
        case proto::msg_kind::notice: return strix::format("[{}#{}] * {}", m.room_id(), m.seq(), notice_text(m));
        case proto::msg_kind::deleted:
            return strix::format("[{}#{}] {}: (message removed)", m.room_id(), m.seq(), name);
        default: return strix::format("[{}#{}] {}: {}", m.room_id(), m.seq(), name, str(m.text()));
    }
}

// What a notice says, "you" for this account: "ben was kicked by ann".
std::string chat_console::notice_text(const proto::chat_msg& m) const {
    auto who = [this](const proto::player_info* p) {
        if (p == nullptr) return std::string("someone");
        return p->id() == player_id_ ? std::string("you") : std::string(str(p->name()));
    };
    const std::string by = who(m.sender());
    const proto::notice_info* n = m.notice();
    if (n == nullptr) return by + " did something this client does not know";
    const std::string t = who(n->target());
    const char* was = t == "you" ? "were" : "was";
    const std::string until = n->until_us() > m.server_ts_us()
                                  ? strix::format(" for {}", duration_text(n->until_us() - m.server_ts_us()))
                                  : std::string();
    switch (n->action()) {
        case mod_action::kick: return strix::format("{} {} kicked by {}", t, was, by);
        case mod_action::ban: return strix::format("{} {} banned by {}{}", t, was, by, until);
        case mod_action::unban: return strix::format("{} {} unbanned by {}", t, was, by);
        case mod_action::mute: return strix::format("{} {} muted by {}{}", t, was, by, until);
        case mod_action::unmute: return strix::format("{} {} unmuted by {}", t, was, by);
        case mod_action::erase: return strix::format("message #{} was removed by {}", n->seq(), by);
        case mod_action::promote: return strix::format("{} {} made an admin by {}", t, was, by);
        case mod_action::demote: return strix::format("{} {} made a member again by {}", t, was, by);
        case mod_action::transfer: return strix::format("{} handed the room over to {}", by, t);
        default: return by + " did something this client does not know";
    }
}

// A notice arrived: its target is an account seen in the room; the moderator's own notice in the
// room it asked about answers its request.
void chat_console::notice_seen(const proto::chat_msg& m) {
    const proto::notice_info* n = m.notice();
    if (auto it = rooms_.find(m.room_id());
        it != rooms_.end() && n != nullptr && n->target() != nullptr && n->target()->id() != 0)
        it->second.known[std::string(str(n->target()->name()))] = n->target()->id();
    if (waiting_ == waiting::moderate && m.sender() != nullptr && m.sender()->id() == player_id_ &&
        m.room_id() == moderated_room_)
        done_waiting();
}

}  // namespace strix::chat
