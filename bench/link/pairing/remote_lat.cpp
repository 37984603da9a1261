/* plain-remote-lat <connect-to> <message-size> <roundtrip-count>: libzmq's perf/remote_lat, a
 * REQ that sends zeros and checks each reply's size; prints the average one-way latency. */
#include "plain_perf.hpp"

int main(int argc, char** argv) {
    size_t size;
    long count;
    plain_args(argc, argv, "<connect-to>", &size, &count);
    void* ctx = zmq_ctx_new();
    void* s = plain_socket(ctx, ZMQ_REQ);
    if (zmq_connect(s, argv[1]) != 0) plain_die("zmq_connect");
    zmq_msg_t reply;
    zmq_msg_init(&reply);
    const double start = plain_now();
    for (long i = 0; i < count; ++i) {
        plain_send_zeros(s, size, i);
        plain_recv_sized(s, &reply, size, i);
    }
    const double elapsed = plain_now() - start;
    zmq_msg_close(&reply);
    printf("message size: %zu [B]\n", size);
    printf("roundtrip count: %ld\n", count);
    printf("average latency: %.3f [us]\n", elapsed * 1e6 / (double)count / 2);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return 0;
}
