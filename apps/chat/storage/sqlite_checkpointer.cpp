// The SQLite back end's checkpoint thread: see sqlite_checkpointer.hpp.

#include "apps/chat/storage/sqlite_checkpointer.hpp"

#include <strix/core/log.hpp>
#include <strix/core/thread_name.hpp>

#include <filesystem>
#include <map>

namespace strix::chat::storage_detail {

namespace {

constexpr int wal_checkpoint_pages = 1000;    // SQLite's own auto-checkpoint threshold
constexpr int wal_hard_limit_pages = 16000;   // ~64 MB: then the committing connection checkpoints

}  // namespace

std::shared_ptr<checkpointer> checkpointer::for_path(const std::string& path) {
    static std::mutex registry_mu;
    static std::map<std::string, std::weak_ptr<checkpointer>> registry;
    std::error_code ec;
    std::string key = std::filesystem::weakly_canonical(path, ec).string();
    if (ec) key = path;
    std::lock_guard lk(registry_mu);
    if (auto existing = registry[key].lock()) return existing;
    auto fresh = std::shared_ptr<checkpointer>(new checkpointer(path));
    registry[key] = fresh;
    return fresh;
}

checkpointer::~checkpointer() {
    {
        std::lock_guard lk(mu_);
        stop_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
    if (db_ != nullptr) ::sqlite3_close_v2(db_);
}

void checkpointer::poke() noexcept {
    {
        std::lock_guard lk(mu_);
        poked_ = true;
    }
    cv_.notify_one();
}

int checkpointer::on_commit(void* self, sqlite3* db, const char* schema, int pages) {
    if (pages >= wal_hard_limit_pages) {
        // The checkpointer is not keeping up (or failing): do what SQLite would have done.
        ::sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    } else if (pages >= wal_checkpoint_pages) {
        static_cast<checkpointer*>(self)->poke();
    }
    return SQLITE_OK;
}

checkpointer::checkpointer(const std::string& path) {
    // Without a connection of its own there is no checkpoint thread; the hook's hard limit
    // still bounds the WAL.
    if (::sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
        log(log_level::warn, "sqlite: no checkpoint thread for '{}': {}", path,
            db_ != nullptr ? ::sqlite3_errmsg(db_) : "cannot open");
        ::sqlite3_close_v2(db_);
        db_ = nullptr;
        return;
    }
    ::sqlite3_busy_timeout(db_, sqlite_busy_timeout_ms);
    ::sqlite3_exec(db_, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
    ::sqlite3_wal_autocheckpoint(db_, 0);
    thread_ = std::thread([this] {
        set_thread_name("strix-wal-ckpt");
        run();
    });
}

void checkpointer::run() {
    std::unique_lock lk(mu_);
    for (;;) {
        cv_.wait(lk, [&] { return stop_ || poked_; });
        if (stop_) return;
        poked_ = false;
        lk.unlock();
        // PASSIVE: copies what no reader needs and never blocks a writer; the fsyncs happen
        // here instead of in a COMMIT. The WAL starts over (instead of growing) only when a
        // commit finds every frame copied, so passes repeat while commits added frames
        // during the last one; each copies only those, and so is shorter.
        for (int pass = 0; pass < 8; ++pass) {
            int frames = 0, copied = 0;
            const int rc = ::sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &frames, &copied);
            if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
                log_limited(log_level::warn, "sqlite: checkpoint failed: {}", ::sqlite3_errmsg(db_));
                break;
            }
            if (rc != SQLITE_OK || copied >= frames) break;
        }
        lk.lock();
    }
}

}  // namespace strix::chat::storage_detail
