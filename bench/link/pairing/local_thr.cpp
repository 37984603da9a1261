/* plain-local-thr <bind-to> <message-size> <message-count>: libzmq's perf/local_thr. */
#include "plain_perf.hpp"

int main(int argc, char** argv) {
    size_t size;
    long count;
    plain_args(argc, argv, "<bind-to>", &size, &count);
    void* ctx = zmq_ctx_new();
    void* s = plain_socket(ctx, ZMQ_PULL);
    if (zmq_bind(s, argv[1]) != 0) plain_die("zmq_bind");
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    plain_recv_sized(s, &msg, size, 0);
    const double start = plain_now();
    for (long i = 1; i < count; ++i) plain_recv_sized(s, &msg, size, i);
    double elapsed = plain_now() - start;
    if (elapsed <= 0) elapsed = 1e-6;
    zmq_msg_close(&msg);
    const double throughput = (double)count / elapsed;
    printf("message size: %zu [B]\n", size);
    printf("message count: %ld\n", count);
    printf("mean throughput: %lu [msg/s]\n", (unsigned long)throughput);
    printf("mean throughput: %.3f [Mb/s]\n", throughput * (double)size * 8 / 1e6);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return 0;
}
