#pragma once
// A chat_store double for the writer and pool tests: write_batch can be held at a gate
// (to fill queues deterministically) or made to fail (to exercise retries), and records every
// committed batch. The test keeps the shared state; the writer owns the store.

#include "apps/chat/storage/chat_store.hpp"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace strix::test {
using namespace strix::chat;  // the chat application's storage and protocol types

struct fake_state {
    std::mutex mu;
    std::condition_variable cv;
    bool gate_open = true;       // write_batch waits while false
    int entered = 0;             // write_batch calls that reached the gate
    int fail_next = 0;           // the next N calls throw storage_error
    bool always_fail = false;    // every call throws storage_error
    std::vector<chat_log_entry> rows;        // committed, in commit order
    std::vector<room_change> changes;        // committed, in commit order
    std::vector<std::size_t> batch_sizes;    // one per committed call (room changes + rows)

    void open_gate() {
        {
            std::lock_guard lk(mu);
            gate_open = true;
        }
        cv.notify_all();
    }

    /// Waits (bounded: 10 s, then false) until `n` calls have reached the gate.
    bool wait_entered(int n) {
        std::unique_lock lk(mu);
        return cv.wait_for(lk, std::chrono::seconds(10), [&] { return entered >= n; });
    }
};

class fake_store final : public chat_store {
public:
    explicit fake_store(std::shared_ptr<fake_state> s) : s_(std::move(s)) {}

    login_result login(std::string_view, std::string_view, bool) override { return {}; }
    login_result login_external(std::string_view) override { return {}; }

    std::size_t write_batch(std::span<const room_change> changes, std::span<const chat_log_entry> entries) override {
        std::unique_lock lk(s_->mu);
        ++s_->entered;
        s_->cv.notify_all();
        s_->cv.wait(lk, [&] { return s_->gate_open; });
        if (s_->always_fail) throw storage_error("injected failure (always)");
        if (s_->fail_next > 0) {
            --s_->fail_next;
            throw storage_error("injected failure");
        }
        s_->rows.insert(s_->rows.end(), entries.begin(), entries.end());
        s_->changes.insert(s_->changes.end(), changes.begin(), changes.end());
        s_->batch_sizes.push_back(changes.size() + entries.size());
        return entries.size();
    }

    std::vector<stored_room> load_rooms() override { return {}; }

    std::vector<chat_log_entry> room_history(std::uint64_t, std::size_t) override { return {}; }
    std::uint64_t count_chat_logs() override {
        std::lock_guard lk(s_->mu);
        return s_->rows.size();
    }
    std::uint64_t max_room_id() override { return 0; }
    bool delete_room_if_empty(std::uint64_t, std::int64_t) override { return false; }
    // It stores no accounts: every name is unknown.
    direct_result open_direct(std::uint64_t, std::string_view, std::uint64_t, std::int64_t, std::size_t) override {
        return {};
    }
    block_result set_block(std::uint64_t, std::string_view, bool, std::int64_t) override { return {}; }
    std::optional<account> find_account(std::string_view) override { return std::nullopt; }
    std::uint32_t schema_version() override { return latest_schema_version(); }
    std::optional<device_token_record> find_device_token(const device_token_hash&, token_kind) override {
        return std::nullopt;
    }
    void store_device_token(const device_token_change&) override {}
    std::size_t revoke_device_tokens(std::uint64_t, token_kind) override { return 0; }
    std::vector<chat_log_entry> history_page(const history_query&) override { return {}; }
    log_range room_log_range(std::uint64_t) override { return {}; }
    std::vector<std::uint64_t> log_rooms_after(std::uint64_t, std::size_t) override { return {}; }

protected:
    std::uint64_t old_prefix_end(std::uint64_t, std::int64_t, std::size_t) override { return 0; }
    std::size_t delete_logs_through(std::uint64_t, std::uint64_t) override { return 0; }

public:

private:
    std::shared_ptr<fake_state> s_;
};

}  // namespace strix::test
