#pragma once
// Small helpers the console client's units share (chat_console.cpp: input, commands, the
// connection; console_frames.cpp: what the server sends).

#include <flatbuffers/flatbuffers.h>
#include <strix/proto/chat_generated.h>

#include <chrono>
#include <cstdint>
#include <string_view>

namespace strix::chat::console {

inline std::string_view str(const flatbuffers::String* s) {
    return s == nullptr ? std::string_view{} : std::string_view(s->data(), s->size());
}

inline const char* name_of(proto::error_code e) {
    return static_cast<unsigned>(e) <= static_cast<unsigned>(proto::error_code::MAX) ? proto::EnumNameerror_code(e)
                                                                                     : "unknown_error";
}

inline const char* name_of(proto::member_role r) {
    return static_cast<unsigned>(r) <= static_cast<unsigned>(proto::member_role::MAX) ? proto::EnumNamemember_role(r)
                                                                                      : "role";
}

inline const char* name_of(proto::msg_type t) {
    const char* n = proto::EnumNamemsg_type(t);
    return n[0] == '\0' ? "request" : n;
}

inline std::uint64_t steady_us() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

}  // namespace strix::chat::console
