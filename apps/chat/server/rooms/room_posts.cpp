// room_posts (room_posts.hpp): a backend's message to a room, posted once per idempotency key.

#include "room_posts.hpp"

#include "room_host.hpp"
#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>

#include <memory>

namespace strix::chat {
namespace {

post_outcome failure(int status, std::string error, std::string reason) {
    post_outcome out;
    out.status = status;
    out.error = std::move(error);
    out.reason = std::move(reason);
    return out;
}

}  // namespace

void room_posts::post(post_request req, done_fn done) {
    STRIX_ASSERT_OWNER(svc_.home(), "room_posts::post");
    const room_id id = req.room;
    // Held until finish() (in cluster mode read from the database when nobody here is in it).
    svc_.host().hold_for_api(id, [this, req = std::move(req), done = std::move(done)](room* r, bool failed) mutable {
        if (r != nullptr) return held(std::move(req), std::move(done));
        if (failed) return done(failure(503, "database_unavailable", "the database is unavailable; retry later"));
        done(failure(404, "unknown_room", "no such room (or it was deleted)"));
    });
}

void room_posts::held(post_request req, done_fn done) {
    if (!req.key.empty()) {
        auto [it, fresh] = keys_.try_emplace(key_of(req));
        if (!fresh) {
            svc_.host().release_for_api(req.room);  // the first post of the key holds it
            if (it->second.seq) {
                post_outcome out;
                out.seq = *it->second.seq;
                out.repeated = true;
                done(out);
            } else {
                it->second.waiters.push_back(std::move(done));
            }
            return;
        }
    }
    if (req.from.empty() && req.key.empty()) {
        publish(std::move(req), 0, std::move(done));
        return;
    }
    // The sender's account and the key's stored message, on a database worker.
    sharded<chat_service>* services = &svc_.container();
    const unsigned self = svc_.shard_id();
    auto held = std::make_shared<std::pair<post_request, done_fn>>(std::move(req), std::move(done));
    const bool queued = ctx_.pool.try_submit([services, self, held](chat_store& store) {
        std::optional<account> sender;
        std::optional<std::uint64_t> stored;
        bool failed = false;
        try {
            if (!held->first.from.empty()) sender = store.find_account(held->first.from);
            if (!held->first.key.empty()) stored = store.find_idempotent(held->first.room.value(), held->first.key);
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "api post to room {}: {}", held->first.room.value(), e.what());
            failed = true;
        }
        services->invoke_on(self, [held, sender = std::move(sender), stored, failed](chat_service& svc) mutable {
            svc.posts().looked_up(std::move(held->first), std::move(held->second), std::move(sender), stored, failed);
        });
    });
    if (!queued)
        finish(held->first, held->second, failure(503, "server_busy", "the database queue is full; retry later"));
}

void room_posts::looked_up(post_request req, done_fn done, std::optional<account> sender,
                           std::optional<std::uint64_t> stored, bool failed) {
    if (failed)
        return finish(req, done, failure(503, "database_unavailable", "the database is unavailable; retry later"));
    if (stored) {
        post_outcome out;
        out.seq = *stored;
        out.repeated = true;
        return finish(req, done, out);
    }
    if (!req.from.empty() && !sender)
        return finish(req, done, failure(404, "unknown_account", "no account is called " + req.from));
    publish(std::move(req), sender ? sender->id : 0, std::move(done));
}

void room_posts::publish(post_request req, std::uint64_t sender_id, done_fn done) {
    room* found = svc_.host().find(req.room);
    if (found == nullptr) return finish(req, done, failure(404, "unknown_room", "no such room (or it was deleted)"));
    chat_request cr;
    cr.room = req.room;
    cr.sender = member{0, svc_.shard_id(), sender_id, req.from};
    cr.text = req.text;
    cr.idem_key = req.key;
    // The sequencer numbers the message (one node: at once; a cluster: through Redis, which also
    // knows keys any node published) and queues it for the database; the room's members get it
    // as any chat_msg (after the commit with --ack stored), and so does this answer.
    cr.taken = [this, req = std::move(req), done = std::move(done)](const post_taken& t) mutable {
        if (t.seq == 0) {
            const char* why = t.why != nullptr ? t.why : "the message was not taken; retry later";
            return finish(req, done,
                          t.gone ? failure(404, "unknown_room", "no such room (or it was deleted)")
                                 : failure(503, "server_busy", why));
        }
        post_outcome out;
        out.seq = t.seq;
        out.repeated = t.repeated;
        svc_.host().order().after_commit(t.ticket, [this, req = std::move(req), done = std::move(done), out]() mutable {
            finish(req, done, out);
        });
    };
    svc_.host().sequencer().chat(*found, cr);
}

void room_posts::finish(const post_request& req, done_fn& done, const post_outcome& out) {
    release(req);
    done(out);
    if (req.key.empty()) return;
    const std::string k = key_of(req);
    auto it = keys_.find(k);
    if (it == keys_.end()) return;
    std::vector<done_fn> waiters = std::move(it->second.waiters);
    if (out.status == 200) {
        it->second.seq = out.seq;
        done_keys_.push_back(k);
        if (done_keys_.size() > remembered_keys) {
            keys_.erase(done_keys_.front());
            done_keys_.pop_front();
        }
    } else {
        keys_.erase(it);  // a failed post leaves nothing: the next retry tries again
    }
    for (done_fn& w : waiters) {
        post_outcome again = out;
        again.repeated = out.status == 200;
        w(again);
    }
}

void room_posts::release(const post_request& req) { svc_.host().release_for_api(req.room); }

}  // namespace strix::chat
