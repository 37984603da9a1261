#include "frames.hpp"

#include <strix/net/websocket.hpp>

namespace strix::chat::frames {
namespace {

flatbuffers::Offset<flatbuffers::String> str(flatbuffers::FlatBufferBuilder& fbb, std::string_view s) {
    return fbb.CreateString(s.data(), s.size());
}

flatbuffers::Offset<proto::room_info> room_info(flatbuffers::FlatBufferBuilder& fbb, const room_summary& r) {
    auto name = str(fbb, r.name);
    return proto::Createroom_info(fbb, r.id, name, r.members);
}

flatbuffers::Offset<proto::player_info> player(flatbuffers::FlatBufferBuilder& fbb, std::uint64_t id,
                                               std::string_view name) {
    auto n = str(fbb, name);
    return proto::Createplayer_info(fbb, id, n);
}

}  // namespace

shared_buffer_ptr error(proto::msg_type request, proto::error_code code, std::string_view reason) {
    flatbuffers::FlatBufferBuilder fbb(128);
    auto r = str(fbb, reason);
    fbb.Finish(proto::Createerror_res(fbb, request, code, r));
    return finish_frame(fbb, proto::msg_type::error_res);
}

shared_buffer_ptr login_res(std::uint64_t player_id, std::string_view name, bool created,
                            const device_token* token) {
    flatbuffers::FlatBufferBuilder fbb(192);
    auto p = player(fbb, player_id, name);
    flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>> t;
    if (token != nullptr)
        t = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(token->bytes.data()), token->bytes.size());
    fbb.Finish(proto::Createlogin_res(fbb, p, created, t));
    return finish_frame(fbb, proto::msg_type::login_res);
}

shared_buffer_ptr create_room_res(const room_summary& room) {
    flatbuffers::FlatBufferBuilder fbb(160);
    auto r = room_info(fbb, room);
    fbb.Finish(proto::Createcreate_room_res(fbb, r));
    return finish_frame(fbb, proto::msg_type::create_room_res);
}

shared_buffer_ptr join_room_res(const room_summary& room, std::span<const member> members) {
    flatbuffers::FlatBufferBuilder fbb(160 + 64 * members.size());
    auto r = room_info(fbb, room);
    std::vector<flatbuffers::Offset<proto::player_info>> list;
    list.reserve(members.size());
    for (const auto& m : members) list.push_back(player(fbb, m.player_id, m.name));
    auto v = fbb.CreateVector(list);
    fbb.Finish(proto::Createjoin_room_res(fbb, r, v));
    return finish_frame(fbb, proto::msg_type::join_room_res);
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

shared_buffer_ptr chat_msg(const chat_fields& f) {
    flatbuffers::FlatBufferBuilder fbb(128 + f.text.size() + f.sender_name.size());
    auto sender = player(fbb, f.sender_id, f.sender_name);
    auto text = str(fbb, f.text);
    fbb.Finish(proto::Createchat_msg(fbb, f.room_id, f.seq, sender, f.server_ts_us, text, f.client_ts, f.client_seq));
    return finish_frame(fbb, proto::msg_type::chat_msg);
}

shared_buffer_ptr ws_message(const shared_buffer_ptr& frame) {
    return ws_encode(ws_opcode::binary, std::span<const std::byte>(frame->data(), frame->size()));
}

}  // namespace strix::chat::frames
