#pragma once
// request_table: the requests a client may send the chat server, one row each: the frame type,
// who may send it, and the chat_service member that handles it. The rows are in
// request_table.cpp. chat_service::dispatch reads them and nothing else decides:
//
//   frame ─ type_of ─ request_table::find ─┬─ no row: error_res{bad_request}, "unknown message type"
//                                          └─ count it (strix_requests_total{type="..."})
//                                             ─┬─ logged_in row, session not logged in:
//                                              │    error_res{not_logged_in}, "log in first"
//                                              └─ (service.*row.handle)(player, frame)
//
// Adding a request: its msg_type value and body table in schema/chat.fbs, a row in
// request_table.cpp (and `size` one up: the compiler insists), the handler, and a section of
// docs/protocol.md whose heading names the type. tests/chat/request_table_test.cpp fails while a
// *_req type of the schema has no row or no section.

#include <strix/proto/chat_generated.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace strix::chat {

class chat_service;
struct player;

/// Who may send a request: any session (before its login too), or a logged-in one only.
enum class access : std::uint8_t { anyone, logged_in };

/// A request's handler: a chat_service member, called on the session's shard with the session's
/// player and the whole frame (header and body; the handler decodes the body).
using request_handler = void (chat_service::*)(player& p, std::span<const std::byte> frame);

struct request_row {
    proto::msg_type type;
    access who;
    request_handler handle;
};

/// The table. Every function may be called from any thread (the rows are constants).
class request_table {
public:
    /// How many rows (request_table.cpp checks it); the per-type counters are sized by it.
    static constexpr std::size_t size = 15;

    static constexpr std::span<const request_row, size> rows() noexcept { return rows_; }
    /// The row of `type`; nullptr when no client request has that type.
    static const request_row* find(proto::msg_type type) noexcept;
    /// The position of `row` (one of rows()) in the table.
    static std::size_t index_of(const request_row& row) noexcept {
        return static_cast<std::size_t>(&row - rows_.data());
    }
    /// The label of row i's counter: type="<the schema's name of its type>". The text lives as
    /// long as the process (a metrics registry may render it until then).
    static std::string_view label(std::size_t i);

private:
    static const std::array<request_row, size> rows_;
};

}  // namespace strix::chat
