/* plain-local-lat <bind-to> <message-size> <roundtrip-count>: libzmq's perf/local_lat, a REP
 * that sends each request back. */
#include "plain_perf.hpp"

int main(int argc, char** argv) {
    size_t size;
    long count;
    plain_args(argc, argv, "<bind-to>", &size, &count);
    void* ctx = zmq_ctx_new();
    void* s = plain_socket(ctx, ZMQ_REP);
    if (zmq_bind(s, argv[1]) != 0) plain_die("zmq_bind");
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    for (long i = 0; i < count; ++i) {
        plain_recv_sized(s, &msg, size, i);
        if (zmq_msg_send(&msg, s, 0) < 0) plain_die("zmq_msg_send");
    }
    zmq_msg_close(&msg);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return 0;
}
