#pragma once
// pg_server: a REAL, throw-away PostgreSQL server for tests.
//
//   pg_server pg;                              // new cluster + pg_ctl start (well under 1 s)
//   std::string url = pg.create_database();    // fresh empty database, e.g. for one test
//   auto store = strix::open_chat_store(url, strix::password_policy::fast_for_tests());
//   // ~pg_server: immediate shutdown, then the whole directory is removed
//
// Layout: BASE/strix-pg-XXXXXX/{data/, postgres.log, commands.log, .s.PGSQL.<port>}, where BASE
// is /dev/shm when it has at least 1 GiB free (the cluster then runs in memory), else /tmp, or
// $STRIX_PG_TMPDIR. The server
// listens on the unix socket in that private directory (what url() uses) and on 127.0.0.1:<port>
// (a port that was free a moment before; start-up is retried on another port if it was taken).
// Authentication is "trust" for the superuser "postgres": this is a test cluster only.
//
// Speed over durability, acceptable for tests and NEVER for production: initdb --no-sync,
// fsync=off, synchronous_commit=off, full_page_writes=off. A crash of the machine loses the
// cluster, which a test does not care about.
//
// Root: initdb refuses to run as root (CI runs as root), so when geteuid() == 0 every command
// runs as the `postgres` system user (created by the postgresql package) through
// `runuser -u postgres --`, and the directory is handed to that user.
//
// Start-up: initdb runs once per machine and user into BASE/strix-pg-template-<uid>-<key>, and
// each server copies that pristine cluster (a fraction of initdb's time); see template_dir().
// Shutdown is immediate (SIGQUIT to the postmaster): the cluster is deleted anyway.
//
// Binaries: $STRIX_PG_BINDIR if set, else the newest /usr/lib/postgresql/<version>/bin. They are
// a declared dependency (scripts/install-deps.sh): when they are missing the constructor throws
// std::runtime_error saying so, and a test using it must FAIL, not skip.
//
// A watchdog shell (blocked reading a pipe only this process holds) stops the server and removes
// the directory if the test process dies without running the destructor (abort, sanitizer
// report, ctest timeout kill), so crashed tests do not leave servers behind.
//
// One server per test binary is plenty: shared_pg_server() starts one lazily on first use (so
// test cases that never touch PostgreSQL pay nothing) and stops it at exit or when
// stop_shared_pg_server() is called (e.g. from a gtest Environment's TearDown). Use
// create_database() per test for isolation. Self-contained: needs only libpq (which
// strix::storage links publicly) and POSIX.

#include <libpq-fe.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "free_port.hpp"

extern char** environ;

namespace strix::test {

class pg_server {
public:
    /// Creates the cluster and starts the server; throws std::runtime_error with the reason
    /// (missing binaries, no postgres user when root, initdb or start-up failure with the tail
    /// of the logs). Blocks about a second.
    pg_server() {
        bindir_ = find_bindir();
        as_postgres_ = ::geteuid() == 0;
        if (as_postgres_) {
            const passwd* pw = ::getpwnam("postgres");
            if (pw == nullptr) {
                throw std::runtime_error("pg_server: running as root, but there is no 'postgres' system user to run "
                                         "PostgreSQL as (initdb refuses root); install the postgresql package");
            }
            uid_ = pw->pw_uid;
            gid_ = pw->pw_gid;
            runuser_ = find_runuser();
        }
        base_ = base_dir();
        std::string tmpl = base_ + "/strix-pg-XXXXXX";
        if (::mkdtemp(tmpl.data()) == nullptr) {
            throw std::runtime_error("pg_server: mkdtemp in " + base_ + " failed: " + std::strerror(errno));
        }
        dir_ = tmpl;
        try {
            if (as_postgres_ && ::chown(dir_.c_str(), uid_, gid_) != 0) {
                throw std::runtime_error("pg_server: cannot hand " + dir_ +
                                         " to the postgres user: " + std::strerror(errno));
            }
            start_watchdog();
            init_cluster();
            start_server();
        } catch (...) {
            cleanup();
            throw;
        }
    }

    ~pg_server() { cleanup(); }

    pg_server(const pg_server&) = delete;
    pg_server& operator=(const pg_server&) = delete;

    /// URL of the "postgres" database over the unix socket (superuser "postgres", trust).
    std::string url() const { return url_for("postgres"); }

    /// URL of database `db` on this server (it must exist; see create_database()).
    std::string url_for(const std::string& db) const {
        return "postgresql:///" + db + "?host=" + dir_ + "&port=" + std::to_string(port_) + "&user=postgres";
    }

    /// URL of `db` over TCP on 127.0.0.1 (for programs that want host:port).
    std::string tcp_url_for(const std::string& db) const {
        return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + db;
    }

    /// Creates a fresh empty database and returns its URL. Thread-safe.
    std::string create_database() { return create_database("strix_test_" + std::to_string(next_db_.fetch_add(1) + 1)); }

    /// Creates database `name` ([a-z0-9_] only) and returns its URL. Thread-safe.
    std::string create_database(const std::string& name) {
        exec_sql(url(), "CREATE DATABASE " + name);
        return url_for(name);
    }

    /// Runs `sql` (no parameters, results discarded) on `url`; throws std::runtime_error with
    /// the server's message on failure. Thread-safe (one connection per call).
    static void exec_sql(const std::string& url, const std::string& sql) {
        std::unique_ptr<PGconn, decltype(&::PQfinish)> c(::PQconnectdb(url.c_str()), &::PQfinish);
        if (::PQstatus(c.get()) != CONNECTION_OK) {
            throw std::runtime_error("pg_server: cannot connect to " + url + ": " + ::PQerrorMessage(c.get()));
        }
        std::unique_ptr<PGresult, decltype(&::PQclear)> r(::PQexec(c.get(), sql.c_str()), &::PQclear);
        const auto st = ::PQresultStatus(r.get());
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
            throw std::runtime_error("pg_server: '" + sql + "' failed: " + ::PQresultErrorMessage(r.get()));
        }
    }

    /// TCP port on 127.0.0.1 (also the number in the unix socket's name).
    std::uint16_t port() const noexcept { return port_; }
    /// The private directory holding the unix socket (and the cluster).
    const std::string& socket_dir() const noexcept { return dir_; }
    /// PostgreSQL's bin directory in use.
    const std::string& bindir() const noexcept { return bindir_; }

private:
    static std::string find_bindir() {
        namespace fs = std::filesystem;
        if (const char* env = std::getenv("STRIX_PG_BINDIR"); env != nullptr && *env != '\0') {
            if (!fs::exists(fs::path(env) / "initdb")) {
                throw std::runtime_error(std::string("pg_server: STRIX_PG_BINDIR=") + env +
                                         " has no initdb; point it at PostgreSQL's bin directory");
            }
            return env;
        }
        std::string best;
        long best_version = -1;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
            const std::string v = e.path().filename().string();
            char* end = nullptr;
            const long n = std::strtol(v.c_str(), &end, 10);
            if (end == v.c_str() || !fs::exists(e.path() / "bin" / "initdb") ||
                !fs::exists(e.path() / "bin" / "pg_ctl")) {
                continue;
            }
            if (n > best_version) {
                best_version = n;
                best = (e.path() / "bin").string();
            }
        }
        if (best.empty()) {
            throw std::runtime_error("pg_server: PostgreSQL server binaries (initdb, pg_ctl) not found under "
                                     "/usr/lib/postgresql/<version>/bin; install the 'postgresql' package "
                                     "(scripts/install-deps.sh) or set STRIX_PG_BINDIR");
        }
        return best;
    }

    // A cluster is I/O-bound start to finish (initdb, CREATE DATABASE copies a template, every
    // commit writes WAL), so it lives in memory when /dev/shm is roomy; Docker's default 64 MiB
    // /dev/shm is not, and then /tmp is used. $STRIX_PG_TMPDIR overrides both.
    static std::string base_dir() {
        if (const char* env = std::getenv("STRIX_PG_TMPDIR"); env != nullptr && *env != '\0') return env;
        struct statvfs st {};
        if (::statvfs("/dev/shm", &st) == 0 &&
            static_cast<unsigned long long>(st.f_bavail) * st.f_frsize >= (1ull << 30) &&
            ::access("/dev/shm", W_OK) == 0) {
            return "/dev/shm";
        }
        return "/tmp";
    }

    static std::string find_runuser() {
        for (const char* p : {"/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser", "/bin/runuser"}) {
            if (::access(p, X_OK) == 0) return p;
        }
        throw std::runtime_error("pg_server: running as root but runuser(1) was not found; it ships "
                                 "with util-linux, which must be installed to run PostgreSQL tests as root");
    }

    // argv for running `args` as the server's user.
    std::vector<std::string> as_user(std::vector<std::string> args) const {
        if (!as_postgres_) return args;
        std::vector<std::string> out{runuser_, "-u", "postgres", "--"};
        out.insert(out.end(), args.begin(), args.end());
        return out;
    }

    // Runs argv[0] (an absolute path) in dir_, output appended to commands.log; returns the
    // exit status (-1 when it could not be started or did not exit normally).
    int run(const std::vector<std::string>& argv) const {
        const std::string log = dir_ + "/commands.log";
        {
            std::ofstream f(log, std::ios::app);
            f << "$";
            for (const auto& a : argv) f << ' ' << a;
            f << '\n';
        }
        posix_spawn_file_actions_t fa;
        ::posix_spawn_file_actions_init(&fa);
        ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        ::posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
        ::posix_spawn_file_actions_adddup2(&fa, 1, 2);
        // The test's working directory may be unreadable for the postgres user.
        ::posix_spawn_file_actions_addchdir_np(&fa, dir_.c_str());
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        pid_t pid = -1;
        const int rc = ::posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
        ::posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) return -1;
        return wait_for(pid);
    }

    static int wait_for(pid_t pid) {
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0) {
            if (errno != EINTR) return -1;
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

    static std::string tail_of(const std::string& path, std::size_t max = 2000) {
        std::ifstream f(path);
        std::stringstream ss;
        ss << f.rdbuf();
        std::string s = ss.str();
        return s.size() > max ? "..." + s.substr(s.size() - max) : s;
    }

    // initdb into `data`; throws with the command log on failure.
    void initdb(const std::string& data) const {
        const int rc = run(as_user({bindir_ + "/initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8",
                                    "--locale=C", "--no-sync", "--no-instructions", "--wal-segsize=1"}));
        if (rc != 0) {
            throw std::runtime_error("pg_server: initdb failed (exit " + std::to_string(rc) + "):\n" +
                                     tail_of(dir_ + "/commands.log"));
        }
    }

    // initdb is most of the start-up time (it boots the server several times), and ctest runs
    // every test case in its own process, so a pristine cluster is kept as a template in BASE
    // (one per PostgreSQL bin directory and user) and copied for each server. It is built
    // in a private directory and renamed into place, so concurrent test processes never see a
    // half-made one. STRIX_PG_NO_TEMPLATE=1 disables it.
    std::string template_dir() const {
        if (const char* off = std::getenv("STRIX_PG_NO_TEMPLATE"); off != nullptr && *off == '1') return {};
        const auto key = std::hash<std::string>{}(bindir_);
        const std::string final_dir =
            base_ + "/strix-pg-template-" + std::to_string(::geteuid()) + "-" + std::to_string(key % 1000000007);
        if (std::filesystem::exists(final_dir + "/data/PG_VERSION")) return final_dir;
        std::string tmpl = base_ + "/strix-pg-template-new-XXXXXX";
        if (::mkdtemp(tmpl.data()) == nullptr) return {};
        const std::string fresh = tmpl;
        if (as_postgres_ && ::chown(fresh.c_str(), uid_, gid_) != 0) {
            std::error_code ec;
            std::filesystem::remove_all(fresh, ec);
            return {};
        }
        initdb(fresh + "/data");
        if (::rename(fresh.c_str(), final_dir.c_str()) != 0) {
            // Another test process installed one first; use that.
            std::error_code ec;
            std::filesystem::remove_all(fresh, ec);
        }
        return std::filesystem::exists(final_dir + "/data/PG_VERSION") ? final_dir : std::string();
    }

    void init_cluster() {
        const std::string data = dir_ + "/data";
        const std::string tpl = template_dir();
        // cp -a as the server's user keeps modes and makes it the owner of the copy.
        if (tpl.empty() || run(as_user({"/bin/cp", "-a", tpl + "/data", data})) != 0) {
            std::error_code ec;
            std::filesystem::remove_all(data, ec);
            initdb(data);
        }
        std::ofstream conf(data + "/postgresql.conf", std::ios::app);
        conf << "\n# strix test cluster: fast, not durable\n"
             << "listen_addresses = '127.0.0.1'\n"
             << "unix_socket_directories = '" << dir_ << "'\n"
             << "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
             << "shared_buffers = 32MB\nmax_connections = 100\n";
        if (!conf) throw std::runtime_error("pg_server: cannot write " + data + "/postgresql.conf");
    }

    void start_server() {
        // The port was free a moment ago; another process may grab it first, so try a few.
        for (int attempt = 0; attempt < 5; ++attempt) {
            port_ = free_port();
            const int rc = run(as_user({bindir_ + "/pg_ctl", "-D", dir_ + "/data", "-l", dir_ + "/postgres.log", "-o",
                                        "-p " + std::to_string(port_), "-w", "-t", "60", "start"}));
            if (rc == 0) {
                running_ = true;
                return;
            }
        }
        throw std::runtime_error("pg_server: pg_ctl start failed:\n" + tail_of(dir_ + "/commands.log") +
                                 "\nserver log:\n" + tail_of(dir_ + "/postgres.log"));
    }

    // A shell that blocks until the write end of a pipe closes; we hold the only copy
    // (O_CLOEXEC keeps it out of every other child), so it closes exactly when this process
    // exits, however it exits.
    void start_watchdog() {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) return;  // best effort: tests still run without it
        std::string stop;
        for (const auto& a : as_user({bindir_ + "/pg_ctl", "-D", dir_ + "/data", "-m", "immediate", "-w", "stop"})) {
            stop += "'" + a + "' ";
        }
        const std::string script = "while read -r _; do :; done; " + stop + ">/dev/null 2>&1; rm -rf '" + dir_ + "'";
        posix_spawn_file_actions_t fa;
        ::posix_spawn_file_actions_init(&fa);
        ::posix_spawn_file_actions_adddup2(&fa, fds[0], 0);  // dup2 clears O_CLOEXEC on stdin
        ::posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        ::posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        posix_spawnattr_t attr;
        ::posix_spawnattr_init(&attr);
        // Own process group: a Ctrl-C or a group kill aimed at the test still lets it clean up.
        ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
        ::posix_spawnattr_setpgroup(&attr, 0);
        const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
        pid_t pid = -1;
        if (::posix_spawn(&pid, "/bin/sh", &fa, &attr, const_cast<char* const*>(argv), environ) == 0) {
            watchdog_pid_ = pid;
            watchdog_fd_ = fds[1];
        } else {
            ::close(fds[1]);
        }
        ::close(fds[0]);
        ::posix_spawn_file_actions_destroy(&fa);
        ::posix_spawnattr_destroy(&attr);
    }

    // The cluster is thrown away, so there is nothing to shut down cleanly: SIGQUIT is
    // PostgreSQL's immediate shutdown (the postmaster takes its children down, then exits).
    // It removes postmaster.pid as its last act, after its children are gone (what pg_ctl
    // waits for too; the process itself may linger as a zombie until init reaps it). Polling
    // every few milliseconds ends sooner than pg_ctl's 100 ms polls.
    bool quit_postmaster() noexcept {
        const std::string pid_file = dir_ + "/data/postmaster.pid";
        long pid = 0;
        {
            std::ifstream f(pid_file);
            if (!(f >> pid) || pid <= 1) return false;
        }
        const auto p = static_cast<pid_t>(pid);
        if (::kill(p, SIGQUIT) != 0) return errno == ESRCH;
        for (int i = 0; i < 6000; ++i) {  // 30 s at most
            if (::access(pid_file.c_str(), F_OK) != 0) return true;
            if (::kill(p, 0) != 0 && errno == ESRCH) return true;
            ::usleep(5000);
        }
        return false;
    }

    void cleanup() noexcept {
        if (running_) {
            if (!quit_postmaster()) {
                run(as_user({bindir_ + "/pg_ctl", "-D", dir_ + "/data", "-m", "immediate", "-w", "-t", "60", "stop"}));
            }
            running_ = false;
        }
        if (watchdog_pid_ > 0) {
            // Normal exit: the watchdog has nothing to do.
            ::kill(watchdog_pid_, SIGKILL);
            wait_for(watchdog_pid_);
            watchdog_pid_ = -1;
        }
        if (watchdog_fd_ >= 0) {
            ::close(watchdog_fd_);
            watchdog_fd_ = -1;
        }
        if (!dir_.empty()) {
            std::error_code ec;
            std::filesystem::remove_all(dir_, ec);
            dir_.clear();
        }
    }

    std::string bindir_;
    std::string runuser_;
    bool as_postgres_ = false;
    uid_t uid_ = 0;
    gid_t gid_ = 0;
    std::string base_;  // /dev/shm or /tmp
    std::string dir_;
    std::uint16_t port_ = 0;
    bool running_ = false;
    pid_t watchdog_pid_ = -1;
    int watchdog_fd_ = -1;
    std::atomic<unsigned> next_db_{0};
};

namespace pg_detail {
struct shared_state {
    std::mutex mu;
    std::unique_ptr<pg_server> server;
    std::optional<std::string> failure;  // a failed start is not retried (it would fail again)
};
inline shared_state& shared() {
    static shared_state s;
    return s;
}
}  // namespace pg_detail

/// The test binary's one PostgreSQL server, started on first call; rethrows the start-up error
/// on every call if it could not start. Thread-safe.
inline pg_server& shared_pg_server() {
    auto& s = pg_detail::shared();
    std::lock_guard lk(s.mu);
    if (s.failure) throw std::runtime_error(*s.failure);
    if (!s.server) {
        try {
            s.server = std::make_unique<pg_server>();
        } catch (const std::exception& e) {
            s.failure = e.what();
            throw;
        }
    }
    return *s.server;
}

/// Stops the shared server if it was started (it would otherwise stop at exit). Call it from a
/// gtest Environment's TearDown. Thread-safe; no store may still be connected to it.
inline void stop_shared_pg_server() {
    auto& s = pg_detail::shared();
    std::lock_guard lk(s.mu);
    s.server.reset();
}

}  // namespace strix::test
