#include <strix/net/connection.hpp>

#include "net/tls/tls_stream.hpp"

#include "net/socket_util.hpp"

#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>
#include <strix/net/net_errc.hpp>
#include <strix/net/session_group.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace strix {

connection::connection(session_group& g, endpoint target, connect_options opts)
    : group_(g),
      id_(g.owner().next_object_id()),
      target_(std::move(target)),
      opts_(opts),
      timer_([this] { on_timer(); }),
      delay_(std::max(opts.reconnect_initial, std::chrono::milliseconds(1))) {}

connection::~connection() {
    // close() or the group's shutdown ran before the last reference went; this is for engines
    // torn down early.
    if (timer_.armed()) group_.owner().timers().cancel(timer_);
}

void connection::attempt() {
    if (closing_ || status_ == status::closed) return;
    status_ = status::connecting;
    bool in_progress = false;
    std::error_code ec;
    fd_ = detail::start_connect(target_, in_progress, ec);
    if (!fd_) {
        failed(ec);
        return;
    }
    if (!in_progress) {
        established();
        return;
    }
    if (auto rc = group_.owner().add_fd(fd_.get(), io_events::writable | io_events::error | io_events::hangup, this)) {
        fd_.reset();
        failed(rc);
        return;
    }
    registered_ = true;
    if (opts_.timeout.count() > 0) group_.owner().timers().schedule(timer_, group_.owner().ticks_for(opts_.timeout));
}

void connection::on_io(std::uint32_t) {
    if (status_ != status::connecting || !fd_) return;
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
    if (err == 0) {
        established();
        return;
    }
    if (registered_) group_.owner().remove_fd(fd_.get());
    registered_ = false;
    fd_.reset();
    failed({err, std::generic_category()});
}

void connection::established() {
    group_.owner().timers().cancel(timer_);
    if (registered_) group_.owner().remove_fd(fd_.get());
    registered_ = false;
    failures_ = 0;
    delay_ = std::max(opts_.reconnect_initial, std::chrono::milliseconds(1));
    status_ = status::open;
    intrusive_ptr<connection> keep(this);  // the handler may close us from on_open
    bump(group_.counters_.connected);
    session& s = group_.make_session(std::move(fd_), target_.to_string(), this);
    // The session may have failed to start (and closed) inside make_session.
    if (s.is_open() && status_ == status::open) session_ = &s;
}

void connection::failed(std::error_code ec) {
    ++failures_;
    bump(group_.counters_.connect_failures);
    // The handler hears every failure; the log only the first of a run (reconnects repeat).
    if (failures_ == 1) log_limited(log_level::info, "connect to {} failed: {} (retrying)", target_.to_string(), ec);
    intrusive_ptr<connection> keep(this);
    group_.handler().on_connect_failed(*this, ec);
    retry_later();
}

// After a failure or a disconnect: wait and try again, or finish.
void connection::retry_later() {
    if (closing_ || !opts_.reconnect || group_.owner().stopping()) {
        finish();
        return;
    }
    status_ = status::waiting;
    group_.owner().timers().schedule(timer_, group_.owner().ticks_for(delay_));
    delay_ = std::min(delay_ * 2, std::max(opts_.reconnect_max, opts_.reconnect_initial));
}

void connection::on_timer() {
    if (status_ == status::waiting) {
        attempt();
        return;
    }
    if (status_ == status::connecting) {
        if (registered_) group_.owner().remove_fd(fd_.get());
        registered_ = false;
        fd_.reset();
        failed(std::make_error_code(std::errc::timed_out));
    }
}

void connection::session_closed(std::error_code never_opened) {
    session_ = nullptr;
    if (status_ != status::open) return;
    if (closing_) {
        // close() ended a session still in its handshake (TLS): the application's own doing, not
        // a failed connect to report (on_connect_failed) or retry.
        finish();
        return;
    }
    if (never_opened) {
        failed(never_opened);  // on_connect_failed, then retry_later
        return;
    }
    retry_later();
}

detail::tls_resume_slot& connection::tls_resume() {
    if (!tls_resume_) tls_resume_.reset(new detail::tls_resume_slot);
    return *tls_resume_;
}

void connection::close() {
    if (status_ == status::closed || closing_) return;
    closing_ = true;
    if (session_) {
        session* s = session_;
        session_ = nullptr;
        s->close(net_errc::closed_by_app);  // its finalize calls session_closed(), which finishes us
        if (status_ != status::closed) finish();
        return;
    }
    finish();
}

void connection::finish() {
    if (status_ == status::closed) return;
    status_ = status::closed;
    group_.owner().timers().cancel(timer_);
    if (registered_) group_.owner().remove_fd(fd_.get());
    registered_ = false;
    fd_.reset();
    group_.forget(*this);  // may drop the group's reference; callers hold their own
}

}  // namespace strix
