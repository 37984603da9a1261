#include "apps/chat/cluster/redis_errc.hpp"

#include <string>

namespace strix::chat {
namespace {

class redis_category_impl final : public std::error_category {
public:
    const char* name() const noexcept override { return "strix.chat.redis"; }
    std::string message(int ev) const override {
        switch (static_cast<redis_errc>(ev)) {
            case redis_errc::server_error: return "Redis answered with an error";
            case redis_errc::timed_out: return "Redis did not answer in time (connection reset)";
            case redis_errc::not_connected: return "Redis unreachable for the whole command timeout";
            case redis_errc::queue_full: return "too many Redis commands waiting";
            case redis_errc::protocol_error: return "malformed or unexpected reply from Redis";
            case redis_errc::closed: return "the Redis client was closed";
            case redis_errc::unexpected_reply: return "Redis reply of the wrong shape";
        }
        return "unknown strix.chat.redis error";
    }
};

}  // namespace

const std::error_category& redis_category() noexcept {
    static const redis_category_impl cat;
    return cat;
}

}  // namespace strix::chat
