#include "login_job.hpp"

#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/storage/password.hpp"

#include <strix/core/log.hpp>

namespace strix::chat {
namespace {

std::int64_t wall_clock_us() noexcept {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

login_verdict run_login_job(chat_store& store, chat_context& ctx, const login_request& req) {
    login_throttle& throttle = *ctx.throttle;
    login_verdict v;
    // The key the attempt holds in the throttle: the token's while it may be valid, else the name.
    std::string key = req.token ? login_throttle::device_key(req.token->bytes) : req.name;
    std::optional<device_token_hash> replaced;  // a valid presented token: its successor replaces it
    const std::int64_t now_us = wall_clock_us();
    try {
        if (req.token) {
            const std::optional<device_token_record> rec = store.find_device_token(*req.token);
            if (rec && rec->account_name == req.name && rec->expires_at_us > now_us) {
                v.token = token_use::accepted;
                replaced = req.token;
            } else {
                v.token = rec ? token_use::ignored : token_use::unknown;
                const login_throttle::verdict t = throttle.fall_back(key, req.name, req.address, !rec);
                if (!t.allowed) {
                    v.refused = t;  // fall_back let go of every key: nothing to report
                    return v;
                }
                key = req.name;
            }
        }
        v.result = store.login(req.name, req.password, ctx.options.auto_register);
        // An unknown name costs what a wrong password costs: one verify against a hash of the
        // current policy, so the reply time does not tell which it was.
        if (v.result->outcome == login_outcome::unknown_account) (void)verify_password(ctx.dummy_hash, req.password);
    } catch (const std::exception& e) {
        log_limited(log_level::warn, "login of {} failed: {}", req.name, e.what());
        v.result.reset();
        throttle.abandoned(key, req.address);
        return v;
    }
    if (v.result->outcome != login_outcome::ok && v.result->outcome != login_outcome::created) {
        throttle.failed(key, req.address);
        return v;
    }
    // A success through a token clears that token's failures, not the name's: a guesser's
    // failures keep the name waiting for everyone without a token.
    throttle.succeeded(key, req.address);
    if (ctx.options.device_token_ttl.count() > 0) {
        const device_token fresh = make_device_token();
        const auto ttl_us = std::chrono::duration_cast<std::chrono::microseconds>(ctx.options.device_token_ttl).count();
        try {
            store.store_device_token(
                {v.result->acct.id, hash_device_token(fresh), now_us, now_us + ttl_us, replaced,
                 max_device_tokens_per_account});
            v.new_token = fresh;
        } catch (const std::exception& e) {
            // The login stands; the client keeps the token it has (if it had one, it stays valid).
            log_limited(log_level::warn, "login of {}: no device token stored: {}", req.name, e.what());
        }
    }
    return v;
}

}  // namespace strix::chat
