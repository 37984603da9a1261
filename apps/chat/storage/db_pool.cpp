#include "apps/chat/storage/db_pool.hpp"

#include <stdexcept>

namespace strix::chat {
namespace {

std::vector<std::unique_ptr<chat_store>> open_stores(const db_pool_config& cfg) {
    std::vector<std::unique_ptr<chat_store>> stores;
    const std::size_t n = cfg.workers == 0 ? 1 : cfg.workers;
    stores.reserve(n);
    // Opened here, on the owner's thread, so a bad URL or an unreachable server throws from the
    // constructor instead of killing a worker thread later. Each store is then used only by the
    // one worker whose index it has.
    for (std::size_t i = 0; i < n; ++i) stores.push_back(open_chat_store(cfg.url, cfg.policy));
    return stores;
}

}  // namespace

db_pool::db_pool(const db_pool_config& cfg) : db_pool(open_stores(cfg), cfg.queue_capacity) {}

db_pool::db_pool(std::vector<std::unique_ptr<chat_store>> stores, std::size_t queue_capacity)
    : stores_(std::move(stores)) {
    if (stores_.empty()) throw std::invalid_argument("db_pool needs at least one chat_store");
    pool_ = std::make_unique<blocking_pool>(blocking_pool_config{stores_.size(), queue_capacity, "database"});
}

db_pool::~db_pool() { pool_->stop(); }

bool db_pool::try_submit(job j) {
    return pool_->try_submit([this, j = std::move(j)](std::size_t worker) { j(*stores_[worker]); });
}

}  // namespace strix::chat
