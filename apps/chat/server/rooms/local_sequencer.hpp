#pragma once
// local_sequencer: one node's room sequencing. The owner shard numbers a room's messages itself
// (room::next_seq / take_seq), queues each for the chat log writer and fans it out through the
// room host, the events waiting for the commit (commit_order.hpp) with --ack stored:
//
//   chat_req ─> owner shard: seq = last + 1 ─> writer.try_enqueue ─> held until committed ─> fan_out
//
// A message the writer's queue refused is neither numbered nor sent (server_busy to its sender).
// Every room lives on this server, held by its owner shard whether or not anyone is in it, and
// is deleted with its last member account. Owner shard only.

#include "room_sequencer.hpp"

namespace strix::chat {

class local_sequencer final : public room_sequencer {
public:
    /// For shard `self`'s room host. Built on any thread; used on shard `self`.
    local_sequencer(room_host& host, chat_context& ctx, unsigned self, chat_counters& counters);

    void chat(room& r, chat_request& req) override;

    void fetch(room_id id, std::function<void(room*, bool)> then) override;
    bool load(room_id, member&, bool) override { return false; }
    bool defer_join(const room&, member&, bool) override { return false; }
    std::uint64_t join_point(const room& r) const override;
    shared_buffer_ptr join_room_res(const room& r, std::uint64_t join_seq) const override;
    bool online_elsewhere(room_id, std::uint64_t) const override { return false; }
    void watch(const room&) override {}
    void unwatch(const room&) override {}
    void announce(const room&, presence_change, std::uint64_t, std::string_view) override {}
    bool left(room& r, std::int64_t now, std::uint64_t& ticket) override;
    bool holds_idle_rooms() const noexcept override { return true; }

    bool list_rooms(std::size_t limit, std::function<void(std::optional<std::vector<room_summary>>)> done) override;
    void complete_resume(std::uint64_t from, std::uint64_t to, stored_range rows,
                         std::function<void(stored_range)> done) override;

    void stop() override {}

private:
    room_host& host_;
    chat_context& ctx_;
    const unsigned self_;
    chat_counters& counters_;
};

}  // namespace strix::chat
