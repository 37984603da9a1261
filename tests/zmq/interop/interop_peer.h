/* zmq_interop_peer's parts: the message scheme every pattern sends and checks
 * (interop_messages.c), the patterns (interop_patterns.c) and the process setup (interop_peer.c). */
#ifndef STRIX_TESTS_ZMQ_INTEROP_PEER_H
#define STRIX_TESTS_ZMQ_INTEROP_PEER_H

#include <stddef.h>

#include <zmq.h>

/* What one side of a pattern run is given. */
struct peer_run {
    void* ctx;
    void* socket;         // the side's socket, bound or connected (security options applied)
    const char* pattern;  // pair, pubsub, xpubsub, pushpull, reqrep, dealerrouter, reqrouter, large
    char side;            // 'a': the pattern's first socket type, 'b': its second
    int count;            // messages each way
    const char* user_id;  // the User-Id every received message must carry (ZAP), or NULL
    int refused;          // the security handshake must fail: nothing may arrive
};

/* Exits the process with status 1 after printing why (stderr). */
void peer_fail(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Socket type of a pattern's side; -1 for an unknown pattern. */
int peer_socket_type(const char* pattern, char side);

/* Sends message number i of the scheme, its first part starting with tag (a topic for pub/sub).
 * Parts by i % 4: [tag:i]; [tag:i, empty]; [tag:i, 64 KiB]; [tag:i, empty, 64 KiB, "end"].
 * With prefix (non-NULL, prefix_len bytes) the parts follow that envelope. */
void peer_send_message(void* socket, const char* tag, int i, const void* prefix, size_t prefix_len);

/* Receives one whole message and checks it is message i with tag, after an envelope of
 * envelope_parts parts (a routing id, copied into envelope/envelope_len if not NULL, then empty
 * delimiters). Checks the
 * Socket-Type property against peer_type and, with run->user_id, the User-Id. */
void peer_recv_message(const struct peer_run* run, int peer_type, const char* tag, int i, int envelope_parts,
                       char* envelope, size_t* envelope_len);

/* Receives one part into buf (at most cap bytes), returns its size; fails on a timeout. */
size_t peer_recv_part(void* socket, void* buf, size_t cap, int* more);

/* Runs the side's part of the pattern; returns when every check passed. */
void peer_run_pattern(const struct peer_run* run);

#endif
