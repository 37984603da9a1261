/* zmq_rtt <connect-to> <message-size> <roundtrip-count>: REQ/REP round trips, each timed alone,
 * with their p50 and p99 (libzmq's perf/remote_lat prints only the mean of half a round trip).
 *
 * Written against zmq.h's stable API only and built twice by scripts/bench-zmq.sh, against
 * libzmq and against strix's libzmq.so.5, like libzmq's perf programs. Over tcp and ipc the
 * replier is libzmq's perf/local_lat of the same build (it binds; this program connects). For
 * inproc:// endpoints this program binds a REP socket itself and answers on a second thread of
 * the same context, as perf/inproc_lat does.
 *
 * Prints, on success (exit 0):
 *   message size: N [B]
 *   roundtrip count: N
 *   average roundtrip: X [us]
 *   p50 roundtrip: X [us]
 *   p99 roundtrip: X [us]
 * Any failing call, or a reply of another size, prints why on stderr and exits 1; wrong
 * arguments exit 2. */
#include <zmq.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char* what) {
    fprintf(stderr, "zmq_rtt: %s: %s\n", what, zmq_strerror(zmq_errno()));
    exit(1);
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double* sorted, long n, double p) {
    long rank = (long)(p / 100.0 * (double)n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return sorted[rank - 1];
}

struct replier {
    void* socket;
    size_t size;
    long count;
};

/* The inproc replier: answers `count` requests of `size` bytes with the same message. Its
 * failures exit the process, so the requester never waits on a dead peer. */
static void* reply_loop(void* arg) {
    struct replier* r = (struct replier*)arg;
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    for (long i = 0; i < r->count; ++i) {
        if (zmq_msg_recv(&msg, r->socket, 0) < 0) die("replier zmq_msg_recv");
        if (zmq_msg_size(&msg) != r->size) {
            fprintf(stderr, "zmq_rtt: replier got %zu bytes, expected %zu\n", zmq_msg_size(&msg), r->size);
            exit(1);
        }
        if (zmq_msg_send(&msg, r->socket, 0) < 0) die("replier zmq_msg_send");
    }
    zmq_msg_close(&msg);
    return NULL;
}

static int parse(int argc, char** argv, size_t* size, long* count) {
    if (argc != 4) return 0;
    char* end;
    long s = strtol(argv[2], &end, 10);
    if (*end || s < 1) return 0;
    long c = strtol(argv[3], &end, 10);
    if (*end || c < 1) return 0;
    *size = (size_t)s;
    *count = c;
    return 1;
}

int main(int argc, char** argv) {
    size_t size;
    long count;
    if (!parse(argc, argv, &size, &count)) {
        fprintf(stderr, "usage: zmq_rtt <connect-to> <message-size> <roundtrip-count>\n");
        return 2;
    }
    const int inproc = strncmp(argv[1], "inproc://", 9) == 0;
    void* ctx = zmq_ctx_new();
    if (!ctx) die("zmq_ctx_new");
    struct replier rep = {NULL, size, count};
    pthread_t thread;
    if (inproc) {
        rep.socket = zmq_socket(ctx, ZMQ_REP);
        if (!rep.socket) die("zmq_socket(REP)");
        if (zmq_bind(rep.socket, argv[1]) != 0) die("zmq_bind");
        if (pthread_create(&thread, NULL, reply_loop, &rep) != 0) die("pthread_create");
    }
    void* req = zmq_socket(ctx, ZMQ_REQ);
    if (!req) die("zmq_socket(REQ)");
    if (zmq_connect(req, argv[1]) != 0) die("zmq_connect");

    double* rtt = (double*)malloc((size_t)count * sizeof(double));
    char* payload = (char*)calloc(size, 1);
    if (!rtt || !payload) die("malloc");
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    double total = 0;
    for (long i = 0; i < count; ++i) {
        const double t0 = now_us();
        if (zmq_send(req, payload, size, 0) < 0) die("zmq_send");
        if (zmq_msg_recv(&msg, req, 0) < 0) die("zmq_msg_recv");
        rtt[i] = now_us() - t0;
        total += rtt[i];
        if (zmq_msg_size(&msg) != size) {
            fprintf(stderr, "zmq_rtt: reply %ld has %zu bytes, expected %zu\n", i, zmq_msg_size(&msg), size);
            return 1;
        }
    }
    zmq_msg_close(&msg);
    if (inproc) {
        pthread_join(thread, NULL);
        zmq_close(rep.socket);
    }
    zmq_close(req);
    if (zmq_ctx_term(ctx) != 0) die("zmq_ctx_term");

    qsort(rtt, (size_t)count, sizeof(double), cmp_double);
    printf("message size: %zu [B]\n", size);
    printf("roundtrip count: %ld\n", count);
    printf("average roundtrip: %.3f [us]\n", total / (double)count);
    printf("p50 roundtrip: %.3f [us]\n", percentile(rtt, count, 50));
    printf("p99 roundtrip: %.3f [us]\n", percentile(rtt, count, 99));
    free(rtt);
    free(payload);
    return 0;
}
