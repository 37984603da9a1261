#pragma once
// chat_context: what every shard's chat service shares. Built before the engine starts and
// read-only afterwards, so shards read it without synchronization; the exceptions are made for
// sharing: logins_in_flight is atomic and the login throttle locks itself. (The services reach
// each other through their sharded container, chat_service::container().)

#include "apps/chat/server/options/chat_options.hpp"

#include <strix/core/engine.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strix::chat {

class db_pool;
class chat_log_writer;
class login_throttle;
class jwt_auth;
class jwt_login_queue;
class chat_hooks;

struct chat_context {
    const chat_options& options;
    engine& eng;
    db_pool& pool;
    chat_log_writer& writer;
    std::uint64_t first_room_counter = 1;   // room ids start above any id found in the chat log
    login_throttle* throttle = nullptr;         // failed logins per account and address (any thread)
    const jwt_auth* jwt = nullptr;              // --jwt-key's keys and rules (any thread); null: off
    jwt_login_queue* jwt_logins = nullptr;      // JWT logins' batches (any thread); set when jwt is
    chat_hooks* hooks = nullptr;                // webhooks and the publish hook; null when neither is on
    std::string dummy_hash;                     // verified when the account does not exist (same reply time)
    std::atomic<std::size_t> logins_in_flight{
        0};  // password hashes queued or running (bound: options.login_queue; see login_slot)
};

}  // namespace strix::chat
