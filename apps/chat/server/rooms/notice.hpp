#pragma once
// notice: a moderator's action as a room message carries it. A notice is numbered, stored,
// published to the other nodes and resumed like a member's text (msg_kind notice, the moderator
// as its sender); its fields travel as the message's text in this form:
//
//   "<action> <target id> <seq> <until_us> <role> <target name>"
//
// (decimal numbers, the name last, as it is). Each node applies the action to its copy of the
// room when the notice reaches it in the room's order (room_host::apply_notice), so a kick or a
// ban takes effect on every node with the same message. Plain functions, any thread.

#include <strix/proto/chat_generated.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strix::chat {

struct notice {
    proto::mod_action action = proto::mod_action::none;
    std::uint64_t target = 0;      // the account acted on (0 for erase)
    std::uint64_t seq = 0;         // erase: the message
    std::int64_t until_us = 0;     // ban, mute: when it ends (0: never)
    proto::member_role role = proto::member_role::member;  // promote, demote, transfer: the target's new role
    std::string_view target_name;  // as the room knew it (may be empty: a ban of a non-member)
};

/// The text a notice message carries.
std::string encode_notice(const notice& n);
/// The notice `text` carries (target_name views into it), or nothing when it is malformed.
std::optional<notice> decode_notice(std::string_view text);

}  // namespace strix::chat
