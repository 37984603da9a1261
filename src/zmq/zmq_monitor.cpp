// zmq_socket_monitor: a PAIR socket bound at the given inproc address that sends libzmq's
// two-frame events (uint16 event + uint32 value, then the endpoint). It is a shard socket on
// the monitored socket's shard, fed by blocking_socket::on_shard_event, so events go out while
// the application's thread is busy elsewhere. As in libzmq, events before the application's
// PAIR connected are not kept.
#include "zmq/zmq_shim.hpp"

#include <strix/core/engine.hpp>
#include <strix/link/socket.hpp>

#include <charconv>
#include <cstring>

namespace strix::zmq_abi {

struct monitor {
    link::context* lc = nullptr;
    unsigned shard = 0;
    std::unique_ptr<link::socket> pair;  // on `shard`
    int mask = 0;
};

namespace {

// libzmq's ZMQ_PROTOCOL_ERROR_ZAP_* code for link's zap_bad_reply detail.
std::uint32_t zap_error(std::string_view detail) noexcept {
    if (detail.find("malformed") != std::string_view::npos) return ZMQ_PROTOCOL_ERROR_ZAP_MALFORMED_REPLY;
    if (detail.find("bad version") != std::string_view::npos) return ZMQ_PROTOCOL_ERROR_ZAP_BAD_VERSION;
    if (detail.find("bad request id") != std::string_view::npos) return ZMQ_PROTOCOL_ERROR_ZAP_BAD_REQUEST_ID;
    if (detail.find("invalid status code") != std::string_view::npos) return ZMQ_PROTOCOL_ERROR_ZAP_INVALID_STATUS_CODE;
    if (detail.find("invalid metadata") != std::string_view::npos) return ZMQ_PROTOCOL_ERROR_ZAP_INVALID_METADATA;
    return ZMQ_PROTOCOL_ERROR_ZAP_UNSPECIFIED;
}

// libzmq's event number and value for a link event; 0 when libzmq has no such event.
std::pair<int, std::uint32_t> zmq_event(const link::socket_event& e) {
    using k = link::socket_event::kind;
    switch (e.what) {
        case k::listening: return {ZMQ_EVENT_LISTENING, 0};
        case k::accepted: return {ZMQ_EVENT_ACCEPTED, 0};
        case k::connected: return {ZMQ_EVENT_CONNECTED, 0};
        case k::connect_retried: return {ZMQ_EVENT_CONNECT_RETRIED, 0};
        case k::handshake_succeeded: return {ZMQ_EVENT_HANDSHAKE_SUCCEEDED, 0};
        case k::disconnected: return {ZMQ_EVENT_DISCONNECTED, 0};
        case k::closed: return {ZMQ_EVENT_CLOSED, 0};
        case k::handshake_failed: {
            if (e.error == link::link_errc::auth_failed) {
                std::uint32_t code = 0;
                std::from_chars(e.detail.data(), e.detail.data() + e.detail.size(), code);
                return {ZMQ_EVENT_HANDSHAKE_FAILED_AUTH, code ? code : 400};
            }
            if (e.error == link::link_errc::handshake_timeout) return {ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL, 0};
            // No ZAP handler for a PLAIN server: libzmq reports EFAULT without detail.
            if (e.error == link::link_errc::zap_unavailable) return {ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL, EFAULT};
            if (e.error == link::link_errc::zap_bad_reply)
                return {ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL, zap_error(e.detail)};
            if (e.error == link::link_errc::unsupported_mechanism)
                return {ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL, ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH};
            if (e.error == link::link_errc::bad_crypto)
                return {ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL, ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC};
            return {ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL, ZMQ_PROTOCOL_ERROR_ZMTP_UNSPECIFIED};
        }
        default: return {0, 0};
    }
}

// The two frames; dropped when the application's PAIR is not there to take them.
void send_event(link::socket& pair, int event, std::uint32_t value, std::string_view endpoint) {
    std::byte head[6];
    const auto ev = static_cast<std::uint16_t>(event);
    std::memcpy(head, &ev, 2);
    std::memcpy(head + 2, &value, 4);
    pair.send({link::bytes_view(head, 6), link::as_bytes(endpoint)});
}

}  // namespace

void stop_monitor(sock& s) {
    if (!s.mon) return;
    auto m = std::move(s.mon);
    if (s.bs) s.bs->on_shard_event({});
    m->lc->eng().run_on(m->shard, [&] {
        send_event(*m->pair, ZMQ_EVENT_MONITOR_STOPPED, 0, "");
        m->pair.reset();  // what it sent still reaches the application's PAIR
    });
}

}  // namespace strix::zmq_abi

using namespace strix::zmq_abi;

extern "C" {

int zmq_socket_monitor(void* s_, const char* addr, int events) {
    sock* s = as_sock(s_);
    if (!s) return -1;
    if (s->terminated()) return fail(ETERM);
    if (static_cast<std::uint64_t>(static_cast<std::int64_t>(events)) >> 16) return fail(EINVAL);  // v1: 16 bits
    if (!addr) {
        stop_monitor(*s);
        return 0;
    }
    if (std::strncmp(addr, "inproc://", 9) != 0) return fail(std::strstr(addr, "://") ? EPROTONOSUPPORT : EINVAL);
    try {
        stop_monitor(*s);
        strix::link::blocking_socket& bs = s->live();
        auto m = std::make_shared<monitor>();
        {
            std::lock_guard lk(s->owner->mu);
            m->lc = &s->owner->link_locked();
        }
        m->shard = bs.shard_index();
        m->mask = events;
        auto& eng = m->lc->eng();
        eng.run_on(m->shard, [&] {
            m->pair = std::make_unique<strix::link::socket>(eng.at(m->shard), strix::link::socket_type::pair);
            m->pair->bind(addr);
        });
        monitor* raw = m.get();
        bs.on_shard_event([raw](const strix::link::socket_event& e) {
            const auto [event, value] = zmq_event(e);
            if (event && (raw->mask & event) && raw->pair) send_event(*raw->pair, event, value, e.endpoint);
        });
        s->mon = std::move(m);
        return 0;
    } catch (...) {
        return fail(errno_of_exception());
    }
}

}  // extern "C"
