// tcp:// and ipc://: a socket's ZMTP peers over net sessions. One session group per socket holds
// the listeners and connections of both schemes (endpoint::parse tells them apart); each session
// gets its ZMTP pipe from zmtp_peers (zmtp/zmtp_pipe.hpp).
#include "link/socket_core.hpp"
#include "link/transport/transport.hpp"
#include "link/zmtp/zmtp_pipe.hpp"

#include <strix/net/connection.hpp>
#include <strix/net/endpoint.hpp>
#include <strix/net/session_group.hpp>

#include <algorithm>
#include <memory>
#include <vector>

namespace strix::link::detail {
namespace {

class stream_transport final : public transport_state {
public:
    explicit stream_transport(socket_core& c)
        : core_(c), peers_(c), group_(c.owner, peers_, zmtp_group_config(c.opts)) {}

    ~stream_transport() override {
        for (auto& conn : connections_) conn->close();
        connections_.clear();
        // group_ goes next: it aborts its sessions, and peers_ (still alive) detaches their pipes.
    }

    std::string bind(std::string_view address) override {
        const endpoint ep = group_.listen(endpoint::parse(address));
        const std::string bound = ep.to_string();
        core_.event(socket_event::kind::listening, bound);
        return bound;
    }

    void connect(std::string_view address) override {
        const socket_options& o = core_.opts;
        connect_options co;
        co.reconnect = true;
        co.reconnect_initial = o.reconnect_ivl;
        co.reconnect_max = std::max(o.reconnect_ivl_max, o.reconnect_ivl);
        co.keepalive = {o.tcp_keepalive, o.tcp_keepalive_idle, o.tcp_keepalive_intvl, o.tcp_keepalive_cnt};
        connections_.push_back(group_.connect(endpoint::parse(address), co));
    }

    void close() override {
        for (auto& conn : connections_) conn->close();  // its session flushes, then closes
        connections_.clear();
        group_.close_all(make_error_code(link_errc::closed));  // listeners go; sessions flush
    }

    void abort() override { group_.abort_all(make_error_code(link_errc::closed)); }

    std::size_t flushing() const noexcept override { return group_.size(); }

    void pause(bool on) override {
        // Sessions opened later start paused too (zmtp_peers::on_open reads socket_core::paused).
        group_.for_each([on](session& s) { s.suspend_reading(on); });
    }

private:
    socket_core& core_;
    zmtp_peers peers_;  // before group_: the group's sessions report to it until the group is gone
    session_group group_;
    std::vector<connection_ptr> connections_;
};

}  // namespace

std::unique_ptr<transport_state> make_stream_transport(socket_core& c) { return std::make_unique<stream_transport>(c); }

}  // namespace strix::link::detail
