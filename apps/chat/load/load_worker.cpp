#include "load_worker.hpp"

#include "load_controller.hpp"
#include "load_clock.hpp"

#include "apps/chat/common/chat_frame.hpp"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace strix::chat {
namespace {

// Logins (connects included) one worker keeps in flight at most: enough to hide the round trips, few
// enough that a slow password hash does not pile up hundreds of requests at once.
constexpr std::uint32_t max_logins_in_flight = 128;
constexpr std::int64_t control_period_ns = 20'000'000;
constexpr std::size_t read_buffer_size = 256 * 1024;

std::string_view str(const flatbuffers::String* s) {
    return s == nullptr ? std::string_view{} : std::string_view(s->data(), s->size());
}

const char* error_name(proto::error_code e) {
    const auto v = static_cast<unsigned>(e);
    return v <= static_cast<unsigned>(proto::error_code::MAX) ? proto::EnumNameerror_code(e) : "unknown";
}

}  // namespace

std::string describe(const peer_address& a) {
    if (a.family() == AF_UNIX) return "unix:" + std::string(reinterpret_cast<const sockaddr_un*>(&a.addr)->sun_path);
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a.addr);
    char host[INET_ADDRSTRLEN] = "?";
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
}

load_worker::load_worker(load_shared& shared, std::vector<peer_address> addrs, std::uint32_t id,
                         std::uint32_t workers)
    : shared_(shared),
      box_(shared.boxes[id]),
      addrs_(std::move(addrs)),
      id_(id),
      workers_(workers),
      read_buf_(read_buffer_size),
      text_buf_(shared.text.max_len()),
      fbb_(4096) {
    const load_options& o = shared.opt;
    for (std::uint32_t i = id; i < o.clients; i += workers) {
        clients_.push_back(std::make_unique<load_client>(i, o.rooms, shared.room_members[i % o.rooms]));
    }
}

load_worker::~load_worker() {
    for (auto& c : clients_) {
        c->tls.reset();
        if (c->fd >= 0) ::close(c->fd);
    }
    if (ep_ >= 0) ::close(ep_);
}

void load_worker::run(load_controller* ctl) {
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) {
        shared_.fail(std::string("epoll_create1: ") + std::strerror(errno));
        return;
    }
    std::vector<epoll_event> events(512);
    connect_start_ = now_ns();
    std::int64_t next_tick = 0;
    std::int64_t woke = 0;
    std::int64_t last_events = 0;
    const std::int64_t spin_ns = static_cast<std::int64_t>(shared_.opt.poll_spin_us) * 1000;
    while (!shared_.stop.load(std::memory_order_acquire)) {
        std::int64_t now = now_ns();
        std::int64_t deadline = control(now);
        deadline = std::min(deadline, send_due(now));
        flush_dirty();
        publish();
        if (ctl != nullptr) {
            if (now >= next_tick) next_tick = ctl->tick(now);
            deadline = std::min(deadline, next_tick);
            if (shared_.stop.load(std::memory_order_acquire)) break;
        }
        // How long the loop was busy since it last woke up: the delay it adds to a receipt at worst.
        const std::int64_t before_wait = now_ns();
        if (woke != 0) {
            const auto busy = static_cast<std::uint64_t>(before_wait - woke);
            now_sink_->busy_ns += busy;
            if (busy > now_sink_->max_turn_ns) now_sink_->max_turn_ns = busy;
        }
        std::int64_t timeout = deadline - before_wait;
        if (spin_ns > 0 && before_wait - last_events < spin_ns) timeout = 0;  // busy-poll
        const int n = wait_events(ep_, events.data(), static_cast<int>(events.size()), timeout);
        woke = now_ns();
        if (n > 0) last_events = woke;
        if (n < 0) {
            if (errno == EINTR) continue;
            shared_.fail(std::string("epoll_wait: ") + std::strerror(errno));
            break;
        }
        for (int i = 0; i < n; ++i) {
            const epoll_event& ev = events[static_cast<std::size_t>(i)];
            on_event(*static_cast<load_client*>(ev.data.ptr), ev.events);
        }
        flush_dirty();
    }
    publish();
    for (auto& c : clients_) {
        c->tls.reset();  // close_notify before the socket goes
        if (c->fd >= 0) {
            ::close(c->fd);
            c->fd = -1;
        }
    }
}

// --- control ------------------------------------------------------------------------------------

std::int64_t load_worker::control(std::int64_t now) {
    std::int64_t deadline = now + control_period_ns;
    const load_phase p = shared_.phase.load(std::memory_order_acquire);
    if (p != phase_) {
        phase_ = p;
        if (p == load_phase::creating || p == load_phase::joining) enter_rooms(p);
    }
    if (phase_ == load_phase::connecting) {
        connect_some(now);
        if (next_connect_ < clients_.size()) deadline = std::min(deadline, now + 5'000'000);
        if (!login_waiting_.empty()) deadline = std::min(deadline, retry_logins(now));
    }
    if (shared_.plan_gen.load(std::memory_order_acquire) != plan_gen_) adopt_plan();
    if (step_active_) {
        if (shared_.finish_request.load(std::memory_order_acquire) == plan_.index + 1) {
            finish_step();
        } else {
            roll_rows(now);
            if (now < plan_.t_measure) {
                deadline = std::min(deadline, plan_.t_measure);
            } else if (row_ + 1 < plan_.intervals) {
                deadline = std::min(deadline, plan_.t_measure + plan_.interval_ns * (row_ + 1));
            }
        }
    }
    return deadline;
}

void load_worker::adopt_plan() {
    {
        std::lock_guard<std::mutex> lock(shared_.plan_mu);
        plan_ = shared_.plan;
        plan_gen_ = shared_.plan_gen.load(std::memory_order_relaxed);
    }
    rows_.assign(plan_.intervals, load_stats{});
    row_ = 0;
    rows_published_ = 0;
    warmup_ = load_stats{};
    step_active_ = true;
    sends_done_ = false;
    k_ = 0;
    const double n = static_cast<double>(clients_.size());
    dt_ns_ = 1e9 / (plan_.rps * n);
    offset_ns_ = dt_ns_ * id_ / workers_;
    next_send_ = plan_.t_send_start + static_cast<std::int64_t>(offset_ns_);
}

void load_worker::roll_rows(std::int64_t now) {
    if (now < plan_.t_measure) {
        now_sink_ = &warmup_;
        return;
    }
    const auto idx = static_cast<std::uint64_t>((now - plan_.t_measure) / plan_.interval_ns);
    row_ = static_cast<std::uint32_t>(std::min<std::uint64_t>(idx, plan_.intervals - 1));
    if (rows_published_ < row_) {
        std::lock_guard<std::mutex> lock(box_.mu);
        while (rows_published_ < row_) box_.rows.push_back(rows_[rows_published_++]);
    }
    now_sink_ = &rows_[row_];
}

void load_worker::finish_step() {
    std::lock_guard<std::mutex> lock(box_.mu);
    while (rows_published_ < plan_.intervals) box_.rows.push_back(rows_[rows_published_++]);
    box_.warmup = warmup_;
    box_.finished = plan_.index + 1;
    step_active_ = false;
    now_sink_ = &discard_;
}

load_stats& load_worker::sink_for_sent(std::int64_t client_ts) {
    if (!step_active_) return discard_;
    if (client_ts < plan_.t_measure) return warmup_;
    return rows_[row_];
}

void load_worker::publish() {
    box_.connected.store(connected_, std::memory_order_relaxed);
    box_.logged_in.store(logged_in_, std::memory_order_relaxed);
    box_.created.store(created_, std::memory_order_relaxed);
    box_.joined.store(joined_, std::memory_order_relaxed);
    box_.login_retries.store(login_retries_, std::memory_order_relaxed);
    box_.expected_all.store(expected_all_, std::memory_order_relaxed);
    box_.delivered_all.store(delivered_all_, std::memory_order_relaxed);
    box_.disconnects.store(disconnects_, std::memory_order_relaxed);
    // Release: once the controller sees sends_done it also sees the final expected_all.
    if (sends_done_) box_.sends_done.store(plan_.index + 1, std::memory_order_release);
}

// --- setup --------------------------------------------------------------------------------------

void load_worker::connect_some(std::int64_t now) {
    const double rate = shared_.opt.connect_rate / workers_;
    while (next_connect_ < clients_.size() && in_flight_ < login_window_) {
        if (rate > 0) {
            const double allowed = static_cast<double>(now - connect_start_) * 1e-9 * rate + 1;
            if (static_cast<double>(next_connect_) >= allowed) break;
        }
        connect_one(*clients_[next_connect_++]);
        if (shared_.failed()) return;
    }
}

const peer_address& load_worker::target_of(const load_client& c) const noexcept {
    return addrs_[(c.index / shared_.opt.rooms) % addrs_.size()];
}

void load_worker::connect_one(load_client& c) {
    const peer_address& addr = target_of(c);
    c.fd = ::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0) {
        setup_failure(c, std::string("socket: ") + std::strerror(errno) +
                             (errno == EMFILE ? " (raise the open-file limit: ulimit -n)" : ""));
        return;
    }
    if (addr.family() == AF_INET) {
        int one = 1;
        ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        const auto* to = reinterpret_cast<const sockaddr_in*>(&addr.addr);
        const std::uint32_t per_source = shared_.opt.clients_per_source;
        if (per_source != 0 && (ntohl(to->sin_addr.s_addr) >> 24) == 127) {
            // 500 users on one machine would be 500 hosts in production: each group of
            // --clients-per-source gets its own loopback source address (all of 127/8 is local
            // on Linux). The port is left to connect() (IP_BIND_ADDRESS_NO_PORT), so binding
            // does not reserve an ephemeral port per address.
            sockaddr_in from{};
            from.sin_family = AF_INET;
            from.sin_addr.s_addr = htonl(0x7F000001u + c.index / per_source);
            ::setsockopt(c.fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
            if (::bind(c.fd, reinterpret_cast<const sockaddr*>(&from), sizeof(from)) != 0) {
                setup_failure(c, std::string("bind to a loopback source address: ") + std::strerror(errno) +
                                     " (--clients-per-source 0 connects from one address)");
                return;
            }
        }
    }
    // Edge-triggered. EPOLLOUT is registered while the connect is in flight and later only while
    // a write waits for socket buffer space (write_interest): registered for good, every message
    // the server reads from this socket would wake this thread for nothing.
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = &c;
    if (::epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev) != 0) {
        setup_failure(c, std::string("epoll_ctl: ") + std::strerror(errno));
        return;
    }
    ++in_flight_;
    c.state = client_state::connecting;
    const int rc = ::connect(c.fd, reinterpret_cast<const sockaddr*>(&addr.addr), addr.len);
    if (rc != 0 && errno != EINPROGRESS) {
        setup_failure(c, std::string("connect: ") + std::strerror(errno));
        return;
    }
    if (rc == 0) on_connected(c);
}

void load_worker::on_connected(load_client& c) {
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
        setup_failure(c, "connect to " + describe(target_of(c)) + ": " + std::strerror(err) +
                             " (is strix-chat-server running there?)");
        return;
    }
    ++connected_;
    if (shared_.tls != nullptr) {
        const load_options& o = shared_.opt;
        try {
            c.tls = std::make_unique<client_tls_conn>(*shared_.tls, c.fd, o.server_name.empty() ? o.host : o.server_name);
        } catch (const std::runtime_error& e) {
            setup_failure(c, e.what());
            return;
        }
        c.state = client_state::handshaking;
        step_handshake(c);
        return;
    }
    c.state = client_state::logging_in;
    write_interest(c, false);
    if (c.state == client_state::closed) return;
    start_session(c);
}

// --tls: one step of the handshake per readiness event; the login goes out once it is done (and
// the certificate accepted), so no password or device token ever crosses unencrypted.
void load_worker::step_handshake(load_client& c) {
    const tls_status s = c.tls->handshake();
    if (s == tls_status::want_read || s == tls_status::want_write) {
        write_interest(c, s == tls_status::want_write);
        return;
    }
    if (s != tls_status::done) {
        setup_failure(c, c.tls->error());
        return;
    }
    if (c.index == 0) {
        std::printf("strix-chat-load: TLS: %s\n", c.tls->describe().c_str());
        std::fflush(stdout);
    }
    c.state = client_state::logging_in;
    write_interest(c, false);
    if (c.state == client_state::closed) return;
    start_session(c);
    // Records that came with the handshake's last flight (TLS 1.3 session tickets) raise no new edge.
    read_tls(c);
}

// The login, or with --ws first the upgrade (take() sends the login once the 101 is in).
void load_worker::start_session(load_client& c) {
    if (!shared_.opt.ws) {
        send_login(c);
        return;
    }
    c.ws = std::make_unique<load_ws>(c.index);
    c.state = client_state::upgrading;
    c.ws->request(c.out, shared_.opt.host, shared_.opt.port, shared_.opt.ws_path);
    mark_dirty(c);
}

void load_worker::send_login(load_client& c) {
    const std::string name = shared_.opt.name_prefix + std::to_string(c.index);
    fbb_.Clear();
    fbb_.Finish(proto::Createlogin_req(fbb_, fbb_.CreateString(name), fbb_.CreateString(shared_.opt.password)));
    append_frame(c, proto::msg_type::login_req);
    ++c.login_attempts;
}

std::int64_t load_worker::retry_logins(std::int64_t now) {
    std::int64_t next = std::numeric_limits<std::int64_t>::max();
    std::size_t kept = 0;
    for (load_client* c : login_waiting_) {
        if (c->state != client_state::logging_in) continue;  // closed meanwhile
        if (c->login_retry_at <= now) {
            ++login_retries_;
            send_login(*c);
            continue;
        }
        next = std::min(next, c->login_retry_at);
        login_waiting_[kept++] = c;
    }
    login_waiting_.resize(kept);
    return next;
}

void load_worker::enter_rooms(load_phase p) {
    const load_options& o = shared_.opt;
    for (auto& cp : clients_) {
        load_client& c = *cp;
        if (c.state != client_state::logged_in) continue;
        if (p == load_phase::creating && c.index < o.rooms) {
            const std::string name = o.name_prefix + "-room-" + std::to_string(c.index);
            fbb_.Clear();
            fbb_.Finish(proto::Createcreate_room_req(fbb_, fbb_.CreateString(name)));
            append_frame(c, proto::msg_type::create_room_req);
            c.state = client_state::entering;
        } else if (p == load_phase::joining && c.index >= o.rooms) {
            const std::uint64_t room = shared_.room_ids[c.room].load(std::memory_order_acquire);
            fbb_.Clear();
            fbb_.Finish(proto::Createjoin_room_req(fbb_, room));
            append_frame(c, proto::msg_type::join_room_req);
            c.state = client_state::entering;
        }
    }
}

void load_worker::request_room_list() {
    load_client& c = *clients_.front();  // client 0: worker 0 owns it
    fbb_.Clear();
    fbb_.Finish(proto::Createlist_rooms_req(fbb_));
    append_frame(c, proto::msg_type::list_rooms_req);
    flush_dirty();
}

void load_worker::on_room_list(std::span<const std::byte> frame) {
    const auto* res = body_as<proto::list_rooms_res>(frame);
    if (res == nullptr) {
        rooms_check_ = 2;
        rooms_problem_ = "list_rooms_res does not verify";
        return;
    }
    std::string problems;
    for (std::uint32_t r = 0; r < shared_.opt.rooms; ++r) {
        const std::uint64_t id = shared_.room_ids[r].load(std::memory_order_acquire);
        bool found = false;
        if (res->rooms() != nullptr) {
            for (const proto::room_info* info : *res->rooms()) {
                if (info == nullptr || info->id() != id) continue;
                found = true;
                if (info->members() != shared_.room_members[r]) {
                    problems += " room " + std::to_string(id) + " lists " + std::to_string(info->members()) +
                                " members, expected " + std::to_string(shared_.room_members[r]) + ";";
                }
            }
        }
        if (!found) problems += " room " + std::to_string(id) + " is not listed;";
    }
    rooms_check_ = problems.empty() ? 1 : 2;
    rooms_problem_ = problems;
}

void load_worker::setup_failure(const load_client& c, const std::string& why) {
    shared_.fail("client " + std::to_string(c.index) + " (" + shared_.opt.name_prefix + std::to_string(c.index) +
                 "): " + why);
}

// --- sending ------------------------------------------------------------------------------------

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
    if (c.state == client_state::closed || c.state == client_state::connecting ||
        c.state == client_state::handshaking)
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
        close_client(c, r.status == tls_status::closed ? std::string("the server closed the connection")
                                                        : c.tls->error());
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

void load_worker::on_frame(load_client& c, std::span<const std::byte> frame, std::int64_t now) {
    const proto::msg_type type = type_of(frame);
    switch (type) {
        case proto::msg_type::chat_msg: on_chat(c, frame, now); return;
        case proto::msg_type::login_res: {
            const auto* res = body_as<proto::login_res>(frame);
            if (res == nullptr || res->player() == nullptr || c.state != client_state::logging_in) {
                setup_failure(c, "bad or unexpected login_res");
                return;
            }
            c.player_id = res->player()->id();
            c.state = client_state::logged_in;
            login_window_ = std::min(login_window_ + 1, max_logins_in_flight);
            shared_.player_ids[c.index].store(c.player_id, std::memory_order_release);
            --in_flight_;
            ++logged_in_;
            return;
        }
        case proto::msg_type::create_room_res: {
            const auto* res = body_as<proto::create_room_res>(frame);
            if (res == nullptr || res->room() == nullptr || c.state != client_state::entering) {
                setup_failure(c, "bad or unexpected create_room_res");
                return;
            }
            shared_.room_ids[c.room].store(res->room()->id(), std::memory_order_release);
            c.state = client_state::in_room;
            ++created_;
            return;
        }
        case proto::msg_type::join_room_res: {
            const auto* res = body_as<proto::join_room_res>(frame);
            const std::uint64_t want = shared_.room_ids[c.room].load(std::memory_order_acquire);
            if (res == nullptr || res->room() == nullptr || c.state != client_state::entering) {
                setup_failure(c, "bad or unexpected join_room_res");
                return;
            }
            if (res->room()->id() != want) {
                setup_failure(c, "join_room_res names room " + std::to_string(res->room()->id()) + ", asked for " +
                                     std::to_string(want));
                return;
            }
            c.state = client_state::in_room;
            ++joined_;
            return;
        }
        case proto::msg_type::list_rooms_res: on_room_list(frame); return;
        case proto::msg_type::error_res: on_error_res(c, frame); return;
        case proto::msg_type::member_joined:
            // Expected while the rooms fill up; nobody joins once the steps run. The server may hold
            // a notice back briefly (--notice-delay-ms) but sends it before the room's next chat_msg,
            // so one after a chat_msg is a join nobody made.
            if (phase_ == load_phase::running && c.heard_chat) ++now_sink_->unexpected;
            return;
        case proto::msg_type::member_left:
            // Once the run is over, other workers' clients are closing: their departures are expected.
            if (shared_.stop.load(std::memory_order_relaxed)) return;
            ++now_sink_->unexpected;
            shared_.warn(shared_.warned_other, 10, "client {}: member_left received; nobody was meant to leave",
                         c.index);
            return;
        case proto::msg_type::member_presence:
            // A member going offline (its connection closed) or coming back: only expected once
            // the run is over and other workers' clients close.
            if (shared_.stop.load(std::memory_order_relaxed)) return;
            ++now_sink_->unexpected;
            shared_.warn(shared_.warned_other, 10, "client {}: member_presence received; nobody was meant to go",
                         c.index);
            return;
        case proto::msg_type::pong_res: return;
        default:
            ++now_sink_->unexpected;
            shared_.warn(shared_.warned_other, 10, "client {}: unexpected frame type {}", c.index,
                         static_cast<unsigned>(type));
            return;
    }
}

void load_worker::on_error_res(load_client& c, std::span<const std::byte> frame) {
    const auto* res = body_as<proto::error_res>(frame);
    const proto::error_code code = res == nullptr ? proto::error_code::bad_request : res->code();
    const std::string reason(res == nullptr ? std::string_view("(undecodable error_res)") : str(res->reason()));
    const char* request = res == nullptr ? "?" : proto::EnumNamemsg_type(res->request());
    if (phase_ != load_phase::running) {
        if (res != nullptr && res->request() == proto::msg_type::login_req && c.state == client_state::logging_in &&
            (code == proto::error_code::server_busy || code == proto::error_code::rate_limited)) {
            // "Retry later" (the server's login queue or its login throttle): what a real client
            // does, with a doubling pause (20 ms .. 1 s) spread by client so retries do not
            // arrive together. --setup-timeout bounds the whole.
            const std::uint32_t doublings = std::min<std::uint32_t>(c.login_attempts, 6);
            const std::int64_t pause_ms =
                std::min<std::int64_t>(std::int64_t{20} << doublings, 1000) + (c.index * 7919u) % 20;
            const std::int64_t now = now_ns();
            c.login_retry_at = now + pause_ms * 1'000'000;
            login_waiting_.push_back(&c);
            // Fewer logins in flight: the server admits so many at a time, and a client that
            // keeps losing the race for a place would run into the server's login timeout.
            if (now - window_cut_at_ > 50'000'000) {
                login_window_ = std::max<std::uint32_t>(login_window_ / 2, 4);
                window_cut_at_ = now;
            }
            return;
        }
        setup_failure(c, std::string(request) + " failed: " + error_name(code) + ": " + reason);
        return;
    }
    const auto slot = std::min<std::size_t>(static_cast<std::size_t>(code), error_slots - 1);
    ++now_sink_->errors[slot];
    if (res != nullptr && res->request() == proto::msg_type::chat_req) {
        // A refused message owes no deliveries: it is an error, not a loss.
        const std::uint32_t owed = shared_.room_members[c.room];
        now_sink_->refused += owed;
        expected_all_ -= owed;
    }
    shared_.warn(shared_.warned_errors, 20, "client {}: {} failed: {}: {}", c.index, request, error_name(code), reason);
}

void load_worker::on_chat(load_client& c, std::span<const std::byte> frame, std::int64_t now) {
    const auto* msg = body_as<proto::chat_msg>(frame);
    if (msg == nullptr || msg->sender() == nullptr || c.state != client_state::in_room) {
        ++now_sink_->corrupt;
        shared_.warn(shared_.warned_corrupt, 20, "client {}: chat_msg {}", c.index,
                     msg == nullptr ? "does not verify" : "without sender or outside a room");
        return;
    }
    const std::uint64_t sender = msg->sender()->id();
    const auto ts = static_cast<std::int64_t>(msg->client_ts());
    const auto it = shared_.index_of_player.find(sender);
    const std::uint64_t room = shared_.room_ids[c.room].load(std::memory_order_relaxed);
    if (it == shared_.index_of_player.end() || it->second % shared_.opt.rooms != c.room || msg->room_id() != room ||
        ts > now || msg->client_seq() == 0) {
        ++sink_for_sent(ts).corrupt;
        shared_.warn(shared_.warned_corrupt, 20,
                     "client {}: chat_msg from player {} in room {} (seq {}) is not from a member of "
                     "room {}, or carries an impossible client_ts/client_seq",
                     c.index, sender, msg->room_id(), msg->seq(), room);
        return;
    }
    c.heard_chat = true;
    load_stats& s = sink_for_sent(ts);
    const std::uint32_t slot = it->second / shared_.opt.rooms;
    const delivery_verdict v = c.checker.on_message(msg->seq(), slot, msg->client_seq());
    switch (v) {
        case delivery_verdict::duplicate:
            ++s.duplicates;
            shared_.warn(shared_.warned_order, 20, "client {}: duplicate chat_msg room seq {} (client_seq {} of {})",
                         c.index, msg->seq(), msg->client_seq(), sender);
            return;
        case delivery_verdict::out_of_order:
            ++s.out_of_order;
            shared_.warn(shared_.warned_order, 20, "client {}: chat_msg room seq {} arrived after seq {}", c.index,
                         msg->seq(), c.checker.last_seq());
            break;
        case delivery_verdict::gap:
            ++s.gaps;
            shared_.warn(shared_.warned_order, 20, "client {}: room seq jumped to {} (messages missing)", c.index,
                         msg->seq());
            break;
        case delivery_verdict::in_order: break;
    }
    const auto* text = msg->text();
    if (!shared_.text.matches(sender, msg->client_seq(), str(text))) {
        ++s.corrupt;
        shared_.warn(shared_.warned_corrupt, 20,
                     "client {}: text of room seq {} (client_seq {} of player {}) "
                     "differs from what was sent ({} bytes received)",
                     c.index, msg->seq(), msg->client_seq(), sender, text == nullptr ? 0u : text->size());
        return;
    }
    ++s.delivered;
    ++delivered_all_;
    if (sender == c.player_id) ++s.acked;
    // Latency into the row of the receipt (the sink of a warmup message is the warmup).
    s.latency.record(static_cast<std::uint64_t>(now - ts));
    // Split at the server's stamp. Both clocks are this machine's; a stamp that maps outside
    // [send, receipt] (a wall-clock step) is left out of the split rather than clamped.
    const std::int64_t at_server = static_cast<std::int64_t>(msg->server_ts_us()) * 1000 - shared_.wall_minus_steady_ns;
    if (at_server >= ts && at_server <= now) {
        if (sender == c.player_id) s.to_server.record(static_cast<std::uint64_t>(at_server - ts));
        s.from_server.record(static_cast<std::uint64_t>(now - at_server));
    }
}

void load_worker::close_client(load_client& c, const std::string& why) {
    if (c.state == client_state::closed) return;
    const client_state was = c.state;
    c.tls.reset();
    ::epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    c.fd = -1;
    c.state = client_state::closed;
    ++disconnects_;
    ++now_sink_->disconnects;
    if (phase_ != load_phase::running || was != client_state::in_room) {
        setup_failure(c, why);
        return;
    }
    shared_.warn(shared_.warned_other, 20, "client {}: {}", c.index, why);
}

}  // namespace strix::chat
