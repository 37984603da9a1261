/* ETERM: a recv blocked in another thread when the context is terminated or shut down, and every
 * socket function after a shutdown; zmq_proxy and its siblings. */
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "misuse.h"

struct blocked_recv {
    void* socket;
    int close_after;  // zmq_ctx_term waits for the socket's close
    long rc;
    int err;
};

static void recv_until_ended(void* arg) {
    struct blocked_recv* b = arg;
    char buf[8];
    errno = 0;
    b->rc = zmq_recv(b->socket, buf, sizeof buf, 0);
    b->err = errno;
    if (b->close_after) zmq_close(b->socket);
}

static void term_ends_blocked_recv(void) {
    void* ctx = misuse_ctx();
    struct blocked_recv b = {misuse_socket(ctx, ZMQ_PULL), 1, 0, 0};
    EXPECT_RC(zmq_bind(b.socket, "inproc://misuse-term"), 0);
    void* thread = zmq_threadstart(recv_until_ended, &b);
    usleep(50 * 1000);  // let it block (an earlier term ends it the same way)
    misuse_term(ctx);
    zmq_threadclose(thread);
    misuse_expect_err(__FILE__, __LINE__, "zmq_recv blocked in another thread", b.rc, b.err, ETERM);
}

// Every socket function after a shutdown answers ETERM.
static void after_shutdown(void* ctx, void* s) {
    char buf[8] = "abc";
    struct iovec iov = {buf, 3};
    size_t count = 1;
    int v = 0;
    size_t len = sizeof v;
    zmq_msg_t msg;
    // The first call notices the shutdown (libzmq delivers it as a command the socket reads in
    // recv, send and poll); the rest then answer ETERM at once.
    EXPECT_ERR(zmq_recv(s, buf, sizeof buf, ZMQ_DONTWAIT), ETERM);
    EXPECT_ERR(zmq_send(s, buf, 3, ZMQ_DONTWAIT), ETERM);
    EXPECT_ERR(zmq_send_const(s, "abc", 3, ZMQ_DONTWAIT), ETERM);
    EXPECT_ERR(zmq_sendiov(s, &iov, 1, ZMQ_DONTWAIT), ETERM);
    EXPECT_ERR(zmq_recviov(s, &iov, &count, ZMQ_DONTWAIT), ETERM);
    zmq_msg_init(&msg);
    EXPECT_ERR(zmq_msg_send(&msg, s, ZMQ_DONTWAIT), ETERM);
    EXPECT_ERR(zmq_msg_recv(&msg, s, ZMQ_DONTWAIT), ETERM);
    EXPECT_RC(zmq_msg_close(&msg), 0);
    EXPECT_ERR(zmq_setsockopt(s, ZMQ_LINGER, &v, sizeof v), ETERM);
    EXPECT_ERR(zmq_getsockopt(s, ZMQ_LINGER, &v, &len), ETERM);
    EXPECT_ERR(zmq_bind(s, "inproc://misuse-after-shutdown"), ETERM);
    EXPECT_ERR(zmq_connect(s, "inproc://misuse-after-shutdown"), ETERM);
    EXPECT_ERR(zmq_unbind(s, "inproc://misuse-shutdown"), ETERM);
    EXPECT_ERR(zmq_disconnect(s, "inproc://misuse-shutdown"), ETERM);
    EXPECT_ERR(zmq_socket_monitor(s, "inproc://misuse-shutdown-monitor", ZMQ_EVENT_ALL), ETERM);
    zmq_pollitem_t item = {s, 0, ZMQ_POLLIN, 0};
    EXPECT_ERR(zmq_poll(&item, 1, 0), ETERM);
    EXPECT_NULL(zmq_socket(ctx, ZMQ_PAIR), ETERM);
}

static void shutdown_ends_blocked_recv(void) {
    void* ctx = misuse_ctx();
    struct blocked_recv b = {misuse_socket(ctx, ZMQ_PULL), 0, 0, 0};
    void* other = misuse_socket(ctx, ZMQ_PAIR);
    EXPECT_RC(zmq_bind(b.socket, "inproc://misuse-shutdown"), 0);
    EXPECT_RC(zmq_bind(other, "inproc://misuse-shutdown-other"), 0);
    void* thread = zmq_threadstart(recv_until_ended, &b);
    usleep(50 * 1000);
    EXPECT_RC(zmq_ctx_shutdown(ctx), 0);
    zmq_threadclose(thread);
    misuse_expect_err(__FILE__, __LINE__, "zmq_recv blocked in another thread", b.rc, b.err, ETERM);
    after_shutdown(ctx, other);
    misuse_close(b.socket);
    misuse_close(other);
    misuse_term(ctx);
}

void misuse_termination(void) {
    term_ends_blocked_recv();
    shutdown_ends_blocked_recv();
}

struct proxy_run {
    void* frontend;
    void* backend;
    void* control;
    long rc;
    int err;
};

static void run_steerable(void* arg) {
    struct proxy_run* p = arg;
    errno = 0;
    p->rc = zmq_proxy_steerable(p->frontend, p->backend, NULL, p->control);
    p->err = errno;
}

void misuse_proxy(void) {
    void* ctx = misuse_ctx();
    void* front = misuse_socket(ctx, ZMQ_PULL);
    void* back = misuse_socket(ctx, ZMQ_PUSH);
    EXPECT_ERR(zmq_proxy(NULL, back, NULL), EFAULT);
    EXPECT_ERR(zmq_proxy(front, NULL, NULL), EFAULT);
    EXPECT_ERR(zmq_proxy_steerable(NULL, back, NULL, NULL), EFAULT);
    EXPECT_ERR(zmq_proxy_steerable(front, NULL, NULL, NULL), EFAULT);
    if (misuse_strix) {
        // libzmq 4.3.4 casts whatever it is given to a socket without checking (zmq_device does
        // not even check for NULL): a crash there; strix answers as for any other non-socket.
        EXPECT_ERR(zmq_proxy(ctx, ctx, NULL), ENOTSOCK);
        EXPECT_ERR(zmq_proxy(front, back, misuse_garbage), ENOTSOCK);
        EXPECT_ERR(zmq_device(ZMQ_QUEUE, NULL, NULL), EFAULT);
    }
    // TERMINATE on the control socket ends a steerable proxy with 0.
    struct proxy_run p = {front, back, misuse_socket(ctx, ZMQ_PAIR), 0, 0};
    void* steer = misuse_socket(ctx, ZMQ_PAIR);
    EXPECT_RC(zmq_bind(p.control, "inproc://misuse-proxy-control"), 0);
    EXPECT_RC(zmq_connect(steer, "inproc://misuse-proxy-control"), 0);
    void* thread = zmq_threadstart(run_steerable, &p);
    EXPECT_RC(zmq_send(steer, "TERMINATE", 9, 0), 9);
    zmq_threadclose(thread);
    misuse_expect_rc(__FILE__, __LINE__, "zmq_proxy_steerable until TERMINATE", p.rc, p.err, 0);
    misuse_close(steer);
    misuse_close(p.control);
    // After a shutdown each of the three returns -1/ETERM at once.
    EXPECT_RC(zmq_ctx_shutdown(ctx), 0);
    EXPECT_ERR(zmq_proxy(front, back, NULL), ETERM);
    EXPECT_ERR(zmq_proxy_steerable(front, back, NULL, NULL), ETERM);
    EXPECT_ERR(zmq_device(ZMQ_QUEUE, front, back), ETERM);
    misuse_close(front);
    misuse_close(back);
    misuse_term(ctx);
}
