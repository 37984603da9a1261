// load_worker's setup: connect (with --tls the handshake, with --ws the upgrade), log in, retry
// logins the server asked to retry later, create or join the rooms, check the room list.
#include "load_worker.hpp"

#include "load_clock.hpp"

#include "apps/chat/common/chat_frame.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace strix::chat {

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
    return addrs_[c.target % addrs_.size()];
}

// A connection attempt failed: during setup the run cannot go on; a reconnecting client tries
// again (the next target) a moment later.
void load_worker::connect_failed(load_client& c, const std::string& why) {
    if (!c.reconnecting) {
        setup_failure(c, why);
        return;
    }
    if (c.state != client_state::closed) {
        close_client(c, why);  // goes on in lose()
        return;
    }
    release_socket(c);
    lose(c, now_ns(), why, false);
}

void load_worker::connect_one(load_client& c) {
    const peer_address& addr = target_of(c);
    shared_.node_of[c.index].store(c.target, std::memory_order_relaxed);
    c.fd = ::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0) {
        connect_failed(c, std::string("socket: ") + std::strerror(errno) +
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
                connect_failed(c, std::string("bind to a loopback source address: ") + std::strerror(errno) +
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
        connect_failed(c, std::string("epoll_ctl: ") + std::strerror(errno));
        return;
    }
    if (!c.reconnecting) ++in_flight_;
    c.state = client_state::connecting;
    c.decoder.reset();  // a reconnect must not inherit half a frame of the old connection
    c.out.clear();
    c.out_head = 0;
    const int rc = ::connect(c.fd, reinterpret_cast<const sockaddr*>(&addr.addr), addr.len);
    if (rc != 0 && errno != EINPROGRESS) {
        connect_failed(c, std::string("connect: ") + std::strerror(errno));
        return;
    }
    if (rc == 0) on_connected(c);
}

void load_worker::on_connected(load_client& c) {
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
        connect_failed(c, "connect to " + describe(target_of(c)) + ": " + std::strerror(err) +
                              " (is strix-chat-server running there?)");
        return;
    }
    if (!c.reconnecting) ++connected_;
    if (shared_.tls != nullptr) {
        const load_options& o = shared_.opt;
        try {
            c.tls =
                std::make_unique<client_tls_conn>(*shared_.tls, c.fd, o.server_name.empty() ? o.host : o.server_name);
        } catch (const std::runtime_error& e) {
            connect_failed(c, e.what());
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
        connect_failed(c, c.tls->error());
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
    if (c.reconnecting && !c.resume_token.empty()) {
        // The resume token instead of the password: no password hash on the server.
        const auto n = fbb_.CreateString(name);
        const auto t = fbb_.CreateVector(c.resume_token);
        fbb_.Finish(proto::Createlogin_req(fbb_, n, {}, {}, t));
    } else if (layout_ != nullptr) {
        // The conversations workload: protocol version 2, many rooms per session.
        const auto n = fbb_.CreateString(name);
        const auto pw = fbb_.CreateString(shared_.opt.password);
        fbb_.Finish(proto::Createlogin_req(fbb_, n, pw, {}, {}, 2));
    } else {
        fbb_.Finish(proto::Createlogin_req(fbb_, fbb_.CreateString(name), fbb_.CreateString(shared_.opt.password)));
    }
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
}  // namespace strix::chat
