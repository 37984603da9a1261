/* Contexts and socket handles: null, wrong-type, garbage, closed and terminated handles given to
 * every function that takes one. */
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "misuse.h"

// Every context function refuses a handle that is not a live context with EFAULT.
static void not_a_context(void* bad) {
    EXPECT_ERR(zmq_ctx_term(bad), EFAULT);
    EXPECT_ERR(zmq_term(bad), EFAULT);
    EXPECT_ERR(zmq_ctx_destroy(bad), EFAULT);
    EXPECT_ERR(zmq_ctx_shutdown(bad), EFAULT);
    EXPECT_ERR(zmq_ctx_set(bad, ZMQ_IO_THREADS, 1), EFAULT);
    EXPECT_ERR(zmq_ctx_get(bad, ZMQ_IO_THREADS), EFAULT);
    EXPECT_NULL(zmq_socket(bad, ZMQ_PAIR), EFAULT);
}

static void context_options(void* ctx) {
    EXPECT_ERR(zmq_ctx_set(ctx, 9999, 1), EINVAL);
    EXPECT_ERR(zmq_ctx_set(ctx, -1, 1), EINVAL);
    EXPECT_ERR(zmq_ctx_set(ctx, ZMQ_IO_THREADS, -1), EINVAL);
    EXPECT_ERR(zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, 0), EINVAL);
    EXPECT_ERR(zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, -5), EINVAL);
    EXPECT_ERR(zmq_ctx_set(ctx, ZMQ_IPV6, -1), EINVAL);
    EXPECT_ERR(zmq_ctx_set(ctx, ZMQ_BLOCKY, -1), EINVAL);
    EXPECT_ERR(zmq_ctx_set(ctx, ZMQ_MAX_MSGSZ, -1), EINVAL);
    // ZMQ_MSG_T_SIZE is read-only (ZMQ_SOCKET_LIMIT shares its number with ZMQ_THREAD_PRIORITY).
    EXPECT_ERR(zmq_ctx_set(ctx, ZMQ_MSG_T_SIZE, 64), EINVAL);
    EXPECT_ERR(zmq_ctx_get(ctx, 9999), EINVAL);
    EXPECT_ERR(zmq_ctx_get(ctx, -1), EINVAL);
    EXPECT_RC(zmq_ctx_get(ctx, ZMQ_MSG_T_SIZE), sizeof(zmq_msg_t));
    // Values that are accepted read back.
    EXPECT_RC(zmq_ctx_set(ctx, ZMQ_IO_THREADS, 2), 0);
    EXPECT_RC(zmq_ctx_get(ctx, ZMQ_IO_THREADS), 2);
    EXPECT_RC(zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, 10), 0);
    EXPECT_RC(zmq_ctx_get(ctx, ZMQ_MAX_SOCKETS), 10);
}

void misuse_contexts(void) {
    not_a_context(NULL);
    not_a_context(misuse_garbage);
    void* ctx = misuse_ctx();
    void* s = misuse_socket(ctx, ZMQ_PAIR);
    not_a_context(s);  // a socket where a context is expected
    context_options(ctx);
    EXPECT_NULL(zmq_socket(ctx, -1), EINVAL);
    EXPECT_NULL(zmq_socket(ctx, 999), EINVAL);
    misuse_close(s);
    misuse_term(ctx);

    EXPECT_NULL(zmq_init(-1), EINVAL);
    void* old = zmq_init(1);
    EXPECT_TRUE(old != NULL);
    EXPECT_RC(zmq_term(old), 0);
    old = zmq_init(0);
    EXPECT_TRUE(old != NULL);
    EXPECT_RC(zmq_ctx_destroy(old), 0);

    // The socket limit: the second socket of a one-socket context.
    ctx = misuse_ctx();
    EXPECT_RC(zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, 1), 0);
    s = misuse_socket(ctx, ZMQ_PAIR);
    EXPECT_NULL(zmq_socket(ctx, ZMQ_PAIR), EMFILE);
    misuse_close(s);
    misuse_term(ctx);

    // A shut-down context creates no sockets; shutting it down again is harmless.
    ctx = misuse_ctx();
    EXPECT_RC(zmq_ctx_shutdown(ctx), 0);
    EXPECT_RC(zmq_ctx_shutdown(ctx), 0);
    EXPECT_NULL(zmq_socket(ctx, ZMQ_PAIR), ETERM);
    misuse_term(ctx);

    if (misuse_strix) {
        // A terminated context: libzmq 4.3.4 has freed it and reads freed memory (undefined
        // behaviour), so this runs against strix only: the handle is no longer a context.
        ctx = misuse_ctx();
        misuse_term(ctx);
        not_a_context(ctx);
    }
}

// Every socket function refuses a handle that is not a live socket with ENOTSOCK.
static void not_a_socket(void* bad) {
    int v = 0;
    size_t len = sizeof v;
    char buf[8];
    struct iovec iov = {buf, sizeof buf};
    size_t count = 1;
    zmq_msg_t msg;
    EXPECT_ERR(zmq_close(bad), ENOTSOCK);
    EXPECT_ERR(zmq_setsockopt(bad, ZMQ_LINGER, &v, sizeof v), ENOTSOCK);
    EXPECT_ERR(zmq_getsockopt(bad, ZMQ_LINGER, &v, &len), ENOTSOCK);
    EXPECT_ERR(zmq_bind(bad, "inproc://misuse-not-a-socket"), ENOTSOCK);
    EXPECT_ERR(zmq_connect(bad, "inproc://misuse-not-a-socket"), ENOTSOCK);
    EXPECT_ERR(zmq_unbind(bad, "inproc://misuse-not-a-socket"), ENOTSOCK);
    EXPECT_ERR(zmq_disconnect(bad, "inproc://misuse-not-a-socket"), ENOTSOCK);
    EXPECT_ERR(zmq_socket_monitor(bad, "inproc://misuse-monitor", ZMQ_EVENT_ALL), ENOTSOCK);
    EXPECT_ERR(zmq_send(bad, "x", 1, ZMQ_DONTWAIT), ENOTSOCK);
    EXPECT_ERR(zmq_send_const(bad, "x", 1, ZMQ_DONTWAIT), ENOTSOCK);
    EXPECT_ERR(zmq_recv(bad, buf, sizeof buf, ZMQ_DONTWAIT), ENOTSOCK);
    EXPECT_ERR(zmq_sendiov(bad, &iov, 1, ZMQ_DONTWAIT), ENOTSOCK);
    EXPECT_ERR(zmq_recviov(bad, &iov, &count, ZMQ_DONTWAIT), ENOTSOCK);
    zmq_msg_init_size(&msg, 1);
    EXPECT_ERR(zmq_msg_send(&msg, bad, ZMQ_DONTWAIT), ENOTSOCK);
    EXPECT_ERR(zmq_sendmsg(bad, &msg, ZMQ_DONTWAIT), ENOTSOCK);
    EXPECT_ERR(zmq_msg_recv(&msg, bad, ZMQ_DONTWAIT), ENOTSOCK);
    EXPECT_ERR(zmq_recvmsg(bad, &msg, ZMQ_DONTWAIT), ENOTSOCK);
    EXPECT_RC(zmq_msg_close(&msg), 0);
}

void misuse_socket_handles(void) {
    not_a_socket(NULL);
    not_a_socket(misuse_garbage);
    void* ctx = misuse_ctx();
    not_a_socket(ctx);  // a context where a socket is expected
    // A closed socket: libzmq marks it dead at zmq_close and answers ENOTSOCK from then on (its
    // reaper frees it later; the memory keeps the dead mark, so this runs against libzmq too).
    void* s = misuse_socket(ctx, ZMQ_PAIR);
    misuse_close(s);
    not_a_socket(s);
    misuse_term(ctx);
}
