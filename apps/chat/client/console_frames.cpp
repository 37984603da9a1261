// chat_console (chat_console.hpp): what the server sends, shown as lines, and the client's state
// (login, the rooms it is in, their unread counts) kept from it.
#include "chat_console.hpp"

#include "console_text.hpp"
#include "token_file.hpp"

#include "apps/chat/common/chat_frame.hpp"

#include <algorithm>
#include <cstring>

namespace strix::chat {

using namespace console;

void chat_console::on_frame(std::span<const std::byte> frame) {
    switch (type_of(frame)) {
        case proto::msg_type::login_res: {
            const auto* res = body_as<proto::login_res>(frame);
            if (res == nullptr || res->player() == nullptr) break;
            player_id_ = res->player()->id();
            logged_in_ = true;
            if (opt_.device_token && res->device_token() != nullptr && res->device_token()->size() == 32) {
                token_file::token t;
                std::memcpy(t.data(), res->device_token()->data(), t.size());
                if (auto err = token_file::save(token_path_, t); !err.empty())
                    out("warning: the device token was not stored ({}); the next login may be locked out by "
                        "others' wrong guesses",
                        err);
            }
            out("logged in as {} (player {}){}{}", str(res->player()->name()), player_id_,
                res->created() ? ", new account" : "",
                res->expires_at() != 0 ? strix::format(", token valid until {} (Unix time)", res->expires_at())
                                       : std::string());
            // The rooms the account belongs to: a join_room_res follows for each.
            if (res->rooms() != nullptr)
                for (const proto::room_ref* r : *res->rooms())
                    if (r != nullptr) rooms_[r->id()].last_read = r->last_read_seq();
            help();
            if (waiting_ == waiting::login) done_waiting();
            return;
        }
        case proto::msg_type::list_rooms_res: {
            const auto* res = body_as<proto::list_rooms_res>(frame);
            if (res == nullptr) break;
            if (res->rooms() == nullptr || res->rooms()->size() == 0) {
                out("no rooms yet: /create NAME makes one");
            } else {
                out("rooms:");
                for (const proto::room_info* r : *res->rooms()) {
                    if (r == nullptr || r->kind() == proto::room_kind::direct) continue;
                    out("  {}  {}  ({} member{})", r->id(), str(r->name()), r->members(), r->members() == 1 ? "" : "s");
                }
            }
            if (waiting_ == waiting::rooms) done_waiting();
            return;
        }
        case proto::msg_type::create_room_res: {
            const auto* res = body_as<proto::create_room_res>(frame);
            if (res == nullptr || res->room() == nullptr) break;
            room_view& view = rooms_[res->room()->id()];
            view.name = std::string(str(res->room()->name()));
            view.known[opt_.name] = player_id_;  // its owner, the only member yet
            switch_to(res->room()->id());
            out("created room {} '{}'; you are in it (/exit leaves)", room_id_, room_name_);
            if (waiting_ == waiting::create) done_waiting();
            return;
        }
        case proto::msg_type::join_room_res: {
            const auto* res = body_as<proto::join_room_res>(frame);
            if (res == nullptr || res->room() == nullptr) break;
            const std::uint64_t id = res->room()->id();
            const bool known = rooms_.contains(id);  // listed by the login (or in it before)
            room_view& view = rooms_[id];
            view.direct = res->room()->kind() == proto::room_kind::direct;
            std::string members, peer;  // peer: a direct room's other account
            if (res->members() != nullptr) {
                for (const proto::member_info* p : *res->members()) {
                    if (p == nullptr) continue;
                    view.known[std::string(str(p->name()))] = p->id();
                    if (view.direct && p->id() != player_id_) peer = str(p->name());
                    if (!members.empty()) members += ", ";
                    members += str(p->name());
                    if (p->role() != proto::member_role::member) strix::format_to(members, " ({})", name_of(p->role()));
                    if (!p->online()) members += " (offline)";
                }
            }
            if (members.empty())  // a large room lists nobody (docs/protocol.md, "Large rooms"): its counts
                members =
                    strix::format("{} ({} online; too many to list)", res->room()->members(), res->room()->online());
            view.name = view.direct ? "@" + peer : std::string(str(res->room()->name()));
            // Else the login put us back in it, or someone's direct message to this account did.
            const bool asked =
                waiting_ == waiting::join || (view.direct && waiting_ == waiting::direct && peer == direct_to_);
            view.last_seq = std::max(view.last_seq, res->last_seq());
            if (!asked) view.last_read = std::min(view.last_read, view.last_seq);
            if (asked || room_id_ == 0) {
                room_id_ = id;
                room_name_ = view.name;
                history_before_ = 0;
            }
            if (asked && view.direct) {
                // Read up to the join; the message's chat_msg follows (and ends the wait).
                view.last_read = view.last_seq;
                out("direct messages with {} in room {} (now the current room)", peer, id);
            } else if (view.direct && !known) {
                out("* {} opened a direct conversation with you: room {} ({} unread; /switch {}, /history){}", peer, id,
                    view.unread(), id, id == room_id_ ? ", current" : "");
            } else if (asked) {
                view.last_read = view.last_seq;  // a new member has read up to its join point
                out("joined room {} '{}' (/exit leaves); members: {}", id, view.name, members);
                done_waiting();
            } else {
                out("back in room {} '{}' ({} unread{}); members: {}", id, view.name, view.unread(),
                    id == room_id_ ? ", current" : "", members);
            }
            return;
        }
        case proto::msg_type::leave_room_res: {
            const auto* res = body_as<proto::leave_room_res>(frame);
            if (res == nullptr) break;
            const auto it = rooms_.find(res->room_id());
            out("left room {} '{}'", res->room_id(), it != rooms_.end() ? it->second.name : std::string());
            room_left(res->room_id());
            if (waiting_ == waiting::leave) done_waiting();
            return;
        }
        case proto::msg_type::chat_msg: {
            const auto* m = body_as<proto::chat_msg>(frame);
            if (m == nullptr || m->sender() == nullptr) break;
            out_line(message_line(*m));
            if (auto it = rooms_.find(m->room_id()); it != rooms_.end()) {
                it->second.known[std::string(str(m->sender()->name()))] = m->sender()->id();
                it->second.last_seq = std::max(it->second.last_seq, m->seq());
                // What this session says itself, it has read.
                if (m->sender()->id() == player_id_) it->second.last_read = it->second.last_seq;
            }
            if (m->kind() == proto::msg_kind::notice) notice_seen(*m);
            const bool said = waiting_ == waiting::chat || waiting_ == waiting::direct;
            if (said && m->sender()->id() == player_id_ && m->client_seq() == client_seq_) {
                direct_to_.clear();
                done_waiting();
            }
            return;
        }
        case proto::msg_type::member_joined: {
            const auto* m = body_as<proto::member_joined>(frame);
            if (m == nullptr || m->player() == nullptr) break;
            out("* {} joined room {}", str(m->player()->name()), m->room_id());
            if (auto it = rooms_.find(m->room_id()); it != rooms_.end())
                it->second.known[std::string(str(m->player()->name()))] = m->player()->id();
            return;
        }
        case proto::msg_type::member_left: {
            const auto* m = body_as<proto::member_left>(frame);
            if (m == nullptr || m->player() == nullptr) break;
            out("* {} left room {}", str(m->player()->name()), m->room_id());
            return;
        }
        case proto::msg_type::member_presence: {
            const auto* m = body_as<proto::member_presence>(frame);
            if (m == nullptr || m->player() == nullptr) break;
            out("* {} is {} room {}", str(m->player()->name()), m->online() ? "back in" : "offline from", m->room_id());
            return;
        }
        case proto::msg_type::read_res:
        case proto::msg_type::read_marker: {
            // The account's marker (read_marker: another session of it moved it).
            std::uint64_t room = 0, seq = 0;
            if (type_of(frame) == proto::msg_type::read_res) {
                if (const auto* r = body_as<proto::read_res>(frame)) room = r->room_id(), seq = r->seq();
            } else if (const auto* r = body_as<proto::read_marker>(frame)) {
                room = r->room_id();
                seq = r->seq();
            }
            if (auto it = rooms_.find(room); it != rooms_.end())
                it->second.last_read = std::max(it->second.last_read, seq);
            return;
        }
        case proto::msg_type::typing: {
            const auto* m = body_as<proto::typing>(frame);
            if (m == nullptr || m->player() == nullptr) break;
            if (m->player()->id() != player_id_)
                out("* {} is typing in room {}", str(m->player()->name()), m->room_id());
            return;
        }
        case proto::msg_type::token_expired: {
            const auto* m = body_as<proto::token_expired>(frame);
            if (m == nullptr) break;
            out("the login token expired; the server closes this session in {} s (start again with a fresh "
                "--jwt-file)",
                m->grace_seconds());
            return;
        }
        case proto::msg_type::history_res: {
            const auto* res = body_as<proto::history_res>(frame);
            if (res == nullptr) break;
            const auto* msgs = res->messages();
            if (msgs == nullptr || msgs->size() == 0) {
                out("no earlier messages stored in room {}", res->room_id());
            } else {
                out("history of room {}:", res->room_id());
                for (const proto::chat_msg* m : *msgs)
                    if (m != nullptr) out_line(message_line(*m));
                history_before_ = msgs->Get(0)->seq();
                out("{}", res->more() ? "(/history shows more)" : "(the oldest stored message)");
            }
            if (waiting_ == waiting::history) done_waiting();
            return;
        }
        case proto::msg_type::block_res: {
            const auto* r = body_as<proto::block_res>(frame);
            if (r == nullptr || r->player() == nullptr) break;
            if (r->blocked())
                out("blocked {}: no direct messages from them", str(r->player()->name()));
            else
                out("unblocked {}", str(r->player()->name()));
            if (waiting_ == waiting::block) done_waiting();
            return;
        }
        case proto::msg_type::pong_res: {
            const auto* m = body_as<proto::pong_res>(frame);
            if (m == nullptr) break;
            if (m->ts() == 0) return;  // our keepalive
            out("pong: {} us round trip", steady_us() - m->ts());
            if (waiting_ == waiting::pong) done_waiting();
            return;
        }
        case proto::msg_type::error_res: {
            const auto* e = body_as<proto::error_res>(frame);
            if (e == nullptr) break;
            const std::string_view reason = str(e->reason());
            out("error: {}: {}{}{}", name_of(e->request()), name_of(e->code()), reason.empty() ? "" : ": ", reason);
            direct_to_.clear();
            if (waiting_ == waiting::login) {
            // Without a login nothing else can work.
                status_ = 1;
                quit_ = true;
            }
            done_waiting();
            return;
        }
        default: out("(ignoring a frame of unknown type {})", static_cast<unsigned>(type_of(frame))); return;
    }
    out("(ignoring a malformed {} frame)", name_of(type_of(frame)));
}

}  // namespace strix::chat
