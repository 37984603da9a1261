/* zmq_misuse: every exported function of libzmq's stable API called with null, closed, terminated
 * and wrong-type arguments, bad option ids and sizes, bad endpoints and out-of-state calls; each
 * call must return libzmq 4.3.4's answer (-1 or NULL and the exact errno), never crash.
 *
 *   zmq_misuse <libzmq|strix> [LIBRARY]
 *
 * Built twice from the same source against the system's <zmq.h>: zmq_misuse_libzmq (Debian's
 * libzmq) and zmq_misuse_strix (strix's libzmq.so.5). "strix" also runs the calls libzmq 4.3.4
 * crashes or asserts on (a null it does not check, a freed handle): strix must answer those with
 * the errno libzmq gives for the other bad arguments of the same function or for the same
 * argument in a sibling function where there is one (noted at each call), else -1/EFAULT
 * (NULL/EFAULT for pointer results). LIBRARY, when given, is the library the program must have
 * loaded (checked with dladdr), so a run cannot silently test the other one. Exit status 0 when
 * every check passed.
 *
 * Which function is called how (all 70 at least once; S: strix-only calls):
 *
 * | function                   | cases                                                                |
 * |----------------------------|----------------------------------------------------------------------|
 * | zmq_ctx_new                | a context per section; ZMQ_MAX_SOCKETS 1: EMFILE on the 2nd socket   |
 * | zmq_ctx_term               | NULL, socket, garbage: EFAULT; ETERM to a recv blocked in a thread;  |
 * |                            | S: a terminated context: EFAULT                                      |
 * | zmq_ctx_shutdown           | NULL, socket, garbage: EFAULT; twice: 0; ETERM to blocked recv       |
 * | zmq_ctx_set / zmq_ctx_get  | NULL, socket, garbage: EFAULT; unknown option, bad values: EINVAL    |
 * | zmq_init, zmq_term,        | zmq_init(-1): NULL/EINVAL; zmq_term, zmq_ctx_destroy of NULL,        |
 * | zmq_ctx_destroy            | socket, garbage: EFAULT                                              |
 * | zmq_socket                 | NULL, socket, garbage: EFAULT; type -1, 999: EINVAL; ETERM; EMFILE   |
 * | zmq_close                  | NULL, ctx, garbage, closed socket: ENOTSOCK                          |
 * | zmq_setsockopt             | bad handles: ENOTSOCK; unknown id, sizes 0/3/8 of every int option,  |
 * |                            | bad values, read-only and other types' options: EINVAL; S: NULL      |
 * |                            | value with a size: EFAULT                                            |
 * | zmq_getsockopt             | bad handles: ENOTSOCK; unknown id, short buffers, write-only         |
 * |                            | options: EINVAL; ETERM; S: NULL value or size: EFAULT                |
 * | zmq_bind / zmq_connect     | bad handles: ENOTSOCK; malformed: EINVAL; unknown transport:         |
 * |                            | EPROTONOSUPPORT; udp on PAIR: ENOCOMPATPROTO; EADDRINUSE, ENODEV,    |
 * |                            | EADDRNOTAVAIL, ENAMETOOLONG; IO_THREADS 0: EMTHREAD; ETERM;          |
 * |                            | S: NULL: EINVAL (as zmq_unbind)                                      |
 * | zmq_unbind/zmq_disconnect  | bad handles: ENOTSOCK; NULL, malformed: EINVAL; not bound: ENOENT    |
 * | zmq_socket_monitor         | bad handles: ENOTSOCK; tcp: EPROTONOSUPPORT; malformed, events above |
 * |                            | 16 bits: EINVAL; NULL: stops (MONITOR_STOPPED to the reader); ETERM  |
 * | zmq_send, zmq_recv,        | bad handles: ENOTSOCK; SUB/PULL send, PUB/PUSH recv: ENOTSUP; REQ    |
 * | zmq_send_const,            | twice: EFSM; DONTWAIT, timeouts: EAGAIN; ROUTER_MANDATORY:           |
 * | zmq_sendiov, zmq_recviov   | EHOSTUNREACH; bad vectors: EINVAL; ETERM; S: NULL buffer: EFAULT;    |
 * |                            | sendiov's message boundaries as libzmq's; recviov returns the parts  |
 * | zmq_msg_send, zmq_sendmsg  | bad handles: ENOTSOCK; EFSM; EAGAIN; ETERM; S: closed or NULL        |
 * |                            | message: EFAULT                                                      |
 * | zmq_msg_recv, zmq_recvmsg  | bad handles: ENOTSOCK; closed or NULL message: EFAULT; EAGAIN; ETERM |
 * | zmq_msg_init, _init_size,  | SIZE_MAX: ENOMEM; S: NULL message, NULL data with a size: EFAULT     |
 * | zmq_msg_init_data          |                                                                      |
 * | zmq_msg_close              | zeroed or closed message: EFAULT; S: NULL: EFAULT                    |
 * | zmq_msg_copy, zmq_msg_move | closed source or destination: EFAULT; S: NULL: EFAULT                |
 * | zmq_msg_data, zmq_msg_size | S: NULL and closed message: NULL and 0, no crash                     |
 * | zmq_msg_more, zmq_msg_get, | unknown property, SRCFD of an inproc message: EINVAL; zmq_msg_set:   |
 * | zmq_msg_set                | always EINVAL (NULL too); S: NULL: EFAULT                            |
 * | zmq_msg_gets               | unknown property, closed message, no metadata: EINVAL; S: NULL: EFAULT |
 * | zmq_poll                   | NULL items: EFAULT; negative count: EINVAL; ctx, garbage, closed     |
 * |                            | socket: ENOTSOCK; fd not open: POLLERR; after shutdown: ETERM        |
 * | zmq_proxy, zmq_device,     | NULL frontend or backend: EFAULT; after shutdown: ETERM; TERMINATE:  |
 * | zmq_proxy_steerable        | 0; S: ctx or garbage as a socket: ENOTSOCK; zmq_device NULL: EFAULT  |
 * | zmq_z85_encode, _decode    | size not a multiple of 4 or 5, bad characters, overflow, empty:      |
 * |                            | NULL/EINVAL; S: NULL: EINVAL                                         |
 * | zmq_curve_keypair,         | short or bad-character key: EINVAL; public matches the keypair;      |
 * | zmq_curve_public           | S: NULL, a 45-character key: EINVAL                                  |
 * | zmq_timers_new, _destroy,  | NULL, ctx, garbage: EFAULT; NULL handler: EFAULT; unknown or         |
 * | _add, _cancel, _reset,     | cancelled id: EINVAL; fires once when due; S: destroy(NULL), a       |
 * | _set_interval, _timeout,   | destroyed set: EFAULT                                                |
 * | _execute                   |                                                                      |
 * | zmq_atomic_counter_new,    | values; inc returns the old value; destroy NULLs the pointer;        |
 * | _set, _inc, _dec, _value,  | S: NULL counter: no crash                                            |
 * | _destroy                   |                                                                      |
 * | zmq_stopwatch_start,       | monotonic; S: NULL watch: 0, no crash                                |
 * | _intermediate, _stop,      |                                                                      |
 * | zmq_sleep                  |                                                                      |
 * | zmq_threadstart, _close    | runs the function once; S: NULL: no crash                            |
 * | zmq_version, zmq_has,      | 4.3.x; unknown capability: 0; libzmq's texts for its errnos;         |
 * | zmq_strerror, zmq_errno    | zmq_errno is errno; S: NULL: no crash                                |
 */
#define _GNU_SOURCE
#include "misuse.h"

#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int misuse_strix = 0;
void* misuse_garbage = NULL;

static int checks = 0;
static int failures = 0;
static const char* section = "start";

static const char* errno_name(int e) {
    static char other[32];
    switch (e) {
        case 0: return "0";
        case EFAULT: return "EFAULT";
        case EINVAL: return "EINVAL";
        case ENOTSOCK: return "ENOTSOCK";
        case ETERM: return "ETERM";
        case EFSM: return "EFSM";
        case EAGAIN: return "EAGAIN";
        case ENOTSUP: return "ENOTSUP";
        case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
        case ENOCOMPATPROTO: return "ENOCOMPATPROTO";
        case EMTHREAD: return "EMTHREAD";
        case ENOENT: return "ENOENT";
        case EADDRINUSE: return "EADDRINUSE";
        case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
        case EHOSTUNREACH: return "EHOSTUNREACH";
        case EMFILE: return "EMFILE";
        case ENOMEM: return "ENOMEM";
        case ENODEV: return "ENODEV";
        case ENAMETOOLONG: return "ENAMETOOLONG";
        case EBADF: return "EBADF";
        case EINTR: return "EINTR";
        default: snprintf(other, sizeof other, "errno %d", e); return other;
    }
}

static void record(const char* file, int line, const char* call, int ok, const char* want, const char* got) {
    ++checks;
    if (ok) return;
    ++failures;
    const char* base = strrchr(file, '/');
    printf("FAIL %s:%d [%s] %s: want %s, got %s\n", base ? base + 1 : file, line, section, call, want, got);
    fflush(stdout);
}

void misuse_expect_err(const char* file, int line, const char* call, long rc, int err, int want_err) {
    char want[64], got[64];
    snprintf(want, sizeof want, "-1/%s", errno_name(want_err));
    snprintf(got, sizeof got, "%ld/%s", rc, errno_name(err));
    record(file, line, call, rc == -1 && err == want_err, want, got);
}

void misuse_expect_null(const char* file, int line, const char* call, const void* p, int err, int want_err) {
    char want[64], got[64];
    snprintf(want, sizeof want, "NULL/%s", errno_name(want_err));
    snprintf(got, sizeof got, "%s/%s", p ? "non-NULL" : "NULL", errno_name(err));
    record(file, line, call, p == NULL && err == want_err, want, got);
}

void misuse_expect_rc(const char* file, int line, const char* call, long rc, int err, long want_rc) {
    char want[64], got[64];
    snprintf(want, sizeof want, "%ld", want_rc);
    snprintf(got, sizeof got, "%ld (errno %s)", rc, errno_name(err));
    record(file, line, call, rc == want_rc, want, got);
}

void misuse_expect_true(const char* file, int line, const char* what, int ok) {
    record(file, line, what, ok, "true", "false");
}

void* misuse_ctx(void) {
    void* ctx = zmq_ctx_new();
    if (!ctx) {
        printf("FAIL [%s] zmq_ctx_new: %s\n", section, zmq_strerror(errno));
        exit(1);
    }
    return ctx;
}

void* misuse_socket(void* ctx, int type) {
    void* s = zmq_socket(ctx, type);
    if (!s) {
        printf("FAIL [%s] zmq_socket(%d): %s\n", section, type, zmq_strerror(errno));
        exit(1);
    }
    int linger = 0;  // a section's leftovers must never hold up zmq_ctx_term
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    return s;
}

void misuse_close(void* socket) { EXPECT_RC(zmq_close(socket), 0); }
void misuse_term(void* ctx) { EXPECT_RC(zmq_ctx_term(ctx), 0); }

// A section that hangs (a blocked call that never gets its ETERM) ends the run with its name.
static void on_alarm(int sig) {
    (void)sig;
    static const char head[] = "FAIL hung in section ";
    ssize_t w = write(1, head, sizeof head - 1);
    w = write(1, section, strlen(section));
    w = write(1, "\n", 1);
    (void)w;
    _exit(2);
}

// Which library this process loaded: the file zmq_version came from, resolved.
static int check_library(const char* want) {
    Dl_info info;
    if (!dladdr((void*)zmq_version, &info) || !info.dli_fname) {
        printf("FAIL cannot tell which library provides zmq_version\n");
        return 0;
    }
    char got_path[PATH_MAX], want_path[PATH_MAX];
    const char* got = realpath(info.dli_fname, got_path) ? got_path : info.dli_fname;
    printf("misuse: library %s\n", got);
    if (!want) return 1;
    if (!realpath(want, want_path) || strcmp(got, want_path) != 0) {
        printf("FAIL loaded %s, want %s\n", got, want);
        return 0;
    }
    return 1;
}

int main(int argc, char** argv) {
    if (argc < 2 || (strcmp(argv[1], "libzmq") != 0 && strcmp(argv[1], "strix") != 0)) {
        fprintf(stderr, "usage: %s <libzmq|strix> [LIBRARY]\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    misuse_strix = strcmp(argv[1], "strix") == 0;
    if (!check_library(argc > 2 ? argv[2] : NULL)) return 1;
    misuse_garbage = calloc(1, 1 << 16);
    signal(SIGALRM, on_alarm);

    static const struct {
        const char* name;
        void (*run)(void);
    } sections[] = {
        {"contexts", misuse_contexts},   {"socket handles", misuse_socket_handles},
        {"endpoints", misuse_endpoints}, {"options", misuse_options},
        {"send/recv", misuse_send_recv}, {"termination", misuse_termination},
        {"messages", misuse_messages},   {"poll", misuse_poll},
        {"proxy", misuse_proxy},         {"z85/curve", misuse_z85_curve},
        {"timers", misuse_timers},       {"utilities", misuse_utilities},
    };
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; ++i) {
        section = sections[i].name;
        alarm(30);
        sections[i].run();
        alarm(0);
    }
    free(misuse_garbage);
    printf("misuse (%s): %d checks, %d failed\n", argv[1], checks, failures);
    return failures == 0 ? 0 : 1;
}
