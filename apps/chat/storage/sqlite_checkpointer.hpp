#pragma once
// The SQLite back end's checkpoint thread (sqlite_chat_store.cpp): one per database file, shared
// by every connection this process opens to it, so that a checkpoint's fsyncs happen off the
// committing connections.

#include <sqlite3.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace strix::chat::storage_detail {

inline constexpr int sqlite_busy_timeout_ms = 5000;

// The checkpoint thread of one database file, shared by every connection this process opens to
// it (for_path), stopped when the last of them closes.
class checkpointer {
public:
    static std::shared_ptr<checkpointer> for_path(const std::string& path);
    ~checkpointer();

    /// The WAL has grown past the threshold: checkpoint soon. Any thread; never blocks long.
    void poke() noexcept;

    /// Installed as the WAL hook of every connection to the file (replacing SQLite's auto-checkpoint).
    static int on_commit(void* self, sqlite3* db, const char* schema, int pages);

private:
    explicit checkpointer(const std::string& path);
    void run();

    sqlite3* db_ = nullptr;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    bool poked_ = false;
    std::thread thread_;
};

}  // namespace strix::chat::storage_detail
