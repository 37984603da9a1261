#pragma once
// hold_options: strix-chat-hold's command line. The tool holds --connections idle logged-in chat
// connections (JWT logins, one account each, from many loopback source addresses), optionally all
// members of one --hold-room, pings each at --ping-interval, and with --broadcast K posts K
// messages in the room through a control connection and times each one's delivery to all of them.

#include <cstdint>
#include <string>

namespace strix::chat {

struct hold_options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 7000;     ///< the server's TCP port (the control connection uses it always)
    std::uint16_t control_port = 0;  ///< the control connection's port (0: --port), e.g. past a proxy
    std::uint16_t ws_port = 0;     ///< nonzero: the held connections are WebSockets to this port
    std::string ws_path = "/ws";
    std::uint32_t connections = 1000;
    std::string name_prefix = "h";  ///< held account i is PREFIX<i>; the control account PREFIXctl
    std::string jwt_key;            ///< HS256 secret file: the one given to the server's --jwt-key
    std::string jwt_audience;       ///< the server's --jwt-audience, when it has one
    std::string jwt_issuer;         ///< the server's --jwt-issuer, when it has one
    double jwt_ttl_s = 0;           ///< token lifetime; 0: the whole run plus an hour
    std::string hold_room;          ///< every held connection joins this room (created if missing)
    std::uint32_t room_members = 0;  ///< only connections 0..M-1 join the room (0: all of them)
    std::uint32_t broadcast = 0;    ///< messages the control connection posts in the room, at most 64
    std::uint32_t broadcast_bytes = 64;
    double broadcast_timeout_s = 30;  ///< per message: how long to wait for it to reach every member
    double hold_s = 20;               ///< seconds to hold once every connection is in
    double ramp_timeout_s = 300;      ///< give up connecting after this long
    double rate = 0;                  ///< new connections per second (all threads); 0: no pacing
    std::uint32_t in_flight = 64;  ///< connecting or logging in at once (all threads): the server's --login-queue
    double ping_interval_s = 60;      ///< each held connection pings this often (server idle: 300 s); 0: never
    std::string source_base = "127.1.0.1";  ///< the first source address
    std::uint32_t per_source = 250;   ///< connections per source address (server default cap: 256)
    std::uint32_t threads = 1;
    /// Once all are held, the least time between two reads of a worker's epoll set: after a wait
    /// that returned events the worker sleeps out the rest of it, so what arrives meanwhile queues
    /// on the set without waking it (0: wait on the set at once, as during the ramp).
    double read_every_us = 1000;
    std::string json;                 ///< also write the summary to this file
    bool reconnect = false;  ///< a held connection the server closes connects and logs in again
    /// Not an option: set when RLIMIT_NOFILE cannot fit the connections in one descriptor table,
    /// so each worker thread takes a table of its own (unshare(CLONE_FILES)) and holds its share.
    bool fd_table_per_thread = false;
};

/// Parses argv; prints the help and exits 0 on --help, one sentence and exit 2 on anything
/// invalid. Main thread only.
hold_options parse_hold_options(int argc, char** argv);

}  // namespace strix::chat
