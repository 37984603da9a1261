// message_properties (strix/link/message.hpp) and the set a connection builds at its handshake.
#include "link/properties.hpp"

#include <strix/link/zmtp.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

namespace strix::link {

// Each thread's reserve (detail::properties_tls) holds references to one set: the one it took a
// reference to last. Invariant: a set's count = the references its pointers hold + the
// references in reserves. A reserve with none left owns nothing, so its `of` may name a set that
// is gone (it is then only compared). The reserve is trivially destructible, so that releases
// from other thread-local destructors still find it; reserve_guard hands its references back
// when the thread ends.
struct reserve_access {
    static constexpr std::uint64_t batch = 1024;

    // The reserve turns to p: what it held of the previous set goes back to that set's count.
    static void turn_to(detail::properties_reserve& r, const message_properties* p) noexcept {
        if (r.refs) r.of->drop(r.refs);
        r.of = p;
        r.refs = 0;
    }
};

namespace {

struct reserve_guard {
    ~reserve_guard() {
        reserve_access::turn_to(detail::properties_tls, nullptr);
        detail::properties_tls.gone = true;
    }
};

}  // namespace

void message_properties::drop(std::uint64_t n) const noexcept {
    // acq_rel: the thread that frees must see every write made by the other holders.
    if (refs_.fetch_sub(n, std::memory_order_acq_rel) == n) delete this;
}

void message_properties::take_reference_slow() const noexcept {
    detail::properties_reserve& r = detail::properties_tls;
    if (r.gone) {
        refs_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    static thread_local reserve_guard guard;
    (void)guard;
    if (r.of != this) reserve_access::turn_to(r, this);
    refs_.fetch_add(reserve_access::batch, std::memory_order_relaxed);
    r.refs = reserve_access::batch - 1;  // and one for the caller
}

const std::string* message_properties::get(std::string_view name) const noexcept {
    for (auto& [n, v] : entries_)
        if (zmtp::iequals(n, name)) return &v;
    // libzmq reads the peer's "Identity" under its newer name too; either finds the other.
    if (zmtp::iequals(name, "Routing-Id")) return get("Identity");
    return nullptr;
}

namespace detail {

std::string peer_address_of(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (fd < 0 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
    char buf[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
        if (!::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, buf, sizeof buf)) return {};
        return buf;
    }
    if (ss.ss_family == AF_INET6) {
        if (!::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof buf)) return {};
        return buf;
    }
    if (ss.ss_family != AF_UNIX) return {};
    // libzmq names a Unix peer as getnameinfo does ("localhost") followed by its credentials.
    std::string out = "localhost";
    ucred cred{};
    socklen_t clen = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) {
        for (const auto v : {static_cast<long>(cred.uid), static_cast<long>(cred.gid), static_cast<long>(cred.pid)}) {
            out.push_back(':');
            out.append(std::to_string(v));
        }
    }
    return out;
}

message_properties_ptr make_properties(const std::string& peer_address, const zap_reply* zap, bytes_view announced) {
    std::vector<message_properties::entry> e;
    auto add = [&](std::string_view name, std::string_view value) {
        for (auto& [n, v] : e)
            if (n == name) return;
        e.emplace_back(std::string(name), std::string(value));
    };
    if (!peer_address.empty()) add("Peer-Address", peer_address);
    if (zap) {
        add("User-Id", zap->user_id);
        for (auto& [n, v] : zap->metadata) add(n, v);
    }
    zmtp::for_each_property(announced, [&](std::string_view name, bytes_view value) { add(name, as_text(value)); });
    return message_properties_ptr(new message_properties(std::move(e)));
}

}  // namespace detail
}  // namespace strix::link
