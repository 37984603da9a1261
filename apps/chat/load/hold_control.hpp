#pragma once
// hold_control: strix-chat-hold's one control connection, on the main thread, over plain TCP to
// the server's --port. It logs in (JWT, account PREFIXctl), finds or creates the hold room, and
// posts the broadcast; in between it keeps reading, so the notices of hundreds of thousands of
// joins never make it a slow consumer.

#include "hold_shared.hpp"

#include <strix/codec/frame_codec.hpp>

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace strix::chat::hold {

class hold_control {
public:
    /// Connects and logs in. Throws std::runtime_error saying why it could not. Main thread.
    explicit hold_control(const hold_shared& shared);
    ~hold_control();
    hold_control(const hold_control&) = delete;
    hold_control& operator=(const hold_control&) = delete;

    /// The room named `name`: found through list_rooms_req (and joined unless the control account
    /// is a member) or created. Sets room() and last_seq(). Throws on a refusal or a timeout.
    void enter_room(const std::string& name);

    /// Posts broadcast message k in the room.
    void post(std::uint32_t k, const std::string& text);

    /// Reads what has arrived, waiting up to timeout_ms for the first bytes; first pings when
    /// nothing was sent for the held connections' ping interval. Throws when the server closed
    /// the connection.
    void pump(int timeout_ms);

    std::uint64_t player() const noexcept { return player_; }
    std::uint64_t room() const noexcept { return room_; }
    std::uint64_t last_seq() const noexcept { return last_seq_; }
    /// The seq the server gave broadcast message k (its copy back to the control), 0 before.
    std::uint64_t seq_of(std::uint32_t k) const;
    std::uint64_t frames_read() const noexcept { return frames_; }

private:
    void send();
    void on_frame(std::span<const std::byte> frame);
    template <class Pred>
    void wait(Pred done, const char* what);

    const hold_shared& shared_;
    int fd_ = -1;
    frame_decoder decoder_;
    std::vector<std::byte> in_, out_;
    flatbuffers::FlatBufferBuilder fbb_{1024};
    bool logged_in_ = false, login_busy_ = false, listed_ = false;
    std::uint64_t player_ = 0, room_ = 0, last_seq_ = 0, created_ = 0;
    std::int64_t last_send_ns_ = 0;  // now_ns() of the last send()
    std::vector<std::uint64_t> member_of_;
    std::map<std::string, std::uint64_t> listed_rooms_;
    std::map<std::uint64_t, std::uint64_t> joined_;  // room -> last_seq of its join_room_res
    std::map<std::uint32_t, std::uint64_t> own_;    // broadcast k -> seq
    std::string refusal_;
    std::uint64_t frames_ = 0;
};

}  // namespace strix::chat::hold
