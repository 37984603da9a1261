// load_worker's byte path: scheduled chat_req sends, framing and flushing outgoing bytes (plain or
// TLS), readiness events, reading and decoding what arrives, and closing a client.
#include "load_worker.hpp"

#include "load_clock.hpp"

#include "apps/chat/common/chat_frame.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

namespace strix::chat {

std::int64_t load_worker::send_due(std::int64_t now) {
    constexpr std::int64_t idle = std::numeric_limits<std::int64_t>::max();
    if (!step_active_ || sends_done_) return idle;
    const std::size_t n = clients_.size();
    while (next_send_ <= now) {
        if (next_send_ >= plan_.t_end) break;
        load_client& c = *clients_[k_ % n];
        if (c.state == client_state::in_room) {
            load_stats& s = sink_for_sent(now);
            const auto lag = static_cast<std::uint64_t>(now - next_send_);
            if (lag > s.send_lag_max_ns) s.send_lag_max_ns = lag;
            send_chat(c, now);
        }
        ++k_;
        next_send_ = plan_.t_send_start + static_cast<std::int64_t>(offset_ns_ + dt_ns_ * static_cast<double>(k_));
    }
    if (next_send_ >= plan_.t_end) {
        if (now >= plan_.t_end) sends_done_ = true;
        return sends_done_ ? idle : plan_.t_end;
    }
    return next_send_;
}

void load_worker::send_chat(load_client& c, std::int64_t now) {
    if (layout_ != nullptr) {
        send_conv_chat(c, now);
        return;
    }
    ++c.client_seq;
    const std::size_t len = shared_.text.write(c.player_id, c.client_seq, text_buf_.data());
    fbb_.Clear();
    const auto t = fbb_.CreateString(text_buf_.data(), len);
    fbb_.Finish(proto::Createchat_req(fbb_, t, static_cast<std::uint64_t>(now), c.client_seq));
    append_frame(c, proto::msg_type::chat_req);
    load_stats& s = sink_for_sent(now);
    ++s.sent;
    const std::uint32_t owed = shared_.room_members[c.room];
    s.expected += owed;
    expected_all_ += owed;
}

void load_worker::append_frame(load_client& c, proto::msg_type type) {
    if (c.state == client_state::closed) return;
    const auto body =
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(fbb_.GetBufferPointer()), fbb_.GetSize());
    const std::size_t at = c.out.size();
    c.out.resize(at + frame_header_size + body.size());
    encode_header(c.out.data() + at, make_header(static_cast<std::uint16_t>(type), body, false));
    std::memcpy(c.out.data() + at + frame_header_size, body.data(), body.size());
    if (c.ws) c.ws->wrap_tail(c.out, at);
    mark_dirty(c);
}

void load_worker::mark_dirty(load_client& c) {
    if (c.dirty) return;
    c.dirty = true;
    dirty_.push_back(&c);
}

void load_worker::flush_dirty() {
    for (load_client* c : dirty_) {
        c->dirty = false;
        flush(*c);
    }
    dirty_.clear();
}

void load_worker::flush(load_client& c) {
    if (c.state == client_state::closed || c.state == client_state::connecting || c.state == client_state::handshaking)
        return;
    while (c.tls && c.out_head < c.out.size()) {
        const tls_result r = c.tls->write(c.out.data() + c.out_head, c.out.size() - c.out_head);
        ++now_sink_->writes;
        if (r.status == tls_status::done) {
            c.out_head += r.n;
            now_sink_->bytes_out += r.n;
            continue;
        }
        if (r.status == tls_status::want_write) break;  // EPOLLOUT resumes it
        if (r.status == tls_status::want_read) {
            c.write_wants_read = true;  // EPOLLIN resumes it
            break;
        }
        close_client(c, c.tls->error());
        return;
    }
    while (c.out_head < c.out.size()) {
        const ssize_t n = ::write(c.fd, c.out.data() + c.out_head, c.out.size() - c.out_head);
        ++now_sink_->writes;
        if (n > 0) {
            c.out_head += static_cast<std::size_t>(n);
            now_sink_->bytes_out += static_cast<std::uint64_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;  // EPOLLOUT resumes it
        close_client(c, std::string("write: ") + std::strerror(errno));
        return;
    }
    write_interest(c, c.out_head < c.out.size() || c.read_wants_write);
    if (c.state == client_state::closed) return;
    if (c.out_head == c.out.size()) {
        c.out.clear();  // keeps the capacity: no allocation next turn
        c.out_head = 0;
    } else if (c.out_head > 65536 && c.out_head * 2 > c.out.size()) {
        c.out.erase(c.out.begin(), c.out.begin() + static_cast<std::ptrdiff_t>(c.out_head));
        c.out_head = 0;
    }
}

void load_worker::write_interest(load_client& c, bool on) {
    if (c.want_out == on) return;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET | (on ? EPOLLOUT : 0u);
    ev.data.ptr = &c;
    if (::epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &ev) != 0) {
        close_client(c, std::string("epoll_ctl: ") + std::strerror(errno));
        return;
    }
    c.want_out = on;
}

// --- receiving ----------------------------------------------------------------------------------

void load_worker::on_event(load_client& c, std::uint32_t ev) {
    if (c.state == client_state::closed) return;
    if (c.state == client_state::connecting) {
        if ((ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) return;
        on_connected(c);
        if (c.state == client_state::closed || shared_.failed()) return;
        if (c.state == client_state::handshaking) return;  // its first step ran
    } else if (c.state == client_state::handshaking) {
        step_handshake(c);
        return;
    }
    const bool in = (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    if (in || (c.read_wants_write && (ev & EPOLLOUT) != 0)) {
        on_readable(c, (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
    }
    if (c.state == client_state::closed) return;
    if (in && c.write_wants_read) {
        c.write_wants_read = false;
        mark_dirty(c);
    }
    if ((ev & EPOLLOUT) != 0 && c.out_head < c.out.size()) mark_dirty(c);
}

// n bytes of the stream in read_buf_: decoded, verified and acted on. False when the client
// closed meanwhile.
bool load_worker::take(load_client& c, std::size_t n) {
    now_sink_->bytes_in += n;
    std::span<const std::byte> in(read_buf_.data(), n);
    if (c.ws) {
        std::size_t head = 0;
        if (c.state == client_state::upgrading) {
            const load_ws::head_result r = c.ws->read_head(in);
            head = r.used;
            if (r.done) {
                c.state = client_state::logging_in;
                send_login(c);
            }
        }
        in = in.subspan(head, c.ws->error().empty() ? c.ws->unwrap(read_buf_.data() + head, n - head) : 0);
        if (!c.ws->error().empty()) {
            close_client(c, c.ws->error());
            return false;
        }
    }
    const std::int64_t now = now_ns();
    const frame_errc e = c.decoder.feed(in, [&](const frame_view& f) {
        // The header sits right before the body in either buffer the decoder uses.
        on_frame(c, std::span<const std::byte>(f.body.data() - frame_header_size, f.body.size() + frame_header_size),
                 now);
    });
    if (c.state == client_state::closed) return false;
    if (e != frame_errc::ok && e != frame_errc::need_more) {
        ++now_sink_->corrupt;
        close_client(c, "undecodable stream from the server: " + make_error_code(e).message());
        return false;
    }
    return true;
}

// --tls: record by record until OpenSSL needs more from the socket (edge-triggered: it must be
// drained). A hangup shows up as closed or failed.
void load_worker::read_tls(load_client& c) {
    c.read_wants_write = false;
    for (;;) {
        const tls_result r = c.tls->read(read_buf_.data(), read_buf_.size());
        ++now_sink_->reads;
        if (r.status == tls_status::done) {
            if (!take(c, r.n)) return;
            continue;
        }
        if (r.status == tls_status::want_read) return;
        if (r.status == tls_status::want_write) {
            c.read_wants_write = true;  // EPOLLOUT resumes it
            write_interest(c, true);
            return;
        }
        close_client(c,
                     r.status == tls_status::closed ? std::string("the server closed the connection") : c.tls->error());
        return;
    }
}

void load_worker::on_readable(load_client& c, bool hangup) {
    if (c.tls) {
        read_tls(c);
        return;
    }
    for (;;) {
        const ssize_t n = ::read(c.fd, read_buf_.data(), read_buf_.size());
        ++now_sink_->reads;
        if (n > 0) {
            if (!take(c, static_cast<std::size_t>(n))) return;
            // A short read drained the socket; new data raises a new edge. After a hangup, read
            // on to the end so the close is seen.
            if (static_cast<std::size_t>(n) < read_buf_.size() && !hangup) return;
            continue;
        }
        if (n == 0) {
            close_client(c, "the server closed the connection");
            return;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (hangup) close_client(c, "the server hung up");
            return;
        }
        close_client(c, std::string("read: ") + std::strerror(errno));
        return;
    }
}

void load_worker::close_client(load_client& c, const std::string& why) {
    if (c.state == client_state::closed) return;
    const client_state was = c.state;
    release_socket(c);
    // --reconnect: a client that was in its room (or on its way back) comes back and resumes.
    const bool back_again = was == client_state::in_room || c.reconnecting;
    if (shared_.opt.reconnect && phase_ == load_phase::running && back_again &&
        !shared_.stop.load(std::memory_order_relaxed)) {
        lose(c, now_ns(), why, false);
        return;
    }
    ++disconnects_;
    ++now_sink_->disconnects;
    if (phase_ != load_phase::running || was != client_state::in_room) {
        setup_failure(c, why);
        return;
    }
    shared_.warn(shared_.warned_other, 20, "client {}: {}", c.index, why);
}

void load_worker::release_socket(load_client& c) {
    c.tls.reset();
    if (c.fd >= 0) {
        ::epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd, nullptr);
        ::close(c.fd);
    }
    c.fd = -1;
    c.state = client_state::closed;
}

}  // namespace strix::chat
