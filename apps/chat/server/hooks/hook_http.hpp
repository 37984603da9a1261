#pragma once
// hook_http: one signed JSON POST at a time over libcurl, for the webhook sender and the publish
// hook's workers. Each object holds one curl easy handle, so consecutive POSTs to the same
// receiver reuse the connection (keep-alive). Blocking: only on the hooks' own threads, never on
// a shard.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace strix::chat {

class hook_http {
public:
    struct result {
        long status = 0;     // the HTTP status; 0 when no answer came (refused, timed out, aborted)
        std::string body;    // the answer, when asked for (at most max_response bytes)
        std::string error;   // curl's words when status is 0
        bool ok() const noexcept { return status >= 200 && status < 300; }
    };

    /// One thread uses an object at a time. Throws std::runtime_error if libcurl cannot start.
    hook_http();
    ~hook_http();
    hook_http(const hook_http&) = delete;
    hook_http& operator=(const hook_http&) = delete;

    /// POSTs `body` (JSON) to `url`, signed with `secret` (hook_signature.hpp) and the current
    /// time, within `timeout` (connecting included). `abort`, when set, ends the transfer early
    /// once it reads true (checked about every 100 ms and between callbacks). Keeps at most
    /// `max_response` bytes of the answer (0: none). The thread that owns the object.
    result post(const std::string& url, std::string_view body, std::string_view secret,
                std::chrono::milliseconds timeout, const std::atomic<bool>* abort = nullptr,
                std::size_t max_response = 0);

private:
    void* curl_;  // CURL*
};

}  // namespace strix::chat
