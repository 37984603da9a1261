// Fuzz target: the chat server's way from received bytes to a request handler
// (apps/chat/server/service/chat_service.cpp, on_frame -> dispatch -> the request_table row's
// handler): the session cuts strix frames (strix_header_framer, 4 KiB before login, 64 KiB
// after), type_of() names the request, body_as<T>() verifies the FlatBuffer
// (apps/chat/common/chat_frame.hpp), and the handler reads the fields and validates names
// (names.hpp). Also the other direction, as the client and the load tool read the server:
// body_as<T> for every reply and push, every field walked.
//
// Input: [mode u8][...]
//   mode bit 0   0: the rest is a byte stream from a client, cut by the session's framer
//                1: [type u16][body...] is one frame the harness wraps (no length to get right)
//   mode bit 1   frames copied so the body is 8-byte aligned (read in place); otherwise
//                misaligned by 4, as a held request is (body_as copies to aligned scratch)
//   mode bit 2   the session is logged in (64 KiB frames)
//
// Checked: a verified body's fields are read without any ASan/UBSan report (the verifier is
// what stands between a client and the handlers); a request the server echoes in a reply
// (name, room name, text, ping ts, an unknown type) encodes with frames.cpp and decodes back to
// the same values.
#include "fuzz_support.hpp"

#include "apps/chat/common/chat_frame.hpp"
#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/server/net/names.hpp"
#include "apps/chat/server/rooms/notice.hpp"
#include "apps/chat/server/rooms/wire_chat.hpp"

#include <strix/net/framer.hpp>

#include <cstring>
#include <string>
#include <vector>

using namespace strix;
using namespace strix::chat;
using proto::msg_type;
using strix::fuzz::bytes;

namespace {

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

bytes view_of(const shared_buffer_ptr& b) { return {b->data(), b->size()}; }

// A frame placed so that its body is 8-byte aligned, or misaligned by 4, in an allocation that
// ends where the frame ends (ASan sees a read past it). operator new[] aligns to 16.
class placed_frame {
public:
    placed_frame(bytes frame, bool aligned) : offset_(aligned ? 4 : 0), mem_(new std::byte[offset_ + frame.size()]) {
        if (!frame.empty()) std::memcpy(mem_.get() + offset_, frame.data(), frame.size());
        view_ = {mem_.get() + offset_, frame.size()};
    }
    bytes view() const noexcept { return view_; }

private:
    std::size_t offset_;
    std::unique_ptr<std::byte[]> mem_;
    bytes view_;
};

std::string walk(const proto::player_info* p) { return p ? std::to_string(p->id()) + str(p->name()) : std::string(); }
std::string walk(const proto::member_info* p) {
    return p ? std::to_string(p->id()) + str(p->name()) + (p->online() ? "+" : "-") : std::string();
}
std::string walk(const proto::room_info* r) {
    return r ? std::to_string(r->id()) + str(r->name()) + std::to_string(r->members()) : std::string();
}

// The client side: every field of every reply and push the server sends.
std::size_t read_as_client(bytes frame, msg_type type) {
    std::string seen;
    switch (type) {
        case msg_type::login_res:
            if (auto* m = body_as<proto::login_res>(frame)) {
                seen = walk(m->player()) + (m->created() ? "c" : "");
                if (m->device_token())
                    for (std::uint8_t b : *m->device_token()) seen += static_cast<char>(b);
                if (m->rooms())
                    for (const proto::room_ref* r : *m->rooms())
                        if (r) seen += std::to_string(r->id() + r->last_read_seq());
            }
            break;
        case msg_type::read_res:
            if (auto* m = body_as<proto::read_res>(frame)) seen = std::to_string(m->room_id() + m->seq());
            break;
        case msg_type::read_marker:
            if (auto* m = body_as<proto::read_marker>(frame)) seen = std::to_string(m->room_id() + m->seq());
            break;
        case msg_type::typing:
            if (auto* m = body_as<proto::typing>(frame)) seen = std::to_string(m->room_id()) + walk(m->player());
            break;
        case msg_type::create_room_res:
            if (auto* m = body_as<proto::create_room_res>(frame)) seen = walk(m->room());
            break;
        case msg_type::join_room_res:
            if (auto* m = body_as<proto::join_room_res>(frame)) {
                seen = walk(m->room());
                if (m->members())
                    for (const proto::member_info* p : *m->members()) seen += walk(p);
            }
            break;
        case msg_type::leave_room_res:
            if (auto* m = body_as<proto::leave_room_res>(frame)) seen = std::to_string(m->room_id());
            break;
        case msg_type::list_rooms_res:
            if (auto* m = body_as<proto::list_rooms_res>(frame)) {
                if (m->rooms())
                    for (const proto::room_info* r : *m->rooms()) seen += walk(r);
            }
            break;
        case msg_type::pong_res:
            if (auto* m = body_as<proto::pong_res>(frame)) seen = std::to_string(m->ts());
            break;
        case msg_type::chat_msg:
            if (auto* m = body_as<proto::chat_msg>(frame))
                seen = std::to_string(m->room_id() + m->seq() + m->server_ts_us() + m->client_ts() + m->client_seq()) +
                       walk(m->sender()) + str(m->text());
            break;
        case msg_type::member_joined:
            if (auto* m = body_as<proto::member_joined>(frame)) seen = std::to_string(m->room_id()) + walk(m->player());
            break;
        case msg_type::member_left:
            if (auto* m = body_as<proto::member_left>(frame)) seen = std::to_string(m->room_id()) + walk(m->player());
            break;
        case msg_type::error_res:
            if (auto* m = body_as<proto::error_res>(frame))
                seen = std::to_string(static_cast<unsigned>(m->request())) +
                       std::to_string(static_cast<unsigned>(m->code())) + str(m->reason());
            break;
        default: break;
    }
    return seen.size();
}

void check_error_res(const shared_buffer_ptr& f, msg_type request, proto::error_code code, std::string_view reason) {
    STRIX_FUZZ_CHECK(type_of(view_of(f)) == msg_type::error_res);
    const auto* e = body_as<proto::error_res>(view_of(f));
    STRIX_FUZZ_CHECK(e && e->request() == request && e->code() == code && str(e->reason()) == reason);
}

// chat_service::dispatch and the handle_* functions, as far as they read the request.
void handle(bytes frame) {
    const msg_type type = type_of(frame);
    STRIX_FUZZ_CHECK(static_cast<std::uint16_t>(type) == parse_header(frame.data()).type);
    switch (type) {
        case msg_type::login_req: {
            const auto* req = body_as<proto::login_req>(frame);
            if (!req) return;
            const std::string name = str(req->name()), password = str(req->password());
            if (!valid_player_name(name) || password.empty() || password.size() > 1024) return;
            // login_requests.cpp: an empty or absent token is none; any size but 32 is refused.
            const auto* t = req->device_token();
            if (t != nullptr && t->size() != 0 && t->size() != device_token_size) return;
            device_token token;
            if (t != nullptr && t->size() == device_token_size) std::memcpy(token.bytes.data(), t->data(), t->size());
            // The server answers with a token of its own; here the presented one, to check the bytes.
            const auto res = frames::login_res(42, name, true, &token);
            const auto* back = body_as<proto::login_res>(view_of(res));
            STRIX_FUZZ_CHECK(back && back->player() && str(back->player()->name()) == name && back->created());
            STRIX_FUZZ_CHECK(back->device_token() && back->device_token()->size() == device_token_size &&
                             std::memcmp(back->device_token()->data(), token.bytes.data(), device_token_size) == 0);
            // A version 2 login lists the account's rooms: as many as the version's low bits say.
            std::vector<account_room> rooms(req->version() % 64);
            for (std::size_t i = 0; i < rooms.size(); ++i) rooms[i] = {i + 1, 0, req->version() + i};
            const std::span<const account_room> listed(rooms);
            const auto with_rooms = frames::login_res(42, name, false, nullptr, nullptr, &listed);
            const auto* r = body_as<proto::login_res>(view_of(with_rooms));
            STRIX_FUZZ_CHECK(r && r->rooms() && r->rooms()->size() == rooms.size());
            for (std::size_t i = 0; i < rooms.size(); ++i)
                STRIX_FUZZ_CHECK(r->rooms()->Get(static_cast<flatbuffers::uoffset_t>(i))->last_read_seq() ==
                                 rooms[i].last_read_seq);
            return;
        }
        case msg_type::create_room_req: {
            const auto* req = body_as<proto::create_room_req>(frame);
            if (!req) return;
            const std::string name = str(req->name());
            if (!valid_room_name(name)) return;
            const room_summary room{7, name, 1};
            const auto res = frames::create_room_res(room);
            const auto* back = body_as<proto::create_room_res>(view_of(res));
            STRIX_FUZZ_CHECK(back && back->room() && str(back->room()->name()) == name && back->room()->id() == 7);
            // The room's name travels on in join replies, room lists and member notices.
            const room_member members[] = {{11, "ann", 1}, {12, name, 0}};
            const auto joined = frames::join_room_res(room, members, 5);
            const auto* j = body_as<proto::join_room_res>(view_of(joined));
            STRIX_FUZZ_CHECK(j && j->room() && str(j->room()->name()) == name && j->members() &&
                             j->members()->size() == 2);
            STRIX_FUZZ_CHECK(str(j->members()->Get(1)->name()) == name && j->members()->Get(1)->id() == 12);
            STRIX_FUZZ_CHECK(j->members()->Get(0)->online() && !j->members()->Get(1)->online() && j->last_seq() == 5);
            const auto list = frames::list_rooms_res(std::span(&room, 1));
            const auto* l = body_as<proto::list_rooms_res>(view_of(list));
            STRIX_FUZZ_CHECK(l && l->rooms() && l->rooms()->size() == 1 && str(l->rooms()->Get(0)->name()) == name);
            const auto notice =
                (name.size() & 1) ? frames::member_joined(7, 12, name) : frames::member_left(7, 12, name);
            const auto* n = body_as<proto::member_joined>(view_of(notice));  // same layout as member_left
            STRIX_FUZZ_CHECK(n && n->room_id() == 7 && n->player() && str(n->player()->name()) == name);
            return;
        }
        case msg_type::join_room_req: {
            const auto* req = body_as<proto::join_room_req>(frame);
            if (!req) return;
            const std::uint64_t room = req->room_id();
            const auto res = frames::leave_room_res(room);
            const auto* back = body_as<proto::leave_room_res>(view_of(res));
            STRIX_FUZZ_CHECK(back && back->room_id() == room);
            return;
        }
        case msg_type::leave_room_req:
        case msg_type::list_rooms_req:
            // The handlers read nothing of these bodies; dispatch does not decode them.
            return;
        case msg_type::chat_req: {
            const auto* req = body_as<proto::chat_req>(frame);
            if (!req) return;
            const std::string text = str(req->text());
            const std::uint64_t ts = req->client_ts(), seq = req->client_seq();
            if (text.empty() || text.size() > 60000) return;
            frames::chat_fields f;
            f.room_id = 1;
            f.seq = 2;
            f.sender_id = 3;
            f.sender_name = "sender";
            f.text = text;
            f.client_ts = ts;
            f.client_seq = seq;
            const auto msg = frames::chat_msg(f);
            const auto* back = body_as<proto::chat_msg>(view_of(msg));
            STRIX_FUZZ_CHECK(back && str(back->text()) == text && back->client_ts() == ts && back->client_seq() == seq);
            return;
        }
        case msg_type::read_req: {
            const auto* req = body_as<proto::read_req>(frame);
            if (!req) return;
            const std::uint64_t room = req->room_id(), seq = req->seq();
            const auto res = frames::read_res(room, seq);
            const auto* back = body_as<proto::read_res>(view_of(res));
            STRIX_FUZZ_CHECK(back && back->room_id() == room && back->seq() == seq);
            const auto marker = frames::read_marker(room, seq);
            const auto* m = body_as<proto::read_marker>(view_of(marker));
            STRIX_FUZZ_CHECK(m && m->room_id() == room && m->seq() == seq);
            return;
        }
        case msg_type::typing_req: {
            const auto* req = body_as<proto::typing_req>(frame);
            if (!req) return;
            const std::uint64_t room = req->room_id();
            const auto res = frames::typing(room, 9, "ann");
            const auto* back = body_as<proto::typing>(view_of(res));
            STRIX_FUZZ_CHECK(back && back->room_id() == room && back->player() && str(back->player()->name()) == "ann");
            return;
        }
        case msg_type::direct_req: {
            const auto* req = body_as<proto::direct_req>(frame);
            if (!req) return;
            const std::string to = str(req->to()), text = str(req->text());
            if (!valid_account_name(to) || text.empty() || text.size() > 60000) return;
            // The message crosses nodes in wire form, then reaches the pair as a chat_msg.
            const std::string wire = encode_wire_chat({5, 6, req->client_ts(), req->client_seq(), 1, 2, to, text, 0});
            const auto w = decode_wire_chat(wire);
            STRIX_FUZZ_CHECK(w && w->name == to && w->text == text && w->client_seq == req->client_seq());
            const auto res = frames::block_res(5, to, text.size() & 1);
            const auto* back = body_as<proto::block_res>(view_of(res));
            STRIX_FUZZ_CHECK(back && back->player() && str(back->player()->name()) == to &&
                             back->blocked() == static_cast<bool>(text.size() & 1));
            return;
        }
        case msg_type::block_req: {
            const auto* req = body_as<proto::block_req>(frame);
            if (!req) return;
            const std::string name = str(req->name());
            if (!valid_account_name(name)) return;
            const auto res = frames::block_res(8, name, req->blocked());
            const auto* back = body_as<proto::block_res>(view_of(res));
            STRIX_FUZZ_CHECK(back && back->player() && back->player()->id() == 8 && back->blocked() == req->blocked());
            return;
        }
        case msg_type::moderate_req: {
            const auto* req = body_as<proto::moderate_req>(frame);
            if (!req) return;
            if (req->action() == proto::mod_action::none || req->action() > proto::mod_action::MAX) return;
            // room_moderation.cpp: the action travels as a notice's text and comes back decoded.
            notice n;
            n.action = req->action();
            n.target = req->target();
            n.seq = req->seq();
            n.until_us = static_cast<std::int64_t>(req->seconds()) * 1'000'000;
            n.target_name = "target";
            const std::string text = encode_notice(n);
            const auto d = decode_notice(text);
            STRIX_FUZZ_CHECK(d && d->action == n.action && d->target == n.target && d->seq == n.seq &&
                             d->until_us == n.until_us && d->target_name == "target");
            frames::chat_fields f;
            f.room_id = req->room_id();
            f.seq = 3;
            f.text = text;
            f.kind = static_cast<std::uint8_t>(proto::msg_kind::notice);
            const auto msg = frames::chat_msg(f);
            const auto* back = body_as<proto::chat_msg>(view_of(msg));
            STRIX_FUZZ_CHECK(back && back->kind() == proto::msg_kind::notice && back->notice() &&
                             back->notice()->action() == n.action && back->notice()->seq() == n.seq &&
                             str(back->text()).empty());
            STRIX_FUZZ_CHECK((n.target == 0) == (back->notice()->target() == nullptr));
            return;
        }
        case msg_type::ping_req: {
            const auto* req = body_as<proto::ping_req>(frame);
            if (!req) return;
            const std::uint64_t ts = req->ts();
            const auto res = frames::pong(ts);
            const auto* back = body_as<proto::pong_res>(view_of(res));
            STRIX_FUZZ_CHECK(back && back->ts() == ts);
            return;
        }
        default:
            // Unknown to the server: bad_request naming the type, whatever its value.
            check_error_res(frames::error(type, proto::error_code::bad_request, "unknown message type"), type,
                            proto::error_code::bad_request, "unknown message type");
            read_as_client(frame, type);
            return;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::reader in(fuzz::as_bytes(data, size));
    const std::uint8_t mode = in.u8();
    const bool aligned = (mode & 2) != 0;
    const std::size_t max_frame = (mode & 4) ? 64 * 1024 : 4 * 1024;

    if (mode & 1) {
        const std::uint16_t type = in.u16();
        const bytes body = in.rest().first(std::min<std::size_t>(in.rest().size(), max_frame - frame_header_size));
        std::vector<std::byte> frame(frame_header_size + body.size());
        STRIX_FUZZ_CHECK(encode_frame(frame, type, body, false) == frame.size());
        const placed_frame f(frame, aligned);
        handle(f.view());
        return 0;
    }

    // The session's loop (src/net/session.cpp): cut, refuse above max_frame, hand over.
    bytes stream = in.rest();
    while (!stream.empty()) {
        const frame_cut c = strix_header_framer().cut(stream, max_frame);
        if (c.error || c.size == 0 || c.size > max_frame || c.size > stream.size()) break;
        STRIX_FUZZ_CHECK(c.size >= frame_header_size);
        const placed_frame f(stream.first(c.size), aligned);
        handle(f.view());
        stream = stream.subspan(c.size);
    }
    return 0;
}
