#include "frames.hpp"

#include "apps/chat/server/rooms/notice.hpp"

#include <strix/net/websocket.hpp>

namespace strix::chat::frames {
namespace {

flatbuffers::Offset<flatbuffers::String> str(flatbuffers::FlatBufferBuilder& fbb, std::string_view s) {
    return fbb.CreateString(s.data(), s.size());
}

flatbuffers::Offset<proto::room_info> room_info(flatbuffers::FlatBufferBuilder& fbb, const room_summary& r) {
    auto name = str(fbb, r.name);
    return proto::Createroom_info(fbb, r.id, name, r.members, r.online, static_cast<proto::room_kind>(r.kind));
}

flatbuffers::Offset<proto::player_info> player(flatbuffers::FlatBufferBuilder& fbb, std::uint64_t id,
                                               std::string_view name) {
    auto n = str(fbb, name);
    return proto::Createplayer_info(fbb, id, n);
}

// A chat_msg's text and notice fields for a message of `kind` (notice: its text decoded; deleted:
// no text). A notice whose text does not decode goes out as none (logged by nobody: the stored
// row is what it is).
struct msg_body {
    flatbuffers::Offset<flatbuffers::String> text;
    flatbuffers::Offset<proto::notice_info> notice;
};
msg_body body(flatbuffers::FlatBufferBuilder& fbb, std::uint8_t kind, std::string_view text) {
    msg_body b;
    if (kind == static_cast<std::uint8_t>(proto::msg_kind::notice)) {
        if (auto n = decode_notice(text)) {
            flatbuffers::Offset<proto::player_info> target;
            if (n->target != 0) target = player(fbb, n->target, n->target_name);
            b.notice = proto::Createnotice_info(fbb, n->action, target, n->seq, static_cast<std::uint64_t>(n->until_us),
                                                n->role);
        }
        b.text = str(fbb, {});
    } else if (kind == static_cast<std::uint8_t>(proto::msg_kind::deleted)) {
        b.text = str(fbb, {});
    } else {
        b.text = str(fbb, text);
    }
    return b;
}

}  // namespace

shared_buffer_ptr error(proto::msg_type request, proto::error_code code, std::string_view reason) {
    flatbuffers::FlatBufferBuilder fbb(128);
    auto r = str(fbb, reason);
    fbb.Finish(proto::Createerror_res(fbb, request, code, r));
    return finish_frame(fbb, proto::msg_type::error_res);
}

shared_buffer_ptr login_res(std::uint64_t player_id, std::string_view name, bool created, const device_token* token,
                            const device_token* resume, std::span<const account_room> const* rooms,
                            std::string_view display_name, std::uint64_t expires_at) {
    flatbuffers::FlatBufferBuilder fbb(256 + (rooms ? rooms->size() * 32 : 0));
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<proto::room_ref>>> list;
    if (rooms) {
        std::vector<flatbuffers::Offset<proto::room_ref>> refs;
        refs.reserve(rooms->size());
        for (const account_room& r : *rooms) refs.push_back(proto::Createroom_ref(fbb, r.room_id, r.last_read_seq));
        list = fbb.CreateVector(refs);
    }
    auto p = player(fbb, player_id, name);
    auto bytes = [&](const device_token* k) {
        flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>> v;
        if (k != nullptr) v = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(k->bytes.data()), k->bytes.size());
        return v;
    };
    auto t = bytes(token);
    auto r = bytes(resume);
    flatbuffers::Offset<flatbuffers::String> display;
    if (!display_name.empty()) display = fbb.CreateString(display_name.data(), display_name.size());
    fbb.Finish(proto::Createlogin_res(fbb, p, created, t, r, list, display, expires_at));
    return finish_frame(fbb, proto::msg_type::login_res);
}

shared_buffer_ptr refresh_res(std::uint64_t expires_at) {
    flatbuffers::FlatBufferBuilder fbb(48);
    fbb.Finish(proto::Createrefresh_res(fbb, expires_at));
    return finish_frame(fbb, proto::msg_type::refresh_res);
}

shared_buffer_ptr token_expired(std::uint64_t expires_at, std::uint32_t grace_seconds) {
    flatbuffers::FlatBufferBuilder fbb(48);
    fbb.Finish(proto::Createtoken_expired(fbb, expires_at, grace_seconds));
    return finish_frame(fbb, proto::msg_type::token_expired);
}

shared_buffer_ptr create_room_res(const room_summary& room) {
    flatbuffers::FlatBufferBuilder fbb(160);
    auto r = room_info(fbb, room);
    fbb.Finish(proto::Createcreate_room_res(fbb, r));
    return finish_frame(fbb, proto::msg_type::create_room_res);
}

shared_buffer_ptr join_room_res(const room_summary& room, std::span<const room_member> members,
                                std::uint64_t last_seq) {
    flatbuffers::FlatBufferBuilder fbb(160 + 64 * members.size());
    auto r = room_info(fbb, room);
    std::vector<flatbuffers::Offset<proto::member_info>> list;
    list.reserve(members.size());
    for (const auto& m : members) {
        auto n = str(fbb, m.name);
        list.push_back(
            proto::Createmember_info(fbb, m.player_id, n, m.online(), static_cast<proto::member_role>(m.role)));
    }
    auto v = fbb.CreateVector(list);
    fbb.Finish(proto::Createjoin_room_res(fbb, r, v, last_seq));
    return finish_frame(fbb, proto::msg_type::join_room_res);
}

shared_buffer_ptr read_res(std::uint64_t room_id, std::uint64_t seq) {
    flatbuffers::FlatBufferBuilder fbb(64);
    fbb.Finish(proto::Createread_res(fbb, room_id, seq));
    return finish_frame(fbb, proto::msg_type::read_res);
}

shared_buffer_ptr read_marker(std::uint64_t room_id, std::uint64_t seq) {
    flatbuffers::FlatBufferBuilder fbb(64);
    fbb.Finish(proto::Createread_marker(fbb, room_id, seq));
    return finish_frame(fbb, proto::msg_type::read_marker);
}

shared_buffer_ptr typing(std::uint64_t room_id, std::uint64_t player_id, std::string_view name) {
    flatbuffers::FlatBufferBuilder fbb(128);
    auto p = player(fbb, player_id, name);
    fbb.Finish(proto::Createtyping(fbb, room_id, p));
    return finish_frame(fbb, proto::msg_type::typing);
}

shared_buffer_ptr leave_room_res(std::uint64_t room_id) {
    flatbuffers::FlatBufferBuilder fbb(64);
    fbb.Finish(proto::Createleave_room_res(fbb, room_id));
    return finish_frame(fbb, proto::msg_type::leave_room_res);
}

shared_buffer_ptr list_rooms_res(std::span<const room_summary> rooms) {
    flatbuffers::FlatBufferBuilder fbb(64 + 96 * rooms.size());
    std::vector<flatbuffers::Offset<proto::room_info>> list;
    list.reserve(rooms.size());
    for (const auto& r : rooms) list.push_back(room_info(fbb, r));
    auto v = fbb.CreateVector(list);
    fbb.Finish(proto::Createlist_rooms_res(fbb, v));
    return finish_frame(fbb, proto::msg_type::list_rooms_res);
}

shared_buffer_ptr pong(std::uint64_t ts) {
    flatbuffers::FlatBufferBuilder fbb(64);
    fbb.Finish(proto::Createpong_res(fbb, ts));
    return finish_frame(fbb, proto::msg_type::pong_res);
}

shared_buffer_ptr member_joined(std::uint64_t room_id, std::uint64_t player_id, std::string_view name) {
    flatbuffers::FlatBufferBuilder fbb(128);
    auto p = player(fbb, player_id, name);
    fbb.Finish(proto::Createmember_joined(fbb, room_id, p));
    return finish_frame(fbb, proto::msg_type::member_joined);
}

shared_buffer_ptr member_left(std::uint64_t room_id, std::uint64_t player_id, std::string_view name) {
    flatbuffers::FlatBufferBuilder fbb(128);
    auto p = player(fbb, player_id, name);
    fbb.Finish(proto::Createmember_left(fbb, room_id, p));
    return finish_frame(fbb, proto::msg_type::member_left);
}

shared_buffer_ptr member_presence(std::uint64_t room_id, std::uint64_t player_id, std::string_view name, bool online) {
    flatbuffers::FlatBufferBuilder fbb(128);
    auto p = player(fbb, player_id, name);
    fbb.Finish(proto::Createmember_presence(fbb, room_id, p, online));
    return finish_frame(fbb, proto::msg_type::member_presence);
}

shared_buffer_ptr chat_msg(const chat_fields& f) {
    flatbuffers::FlatBufferBuilder fbb(128 + f.text.size() + f.sender_name.size());
    auto sender = player(fbb, f.sender_id, f.sender_name);
    auto b = body(fbb, f.kind, f.text);
    fbb.Finish(proto::Createchat_msg(fbb, f.room_id, f.seq, sender, f.server_ts_us, b.text, f.client_ts, f.client_seq,
                                     static_cast<proto::msg_kind>(f.kind), b.notice));
    return finish_frame(fbb, proto::msg_type::chat_msg);
}

shared_buffer_ptr block_res(std::uint64_t player_id, std::string_view name, bool blocked) {
    flatbuffers::FlatBufferBuilder fbb(128);
    auto p = player(fbb, player_id, name);
    fbb.Finish(proto::Createblock_res(fbb, p, blocked));
    return finish_frame(fbb, proto::msg_type::block_res);
}

namespace {

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<proto::chat_msg>>> stored_messages(
    flatbuffers::FlatBufferBuilder& fbb, std::span<const chat_log_entry> logs) {
    std::vector<flatbuffers::Offset<proto::chat_msg>> list;
    list.reserve(logs.size());
    for (const auto& e : logs) {
        auto sender = player(fbb, e.sender_id, e.sender_name);
        auto b = body(fbb, e.kind, e.text);
        // client_ts / client_seq are not stored: a stored message carries 0 for both.
        list.push_back(proto::Createchat_msg(fbb, e.room_id, e.seq, sender, static_cast<std::uint64_t>(e.server_ts_us),
                                             b.text, 0, 0, static_cast<proto::msg_kind>(e.kind), b.notice));
    }
    return fbb.CreateVector(list);
}

}  // namespace

std::size_t messages_that_fit(std::span<const chat_log_entry> logs) {
    std::size_t bytes = 0, n = 0;
    for (const auto& e : logs) {
        bytes += message_size(e);
        if (n > 0 && bytes > max_messages_bytes) break;
        ++n;
    }
    return n;
}

shared_buffer_ptr history_res(std::uint64_t room_id, std::span<const chat_log_entry> logs, bool more,
                              std::uint64_t oldest_seq, std::uint64_t last_seq) {
    flatbuffers::FlatBufferBuilder fbb(256 + max_messages_bytes / 4);
    auto v = stored_messages(fbb, logs);
    fbb.Finish(proto::Createhistory_res(fbb, room_id, v, more, oldest_seq, last_seq));
    return finish_frame(fbb, proto::msg_type::history_res);
}

shared_buffer_ptr resume_res(std::uint64_t room_id, bool gap, std::span<const chat_log_entry> logs,
                             std::uint64_t to_seq, std::uint64_t oldest_seq, bool more) {
    flatbuffers::FlatBufferBuilder fbb(256 + (logs.empty() ? 0 : max_messages_bytes / 4));
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<proto::chat_msg>>> v;
    if (!gap) v = stored_messages(fbb, logs);
    fbb.Finish(proto::Createresume_res(fbb, room_id, gap ? proto::resume_status::gap : proto::resume_status::complete,
                                       v, to_seq, oldest_seq, more));
    return finish_frame(fbb, proto::msg_type::resume_res);
}

shared_buffer_ptr ws_message(const shared_buffer_ptr& frame) {
    return ws_encode(ws_opcode::binary, std::span<const std::byte>(frame->data(), frame->size()));
}

}  // namespace strix::chat::frames
