#pragma once
// chat_context: what every shard's chat service shares. Built before the engine starts and
// read-only afterwards (the services vector is filled in by the server factory), so shards read
// it without synchronization.

#include "chat_options.hpp"

#include <strix/core/engine.hpp>

#include <cstdint>
#include <vector>

namespace strix {
class db_pool;
class chat_log_writer;
}  // namespace strix

namespace strix::chat {

class chat_service;

struct chat_context {
    const chat_options& options;
    engine& eng;
    db_pool& pool;
    chat_log_writer& writer;
    std::uint64_t first_room_counter = 1;   // room ids start above any id found in the chat log
    std::vector<chat_service*> services;    // by shard id

    /// Runs t on shard `to`, from a shard thread (FIFO per pair of shards). Dropped once the
    /// calling shard is stopping: every session is closing then (sends are no-ops), and a target
    /// shard may already have exited, so a task for it would sit in this shard's mesh overflow
    /// forever and keep this shard from exiting.
    void post(unsigned to, task t) {
        if (shard* cur = shard::current(); cur && cur->stopping()) return;
        eng.post(to, std::move(t));
    }
};

}  // namespace strix::chat
