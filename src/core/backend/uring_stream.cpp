// The io_uring backend's connection I/O: a multishot receive whose chunks are offered to the user
// in place (whole frames are used from the provided buffer) and otherwise copied into its ring,
// one sendmsg in flight over the user's chain, a multishot accept.
//
// Bytes a receive brought while the user takes none (paused, suspended) are kept here, in order,
// and handed over first on resume: the receive is cancelled when the user pauses, but chunks
// already completed still arrive (at most a few buffers' worth), and so may the peer's end,
// which is then held until the bytes before it are taken.
#include "core/backend/uring_poller.hpp"

#include <strix/core/unique_fd.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <bit>
#include <span>
#include <vector>

namespace strix::detail::uring {
namespace {

constexpr int max_iov = 64;

std::error_code errno_code(int e) noexcept { return {e, std::generic_category()}; }

class uring_stream final : public stream_io, public uring_target {
public:
    uring_stream(uring_poller& p, int fd, reactor_object& owner, stream_user& user)
        : poller_(p), fd_(fd), owner_(owner), user_(user) {}

    std::error_code start() override {
        arm();
        return {};
    }
    void ready(std::uint32_t) override {}  // no readiness: everything completes

    void pause_receive() override {
        if (paused_) return;
        paused_ = true;
        if (armed_) poller_.cancel_recv(*this);
    }
    void resume_receive() override {
        paused_ = false;
        if (has_parked()) deliver_parked();
        if (eof_parked_) {
            // The end goes after the bytes before it, once the user took them all.
            if (!has_parked() && !paused_ && !closed_) {
                eof_parked_ = false;
                user_.peer_closed();
            }
            return;
        }
        arm();
    }

    void send(buffer_chain& tx) override {
        if (sending_ || tx.empty() || closed_) return;
        // The gather list is sized to what is queued: one segment (a reply, a broadcast to an
        // idle member, the usual case) uses the stream's own iovec; more take a heap list of the
        // next power of two up to max_iov, kept until the idle sweep's trim. A list of max_iov
        // (1 KiB) for every connection that sent once was a third of an idle one's RSS.
        const auto want = static_cast<int>(std::min<std::size_t>(tx.segments(), max_iov));
        iovec* list = &one_;
        int room = 1;
        if (want > 1) {
            if (iov_cap_ < want) {
                iov_cap_ = std::min(max_iov, static_cast<int>(std::bit_ceil(static_cast<unsigned>(want))));
                iov_ = std::make_unique_for_overwrite<iovec[]>(static_cast<std::size_t>(iov_cap_));
            }
            list = iov_.get();
            room = iov_cap_;
        }
        const int n = tx.fill_iov(list, room);
        msg_ = msghdr{};
        msg_.msg_iov = list;
        msg_.msg_iovlen = static_cast<std::size_t>(n);
        tx_ = &tx;
        sending_ = true;
        poller_.send(fd_, &msg_, *this);
    }
    void send_now(buffer_chain& tx) override {
        const bool was_sending = sending_;
        send(tx);
        if (!was_sending && sending_) poller_.submit_now();
    }
    bool send_busy() const noexcept override { return sending_; }
    // The idle sweep's call: an idle connection keeps no heap gather list and no parked bytes'
    // buffer.
    void trim() noexcept override {
        if (!sending_) {
            iov_.reset();
            iov_cap_ = 0;
        }
        if (!has_parked()) {
            std::vector<std::byte>().swap(parked_);
            parked_from_ = 0;
        }
    }

    void close() noexcept override {
        if (closed_) return;
        closed_ = true;
        parked_.clear();
        parked_from_ = 0;
        // Each operation in flight by its user_data: a lookup in the kernel's hash of polls.
        // Cancelling by descriptor walks every poll the ring has armed, so closing a shard's N
        // sessions cost N^2 matches: 40,000 connections on 3 shards took 14.4 s to stop, and a
        // million did not stop in 130 s. The operations hold the socket open themselves, so the
        // number may be reused at once, but only once they are submitted: an operation still in
        // the submission queue names the descriptor by number, and the kernel looks the number up
        // when it is submitted. Closed before that, the number can go to a new socket (another
        // shard's accept; on this ring an accept's completion run on the close's return from the
        // kernel, with cooperative task work), whose bytes a stale receive would then eat or a
        // stale send would write into: a TLS peer saw "unexpected message".
        poller_.cancel_ops(*this, armed_, sending_);
    }

    reactor_object& keep_alive() noexcept override { return owner_; }

    void completed(const io_completion& c) override {
        if (c.what == io_completion::op::writable) {
            sending_ = false;
            if (closed_) {
                tx_->clear();
                return;
            }
            user_.send_ready();  // the next sendmsg reports an error the poll saw
            return;
        }
        if (c.what == io_completion::op::send) {
            if (!closed_ && (c.result == -EAGAIN || c.result == -EWOULDBLOCK)) {
                // The socket's buffer is full (a Unix socket fills after ~200 KB): wait until it
                // has room, then the session flushes again. sending_ stays set meanwhile, so no
                // second send starts and a close leaves tx to the poll's completion.
                poller_.wait_writable(fd_, *this);
                return;
            }
            sending_ = false;
            if (closed_) {
                tx_->clear();  // held for the kernel until now
                return;
            }
            if (c.result < 0) {
                user_.stream_failed(errno_code(-c.result));
                return;
            }
            const auto n = static_cast<std::size_t>(c.result);
            tx_->consume(n);
            user_.sent(n);
            user_.send_ready();  // the rest, appends made meanwhile, a close or a drain watch
            return;
        }
        if (!c.more) armed_ = false;
        if (closed_) return;
        if (c.result > 0) {
            // The chunk lies in one of the poller's provided buffers (its own writable memory),
            // lent until the turn's completions are dispatched.
            std::span<std::byte> data(const_cast<std::byte*>(c.data), static_cast<std::size_t>(c.result));
            if (paused_ || has_parked())
                park(data);
            else
                deliver(data, true);
        } else if (c.result == 0) {
            // The peer's end arrived while the user takes no bytes: it waits behind them (a
            // session suspended with frames in its ring would otherwise close and lose them).
            if (paused_ || has_parked()) {
                eof_parked_ = true;
                return;
            }
            user_.peer_closed();
            return;
        } else if (c.result == -ENOBUFS) {
            // The shard's buffers were all lent out this turn: re-armed when they are back, in
            // line with the other streams that ran out (uring_poller::wait_for_buffers).
            if (!armed_ && !paused_) poller_.wait_for_buffers(*this);
            return;
        } else if (c.result != -ECANCELED) {
            user_.stream_failed(errno_code(-c.result));
            return;
        }
        // Re-armed unless paused: ECANCELED means input was paused.
        arm();
    }

    void buffers_back() override { arm(); }

private:
    void arm() {
        if (armed_ || paused_ || closed_) return;
        armed_ = true;
        poller_.recv_multishot(fd_, *this);
    }

    bool has_parked() const noexcept { return parked_from_ < parked_.size(); }
    void park(std::span<const std::byte> data) { parked_.insert(parked_.end(), data.begin(), data.end()); }

    // Copies parked bytes into the user's space as it lends it, from where the last resume
    // stopped. Not offered in place: the backlog may be many chunks long, and the user checks its
    // output's high water only between the spans it lends. What the user will not take now stays
    // where it is: a reader that pauses every few hundred messages takes a backlog of megabytes
    // (the chunks one turn's multishot receive brought) in many steps, and copying the rest into
    // a new vector at each step made the 64-byte blocking receive spend a quarter of its time in
    // memmove and page faults.
    void deliver_parked() {
        while (has_parked() && !paused_ && !closed_) {
            iovec iov[2];
            const int n = user_.recv_space(iov);
            if (n < 0) {  // the user will take no more: drop it
                parked_from_ = parked_.size();
                break;
            }
            if (n == 0) return;
            std::size_t copied = 0;
            const std::size_t left = parked_.size() - parked_from_;
            for (int i = 0; i < n && copied < left; ++i) {
                const std::size_t k = std::min(iov[i].iov_len, left - copied);
                std::memcpy(iov[i].iov_base, parked_.data() + parked_from_ + copied, k);
                copied += k;
            }
            parked_from_ += copied;
            user_.received(copied);  // false: paused, suspended or closed, which the loop's top sees
        }
        if (has_parked()) return;
        // Delivered: the memory goes too (many connections may pause once and never again).
        parked_from_ = 0;
        parked_ = {};
    }

    // Offers one received chunk (in_place) to the user where it lies (whole frames are used from
    // there), then copies the rest into the user's space as it lends it; what it will not take
    // now is kept.
    void deliver(std::span<std::byte> data, bool in_place) {
        if (in_place && !paused_ && !closed_) data = data.subspan(user_.received_in_place(data));
        while (!data.empty() && !closed_) {
            iovec iov[2];
            const int n = paused_ ? 0 : user_.recv_space(iov);
            if (n < 0) return;  // the user will take no more: drop it
            if (n == 0) {
                park(data);
                return;
            }
            std::size_t copied = 0;
            for (int i = 0; i < n && copied < data.size(); ++i) {
                const std::size_t k = std::min(iov[i].iov_len, data.size() - copied);
                std::memcpy(iov[i].iov_base, data.data() + copied, k);
                copied += k;
            }
            data = data.subspan(copied);
            user_.received(copied);  // false: paused, suspended or closed, which the loop's top sees
        }
    }

    uring_poller& poller_;
    const int fd_;
    reactor_object& owner_;
    stream_user& user_;
    bool armed_ = false;    // a multishot receive is in flight
    bool paused_ = false;   // the user does not take bytes now
    bool sending_ = false;  // a sendmsg (or the wait for room after one) is in flight: msg_, iov_
                            // and tx_'s front bytes are the kernel's
    bool closed_ = false;
    bool eof_parked_ = false;  // the peer closed after the parked bytes (resume_receive tells)
    int iov_cap_ = 0;  // iovecs in iov_
    msghdr msg_{};
    iovec one_{};                    // the gather list of a one-segment send
    std::unique_ptr<iovec[]> iov_;   // a longer send's gather list (allocated when first needed)
    buffer_chain* tx_ = nullptr;     // the chain the in-flight send reads
    std::vector<std::byte> parked_;  // received while the user took no bytes; delivered from
    std::size_t parked_from_ = 0;    // parked_from_ on (the bytes before it were delivered)
};

class uring_acceptor final : public acceptor_io, public uring_target {
public:
    uring_acceptor(uring_poller& p, int fd, reactor_object& owner, accept_user& user)
        : poller_(p), fd_(fd), owner_(owner), user_(user) {}

    std::error_code start() override {
        arm();
        return {};
    }
    void ready(std::uint32_t) override {}
    void pause() override {
        paused_ = true;
        if (armed_) poller_.cancel_accept(*this);
    }
    void resume() override {
        paused_ = false;
        arm();
    }
    void close() noexcept override {
        if (closed_) return;
        closed_ = true;
        // A pending accept holds its own reference to the socket, so closing the descriptor
        // alone leaves the port listening until the cancel completes on a later loop turn.
        // shutdown takes the socket out of listening now: new connects are refused at once.
        ::shutdown(fd_, SHUT_RDWR);
        poller_.cancel_fd(fd_);
    }
    reactor_object& keep_alive() noexcept override { return owner_; }

    void completed(const io_completion& c) override {
        if (!c.more) armed_ = false;
        if (closed_) {
            if (c.result >= 0) ::close(c.result);  // accepted while closing
            return;
        }
        if (c.result >= 0) {
            user_.accepted(unique_fd(c.result), nullptr, 0);
        } else if (c.result != -ECANCELED) {
            const int e = -c.result;
            if (e != EINTR && e != ECONNABORTED && e != EPROTO && user_.accept_failed(e)) {
                pause();
                return;
            }
        }
        arm();
    }

private:
    void arm() {
        if (armed_ || paused_ || closed_) return;
        armed_ = true;
        poller_.accept_multishot(fd_, *this);
    }

    uring_poller& poller_;
    const int fd_;
    reactor_object& owner_;
    accept_user& user_;
    bool armed_ = false;
    bool paused_ = false;
    bool closed_ = false;
};

}  // namespace

std::unique_ptr<stream_io> uring_poller::open_stream(int fd, reactor_object& owner, stream_user& user) {
    return std::make_unique<uring_stream>(*this, fd, owner, user);
}

std::unique_ptr<acceptor_io> uring_poller::open_acceptor(int fd, reactor_object& owner, accept_user& user) {
    return std::make_unique<uring_acceptor>(*this, fd, owner, user);
}

}  // namespace strix::detail::uring
