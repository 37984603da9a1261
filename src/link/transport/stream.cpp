// tcp:// and ipc://: a socket's ZMTP peers over net sessions. Each bind and each connect has a
// session group of its own (endpoint::parse tells tcp from ipc), holding the listener or the
// connection, the sessions they made, and the socket's options as they were at the bind or
// connect: libzmq's listeners and connecting sessions keep a copy of the options, so an option
// set later applies to later binds and connects, and unbind or disconnect ends one group. Each
// session gets its ZMTP pipe from its group's zmtp_peers (zmtp/zmtp_pipe.hpp).
#include "link/socket_core.hpp"
#include "link/transport/transport.hpp"
#include "link/zmtp/zmtp_pipe.hpp"

#include <strix/net/connection.hpp>
#include <strix/net/endpoint.hpp>
#include <strix/net/session_group.hpp>

#include <algorithm>
#include <memory>
#include <system_error>
#include <vector>

namespace strix::link::detail {
namespace {

// The name an endpoint is found by at unbind and disconnect: "tcp://*:N" and "tcp://0.0.0.0:N"
// are one address, as libzmq resolves them.
std::string endpoint_key(endpoint ep) {
    if (ep.kind == endpoint::transport::tcp && ep.host == "*") ep.host = "0.0.0.0";
    return ep.to_string();
}

// One bind or connect: its listener or connection, its sessions, its options.
struct stream_endpoint {
    stream_endpoint(socket_core& c, std::shared_ptr<const socket_options> o)
        : opts(std::move(o)), peers(c, *opts), group(c.owner, peers, zmtp_group_config(*opts)) {}

    std::shared_ptr<const socket_options> opts;
    zmtp_peers peers;  // before group: the group's sessions report to it until the group is gone
    session_group group;
    connection_ptr conn;     // a connect's connection (after group: it goes first)
    std::string key;         // bind: the bound address's key; connect: the address's
    std::string given_key;   // bind: the address given, when it named a port
    std::string bound;       // bind: what bind() returned (the monitor's endpoint)
    bool retired = false;    // unbound or disconnected: goes once its sessions are gone
    bool close_pending = false;  // its sessions close at the next prune
};

class stream_transport final : public transport_state {
public:
    explicit stream_transport(socket_core& c) : core_(c) {}

    ~stream_transport() override {
        for (auto& e : endpoints_)
            if (e->conn) e->conn->close();
        endpoints_.clear();  // each group aborts its sessions; its zmtp_peers detaches their pipes
    }

    std::string bind(std::string_view address) override {
        const endpoint ep = endpoint::parse(address);
        auto e = std::make_unique<stream_endpoint>(core_, core_.options_snapshot());
        const endpoint at = e->group.listen(ep);
        e->bound = at.to_string();
        e->key = endpoint_key(at);
        if (ep.kind != endpoint::transport::tcp || ep.port != 0) e->given_key = endpoint_key(ep);
        endpoints_.push_back(std::move(e));
        core_.event(socket_event::kind::listening, endpoints_.back()->bound);
        return endpoints_.back()->bound;
    }

    void connect(std::string_view address) override {
        const endpoint ep = endpoint::parse(address);
        auto e = std::make_unique<stream_endpoint>(core_, core_.options_snapshot());
        const socket_options& o = *e->opts;
        connect_options co;
        co.reconnect = true;
        co.reconnect_initial = o.reconnect_ivl;
        co.reconnect_max = std::max(o.reconnect_ivl_max, o.reconnect_ivl);
        co.keepalive = {o.tcp_keepalive, o.tcp_keepalive_idle, o.tcp_keepalive_intvl, o.tcp_keepalive_cnt};
        e->conn = e->group.connect(ep, co);
        e->key = endpoint_key(ep);
        endpoints_.push_back(std::move(e));
    }

    // unbind and disconnect may be called from a callback of one of the sessions they end (an
    // on_message): the listener goes now, the sessions after the turn (prune).
    void unbind(std::string_view address) override {
        for (stream_endpoint* e : find(address, true)) {
            e->retired = e->close_pending = true;
            e->group.stop_listening();  // the port or path is free at return
            core_.event(socket_event::kind::closed, e->bound);
        }
    }

    void disconnect(std::string_view address) override {
        for (stream_endpoint* e : find(address, false)) {
            e->retired = e->close_pending = true;
            if (!e->conn->current()) e->conn->close();  // no session to end: no more attempts, now
        }
    }

    void close() override {
        for (auto& e : endpoints_) {
            if (e->conn) e->conn->close();  // its session flushes, then closes
            e->group.close_all(make_error_code(link_errc::closed));  // listeners go; sessions flush
        }
    }

    void abort() override {
        for (auto& e : endpoints_) e->group.abort_all(make_error_code(link_errc::closed));
    }

    std::size_t flushing() const noexcept override {
        std::size_t n = 0;
        for (auto& e : endpoints_) n += e->group.size();
        return n;
    }

    void pause(bool on) override {
        // Sessions opened later start paused too (zmtp_peers::on_open reads socket_core::paused).
        for (auto& e : endpoints_) e->group.for_each([on](session& s) { s.suspend_reading(on); });
    }

    void options_changed() override {
        // The linger is the socket's at close, for every connection (libzmq reads it at close too).
        const auto linger = zmtp_group_config(core_.opts).limits.close_linger;
        for (auto& e : endpoints_) e->group.set_close_linger(linger);
    }

    bool prune() override {
        // After the turn (socket_core::prune_later): nothing of a retired group is in use now.
        std::erase_if(endpoints_,
                      [](const auto& e) { return e->retired && !e->close_pending && e->group.size() == 0; });
        bool again = false;
        for (auto& e : endpoints_) {
            if (!e->close_pending) continue;
            e->close_pending = false;
            again = true;  // the next turn's pass drops it once its sessions are gone
            if (e->conn) {
                // No more attempts; what the connection holds is dropped (libzmq terminates the
                // endpoint's pipe without waiting for its messages).
                e->conn->close();
                e->group.abort_all(make_error_code(link_errc::closed));
            } else {
                // The peers the listener accepted flush what they hold within the linger, as
                // libzmq's do.
                e->group.close_all(make_error_code(link_errc::closed));
            }
        }
        return again;
    }

private:
    // The live binds (bound) or connects named by address; throws when there is none.
    std::vector<stream_endpoint*> find(std::string_view address, bool bound) {
        const std::string key = endpoint_key(endpoint::parse(address));
        std::vector<stream_endpoint*> found;
        for (auto& e : endpoints_) {
            if (e->retired || (e->conn != nullptr) == bound) continue;
            if (e->key == key || (bound && e->given_key == key)) found.push_back(e.get());
        }
        if (found.empty())
            throw std::system_error(std::make_error_code(std::errc::no_such_file_or_directory),
                                    std::string(bound ? "unbind " : "disconnect ") + std::string(address));
        return found;
    }

    socket_core& core_;
    std::vector<std::unique_ptr<stream_endpoint>> endpoints_;
};

}  // namespace

std::unique_ptr<transport_state> make_stream_transport(socket_core& c) { return std::make_unique<stream_transport>(c); }

}  // namespace strix::link::detail
