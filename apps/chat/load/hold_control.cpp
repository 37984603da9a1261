#include "hold_control.hpp"

#include "hold_worker.hpp"

#include "apps/chat/common/chat_frame.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace strix::chat::hold {
namespace {

constexpr std::int64_t setup_timeout_ns = 30'000'000'000;

std::string_view str(const flatbuffers::String* s) {
    return s == nullptr ? std::string_view{} : std::string_view(s->data(), s->size());
}

}  // namespace

hold_control::hold_control(const hold_shared& shared)
    : shared_(shared), decoder_(codec_limits{256u << 20}), in_(256 * 1024) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in to = shared.target;
    to.sin_port = htons(shared.opt.control_port);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0)
        throw std::runtime_error("the control connection to " + shared.opt.host + ":" +
                                 std::to_string(shared.opt.control_port) + " failed: " + std::strerror(errno));
    for (int attempt = 0;; ++attempt) {
        out_.clear();
        append_login(out_, fbb_, shared.jwt.sign(shared.opt.name_prefix + "ctl", 0));
        send();
        login_busy_ = false;
        wait([&] { return logged_in_ || login_busy_ || !refusal_.empty(); }, "login_res");
        if (logged_in_) break;
        if (!refusal_.empty()) throw std::runtime_error("the control login was refused: " + refusal_);
        if (attempt == 100) throw std::runtime_error("the control login got server_busy 100 times");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

hold_control::~hold_control() {
    if (fd_ >= 0) ::close(fd_);
}

void hold_control::send() {
    last_send_ns_ = now_ns();
    std::size_t at = 0;
    while (at < out_.size()) {
        const ssize_t n = ::send(fd_, out_.data() + at, out_.size() - at, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error(std::string("the control connection failed: ") + std::strerror(errno));
        at += static_cast<std::size_t>(n);
    }
    out_.clear();
}

template <class Pred>
void hold_control::wait(Pred done, const char* what) {
    const std::int64_t deadline = now_ns() + setup_timeout_ns;
    while (!done()) {
        if (now_ns() > deadline) throw std::runtime_error(std::string("the control connection got no ") + what);
        pump(100);
    }
}

void hold_control::pump(int timeout_ms) {
    // Pings like the held connections (every 60 s without --ping-interval), so a ramp or a hold
    // longer than the server's idle timeout (300 s) keeps it: a million over a slow ramp took
    // longer, and the server closed it mid-ramp.
    const double every_s = shared_.opt.ping_interval_s > 0 ? shared_.opt.ping_interval_s : 60.0;
    if (now_ns() - last_send_ns_ >= static_cast<std::int64_t>(every_s * 1e9)) {
        append_ping(out_, fbb_, static_cast<std::uint64_t>(now_ns() / 1000));
        send();
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return;
    for (;;) {
        const ssize_t n = ::recv(fd_, in_.data(), in_.size(), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        if (n <= 0) throw std::runtime_error("the server closed the control connection");
        const frame_errc e =
            decoder_.feed(std::span(in_.data(), static_cast<std::size_t>(n)), [&](const frame_view& v) {
                on_frame(std::span(v.body.data() - frame_header_size, v.header.length));
            });
        if (e != frame_errc::ok && e != frame_errc::need_more)
            throw std::runtime_error("the control connection read a broken frame stream");
        if (static_cast<std::size_t>(n) < in_.size()) return;
    }
}

void hold_control::on_frame(std::span<const std::byte> frame) {
    ++frames_;
    switch (type_of(frame)) {
        case proto::msg_type::login_res: {
            const auto* r = body_as<proto::login_res>(frame);
            if (r == nullptr || r->player() == nullptr) throw std::runtime_error("a bad login_res");
            player_ = r->player()->id();
            if (r->rooms() != nullptr)
                for (const auto* ref : *r->rooms()) member_of_.push_back(ref->id());
            logged_in_ = true;
            return;
        }
        case proto::msg_type::list_rooms_res: {
            const auto* r = body_as<proto::list_rooms_res>(frame);
            if (r != nullptr && r->rooms() != nullptr)
                for (const auto* info : *r->rooms()) listed_rooms_.emplace(std::string(str(info->name())), info->id());
            listed_ = true;
            return;
        }
        case proto::msg_type::create_room_res: {
            const auto* r = body_as<proto::create_room_res>(frame);
            if (r != nullptr && r->room() != nullptr) created_ = r->room()->id();
            return;
        }
        case proto::msg_type::join_room_res: {
            const auto* r = body_as<proto::join_room_res>(frame);
            if (r != nullptr && r->room() != nullptr) joined_[r->room()->id()] = r->last_seq();
            return;
        }
        case proto::msg_type::chat_msg: {
            const auto* m = body_as<proto::chat_msg>(frame);
            if (m != nullptr && m->room_id() == room_ && m->sender() != nullptr && m->sender()->id() == player_)
                own_[static_cast<std::uint32_t>(m->client_seq())] = m->seq();
            return;
        }
        case proto::msg_type::error_res: {
            const auto* e = body_as<proto::error_res>(frame);
            if (e == nullptr) return;
            if (e->request() == proto::msg_type::login_req && e->code() == proto::error_code::server_busy) {
                login_busy_ = true;
                return;
            }
            refusal_ = std::string(proto::EnumNameerror_code(e->code())) + ": " + std::string(str(e->reason()));
            return;
        }
        default: return;  // notices of the held connections' joins, pongs
    }
}

void hold_control::enter_room(const std::string& name) {
    append_list_rooms(out_, fbb_);
    send();
    wait([&] { return listed_ || !refusal_.empty(); }, "list_rooms_res");
    auto it = listed_rooms_.find(name);
    if (it == listed_rooms_.end()) {
        append_create_room(out_, fbb_, name);
        send();
        wait([&] { return created_ != 0 || !refusal_.empty(); }, "create_room_res");
        if (created_ == 0) throw std::runtime_error("create_room_req was refused: " + refusal_);
        room_ = created_;
        last_seq_ = 0;
        return;
    }
    room_ = it->second;
    bool member = false;
    for (const auto id : member_of_) member = member || id == room_;
    if (!member) {
        append_join(out_, fbb_, room_);
        send();
    }
    // A member already: the login put it back, and its join_room_res is on the way.
    wait([&] { return joined_.contains(room_) || !refusal_.empty(); }, "join_room_res");
    if (!joined_.contains(room_)) throw std::runtime_error("join_room_req was refused: " + refusal_);
    last_seq_ = joined_[room_];
}

void hold_control::post(std::uint32_t k, const std::string& text) {
    append_chat(out_, fbb_, room_, text, static_cast<std::uint64_t>(now_ns() / 1000), k);
    send();
}

std::uint64_t hold_control::seq_of(std::uint32_t k) const {
    const auto it = own_.find(k);
    return it == own_.end() ? 0 : it->second;
}

}  // namespace strix::chat::hold
