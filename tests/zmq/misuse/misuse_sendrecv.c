/* Sending and receiving out of state: EAGAIN, ENOTSUP, EFSM, EHOSTUNREACH, bad buffers; whole
   messages at the high-water mark. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "misuse.h"

// Nothing to receive and nobody to send to: EAGAIN from every send and recv function.
static void would_block(void* ctx) {
    void* pull = misuse_socket(ctx, ZMQ_PULL);
    void* push = misuse_socket(ctx, ZMQ_PUSH);
    char buf[8] = "abc";
    struct iovec iov = {buf, 3};
    size_t count = 1;
    zmq_msg_t msg;
    EXPECT_ERR(zmq_recv(pull, buf, sizeof buf, ZMQ_DONTWAIT), EAGAIN);
    EXPECT_ERR(zmq_recviov(pull, &iov, &count, ZMQ_DONTWAIT), EAGAIN);
    zmq_msg_init(&msg);
    EXPECT_ERR(zmq_msg_recv(&msg, pull, ZMQ_DONTWAIT), EAGAIN);
    EXPECT_ERR(zmq_recvmsg(pull, &msg, ZMQ_DONTWAIT), EAGAIN);
    EXPECT_RC(zmq_msg_close(&msg), 0);
    EXPECT_ERR(zmq_send(push, buf, 3, ZMQ_DONTWAIT), EAGAIN);
    EXPECT_ERR(zmq_send_const(push, "abc", 3, ZMQ_DONTWAIT), EAGAIN);
    EXPECT_ERR(zmq_sendiov(push, &iov, 1, ZMQ_DONTWAIT), EAGAIN);
    zmq_msg_init_size(&msg, 3);
    EXPECT_ERR(zmq_msg_send(&msg, push, ZMQ_DONTWAIT), EAGAIN);
    EXPECT_ERR(zmq_sendmsg(push, &msg, ZMQ_DONTWAIT), EAGAIN);
    EXPECT_RC(zmq_msg_close(&msg), 0);  // a failed send leaves the message with the caller
    // Timeouts end in EAGAIN too.
    int ms = 10;
    EXPECT_RC(zmq_setsockopt(pull, ZMQ_RCVTIMEO, &ms, sizeof ms), 0);
    EXPECT_RC(zmq_setsockopt(push, ZMQ_SNDTIMEO, &ms, sizeof ms), 0);
    EXPECT_ERR(zmq_recv(pull, buf, sizeof buf, 0), EAGAIN);
    EXPECT_ERR(zmq_send(push, buf, 3, 0), EAGAIN);
    // Bad vectors.
    EXPECT_ERR(zmq_sendiov(push, NULL, 1, ZMQ_DONTWAIT), EINVAL);
    EXPECT_ERR(zmq_sendiov(push, &iov, 0, ZMQ_DONTWAIT), EINVAL);
    EXPECT_ERR(zmq_recviov(pull, NULL, &count, ZMQ_DONTWAIT), EINVAL);
    EXPECT_ERR(zmq_recviov(pull, &iov, NULL, ZMQ_DONTWAIT), EINVAL);
    count = 0;
    EXPECT_ERR(zmq_recviov(pull, &iov, &count, ZMQ_DONTWAIT), EINVAL);
    misuse_close(pull);
    misuse_close(push);
}

// One-way sockets refuse the other direction.
static void wrong_direction(void* ctx) {
    static const struct {
        int type;
        int sends;  // 1: send refused, 0: recv refused
    } cases[] = {{ZMQ_SUB, 1}, {ZMQ_PULL, 1}, {ZMQ_PUB, 0}, {ZMQ_PUSH, 0}};
    char buf[4] = "abc";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        void* s = misuse_socket(ctx, cases[i].type);
        if (cases[i].sends)
            EXPECT_ERR(zmq_send(s, buf, 3, ZMQ_DONTWAIT), ENOTSUP);
        else
            EXPECT_ERR(zmq_recv(s, buf, sizeof buf, ZMQ_DONTWAIT), ENOTSUP);
        misuse_close(s);
    }
}

// REQ and REP keep to their turn.
static void request_reply_states(void* ctx) {
    void* rep = misuse_socket(ctx, ZMQ_REP);
    void* req = misuse_socket(ctx, ZMQ_REQ);
    char buf[8];
    EXPECT_RC(zmq_bind(rep, "inproc://misuse-reqrep"), 0);
    EXPECT_RC(zmq_connect(req, "inproc://misuse-reqrep"), 0);
    EXPECT_ERR(zmq_recv(req, buf, sizeof buf, ZMQ_DONTWAIT), EFSM);
    EXPECT_ERR(zmq_send(rep, "x", 1, ZMQ_DONTWAIT), EFSM);
    EXPECT_RC(zmq_send(req, "ping", 4, 0), 4);
    EXPECT_ERR(zmq_send(req, "ping", 4, 0), EFSM);
    zmq_msg_t msg;
    zmq_msg_init_size(&msg, 1);
    EXPECT_ERR(zmq_msg_send(&msg, req, 0), EFSM);
    EXPECT_RC(zmq_msg_close(&msg), 0);
    EXPECT_RC(zmq_recv(rep, buf, sizeof buf, 0), 4);
    EXPECT_ERR(zmq_recv(rep, buf, sizeof buf, ZMQ_DONTWAIT), EFSM);
    EXPECT_RC(zmq_send(rep, "pong", 4, 0), 4);
    EXPECT_RC(zmq_recv(req, buf, sizeof buf, 0), 4);
    EXPECT_TRUE(memcmp(buf, "pong", 4) == 0);
    misuse_close(req);
    misuse_close(rep);
}

static void router_mandatory(void* ctx) {
    void* router = misuse_socket(ctx, ZMQ_ROUTER);
    int on = 1;
    EXPECT_RC(zmq_setsockopt(router, ZMQ_ROUTER_MANDATORY, &on, sizeof on), 0);
    EXPECT_ERR(zmq_send(router, "nobody", 6, ZMQ_SNDMORE | ZMQ_DONTWAIT), EHOSTUNREACH);
    misuse_close(router);
}

// Empty and NULL buffers on a connected pair; truncation on receive.
static void buffers(void* ctx) {
    void* a = misuse_socket(ctx, ZMQ_PAIR);
    void* b = misuse_socket(ctx, ZMQ_PAIR);
    char buf[8];
    EXPECT_RC(zmq_bind(a, "inproc://misuse-buffers"), 0);
    EXPECT_RC(zmq_connect(b, "inproc://misuse-buffers"), 0);
    EXPECT_RC(zmq_send(a, NULL, 0, 0), 0);
    EXPECT_RC(zmq_recv(b, NULL, 0, 0), 0);
    EXPECT_RC(zmq_send(a, "abc", 3, 0), 3);
    EXPECT_RC(zmq_recv(b, NULL, 0, 0), 3);  // the size of the message, nothing copied
    EXPECT_RC(zmq_send_const(a, "abcdef", 6, 0), 6);
    memset(buf, 0, sizeof buf);
    EXPECT_RC(zmq_recv(b, buf, 2, 0), 6);  // truncated to 2, the full size returned
    EXPECT_TRUE(memcmp(buf, "ab\0", 3) == 0);
    if (misuse_strix) {
        // libzmq 4.3.4 asserts on a NULL buffer with a size (msg_t::init_buffer, init_data and
        // zmq_recv's own assert).
        EXPECT_ERR(zmq_send(a, NULL, 5, 0), EFAULT);
        EXPECT_ERR(zmq_send_const(a, NULL, 5, 0), EFAULT);
        EXPECT_RC(zmq_send(a, "abc", 3, 0), 3);
        EXPECT_ERR(zmq_recv(b, NULL, 5, 0), EFAULT);
    }
    misuse_close(a);
    misuse_close(b);
}

// zmq_sendiov as libzmq 4.3.4 does it (its manual says otherwise): without ZMQ_SNDMORE each
// vector is a message of its own; with it, the vectors are the parts of one message that ends
// with the last (whose SNDMORE is dropped). zmq_recviov returns the number of parts it filled.
static void vectors(void* ctx) {
    void* a = misuse_socket(ctx, ZMQ_PAIR);
    void* b = misuse_socket(ctx, ZMQ_PAIR);
    int ms = 1000;
    EXPECT_RC(zmq_setsockopt(b, ZMQ_RCVTIMEO, &ms, sizeof ms), 0);
    EXPECT_RC(zmq_bind(a, "inproc://misuse-vectors"), 0);
    EXPECT_RC(zmq_connect(b, "inproc://misuse-vectors"), 0);
    char ab[] = "ab", cde[] = "cde", buf[8];
    struct iovec two[2] = {{ab, 2}, {cde, 3}};
    int more = -1;
    size_t len = sizeof more;
    EXPECT_RC(zmq_sendiov(a, two, 2, 0), 3);
    EXPECT_RC(zmq_recv(b, buf, sizeof buf, 0), 2);
    EXPECT_RC(zmq_getsockopt(b, ZMQ_RCVMORE, &more, &len), 0);
    EXPECT_RC(more, 0);
    EXPECT_RC(zmq_recv(b, buf, sizeof buf, 0), 3);  // the second message: waits (RCVTIMEO), as at 144
    EXPECT_RC(zmq_sendiov(a, two, 2, ZMQ_SNDMORE), 3);
    struct iovec got[4];
    size_t count = 4;
    EXPECT_RC(zmq_recviov(b, got, &count, 0),
              2);  // waits (RCVTIMEO): strix's inproc delivers within microseconds, not by the time zmq_send returns
    EXPECT_RC(count, 2);
    for (size_t i = 0; i < count && i < 4; ++i) free(got[i].iov_base);
    misuse_close(a);
    misuse_close(b);
}

// A multipart message sent with ZMQ_DONTWAIT into a pipe at its high-water mark goes whole or not at
// all: a refusal comes at a message's first part, never after a part of it was taken (a refused
// first part leaves the next part to start a message). Both libraries count their high-water
// marks differently, so the test sends until the pipe is full and checks that the peer then gets
// exactly the messages made of the parts taken, each with its parts.
static void whole_messages_at_the_hwm(void* ctx) {
    void* a = zmq_socket(ctx, ZMQ_PAIR);
    void* b = zmq_socket(ctx, ZMQ_PAIR);
    int one = 1;
    zmq_setsockopt(a, ZMQ_SNDHWM, &one, sizeof one);
    zmq_setsockopt(b, ZMQ_RCVHWM, &one, sizeof one);
    EXPECT_RC(zmq_bind(b, "inproc://misuse-whole"), 0);
    EXPECT_RC(zmq_connect(a, "inproc://misuse-whole"), 0);
    int parts_of[50];  // the parts of each message taken
    int messages = 0, torn = 0, refused = 0;
    for (int m = 0; m < 50; ++m) {
        int taken = 0;
        for (int p = 0; p < 3; ++p) {
            char part[32];  // room for any two ints (gcc -O1 cannot bound m and p)
            snprintf(part, sizeof part, "m%d-p%d", m, p);
            if (zmq_send(a, part, strlen(part), ZMQ_DONTWAIT | (p < 2 ? ZMQ_SNDMORE : 0)) >= 0)
                ++taken;
            else if (taken > 0)
                ++torn;  // a part refused after one of the same message was taken
            else
                ++refused;
        }
        if (taken > 0) parts_of[messages++] = taken;
    }
    EXPECT_RC(torn, 0);
    EXPECT_TRUE(refused > 0);  // the pipe filled up
    int timeo = 2000;
    zmq_setsockopt(b, ZMQ_RCVTIMEO, &timeo, sizeof timeo);
    for (int m = 0; m < messages; ++m) {
        for (int p = 0; p < parts_of[m]; ++p) {
            char got[16] = {0};
            EXPECT_TRUE(zmq_recv(b, got, sizeof got - 1, 0) > 0 && got[0] == 'm');
            int more = -1;
            size_t len = sizeof more;
            zmq_getsockopt(b, ZMQ_RCVMORE, &more, &len);
            EXPECT_RC(more, p + 1 < parts_of[m] ? 1 : 0);
        }
    }
    EXPECT_ERR(zmq_recv(b, &one, sizeof one, ZMQ_DONTWAIT), EAGAIN);
    misuse_close(a);
    misuse_close(b);
}

void misuse_send_recv(void) {
    void* ctx = misuse_ctx();
    would_block(ctx);
    wrong_direction(ctx);
    request_reply_states(ctx);
    router_mandatory(ctx);
    buffers(ctx);
    vectors(ctx);
    whole_messages_at_the_hwm(ctx);
    misuse_term(ctx);
}
