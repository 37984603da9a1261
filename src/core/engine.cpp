#include <strix/core/engine.hpp>
#include <strix/core/log.hpp>
#include <strix/core/thread_name.hpp>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <signal.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <string>
#include <bit>

namespace strix {
namespace {

// SCHED_BATCH for a shard thread that shares its CPU with other shards: a doorbell then wakes the
// receiver without preempting the shard whose turn is running, so turns run whole and batch the
// work that arrived meanwhile. Measured: 54 shards on one CPU accepted and logged in 7,250-7,570
// connections a second with it against 5,290-5,400 without (architecture.md).
void batch_scheduling(unsigned index) {
    sched_param none{};
    if (int rc = pthread_setschedparam(pthread_self(), SCHED_BATCH, &none))
        log(log_level::warn, "could not put shard {} under SCHED_BATCH: errno {}", index, rc);
}

unsigned default_shards() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<unsigned>(CPU_COUNT(&set));
    unsigned n = std::thread::hardware_concurrency();
    return n ? n : 1;
}

// Pins the calling thread to the index-th CPU this process may run on (wrapping around).
void pin_to(unsigned index) {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    int count = CPU_COUNT(&allowed);
    if (count <= 0) return;
    int want = static_cast<int>(index % static_cast<unsigned>(count));
    for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed)) continue;
        if (seen++ == want) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            if (int rc = pthread_setaffinity_np(pthread_self(), sizeof one, &one))
                log(log_level::warn, "could not pin shard {} to cpu {}: errno {}", index, cpu, rc);
            return;
        }
    }
}

}  // namespace

engine::engine(engine_config cfg) : cfg_(cfg) {
    if (cfg_.shards == 0) cfg_.shards = default_shards();
    if (cfg_.tick.count() <= 0) cfg_.tick = std::chrono::milliseconds(1);
    const unsigned n = cfg_.shards;
    const unsigned cpus = default_shards();
    per_cpu_ = (n + cpus - 1) / cpus;
    // Each shard's MPSC queue is allocated and initialised whole (16,384 tasks: 1.5 MiB); shards
    // sharing a CPU take a part each, at least 2,048 (a full queue makes its producer wait).
    if (per_cpu_ > 1)
        cfg_.external_capacity =
            std::min(cfg_.external_capacity,
                     std::max<std::size_t>(2048, cfg_.external_capacity / std::bit_ceil(per_cpu_)));
    // N x (N-1) channels: past 16 shards each channel is cut so a shard's inbound cells stay
    // about 16,384 (at least 256 each; bursts beyond wait in the sender's overflow list).
    if (n > 16)
        cfg_.mesh_capacity = std::min(cfg_.mesh_capacity, std::max<std::size_t>(256, std::bit_floor(16384u / (n - 1))));
    mesh_.resize(static_cast<std::size_t>(n) * n);
    for (unsigned to = 0; to < n; ++to)
        for (unsigned from = 0; from < n; ++from)
            if (from != to)
                mesh_[static_cast<std::size_t>(to) * n + from] = std::make_unique<spsc_queue<task>>(cfg_.mesh_capacity);
    exited_ = std::make_unique<std::atomic<bool>[]>(n);
    shards_.reserve(n);
    // shard_count() is read by the shard constructor, so size the vector first.
    for (unsigned i = 0; i < n; ++i) shards_.push_back(nullptr);
    for (unsigned i = 0; i < n; ++i) shards_[i].reset(new shard(*this, i, cfg_.tick));
}

engine::~engine() {
    if (started_) {
        stop();
        join();
    }
}

void engine::register_metrics(metrics_registry& r) {
    for (auto& sh : shards_) metric_regs_.push_back(r.add(sh->stats()));
}

void engine::start() {
    if (started_) return;
    started_ = true;
    draining_.store(shard_count(), std::memory_order_relaxed);
    running_.store(shard_count(), std::memory_order_relaxed);
    // Marked running before their threads exist: from here on only a shard's own thread may
    // touch what it owns (see shard::running).
    for (auto& s : shards_) s->thread_live_.store(true, std::memory_order_release);
    tables_pending_.store(cfg_.fd_table_per_shard ? shard_count() : 0, std::memory_order_relaxed);
    for (unsigned i = 0; i < shard_count(); ++i) {
        threads_.emplace_back([this, i] {
            set_thread_name("strix-shard-" + std::to_string(i));
            if (cfg_.pin_threads) pin_to(i);
            if (per_cpu_ > 1) batch_scheduling(i);
            if (cfg_.fd_table_per_shard) take_own_fd_table(i);
            shards_[i]->run();
            exited_[i].store(true, std::memory_order_release);
            running_.fetch_sub(1, std::memory_order_acq_rel);
        });
    }
    if (!cfg_.fd_table_per_shard) return;
    // Every shard has copied this thread's table; the noted descriptors are theirs now.
    while (tables_pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    if (!tables_failed_.load(std::memory_order_acquire))
        for (const auto& n : shard_fds_) ::close(n.fd);
    shard_fds_.clear();
}

void engine::note_shard_fd(unsigned target, int fd) {
    if (!cfg_.fd_table_per_shard || fd < 0) return;
    if (started_)
        throw std::logic_error("engine::note_shard_fd after start(): with fd_table_per_shard a descriptor opened on "
                               "another thread is in no shard's table; open it on the shard");
    shard_fds_.push_back({target, fd});
}

// On shard i's thread, before its loop: a copy of the process's table becomes this thread's own.
// The copies of descriptors noted for other shards are closed, so each listener has one owner.
void engine::take_own_fd_table(unsigned i) noexcept {
    if (::unshare(CLONE_FILES) != 0) {
        const int err = errno;
        tables_failed_.store(true, std::memory_order_release);
        log(log_level::error,
            "shard {}: unshare(CLONE_FILES) failed (errno {}): it shares the process's descriptor table and "
            "RLIMIT_NOFILE caps all shards together",
            i, err);
    } else {
        for (const auto& n : shard_fds_)
            if (n.shard != i) ::close(n.fd);
    }
    tables_pending_.fetch_sub(1, std::memory_order_acq_rel);
}

const char* engine::io_name() const noexcept { return shards_.empty() ? "none" : shards_[0]->io_name(); }

void engine::post(unsigned target, task t) {
    shard* cur = shard::current();
    if (cur && &cur->owner() == this)
        cur->post_to(target, std::move(t));
    else
        shards_[target]->post_external(std::move(t));
}

void engine::check_not_own_shard(const char* what) const noexcept {
    if (shard* cur = shard::current(); cur && &cur->owner() == this) {
        std::fprintf(stderr,
                     "strix: %s called on shard %u; it waits for a shard of its own engine, so call it "
                     "from a thread that is not one\n",
                     what, cur->id());
        std::abort();
    }
}

void engine::run_on_all_shards(const std::function<void(shard&)>& fn) {
    check_not_own_shard("engine::run_on_all_shards");
    struct progress {
        std::mutex mu;
        std::condition_variable cv;
        std::vector<char> done;
    };
    auto p = std::make_shared<progress>();
    p->done.assign(shard_count(), 0);
    for (unsigned i = 0; i < shard_count(); ++i) {
        if (!shards_[i]->running()) continue;  // handled below, on this thread
        shards_[i]->post_external([p, i, &fn, sh = shards_[i].get()] {
            fn(*sh);
            sh->post_after_turn([p, i] {
                std::lock_guard lk(p->mu);
                p->done[i] = 1;
                p->cv.notify_all();
            });
        });
    }
    // A shard may exit before it runs the task (the engine is stopping): its thread no longer
    // touches what it owned, so fn runs here. Checked every few milliseconds.
    for (unsigned i = 0; i < shard_count(); ++i) {
        std::unique_lock lk(p->mu);
        while (!p->done[i]) {
            if (!shards_[i]->running()) {
                lk.unlock();
                fn(*shards_[i]);
                lk.lock();
                p->done[i] = 1;
                break;
            }
            p->cv.wait_for(lk, std::chrono::milliseconds(5));
        }
    }
}

void engine::stop() noexcept {
    for (auto& s : shards_) s->request_stop();
}

void engine::join() {
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
}

void engine::shard_finished_draining() noexcept { draining_.fetch_sub(1, std::memory_order_acq_rel); }

int engine::run_until_signal() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    start();
    int sig = 0;
    timespec poll{0, 100 * 1000 * 1000};
    while (running_.load(std::memory_order_acquire) > 0) {
        int s = sigtimedwait(&set, nullptr, &poll);
        if (s > 0) {
            sig = s;
            log(log_level::info, "signal {}: stopping gracefully", s);
            break;
        }
    }
    stop();
    join();
    return sig;
}

}  // namespace strix
