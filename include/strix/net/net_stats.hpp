#pragma once
// Per-shard network counters, declared as metrics (strix/core/metrics.hpp). Each shard writes its
// own (single writer, relaxed, no lock prefix); server::register_metrics exposes them summed over
// the shards, server::stats() sums a snapshot from any thread.

#include <strix/core/metrics.hpp>

namespace strix {

struct net_counters : metric_group {
    // Sessions opened: accepted, or connected (below).
    counter accepted{*this, "strix_connections_accepted_total", "connections accepted"};
    counter connected{*this, "strix_connections_connected_total", "outbound connections established"};
    counter connect_failures{*this, "strix_connect_failures_total",
                             "outbound connection attempts that failed or timed out"};
    counter closed{*this, "strix_sessions_closed_total", "sessions closed"};
    gauge active{*this, "strix_sessions_active", "sessions open (accepted or connected)"};
    counter reads{*this, "strix_io_reads_total", "read system calls that returned data"};
    counter writes{*this, "strix_io_writes_total", "gather write system calls that wrote data"};
    counter bytes_in{*this, "strix_bytes_in_total", "bytes received from clients"};
    counter bytes_out{*this, "strix_bytes_out_total", "bytes sent to clients"};
    counter frames_in{*this, "strix_frames_in_total", "frames received (all sessions)"};
    counter sends{*this, "strix_session_sends_total", "session send calls (messages queued)"};
    counter frame_errors{*this, "strix_frame_errors_total", "connections closed for bad framing"};
    counter slow_consumers{*this, "strix_slow_consumer_disconnects_total", "sessions closed because they did not read"};
    counter idle_timeouts{*this, "strix_idle_timeouts_total",
                          "connections closed after session_limits::idle_timeout without receiving anything"};
    counter frame_timeouts{
        *this, "strix_frame_timeouts_total",
        "connections closed for a frame not completed within session_limits::frame_timeout of its first byte"};
    counter handshake_timeouts{
        *this, "strix_handshake_timeouts_total",
        "connections closed for not completing the handshake within session_limits::handshake_timeout"};
    // Accepted and closed at once (see admission.hpp).
    counter refused_max_sessions{*this, "strix_connections_refused_max_total",
                                 "connections refused at accept: server_config::max_sessions open"};
    counter refused_per_address{
        *this, "strix_connections_refused_per_address_total",
        "connections refused at accept: server_config::max_sessions_per_address open from that address"};
    // TLS (server_config::tls, connect_options::tls).
    counter tls_handshakes{*this, "strix_tls_handshakes_total", "TLS handshakes completed"};
    counter tls_resumed{*this, "strix_tls_resumed_total", "TLS handshakes that resumed an earlier session"};
    counter tls_failures{*this, "strix_tls_handshake_failures_total",
                         "TLS handshakes that failed (not TLS, refused certificate, peer left mid-handshake)"};
    counter tls_timeouts{*this, "strix_tls_handshake_timeouts_total",
                         "connections closed for not completing the TLS handshake in time"};
    counter tls_refused{*this, "strix_tls_handshakes_refused_total",
                        "connections closed at once: TLS handshakes in progress at the per-shard or per-address cap"};
    // WebSocket (strix/net/ws_protocol.hpp).
    counter ws_handshakes{*this, "strix_ws_handshakes_total", "WebSocket upgrades completed (server and client)"};
    counter ws_handshakes_refused{
        *this, "strix_ws_handshakes_refused_total",
        "WebSocket upgrades refused: bad request, origin, path, version, size (or a bad 101 seen by a client)"};
    counter ws_http_requests{*this, "strix_ws_http_requests_total", "plain HTTP requests answered on WebSocket ports"};
    counter ws_messages_in{*this, "strix_ws_messages_in_total", "WebSocket messages received (reassembled)"};
    counter ws_closes_normal{*this, "strix_ws_closes_handshake_total",
                             "WebSocket close handshakes: close frames received, or sent by ws_close"};
    counter ws_closes_protocol{
        *this, "strix_ws_closes_protocol_error_total",
        "WebSocket sessions closed with 1002: malformed or unmasked frames, RSV bits, bad control frames"};
    counter ws_closes_utf8{*this, "strix_ws_closes_invalid_payload_total",
                           "WebSocket sessions closed with 1007: text or close reason not UTF-8"};
    counter ws_closes_too_big{
        *this, "strix_ws_closes_too_big_total",
        "WebSocket sessions closed with 1009: message or frame above the limit, too many fragments"};
    counter ws_closes_policy{*this, "strix_ws_closes_policy_total",
                             "WebSocket sessions closed with 1008: ping flood, frame or handshake deadline"};
    counter accept_pauses{*this, "strix_accept_pauses_total",
                          "times accepting paused on EMFILE, ENFILE, ENOBUFS or ENOMEM"};
    counter read_pauses{*this, "strix_read_pauses_total",
                        "times a session stopped reading: its output passed the high-water mark"};
    gauge recv_buffers_in_use{*this, "strix_pool_in_use", "receive buffers taken from the per-shard pools"};
    gauge recv_buffers_peak{*this, "strix_pool_peak", "most receive buffers ever taken at once (summed over shards)"};
    counter recv_buffer_takes{*this, "strix_pool_allocs_total", "receive buffers taken from the per-shard pools"};
    counter recv_buffer_returns{*this, "strix_pool_frees_total", "receive buffers given back to the per-shard pools"};
    // The idle sweep (once a second per shard) looks only at the sessions that were active since
    // they last held nothing: its work follows activity, not the sessions open.
    counter sweep_looked{*this, "strix_idle_sweep_sessions_total",
                         "sessions the once-a-second idle sweeps looked at (active or holding buffers)"};
    gauge sweep_listed{*this, "strix_idle_sweep_listed",
                       "sessions the next idle sweep will look at (active or holding buffers)"};
    counter malloc_trims{
        *this, "strix_malloc_trims_total",
        "malloc_trim calls after the idle sweep returned megabytes (at most one per 10 s per process)"};
    counter malloc_trim_us{*this, "strix_malloc_trim_microseconds_total", "time spent in those malloc_trim calls"};
    gauge send_queued_bytes{*this, "strix_send_queued_bytes", "output queued on sessions (sampled each second)"};
    gauge send_queues_in_use{*this, "strix_send_buffers_in_use", "sessions with output queued (sampled each second)"};
    gauge send_queues_peak{*this, "strix_send_buffers_peak",
                           "largest sample of sessions with output queued, summed over shards"};
};

/// The counters summed over shards (server::stats()): a copy of net_counters whose members read
/// as plain numbers (srv.stats().frames_in == 500).
using net_stats = net_counters;

}  // namespace strix
