// proxy(): forwards between two blocking sockets, steered by a control socket.
#include <strix/link/poll.hpp>
#include <strix/link/proxy.hpp>

#include <array>
#include <cstring>

namespace strix::link {
namespace {

// Messages moved per side before looking at the other side and the control socket again, so
// neither direction starves the other and a TERMINATE is heard within one batch.
constexpr int batch = 256;

std::uint64_t bytes_of(const message& m) noexcept {
    std::uint64_t n = 0;
    for (auto& p : m) n += p.size();
    return n;
}

// Moves up to `batch` waiting messages from `from` to `to` (and a copy to capture).
void forward(blocking_socket& from, blocking_socket& to, blocking_socket* capture, proxy_stats::side& in,
             proxy_stats::side& out) {
    for (int i = 0; i < batch; ++i) {
        auto m = from.recv(std::chrono::milliseconds(0));
        if (!m) return;
        const std::uint64_t b = bytes_of(*m);
        ++in.messages_in;
        in.bytes_in += b;
        if (capture) capture->send(*m);
        // Waits while `to` is at its mark: the proxy passes the back-pressure on.
        if (!to.send(*m)) {
            ++out.messages_out;
            out.bytes_out += b;
        }
    }
}

message statistics(const proxy_stats& s) {
    const std::array<std::uint64_t, 8> v{s.frontend.messages_in, s.frontend.bytes_in,   s.frontend.messages_out,
                                         s.frontend.bytes_out,   s.backend.messages_in, s.backend.bytes_in,
                                         s.backend.messages_out, s.backend.bytes_out};
    message m;
    for (std::uint64_t x : v) {
        std::byte b[sizeof x];
        std::memcpy(b, &x, sizeof x);
        m.add(bytes_view(b, sizeof b));
    }
    return m;
}

}  // namespace

proxy_stats proxy(blocking_socket& frontend, blocking_socket& backend, blocking_socket* capture,
                  blocking_socket* control) {
    proxy_stats st;
    bool paused = false;
    const bool reply_always = control && control->type() == socket_type::rep;
    for (;;) {
        std::array<poll_item, 3> items{{{&frontend, paused ? std::uint8_t(0) : std::uint8_t(poll_in), 0},
                                        {&backend, paused ? std::uint8_t(0) : std::uint8_t(poll_in), 0},
                                        {control, control ? std::uint8_t(poll_in) : std::uint8_t(0), 0}}};
        if (poll(items, std::chrono::milliseconds(-1)) == 0) {
            // Only an interrupted socket ends a wait without a timeout empty-handed.
            if (frontend.interrupted() || backend.interrupted() || (control && control->interrupted())) return st;
            continue;
        }
        if (items[2].revents & poll_in) {
            auto cmd = control->recv(std::chrono::milliseconds(0));
            const std::string_view c = cmd && cmd->size() == 1 ? (*cmd)[0].text() : std::string_view();
            if (c == "STATISTICS") {
                control->send(statistics(st));
            } else {
                if (c == "PAUSE") paused = true;
                if (c == "RESUME") paused = false;
                if (reply_always) control->send(std::string_view());
                if (c == "TERMINATE") return st;
            }
            continue;  // the new state decides what to poll for
        }
        if (items[0].revents & poll_in) forward(frontend, backend, capture, st.frontend, st.backend);
        if (items[1].revents & poll_in) forward(backend, frontend, capture, st.backend, st.frontend);
    }
}

}  // namespace strix::link
