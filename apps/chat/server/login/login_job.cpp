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

namespace {

// Stores a fresh token of `kind` for the account (replacing `replaced`) and returns it, or
// nothing when the database refused (the login stands; the client keeps what it has).
std::optional<device_token> issue_token(chat_store& store, const login_request& req, std::uint64_t account_id,
                                        token_kind kind, std::chrono::microseconds ttl,
                                        const std::optional<device_token_hash>& replaced, std::int64_t now_us) {
    const device_token fresh = make_device_token();
    device_token_change c{account_id, hash_device_token(fresh),     now_us, now_us + ttl.count(),
                          replaced,   max_device_tokens_per_account};
    c.kind = kind;
    try {
        store.store_device_token(c);
        return fresh;
    } catch (const std::exception& e) {
        log_limited(log_level::warn, "login of {}: no {} token stored: {}", req.name,
                    kind == token_kind::device ? "device" : "resume", e.what());
        return std::nullopt;
    }
}

}  // namespace

login_verdict run_login_job(chat_store& store, chat_context& ctx, const login_request& req) {
    login_throttle& throttle = *ctx.throttle;
    login_verdict v;
    // The key the attempt holds in the throttle: the token's while it may be valid, else the name.
    std::string key = req.resume  ? login_throttle::device_key(req.resume->bytes)
                      : req.token ? login_throttle::device_key(req.token->bytes)
                                  : req.name;
    std::optional<device_token_hash> replaced;         // a valid presented device token
    std::optional<device_token_hash> resume_replaced;  // a valid presented resume token
    const std::int64_t now_us = wall_clock_us();
    try {
        bool resumed = false;
        if (req.resume) {
            const std::optional<device_token_record> rec = store.find_device_token(*req.resume, token_kind::resume);
            if (rec && rec->account_name == req.name && rec->expires_at_us > now_us) {
                // The token is the credential: no password is verified, nothing is hashed.
                v.resume = token_use::accepted;
                resume_replaced = req.resume;
                v.result =
                    login_result{login_outcome::ok, {rec->account_id, rec->account_name}, rec->room_id, rec->rooms};
                resumed = true;
            } else {
                v.resume = rec ? token_use::ignored : token_use::unknown;
                if (req.password.empty()) {
                    throttle.failed(key, req.address);
                    v.invalid_resume_token = true;
                    return v;
                }
                const login_throttle::verdict t = throttle.fall_back(key, req.name, req.address, !rec);
                if (!t.allowed) {
                    v.refused = t;
                    return v;
                }
                key = req.name;
            }
        } else if (req.token) {
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
        if (!resumed) {
            v.result = store.login(req.name, req.password, ctx.options.auto_register);
            // An unknown name costs what a wrong password costs: one verify against a hash of the
            // current policy, so the reply time does not tell which it was.
            if (v.result->outcome == login_outcome::unknown_account)
                (void)verify_password(ctx.dummy_hash, req.password);
        }
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
    const std::uint64_t account_id = v.result->acct.id;
    // A resumed login keeps the device token the client has (a new one would push an older
    // device's out of the account's newest 16 for nothing).
    if (ctx.options.device_token_ttl.count() > 0 && v.resume != token_use::accepted)
        v.new_token = issue_token(store, req, account_id, token_kind::device,
                                  std::chrono::duration_cast<std::chrono::microseconds>(ctx.options.device_token_ttl),
                                  replaced, now_us);
    if (ctx.options.resume_token_ttl.count() > 0)
        v.new_resume_token =
            issue_token(store, req, account_id, token_kind::resume,
                        std::chrono::duration_cast<std::chrono::microseconds>(ctx.options.resume_token_ttl),
                        resume_replaced, now_us);
    return v;
}

}  // namespace strix::chat
