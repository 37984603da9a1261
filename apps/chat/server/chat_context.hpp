#pragma once
// chat_context: what every shard's chat service shares. Built before the engine starts and
// read-only afterwards (services is set once the sharded service exists, before the engine
// starts), so shards read it without synchronization.

#include "chat_options.hpp"

#include <strix/core/engine.hpp>
#include <strix/core/sharded.hpp>

#include <cstdint>
#include <vector>

namespace strix::chat {

class db_pool;
class chat_log_writer;
class chat_service;

struct chat_context {
    const chat_options& options;
    engine& eng;
    db_pool& pool;
    chat_log_writer& writer;
    std::uint64_t first_room_counter = 1;   // room ids start above any id found in the chat log
    sharded<chat_service>* services = nullptr;  // every shard's chat service
};

}  // namespace strix::chat
