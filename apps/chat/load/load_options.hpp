#pragma once
// load_options: strix-chat-load's command line (the Chat server portfolio's DummyClient profile by
// default: 500 clients, 10 rooms, 10 chat messages per second per client, 64 B 80 % / 256 B 18 % /
// 1-2 KB 2 %).

#include "payload_mix.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace strix::chat {

struct load_options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 7000;
    std::string unix_path;  ///< when set, connect over this Unix socket instead of host:port
    /// --targets host:port,...: the nodes of a cluster. Client i (room i % rooms, member number
    /// i / rooms of it) connects to targets[(i / rooms) % n], so every room has members on
    /// every node (i % n would put a whole room on one node when n divides --rooms). Empty:
    /// host:port.
    std::vector<std::string> targets;
    bool tls = false;         ///< TLS on every connection, the server's certificate verified
    std::string ca_file;      ///< trust anchors for --tls; empty: the system's trust store
    std::string server_name;  ///< the name the certificate must carry (and SNI); empty: host
    bool ws = false;             ///< WebSocket: --port is the server's --ws-port (load_ws.hpp)
    std::string ws_path = "/ws";  ///< the server's --ws-path
    std::uint32_t clients = 500;
    std::uint32_t rooms = 10;  ///< with --rooms-per-client: the group rooms in all (clients * K / M)
    /// --rooms-per-client K: the conversations workload (conversation_layout.hpp): protocol
    /// version 2, each client in K group rooms of --room-size members and, with --dm-share, a
    /// share of its messages direct to --dm-partners partners. 0: the single-room workload.
    std::uint32_t rooms_per_client = 0;
    std::uint32_t room_size = 50;
    double dm_share = 0;             ///< share (0..1) of the messages that are direct messages
    std::uint32_t dm_partners = 2;   ///< direct partners per client (0 when dm_share is 0)
    double rps = 10.0;  ///< chat_req per second per client
    std::string mix_spec = "64:80,256:18,1024-2048:2";
    payload_mix mix;
    double duration_s = 250;  ///< measured seconds (per step in --sweep, default 10 there)
    double report_every_s = 10;
    double warmup_s = 2;  ///< seconds of load before measuring (per step in --sweep, default 1)
    std::string json;
    bool sweep = false;
    double sweep_factor = 1.5;
    std::uint32_t sweep_steps = 12;
    double sweep_p99_ms = 10;
    std::string password = "strix-load";
    std::string name_prefix = "load";
    double connect_rate = 0;  ///< new connections per second, 0 = as fast as logins complete
    /// Against a 127.x.y.z server, client i connects from source address 127.0.0.1 + i / N, so a
    /// server's per-address connection cap sees N clients per host (0: the kernel picks, all
    /// from one address).
    std::uint32_t clients_per_source = 100;
    std::uint32_t threads = 1;
    double drain_timeout_s = 10;
    double setup_timeout_s = 120;
    long server_pid = 0;  ///< report this process's CPU use per step (from /proc/PID/stat)
    /// --reconnect-share P: P (0..1) of the clients reset their connection once at a random moment
    /// of the run and reconnect (to the next --targets node), log in with their resume token and
    /// get what they missed through resume_req (history_req after a gap answer).
    double reconnect_share = 0;
    /// --reconnect: a client whose connection the server side loses during the run (a node
    /// killed: reset, closed, refused) reconnects the same way. Implied by --reconnect-share.
    bool reconnect = false;
    std::uint32_t poll_spin_us = 0;  ///< keep polling this long after a turn with events (0 = sleep at once)
    std::string command_line;  ///< argv joined, for the report
};

/// Deliveries each message owes on average: the room size (single-room workload: clients / rooms;
/// conversations: --room-size, 2 for the --dm-share sent direct). Any thread.
inline double planned_fan_out(const load_options& o) {
    if (o.rooms_per_client == 0) return static_cast<double>(o.clients) / static_cast<double>(o.rooms);
    return (1 - o.dm_share) * o.room_size + o.dm_share * 2;
}

/// Parses argv into options. Prints the help and exits 0 on --help; prints one sentence naming the
/// bad option and exits 2 on anything invalid. Main thread only.
load_options parse_load_options(int argc, char** argv);

}  // namespace strix::chat
