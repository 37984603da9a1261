/* The messages every pattern sends and checks: numbered, multipart, with empty and 64 KiB parts. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop_peer.h"

enum { big_size = 64 * 1024 };

void peer_fail(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "FAIL: ");
    vfprintf(stderr, fmt, args);
    fprintf(stderr, "\n");
    va_end(args);
    exit(1);
}

// The parts of message i; part_len[k] and part[k] point into storage the caller keeps.
static int message_parts(const char* tag, int i, char* head, size_t head_cap, unsigned char* big, const void* part[4],
                         size_t part_len[4]) {
    int n = snprintf(head, head_cap, "%s:%d", tag, i);
    for (size_t j = 0; j < big_size; ++j) big[j] = (unsigned char)(i * 7 + (int)j);
    part[0] = head;
    part_len[0] = (size_t)n;
    switch (i % 4) {
        case 0: return 1;
        case 1:
            part[1] = "";
            part_len[1] = 0;
            return 2;
        case 2:
            part[1] = big;
            part_len[1] = big_size;
            return 2;
        default:
            part[1] = "";
            part_len[1] = 0;
            part[2] = big;
            part_len[2] = big_size;
            part[3] = "end";
            part_len[3] = 3;
            return 4;
    }
}

static unsigned char* big_buffer(int which) {
    static unsigned char* buffers[2];
    if (!buffers[which]) buffers[which] = malloc(big_size + 1);
    if (!buffers[which]) peer_fail("out of memory");
    return buffers[which];
}

void peer_send_message(void* socket, const char* tag, int i, const void* prefix, size_t prefix_len) {
    char head[64];
    const void* part[4];
    size_t len[4];
    int parts = message_parts(tag, i, head, sizeof head, big_buffer(0), part, len);
    if (prefix && zmq_send(socket, prefix, prefix_len, ZMQ_SNDMORE) < 0)
        peer_fail("send envelope of %s:%d: %s", tag, i, zmq_strerror(errno));
    for (int k = 0; k < parts; ++k) {
        int rc = zmq_send(socket, part[k], len[k], k + 1 < parts ? ZMQ_SNDMORE : 0);
        if (rc != (int)len[k]) peer_fail("send part %d of %s:%d: rc %d, %s", k, tag, i, rc, zmq_strerror(errno));
    }
}

size_t peer_recv_part(void* socket, void* buf, size_t cap, int* more) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, socket, 0) < 0) peer_fail("recv: %s", zmq_strerror(errno));
    size_t size = zmq_msg_size(&msg);
    if (size > cap) peer_fail("a part of %zu bytes, at most %zu expected", size, cap);
    if (size) memcpy(buf, zmq_msg_data(&msg), size);
    *more = zmq_msg_more(&msg);
    zmq_msg_close(&msg);
    return size;
}

static const char* type_name(int type) {
    static const char* names[] = {"PAIR",   "PUB",  "SUB",  "REQ",  "REP",  "DEALER",
                                  "ROUTER", "PULL", "PUSH", "XPUB", "XSUB", "STREAM"};
    return type >= 0 && type < (int)(sizeof names / sizeof names[0]) ? names[type] : "?";
}

// The metadata libzmq attaches to every message from a tcp or ipc peer.
static void check_properties(const struct peer_run* run, zmq_msg_t* msg, int peer_type, int i) {
    const char* type = zmq_msg_gets(msg, "Socket-Type");
    if (!type || strcmp(type, type_name(peer_type)) != 0)
        peer_fail("message %d: Socket-Type %s, want %s", i, type ? type : "(none)", type_name(peer_type));
    if (run->user_id) {
        const char* user = zmq_msg_gets(msg, "User-Id");
        if (!user || strcmp(user, run->user_id) != 0)
            peer_fail("message %d: User-Id %s, want %s", i, user ? user : "(none)", run->user_id);
    }
}

void peer_recv_message(const struct peer_run* run, int peer_type, const char* tag, int i, int envelope_parts,
                       char* envelope, size_t* envelope_len) {
    char head[64];
    const void* part[4];
    size_t len[4];
    int parts = message_parts(tag, i, head, sizeof head, big_buffer(0), part, len);
    unsigned char* got = big_buffer(1);
    int total = envelope_parts + parts;
    for (int k = 0; k < total; ++k) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, run->socket, 0) < 0)
            peer_fail("recv part %d of %s:%d: %s", k, tag, i, zmq_strerror(errno));
        if (k == 0) check_properties(run, &msg, peer_type, i);
        size_t size = zmq_msg_size(&msg);
        int more = zmq_msg_more(&msg);
        if (size <= big_size) memcpy(got, zmq_msg_data(&msg), size);
        zmq_msg_close(&msg);
        if (more != (k + 1 < total)) peer_fail("%s:%d part %d: more %d, want %d", tag, i, k, more, k + 1 < total);
        if (k < envelope_parts) {
            // The routing id first, then empty delimiters.
            if (k > 0 && size != 0)
                peer_fail("%s:%d: envelope part %d has %zu bytes, want a delimiter", tag, i, k, size);
            if (k == 0 && envelope) {
                memcpy(envelope, got, size < 255 ? size : 255);
                *envelope_len = size;
            }
            continue;
        }
        int p = k - envelope_parts;
        if (size != len[p] || memcmp(got, part[p], size) != 0) {
            size_t shown = size < 40 ? size : 40;
            peer_fail("%s:%d part %d: %zu bytes \"%.*s\", want %zu bytes \"%.*s\"", tag, i, p, size, (int)shown,
                      (const char*)got, len[p], (int)(len[p] < 40 ? len[p] : 40), (const char*)part[p]);
        }
    }
}
