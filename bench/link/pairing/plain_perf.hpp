/* libzmq's own perf programs (perf/local_thr, remote_thr, local_lat, remote_lat) as a new user
 * builds them: the same command lines, plain libzmq C API calls, messages of zeros with no
 * sequence numbers, and only the message size checked. They stand in for libzmq's binaries,
 * which Debian does not ship, in the test that pairs them with the strix-link-* tools
 * (pairing_test.sh). Written in C style (the project builds C++ only, so these compile as C++).
 * The one addition: a 30 s receive/send timeout, so a test never hangs. */
#pragma once

#include <zmq.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline void plain_die(const char* what) {
    fprintf(stderr, "%s: %s\n", what, zmq_strerror(zmq_errno()));
    exit(1);
}

static inline double plain_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A socket of `type` with the 30 s timeouts. */
static inline void* plain_socket(void* ctx, int type) {
    void* s = zmq_socket(ctx, type);
    if (!s) plain_die("zmq_socket");
    const int timeout = 30000;
    if (zmq_setsockopt(s, ZMQ_RCVTIMEO, &timeout, sizeof timeout) != 0) plain_die("ZMQ_RCVTIMEO");
    if (zmq_setsockopt(s, ZMQ_SNDTIMEO, &timeout, sizeof timeout) != 0) plain_die("ZMQ_SNDTIMEO");
    return s;
}

/* Parses the three positional arguments every program takes. */
static inline void plain_args(int argc, char** argv, const char* usage, size_t* size, long* count) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s %s <message-size> <message-count>\n", argv[0], usage);
        exit(2);
    }
    *size = (size_t)atol(argv[2]);
    *count = atol(argv[3]);
    if (*count < 1) {
        fprintf(stderr, "%s: the count must be at least 1\n", argv[0]);
        exit(2);
    }
}

/* Receives one message into msg and checks its size (what libzmq's tools check). */
static inline void plain_recv_sized(void* s, zmq_msg_t* msg, size_t size, long i) {
    if (zmq_msg_recv(msg, s, 0) < 0) {
        fprintf(stderr, "zmq_msg_recv (message %ld): %s\n", i, zmq_strerror(zmq_errno()));
        exit(1);
    }
    if (zmq_msg_size(msg) != size) {
        fprintf(stderr, "message %ld of the wrong size: %zu, expected %zu\n", i, zmq_msg_size(msg), size);
        exit(1);
    }
}

/* Sends `size` zero bytes. */
static inline void plain_send_zeros(void* s, size_t size, long i) {
    zmq_msg_t msg;
    if (zmq_msg_init_size(&msg, size) != 0) plain_die("zmq_msg_init_size");
    memset(zmq_msg_data(&msg), 0, size);
    if (zmq_msg_send(&msg, s, 0) < 0) {
        fprintf(stderr, "zmq_msg_send (message %ld): %s\n", i, zmq_strerror(zmq_errno()));
        exit(1);
    }
}
