/* Each pattern's two sides: what side a and side b send, in which order, and what they check. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interop_peer.h"

int peer_socket_type(const char* pattern, char side) {
    static const struct {
        const char* name;
        int a, b;
    } patterns[] = {
        {"pair", ZMQ_PAIR, ZMQ_PAIR},       {"pubsub", ZMQ_PUB, ZMQ_SUB}, {"xpubsub", ZMQ_XPUB, ZMQ_XSUB},
        {"pushpull", ZMQ_PUSH, ZMQ_PULL},   {"reqrep", ZMQ_REQ, ZMQ_REP}, {"dealerrouter", ZMQ_DEALER, ZMQ_ROUTER},
        {"reqrouter", ZMQ_REQ, ZMQ_ROUTER}, {"large", ZMQ_PUSH, ZMQ_PULL},
    };
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; ++i)
        if (strcmp(pattern, patterns[i].name) == 0) return side == 'a' ? patterns[i].a : patterns[i].b;
    return -1;
}

static int other_type(const struct peer_run* run) {
    return peer_socket_type(run->pattern, run->side == 'a' ? 'b' : 'a');
}

static void send_all(const struct peer_run* run, const char* tag) {
    for (int i = 0; i < run->count; ++i) peer_send_message(run->socket, tag, i, NULL, 0);
}

static void recv_all(const struct peer_run* run, const char* tag) {
    for (int i = 0; i < run->count; ++i) peer_recv_message(run, other_type(run), tag, i, 0, NULL, NULL);
}

// PAIR: a sends every message, b receives them and sends its own back.
static void pair(const struct peer_run* run) {
    if (run->side == 'a') {
        send_all(run, "a2b");
        recv_all(run, "b2a");
    } else {
        recv_all(run, "a2b");
        send_all(run, "b2a");
    }
}

// Reads "go" from the driver on stdin, without blocking longer than wait_ms.
static int driver_said_go(int wait_ms) {
    zmq_pollitem_t item = {NULL, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, wait_ms) < 0) peer_fail("zmq_poll on stdin: %s", zmq_strerror(errno));
    if (!(item.revents & ZMQ_POLLIN)) return 0;
    char line[16];
    ssize_t n = read(0, line, sizeof line);
    return n >= 2 && memcmp(line, "go", 2) == 0;
}

// PUB/SUB with a topic filter. The SUB subscribes to "A" and "sync"; the PUB sends "sync"
// probes until the SUB has seen one (it tells the driver, which tells the PUB: the
// subscriptions are in place), then "sync-last", then every message on topic B (filtered
// out) and A (delivered), interleaved.
static void pubsub(const struct peer_run* run) {
    char buf[64];
    int more;
    if (run->side == 'a') {
        while (!driver_said_go(20)) zmq_send(run->socket, "sync", 4, 0);
        zmq_send(run->socket, "sync-last", 9, 0);
        for (int i = 0; i < run->count; ++i) {
            peer_send_message(run->socket, "B", i, NULL, 0);
            peer_send_message(run->socket, "A", i, NULL, 0);
        }
        return;
    }
    if (zmq_setsockopt(run->socket, ZMQ_SUBSCRIBE, "A", 1) || zmq_setsockopt(run->socket, ZMQ_SUBSCRIBE, "sync", 4))
        peer_fail("subscribe: %s", zmq_strerror(errno));
    peer_recv_part(run->socket, buf, sizeof buf, &more);
    printf("synced\n");
    fflush(stdout);
    size_t n;
    do {
        n = peer_recv_part(run->socket, buf, sizeof buf, &more);
        if (n < 4 || memcmp(buf, "sync", 4) != 0) peer_fail("a %zu-byte message before sync-last", n);
    } while (!(n == 9 && memcmp(buf, "sync-last", 9) == 0));
    recv_all(run, "A");
}

// XPUB/XSUB: the XSUB sends the subscription as a message, the XPUB receives it, publishes on
// topics B and A; the XSUB gets A's messages only, then unsubscribes, which the XPUB receives.
static void xpubsub(const struct peer_run* run) {
    unsigned char buf[64];
    int more;
    if (run->side == 'a') {
        size_t n = peer_recv_part(run->socket, buf, sizeof buf, &more);
        if (n != 2 || memcmp(buf, "\1A", 2) != 0) peer_fail("XPUB got a %zu-byte subscription, want \\1A", n);
        for (int i = 0; i < run->count; ++i) {
            peer_send_message(run->socket, "B", i, NULL, 0);
            peer_send_message(run->socket, "A", i, NULL, 0);
        }
        n = peer_recv_part(run->socket, buf, sizeof buf, &more);
        if (n != 2 || memcmp(buf, "\0A", 2) != 0) peer_fail("XPUB got a %zu-byte unsubscription, want \\0A", n);
        return;
    }
    if (zmq_send(run->socket, "\1A", 2, 0) != 2) peer_fail("XSUB subscribe: %s", zmq_strerror(errno));
    recv_all(run, "A");
    if (zmq_send(run->socket, "\0A", 2, 0) != 2) peer_fail("XSUB unsubscribe: %s", zmq_strerror(errno));
}

static void pushpull(const struct peer_run* run) {
    if (run->side == 'a')
        send_all(run, "push");
    else
        recv_all(run, "push");
}

// PUSH/PULL with parts larger than strix keeps in a connection's receive ring (16 MiB), each
// byte a function of its message, part and offset: [16 MiB + 1]; [head, 40 MiB]; [24 MiB, 20 MiB,
// "end"]. libzmq's default has no size limit; neither may strix's.
static const size_t large_parts[3][3] = {{(16u << 20) + 1, 0, 0}, {5, 40u << 20, 0}, {24u << 20, 20u << 20, 3}};

static unsigned char large_byte(int msg, int part, size_t j) { return (unsigned char)(j * 31 + (size_t)(msg * 7 + part)); }

static void large(const struct peer_run* run) {
    const int count = run->count < 3 ? run->count : 3;
    unsigned char* buf = malloc(40u << 20);
    if (!buf) peer_fail("out of memory");
    for (int i = 0; i < count; ++i) {
        int parts = 0;
        while (parts < 3 && large_parts[i][parts]) ++parts;
        for (int k = 0; k < parts; ++k) {
            const size_t n = large_parts[i][k];
            if (run->side == 'a') {
                for (size_t j = 0; j < n; ++j) buf[j] = large_byte(i, k, j);
                if (zmq_send(run->socket, buf, n, k + 1 < parts ? ZMQ_SNDMORE : 0) != (int)n)
                    peer_fail("send message %d part %d (%zu bytes): %s", i, k, n, zmq_strerror(errno));
                continue;
            }
            zmq_msg_t msg;
            zmq_msg_init(&msg);
            if (zmq_msg_recv(&msg, run->socket, 0) < 0)
                peer_fail("receive message %d part %d: %s", i, k, zmq_strerror(errno));
            const unsigned char* got = zmq_msg_data(&msg);
            if (zmq_msg_size(&msg) != n) peer_fail("message %d part %d: %zu bytes, not %zu", i, k, zmq_msg_size(&msg), n);
            for (size_t j = 0; j < n; ++j)
                if (got[j] != large_byte(i, k, j)) peer_fail("message %d part %d: byte %zu differs", i, k, j);
            if (zmq_msg_more(&msg) != (k + 1 < parts)) peer_fail("message %d part %d: wrong MORE flag", i, k);
            zmq_msg_close(&msg);
        }
    }
    free(buf);
}

// REQ against REP or ROUTER: a request, its reply, in turn. A ROUTER sees [routing id, empty
// delimiter, request...] and answers through the same envelope; every request of one REQ
// comes with the same routing id.
static void request_reply(const struct peer_run* run) {
    if (run->side == 'a') {
        for (int i = 0; i < run->count; ++i) {
            peer_send_message(run->socket, "req", i, NULL, 0);
            peer_recv_message(run, other_type(run), "rep", i, 0, NULL, NULL);
        }
        return;
    }
    int router = peer_socket_type(run->pattern, 'b') == ZMQ_ROUTER;
    char first_id[256];
    size_t first_len = 0;
    for (int i = 0; i < run->count; ++i) {
        if (!router) {
            peer_recv_message(run, ZMQ_REQ, "req", i, 0, NULL, NULL);
            peer_send_message(run->socket, "rep", i, NULL, 0);
            continue;
        }
        char id[256];
        size_t id_len = 0;
        peer_recv_message(run, ZMQ_REQ, "req", i, 2, id, &id_len);
        if (i == 0) {
            if (id_len == 0 || id_len > 255) peer_fail("a REQ's routing id of %zu bytes", id_len);
            memcpy(first_id, id, id_len);
            first_len = id_len;
        } else if (id_len != first_len || memcmp(id, first_id, id_len) != 0) {
            peer_fail("request %d came with another routing id", i);
        }
        if (zmq_send(run->socket, id, id_len, ZMQ_SNDMORE) < 0 || zmq_send(run->socket, "", 0, ZMQ_SNDMORE) < 0)
            peer_fail("send envelope: %s", zmq_strerror(errno));
        peer_send_message(run->socket, "rep", i, NULL, 0);
    }
}

// DEALER/ROUTER: the DEALER (routing id "dealer-1") sends every request without waiting, the
// ROUTER sees each behind the DEALER's routing id and answers through it.
static void dealer_router(const struct peer_run* run) {
    if (run->side == 'a') {
        send_all(run, "req");
        recv_all(run, "rep");
        return;
    }
    for (int i = 0; i < run->count; ++i) {
        char id[256];
        size_t id_len = 0;
        peer_recv_message(run, ZMQ_DEALER, "req", i, 1, id, &id_len);
        if (id_len != 8 || memcmp(id, "dealer-1", 8) != 0)
            peer_fail("request %d from routing id of %zu bytes", i, id_len);
        peer_send_message(run->socket, "rep", i, id, id_len);
    }
}

void peer_run_pattern(const struct peer_run* run) {
    if (strcmp(run->pattern, "pair") == 0) return pair(run);
    if (strcmp(run->pattern, "pubsub") == 0) return pubsub(run);
    if (strcmp(run->pattern, "xpubsub") == 0) return xpubsub(run);
    if (strcmp(run->pattern, "pushpull") == 0) return pushpull(run);
    if (strcmp(run->pattern, "dealerrouter") == 0) return dealer_router(run);
    if (strcmp(run->pattern, "large") == 0) return large(run);
    return request_reply(run);
}
