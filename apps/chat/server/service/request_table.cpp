#include "request_table.hpp"

#include "chat_service.hpp"

#include <string>

namespace strix::chat {

using proto::msg_type;

// The handlers are chat_service's private members; chat_service befriends request_table for this.
// clang-format off
constexpr std::array<request_row, request_table::size> request_table::rows_{{
    // type                      who may send it     handler
    {msg_type::login_req,        access::anyone,     &chat_service::handle_login},    // login_requests.cpp
    {msg_type::create_room_req,  access::logged_in,  &chat_service::handle_create},   // chat_service.cpp
    {msg_type::join_room_req,    access::logged_in,  &chat_service::handle_join},     // chat_service.cpp
    {msg_type::leave_room_req,   access::logged_in,  &chat_service::handle_leave},    // chat_service.cpp
    {msg_type::chat_req,         access::logged_in,  &chat_service::handle_chat},     // chat_service.cpp
    {msg_type::list_rooms_req,   access::logged_in,  &chat_service::handle_list},     // chat_service.cpp
    {msg_type::ping_req,         access::anyone,     &chat_service::handle_ping},     // chat_service.cpp
    {msg_type::history_req,      access::logged_in,  &chat_service::handle_history},  // history_requests.cpp
    {msg_type::resume_req,       access::logged_in,  &chat_service::handle_resume},   // resume_requests.cpp
    {msg_type::read_req,         access::logged_in,  &chat_service::handle_read},     // marker_requests.cpp
    {msg_type::typing_req,       access::logged_in,  &chat_service::handle_typing},   // marker_requests.cpp
    {msg_type::direct_req,       access::logged_in,  &chat_service::handle_direct},   // conversation_requests.cpp
    {msg_type::block_req,        access::logged_in,  &chat_service::handle_block},    // conversation_requests.cpp
    {msg_type::moderate_req,     access::logged_in,  &chat_service::handle_moderate}, // conversation_requests.cpp
    {msg_type::refresh_req,      access::logged_in,  &chat_service::handle_refresh},  // jwt_sessions.cpp
}};
// clang-format on

namespace {

// Client requests are the odd types below 100 (schema/chat.fbs), so a small array indexes them.
constexpr std::size_t index_span = 128;
constexpr std::uint8_t no_row = 0xff;

constexpr std::array<std::uint8_t, index_span> make_index() {
    std::array<std::uint8_t, index_span> index{};
    index.fill(no_row);
    for (std::size_t r = 0; r < request_table::size; ++r)
        index[static_cast<std::size_t>(request_table::rows()[r].type)] = static_cast<std::uint8_t>(r);
    return index;
}

// A row left out while `size` counts it is value-initialized: type 0, no handler. (Comparing a
// member function pointer in a constant expression is refused by gcc under -fsanitize, so the
// type stands for both.)
constexpr bool rows_are_whole() {
    std::array<bool, index_span> seen{};
    for (const request_row& row : request_table::rows()) {
        const auto t = static_cast<std::size_t>(row.type);
        if (t == 0 || t >= index_span || seen[t]) return false;
        seen[t] = true;
    }
    return true;
}

static_assert(rows_are_whole(), "request_table: every row needs its own type (1-127) and a handler; is `size` right?");

constexpr std::array<std::uint8_t, index_span> row_of = make_index();

}  // namespace

const request_row* request_table::find(msg_type type) noexcept {
    const auto t = static_cast<std::size_t>(type);
    if (t >= index_span || row_of[t] == no_row) return nullptr;
    return &rows_[row_of[t]];
}

std::string_view request_table::label(std::size_t i) {
    // Built once and never freed: a registry may render the labels until the process ends.
    static const auto* labels = [] {
        auto* out = new std::array<std::string, size>;
        for (std::size_t r = 0; r < size; ++r)
            (*out)[r] = std::string("type=\"") + proto::EnumNamemsg_type(rows_[r].type) + "\"";
        return out;
    }();
    return (*labels)[i];
}

}  // namespace strix::chat
