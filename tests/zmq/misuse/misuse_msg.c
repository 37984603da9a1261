/* Messages (zmq_msg_*) closed, zeroed and NULL; zmq_poll with bad items. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "misuse.h"

static int freed = 0;
static void count_free(void* data, void* hint) {
    (void)data;
    (void)hint;
    ++freed;
}

// A message that was initialised and closed: libzmq marks it invalid, and the functions that
// check (close, copy, move, recv into it, gets) answer EFAULT or EINVAL.
static void closed_message(void* ctx) {
    zmq_msg_t closed, good;
    EXPECT_RC(zmq_msg_init_size(&closed, 10), 0);
    EXPECT_RC(zmq_msg_close(&closed), 0);
    EXPECT_RC(zmq_msg_init_size(&good, 100), 0);
    EXPECT_ERR(zmq_msg_close(&closed), EFAULT);
    EXPECT_ERR(zmq_msg_copy(&good, &closed), EFAULT);
    EXPECT_ERR(zmq_msg_move(&good, &closed), EFAULT);
    EXPECT_ERR(zmq_msg_copy(&closed, &good), EFAULT);  // the destination is closed first
    EXPECT_ERR(zmq_msg_move(&closed, &good), EFAULT);
    EXPECT_RC(zmq_msg_size(&good), 100);  // a failed copy or move leaves the source alone
    EXPECT_NULL(zmq_msg_gets(&closed, "Socket-Type"), EINVAL);
    void* s = misuse_socket(ctx, ZMQ_PULL);
    EXPECT_ERR(zmq_msg_recv(&closed, s, ZMQ_DONTWAIT), EFAULT);
    EXPECT_ERR(zmq_recvmsg(s, &closed, ZMQ_DONTWAIT), EFAULT);
    EXPECT_ERR(zmq_msg_recv(NULL, s, ZMQ_DONTWAIT), EFAULT);
    misuse_close(s);
    if (misuse_strix) {
        // libzmq 4.3.4 asserts in msg_t::size and msg_t::data on a closed message (zmq_msg_send
        // reads the size first).
        void* push = misuse_socket(ctx, ZMQ_PUSH);
        EXPECT_ERR(zmq_msg_send(&closed, push, ZMQ_DONTWAIT), EFAULT);
        EXPECT_ERR(zmq_sendmsg(push, &closed, ZMQ_DONTWAIT), EFAULT);
        EXPECT_ERR(zmq_msg_send(NULL, push, ZMQ_DONTWAIT), EFAULT);
        misuse_close(push);
        EXPECT_RC(zmq_msg_size(&closed), 0);
        EXPECT_TRUE(zmq_msg_data(&closed) == NULL);
    }
    EXPECT_RC(zmq_msg_close(&good), 0);

    // A zeroed zmq_msg_t is not a message either.
    zmq_msg_t zeroed;
    memset(&zeroed, 0, sizeof zeroed);
    EXPECT_ERR(zmq_msg_close(&zeroed), EFAULT);
}

static void properties(void) {
    zmq_msg_t msg, copy;
    EXPECT_RC(zmq_msg_init(&msg), 0);
    EXPECT_RC(zmq_msg_more(&msg), 0);
    EXPECT_RC(zmq_msg_get(&msg, ZMQ_MORE), 0);
    EXPECT_ERR(zmq_msg_get(&msg, 9999), EINVAL);
    EXPECT_ERR(zmq_msg_get(&msg, -1), EINVAL);
    EXPECT_ERR(zmq_msg_get(&msg, ZMQ_SRCFD), EINVAL);  // not from a tcp/ipc peer
    EXPECT_ERR(zmq_msg_set(&msg, ZMQ_MORE, 1), EINVAL);
    EXPECT_ERR(zmq_msg_set(&msg, 9999, 0), EINVAL);
    EXPECT_ERR(zmq_msg_set(NULL, ZMQ_MORE, 1), EINVAL);  // refuses before looking at the message
    EXPECT_NULL(zmq_msg_gets(&msg, "Socket-Type"), EINVAL);  // no metadata
    EXPECT_NULL(zmq_msg_gets(&msg, "no-such-property"), EINVAL);
    EXPECT_RC(zmq_msg_close(&msg), 0);

    // A copy shares the content; the free function runs once, at the last close.
    static char data[256];
    freed = 0;
    EXPECT_RC(zmq_msg_init_data(&msg, data, sizeof data, count_free, NULL), 0);
    EXPECT_RC(zmq_msg_init(&copy), 0);
    EXPECT_RC(zmq_msg_copy(&copy, &msg), 0);
    EXPECT_RC(zmq_msg_get(&msg, ZMQ_SHARED), 1);
    EXPECT_TRUE(zmq_msg_data(&copy) == data);
    EXPECT_RC(zmq_msg_close(&msg), 0);
    EXPECT_RC(freed, 0);
    EXPECT_RC(zmq_msg_close(&copy), 0);
    EXPECT_RC(freed, 1);

    // A size no allocation can hold.
    EXPECT_ERR(zmq_msg_init_size(&msg, SIZE_MAX), ENOMEM);
    EXPECT_RC(zmq_msg_init_data(&msg, NULL, 0, NULL, NULL), 0);
    EXPECT_RC(zmq_msg_size(&msg), 0);
    EXPECT_RC(zmq_msg_close(&msg), 0);
}

// A user buffer's free function runs once the library is done with it: not while the message
// waits for a peer, once it has been delivered (as pyzmq's MessageTracker relies on), and for a
// message no peer took, by the time zmq_ctx_term returns; on whichever thread lets go of it.
// One drop counter per transport: libzmq lets go of a dropped message asynchronously, so the
// inproc round's drop may land while the tcp round is looking at its own.
static atomic_int freed_delivered = 0, freed_dropped[2];
static void count_free_into(void* data, void* hint) {
    (void)data;
    atomic_fetch_add((atomic_int*)hint, 1);
}

static int wait_freed(atomic_int* n, int want) {
    for (int i = 0; i < 400 && atomic_load(n) < want; ++i) usleep(5000);
    return atomic_load(n);
}

static void send_user(void* push, char* data, size_t size, int flags, atomic_int* count) {
    zmq_msg_t msg;
    EXPECT_RC(zmq_msg_init_data(&msg, data, size, count_free_into, count), 0);
    EXPECT_RC(zmq_msg_send(&msg, push, flags), (long)size);
    EXPECT_RC(zmq_msg_close(&msg), 0);
}

// Sends four user buffers before the peer is there; the test's context is terminated after.
static void user_buffers_sent(void* ctx, const char* transport, atomic_int* dropped) {
    static char small[5] = "hello", large[2000], part1[3] = "abc", part2[600];
    atomic_store(&freed_delivered, 0);
    void* pull = misuse_socket(ctx, ZMQ_PULL);
    char at[256];
    if (strcmp(transport, "tcp") == 0) {
        // A port that was free a moment ago: the PUSH connects before anyone listens there.
        size_t len = sizeof at;
        EXPECT_RC(zmq_bind(pull, "tcp://127.0.0.1:*"), 0);
        EXPECT_RC(zmq_getsockopt(pull, ZMQ_LAST_ENDPOINT, at, &len), 0);
        EXPECT_RC(zmq_unbind(pull, at), 0);
    } else {
        strcpy(at, "inproc://misuse-user-buffers");
    }
    void* push = misuse_socket(ctx, ZMQ_PUSH);
    EXPECT_RC(zmq_connect(push, at), 0);
    send_user(push, small, sizeof small, 0, &freed_delivered);
    send_user(push, large, sizeof large, 0, &freed_delivered);
    send_user(push, part1, sizeof part1, ZMQ_SNDMORE, &freed_delivered);
    send_user(push, part2, sizeof part2, 0, &freed_delivered);
    usleep(50000);
    EXPECT_RC(atomic_load(&freed_delivered), 0);  // no peer yet: the library holds all four
    EXPECT_RC(zmq_bind(pull, at), 0);
    zmq_msg_t in;
    const int want_sizes[] = {sizeof small, sizeof large, sizeof part1, sizeof part2};
    for (int i = 0; i < 4; ++i) {
        EXPECT_RC(zmq_msg_init(&in), 0);
        EXPECT_RC(zmq_msg_recv(&in, pull, 0), want_sizes[i]);
        EXPECT_RC(zmq_msg_close(&in), 0);
    }
    EXPECT_RC(wait_freed(&freed_delivered, 4), 4);  // delivered: each given back, once
    misuse_close(push);
    misuse_close(pull);

    // One no peer takes: held while the socket lives, dropped at its close (linger 0). Over tcp
    // it goes to a port bound without listening: libzmq closes sockets asynchronously, so the
    // PULL's listener on `at` may still accept for a moment after misuse_close.
    void* lonely = misuse_socket(ctx, ZMQ_PUSH);
    int refuser = -1;
    strcpy(at, "inproc://misuse-nobody");
    if (strcmp(transport, "tcp") == 0) {
        struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof addr;
        refuser = socket(AF_INET, SOCK_STREAM, 0);
        EXPECT_RC(bind(refuser, (struct sockaddr*)&addr, sizeof addr), 0);
        EXPECT_RC(getsockname(refuser, (struct sockaddr*)&addr, &len), 0);
        snprintf(at, sizeof at, "tcp://127.0.0.1:%d", ntohs(addr.sin_port));
    }
    EXPECT_RC(zmq_connect(lonely, at), 0);
    send_user(lonely, small, sizeof small, 0, dropped);
    usleep(20000);
    EXPECT_RC(atomic_load(dropped), 0);
    misuse_close(lonely);
    if (refuser >= 0) close(refuser);
}

// libzmq 4.3.4 dereferences every NULL message (and asserts on NULL data with a size); strix
// answers -1/EFAULT, NULL or 0.
static void null_messages(void) {
    zmq_msg_t msg;
    EXPECT_ERR(zmq_msg_init(NULL), EFAULT);
    EXPECT_ERR(zmq_msg_init_size(NULL, 10), EFAULT);
    EXPECT_ERR(zmq_msg_init_data(NULL, "x", 1, NULL, NULL), EFAULT);
    EXPECT_ERR(zmq_msg_init_data(&msg, NULL, 5, NULL, NULL), EFAULT);
    EXPECT_ERR(zmq_msg_close(NULL), EFAULT);
    EXPECT_RC(zmq_msg_init(&msg), 0);
    EXPECT_ERR(zmq_msg_copy(NULL, &msg), EFAULT);
    EXPECT_ERR(zmq_msg_copy(&msg, NULL), EFAULT);
    EXPECT_ERR(zmq_msg_move(NULL, &msg), EFAULT);
    EXPECT_ERR(zmq_msg_move(&msg, NULL), EFAULT);
    EXPECT_RC(zmq_msg_close(&msg), 0);
    EXPECT_TRUE(zmq_msg_data(NULL) == NULL);
    EXPECT_RC(zmq_msg_size(NULL), 0);
    EXPECT_ERR(zmq_msg_more(NULL), EFAULT);
    EXPECT_ERR(zmq_msg_get(NULL, ZMQ_MORE), EFAULT);
    EXPECT_NULL(zmq_msg_gets(NULL, "Socket-Type"), EFAULT);
}

void misuse_messages(void) {
    void* ctx = misuse_ctx();
    closed_message(ctx);
    properties();
    atomic_store(&freed_dropped[0], 0);
    atomic_store(&freed_dropped[1], 0);
    user_buffers_sent(ctx, "inproc", &freed_dropped[0]);
    user_buffers_sent(ctx, "tcp", &freed_dropped[1]);
    if (misuse_strix) null_messages();
    misuse_term(ctx);
    // The two messages dropped unsent, each once, by now.
    EXPECT_RC(atomic_load(&freed_dropped[0]), 1);
    EXPECT_RC(atomic_load(&freed_dropped[1]), 1);
}

void misuse_poll(void) {
    void* ctx = misuse_ctx();
    zmq_pollitem_t item = {NULL, 0, ZMQ_POLLIN, 0};
    EXPECT_ERR(zmq_poll(NULL, 1, 0), EFAULT);
    EXPECT_RC(zmq_poll(NULL, 0, 0), 0);
    EXPECT_ERR(zmq_poll(&item, -1, 0), EINVAL);
    item.socket = ctx;  // a context where a socket is expected
    EXPECT_ERR(zmq_poll(&item, 1, 0), ENOTSOCK);
    item.socket = misuse_garbage;
    EXPECT_ERR(zmq_poll(&item, 1, 0), ENOTSOCK);
    void* s = misuse_socket(ctx, ZMQ_PAIR);
    misuse_close(s);
    item.socket = s;  // closed
    EXPECT_ERR(zmq_poll(&item, 1, 0), ENOTSOCK);

    // A descriptor that is not open reports POLLERR; a negative one is ignored.
    int closed_fd = 1000;
    while (fcntl(closed_fd, F_GETFD) != -1) ++closed_fd;
    zmq_pollitem_t fd_item = {NULL, closed_fd, ZMQ_POLLIN, 0};
    EXPECT_RC(zmq_poll(&fd_item, 1, 0), 1);
    EXPECT_RC(fd_item.revents, ZMQ_POLLERR);
    fd_item.fd = -1;
    fd_item.revents = 0;
    EXPECT_RC(zmq_poll(&fd_item, 1, 10), 0);
    EXPECT_RC(fd_item.revents, 0);
    misuse_term(ctx);
}
