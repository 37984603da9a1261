#pragma once
// load_worker: one event-loop thread of the load tool. It owns the clients whose index is
// congruent to its id modulo the worker count, one epoll instance, one read buffer and one
// FlatBufferBuilder that all its clients share, so the hot path (send a chat_req, receive and
// verify a chat_msg) allocates nothing once buffers have grown to their working size.
//
// A loop turn:
//   1. adopt what the controller published (phase, step plan, finish request)
//   2. connect / log in / create / join as the phase asks
//   3. append the chat_req frames that are due (paced by a per-worker schedule)
//   4. one write() per client with pending bytes (with --tls: SSL_write, a record per call)
//   5. epoll_wait until the next send, interval boundary or control check
//   6. read, decode and verify what arrived; flush replies; publish counters
// Worker 0 additionally ticks the controller between turns. With --reconnect (or
// --reconnect-share) step 2 also resets the connections due to drop and brings lost clients back
// (load_worker_resume.cpp).
//
// Files: load_worker.cpp (the loop, control, step rows), load_worker_setup.cpp (connect, TLS,
// login, rooms), load_worker_io.cpp (sends, flushes, reads), load_worker_frames.cpp (replies and
// chat_msg verification), load_worker_resume.cpp (reconnect, resume, history refill),
// load_worker_conv.cpp (the conversations workload: many rooms, direct pairs, per conversation
// verification).

#include "load_client.hpp"
#include "load_shared.hpp"

#include <flatbuffers/flatbuffers.h>
#include <strix/proto/chat_generated.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <sys/socket.h>

namespace strix::chat {

/// Where the load tool connects: an IPv4 address and port, or a Unix socket path.
struct peer_address {
    sockaddr_storage addr{};
    socklen_t len = 0;
    int family() const noexcept { return addr.ss_family; }
};

/// "127.0.0.1:7000" or "unix:/path". Any thread.
std::string describe(const peer_address& a);

class load_controller;

class load_worker {
public:
    /// A worker for clients id, id + workers, id + 2*workers, ... connecting to `addrs` (one,
    /// or the --targets in order: client i to addrs[(i / rooms) % size]).
    /// Creating thread; run() may then be called on another thread.
    load_worker(load_shared& shared, std::vector<peer_address> addrs, std::uint32_t id, std::uint32_t workers);
    ~load_worker();
    load_worker(const load_worker&) = delete;
    load_worker& operator=(const load_worker&) = delete;

    /// Runs the event loop until the shared stop flag is set, then closes every socket. `ctl` is
    /// ticked between turns (worker 0 only; nullptr for the others). The worker's own thread.
    void run(load_controller* ctl);

    /// Sends list_rooms_req from client 0 (worker 0 owns it); the reply is checked against the
    /// rooms and member counts the run expects. Worker 0's thread only (from the controller).
    void request_room_list();

    /// 0 while the room list is pending, 1 when it matched, 2 when it did not (see
    /// rooms_problem()). Worker 0's thread only.
    int rooms_check() const noexcept { return rooms_check_; }
    /// What did not match in the room list. Worker 0's thread only.
    const std::string& rooms_problem() const noexcept { return rooms_problem_; }

private:
    // Logins (connects included) one worker keeps in flight at most: enough to hide the round trips,
    // few enough that a slow password hash does not pile up hundreds of requests at once.
    static constexpr std::uint32_t max_logins_in_flight = 128;

    std::int64_t control(std::int64_t now);
    void adopt_plan();
    void finish_step();
    void roll_rows(std::int64_t now);
    void connect_some(std::int64_t now);
    void connect_one(load_client& c);
    void enter_rooms(load_phase p);
    std::int64_t send_due(std::int64_t now);
    void send_chat(load_client& c, std::int64_t now);
    void on_event(load_client& c, std::uint32_t ev);
    void on_connected(load_client& c);
    void step_handshake(load_client& c);
    void start_session(load_client& c);
    void send_login(load_client& c);
    std::int64_t retry_logins(std::int64_t now);
    void on_readable(load_client& c, bool hangup);
    void read_tls(load_client& c);
    bool take(load_client& c, std::size_t n);
    void on_frame(load_client& c, std::span<const std::byte> frame, std::int64_t now);
    void on_chat(load_client& c, std::span<const std::byte> frame, std::int64_t now);
    void on_notice(load_client& c, proto::msg_type type, std::span<const std::byte> frame);
    void on_error_res(load_client& c, std::span<const std::byte> frame);
    void on_room_list(std::span<const std::byte> frame);
    void append_frame(load_client& c, proto::msg_type type);
    void mark_dirty(load_client& c);
    void flush(load_client& c);
    void write_interest(load_client& c, bool on);
    void flush_dirty();
    void close_client(load_client& c, const std::string& why);
    void release_socket(load_client& c);
    void connect_failed(load_client& c, const std::string& why);
    // --reconnect (load_worker_resume.cpp).
    void plan_drops();
    std::int64_t tick_reconnects(std::int64_t now);
    void drop(load_client& c, std::int64_t now);
    void lose(load_client& c, std::int64_t now, const std::string& why, bool on_purpose);
    void on_rejoined(load_client& c, const proto::join_room_res& res);
    void on_resume_res(load_client& c, std::span<const std::byte> frame);
    void on_history_res(load_client& c, std::span<const std::byte> frame);
    bool on_reconnect_error(load_client& c, const proto::error_res& res);
    void refill(load_client& c, const proto::chat_msg& m, bool from_history);
    void send_history(load_client& c);
    void finish_resume(load_client& c);
    void confirm_own(load_client& c, std::uint64_t client_seq, load_stats& s);
    void count_verdict(load_client& c, delivery_verdict v, const proto::chat_msg& m, std::uint64_t client_seq,
                       load_stats& s, const delivery_checker* checker = nullptr);
    // The conversations workload (load_worker_conv.cpp).
    void enter_conversations();
    void next_setup(load_client& c);
    void send_setup(load_client& c);
    void open_directs(std::uint32_t round);
    std::int64_t retry_setups(std::int64_t now);
    void on_conv_created(load_client& c, std::span<const std::byte> frame);
    void on_conv_joined(load_client& c, std::span<const std::byte> frame);
    void on_direct_joined(load_client& c, const proto::join_room_res& res);
    void direct_ready(load_client& c, std::uint32_t vi);
    void on_conv_chat(load_client& c, std::span<const std::byte> frame, std::int64_t now);
    void on_opening_message(load_client& c, std::uint32_t vi, const proto::chat_msg& m, std::uint32_t slot);
    bool on_conv_setup_error(load_client& c, const proto::error_res& res);
    void on_conv_refused(load_client& c);
    void on_conv_acked(load_client& c, std::uint32_t vi, std::uint64_t client_seq);
    void on_conv_notice(load_client& c, proto::msg_type type, std::span<const std::byte> frame);
    void send_conv_chat(load_client& c, std::int64_t now);
    conversation* conversation_of(load_client& c, std::uint64_t room_id, std::uint32_t* index = nullptr);
    void record_receipt(const load_client& c, load_stats& s, const proto::chat_msg& m, std::uint32_t sender_index,
                        std::int64_t ts, std::int64_t now);
    void setup_failure(const load_client& c, const std::string& why);
    load_stats& sink_for_sent(std::int64_t client_ts);
    void publish();

    load_shared& shared_;
    worker_mailbox& box_;
    const peer_address& target_of(const load_client& c) const noexcept;
    std::vector<peer_address> addrs_;
    std::uint32_t id_;
    std::uint32_t workers_;
    std::vector<std::unique_ptr<load_client>> clients_;  // stable addresses: epoll holds pointers
    int ep_ = -1;
    std::vector<std::byte> read_buf_;
    std::vector<char> text_buf_;  // the chat text being sent
    flatbuffers::FlatBufferBuilder fbb_;
    std::vector<load_client*> dirty_;

    // Setup progress.
    load_phase phase_ = load_phase::connecting;
    std::size_t next_connect_ = 0;
    std::uint32_t in_flight_ = 0;
    std::int64_t connect_start_ = 0;
    std::uint32_t connected_ = 0;
    std::uint32_t logged_in_ = 0;
    std::uint32_t created_ = 0;
    std::uint32_t joined_ = 0;
    std::uint32_t login_retries_ = 0;
    std::uint32_t login_window_ =
        max_logins_in_flight;  // logins (connects included) in flight at most; halved on "retry later"
    std::int64_t window_cut_at_ = 0;
    std::vector<load_client*> login_waiting_;  // told "retry later"; login_retry_at says when
    // The conversations workload (null layout_: the single-room one).
    const conversation_layout* layout_ = nullptr;
    std::uint32_t directs_ready_ = 0;  // sides of direct pairs ready (in the room, opening message seen)
    std::uint32_t setup_retries_ = 0;
    std::uint32_t dm_round_ = std::numeric_limits<std::uint32_t>::max();  // the round opened last
    std::vector<load_client*> setup_waiting_;  // a room request told "retry later"; setup_retry_at says when

    // The current step.
    std::uint32_t plan_gen_ = 0;
    step_plan plan_{};
    bool step_active_ = false;
    bool sends_done_ = false;
    std::uint64_t k_ = 0;           // sends scheduled so far in this step
    double dt_ns_ = 0;              // gap between this worker's sends
    double offset_ns_ = 0;          // this worker's phase within a gap
    std::int64_t next_send_ = 0;
    std::vector<load_stats> rows_;  // per interval of the current step
    std::uint32_t row_ = 0;         // the row receipts and sends go to now
    std::uint32_t rows_published_ = 0;
    load_stats warmup_;
    load_stats discard_;            // outside steps (setup, between steps)
    load_stats* now_sink_ = &discard_;

    // Totals over the run, published for the drain check.
    std::uint64_t expected_all_ = 0;
    std::uint64_t delivered_all_ = 0;
    std::uint64_t disconnects_ = 0;
    std::uint32_t away_ = 0;  // clients between losing their connection and resuming
    std::int64_t next_reconnect_check_ = std::numeric_limits<std::int64_t>::max();

    int rooms_check_ = 0;
    std::string rooms_problem_;
};

}  // namespace strix::chat
