/* zmq_interop_peer: one side of a ZeroMQ pattern, written against <zmq.h> only and built twice
 * (linked to Debian's libzmq and to strix's libzmq.so.5), so tests/zmq/interop.py can pair a
 * libzmq process with a strix process either way.
 *
 *   zmq_interop_peer keypair
 *       prints "PUBLIC SECRET" (Z85) from zmq_curve_keypair
 *   zmq_interop_peer run PATTERN SIDE bind|connect ENDPOINT [COUNT] [SECURITY...]
 *       PATTERN pair|pubsub|xpubsub|pushpull|reqrep|dealerrouter|reqrouter, SIDE a|b (the
 *       pattern's first or second socket type). bind prints "endpoint <ZMQ_LAST_ENDPOINT>" once
 *       bound; pubsub's SUB prints "synced" and its PUB waits for "go" on stdin (the driver
 *       relays one to the other). COUNT messages each way (default 40).
 *       SECURITY:
 *         curve-server SECRET        CURVE server with that secret key
 *         curve-client SERVER_PUBLIC PUBLIC SECRET
 *         plain-server               PLAIN server
 *         plain-client USER PASSWORD
 *         zap-curve CLIENT_PUBLIC    a ZAP handler (inproc://zeromq.zap.01, in this process)
 *                                    accepting only that client key, as User-Id "curve-user"
 *         zap-plain USER PASSWORD    likewise for PLAIN, as User-Id "plain-user"
 *         refused                    the handshake must fail: nothing may arrive in 1.5 s
 *
 * Exit status 0 when every message arrived whole, in order and with the expected metadata.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interop_peer.h"

static void setopt(void* s, int option, const void* value, size_t len, const char* name) {
    if (zmq_setsockopt(s, option, value, len) != 0) peer_fail("setsockopt %s: %s", name, zmq_strerror(errno));
}
static void setopt_int(void* s, int option, int value, const char* name) {
    setopt(s, option, &value, sizeof value, name);
}

struct zap_handler {
    void* socket;
    const char* mechanism;  // "CURVE" or "PLAIN"
    const char* key;        // CURVE: the allowed client key (Z85); PLAIN: the user
    const char* password;   // PLAIN only
    volatile int stop;
    int requests, refusals;
};

static int frame_is(const zmq_msg_t* m, const void* s, size_t n) {
    return zmq_msg_size((zmq_msg_t*)m) == n && memcmp(zmq_msg_data((zmq_msg_t*)m), s, n) == 0;
}

// Answers one ZAP request (RFC 27: version, request id, domain, address, routing id,
// mechanism, credentials...).
static void zap_answer(struct zap_handler* z, zmq_msg_t* frames, int n) {
    int ok = n >= 6 && frame_is(&frames[0], "1.0", 3) && frame_is(&frames[5], z->mechanism, strlen(z->mechanism));
    if (ok && strcmp(z->mechanism, "CURVE") == 0) {
        char key[41];
        ok = n == 7 && zmq_msg_size(&frames[6]) == 32 && zmq_z85_encode(key, zmq_msg_data(&frames[6]), 32) &&
             strcmp(key, z->key) == 0;
    } else if (ok) {
        ok = n == 8 && frame_is(&frames[6], z->key, strlen(z->key)) &&
             frame_is(&frames[7], z->password, strlen(z->password));
    }
    ++z->requests;
    z->refusals += !ok;
    const char* user = strcmp(z->mechanism, "CURVE") == 0 ? "curve-user" : "plain-user";
    zmq_send(z->socket, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(z->socket, zmq_msg_data(&frames[1]), zmq_msg_size(&frames[1]), ZMQ_SNDMORE);
    zmq_send(z->socket, ok ? "200" : "400", 3, ZMQ_SNDMORE);
    zmq_send(z->socket, ok ? "OK" : "refused", ok ? 2 : 7, ZMQ_SNDMORE);
    zmq_send(z->socket, ok ? user : "", ok ? strlen(user) : 0, ZMQ_SNDMORE);
    zmq_send(z->socket, "", 0, 0);
}

static void zap_loop(void* arg) {
    struct zap_handler* z = arg;
    while (!z->stop) {
        zmq_pollitem_t item = {z->socket, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, 50) <= 0) continue;
        zmq_msg_t frames[10];
        int n = 0, more = 1;
        while (more) {
            zmq_msg_t* part = &frames[n < 10 ? n : 9];
            if (n >= 10) zmq_msg_close(part);  // a request this long is refused anyway
            zmq_msg_init(part);
            if (zmq_msg_recv(part, z->socket, 0) < 0) return;
            more = zmq_msg_more(part);
            if (n < 10) ++n;
        }
        zap_answer(z, frames, n);
        for (int k = 0; k < n; ++k) zmq_msg_close(&frames[k]);
    }
}

struct options {
    int count, refused, curve_server, plain_server;
    const char *curve_secret, *server_public, *client_public, *client_secret;
    const char *plain_user, *plain_password;
    struct zap_handler zap;
};

static void parse_security(int argc, char** argv, int i, struct options* o) {
    for (; i < argc; ++i) {
        const char* a = argv[i];
        int left = argc - i - 1;
        if (strcmp(a, "curve-server") == 0 && left >= 1) {
            o->curve_server = 1;
            o->curve_secret = argv[++i];
        } else if (strcmp(a, "curve-client") == 0 && left >= 3) {
            o->server_public = argv[++i];
            o->client_public = argv[++i];
            o->client_secret = argv[++i];
        } else if (strcmp(a, "plain-server") == 0) {
            o->plain_server = 1;
        } else if (strcmp(a, "plain-client") == 0 && left >= 2) {
            o->plain_user = argv[++i];
            o->plain_password = argv[++i];
        } else if (strcmp(a, "zap-curve") == 0 && left >= 1) {
            o->zap.mechanism = "CURVE";
            o->zap.key = argv[++i];
        } else if (strcmp(a, "zap-plain") == 0 && left >= 2) {
            o->zap.mechanism = "PLAIN";
            o->zap.key = argv[++i];
            o->zap.password = argv[++i];
        } else if (strcmp(a, "refused") == 0) {
            o->refused = 1;
        } else {
            peer_fail("unknown or incomplete security argument %s", a);
        }
    }
}

static void apply_security(void* s, const struct options* o) {
    if (o->curve_server) {
        setopt_int(s, ZMQ_CURVE_SERVER, 1, "CURVE_SERVER");
        setopt(s, ZMQ_CURVE_SECRETKEY, o->curve_secret, 40, "CURVE_SECRETKEY");
    }
    if (o->server_public) {
        setopt(s, ZMQ_CURVE_SERVERKEY, o->server_public, 40, "CURVE_SERVERKEY");
        setopt(s, ZMQ_CURVE_PUBLICKEY, o->client_public, 40, "CURVE_PUBLICKEY");
        setopt(s, ZMQ_CURVE_SECRETKEY, o->client_secret, 40, "CURVE_SECRETKEY");
    }
    if (o->plain_server) setopt_int(s, ZMQ_PLAIN_SERVER, 1, "PLAIN_SERVER");
    if (o->plain_user) {
        setopt(s, ZMQ_PLAIN_USERNAME, o->plain_user, strlen(o->plain_user), "PLAIN_USERNAME");
        setopt(s, ZMQ_PLAIN_PASSWORD, o->plain_password, strlen(o->plain_password), "PLAIN_PASSWORD");
    }
}

// A refused handshake: nothing arrives either way (the side that sends may queue its message).
static void expect_nothing(const struct peer_run* run) {
    setopt_int(run->socket, ZMQ_RCVTIMEO, 1500, "RCVTIMEO");
    setopt_int(run->socket, ZMQ_SNDTIMEO, 500, "SNDTIMEO");
    char buf[16];
    if (run->side == 'a') zmq_send(run->socket, "req:0", 5, 0);
    int rc = zmq_recv(run->socket, buf, sizeof buf, 0);
    if (rc >= 0 || errno != EAGAIN) peer_fail("a refused peer's message arrived (rc %d, %s)", rc, zmq_strerror(errno));
}

static void on_alarm(int sig) {
    (void)sig;
    static const char text[] = "FAIL: timed out\n";
    ssize_t w = write(2, text, sizeof text - 1);
    (void)w;
    _exit(3);
}

static int keypair(void) {
    char public_key[41], secret_key[41];
    if (zmq_curve_keypair(public_key, secret_key) != 0) peer_fail("zmq_curve_keypair: %s", zmq_strerror(errno));
    printf("%s %s\n", public_key, secret_key);
    return 0;
}

static void* start_zap(void* ctx, struct options* o) {
    if (!o->zap.mechanism) return NULL;
    o->zap.socket = zmq_socket(ctx, ZMQ_REP);
    if (!o->zap.socket || zmq_bind(o->zap.socket, "inproc://zeromq.zap.01") != 0)
        peer_fail("ZAP handler: %s", zmq_strerror(errno));
    return zmq_threadstart(zap_loop, &o->zap);
}

static void stop_zap(void* thread, struct options* o) {
    if (!thread) return;
    o->zap.stop = 1;
    zmq_threadclose(thread);
    zmq_close(o->zap.socket);
    if (o->zap.requests == 0) peer_fail("the ZAP handler was never asked");
    if (o->refused && o->zap.refusals == 0) peer_fail("the ZAP handler refused nothing");
    if (!o->refused && o->zap.refusals != 0) peer_fail("the ZAP handler refused %d requests", o->zap.refusals);
}

int main(int argc, char** argv) {
    signal(SIGALRM, on_alarm);
    alarm(30);
    if (argc >= 2 && strcmp(argv[1], "keypair") == 0) return keypair();
    if (argc < 6 || strcmp(argv[1], "run") != 0) {
        fprintf(stderr, "usage: %s keypair | run PATTERN a|b bind|connect ENDPOINT [COUNT] [SECURITY...]\n", argv[0]);
        return 2;
    }
    struct options o;
    memset(&o, 0, sizeof o);
    o.count = argc > 6 && argv[6][0] >= '0' && argv[6][0] <= '9' ? atoi(argv[6]) : 40;
    parse_security(argc, argv, argc > 6 && argv[6][0] >= '0' && argv[6][0] <= '9' ? 7 : 6, &o);
    struct peer_run run = {NULL, NULL, argv[2], argv[3][0], o.count, NULL, o.refused};
    int type = peer_socket_type(run.pattern, run.side);
    if (type < 0) peer_fail("unknown pattern %s or side %s", run.pattern, argv[3]);

    run.ctx = zmq_ctx_new();
    void* zap_thread = start_zap(run.ctx, &o);
    if (o.zap.mechanism && !o.refused)
        run.user_id = strcmp(o.zap.mechanism, "CURVE") == 0 ? "curve-user" : "plain-user";
    run.socket = zmq_socket(run.ctx, type);
    if (!run.socket) peer_fail("zmq_socket: %s", zmq_strerror(errno));
    setopt_int(run.socket, ZMQ_RCVTIMEO, 10000, "RCVTIMEO");
    setopt_int(run.socket, ZMQ_SNDTIMEO, 10000, "SNDTIMEO");
    setopt_int(run.socket, ZMQ_LINGER, 5000, "LINGER");  // what is queued at the end still goes
    if (type == ZMQ_DEALER) setopt(run.socket, ZMQ_ROUTING_ID, "dealer-1", 8, "ROUTING_ID");
    apply_security(run.socket, &o);
    if (strcmp(argv[4], "bind") == 0) {
        if (zmq_bind(run.socket, argv[5]) != 0) peer_fail("bind %s: %s", argv[5], zmq_strerror(errno));
        char endpoint[256];
        size_t len = sizeof endpoint;
        if (zmq_getsockopt(run.socket, ZMQ_LAST_ENDPOINT, endpoint, &len) != 0)
            peer_fail("ZMQ_LAST_ENDPOINT: %s", zmq_strerror(errno));
        printf("endpoint %s\n", endpoint);
        fflush(stdout);
    } else if (zmq_connect(run.socket, argv[5]) != 0) {
        peer_fail("connect %s: %s", argv[5], zmq_strerror(errno));
    }

    if (o.refused)
        expect_nothing(&run);
    else
        peer_run_pattern(&run);
    if (o.refused) setopt_int(run.socket, ZMQ_LINGER, 0, "LINGER");
    zmq_close(run.socket);
    stop_zap(zap_thread, &o);
    zmq_ctx_term(run.ctx);
    printf("done %s %c\n", run.pattern, run.side);
    return 0;
}
