/* plain-remote-thr <connect-to> <message-size> <message-count>: libzmq's perf/remote_thr
 * (messages of zeros; closing waits for their delivery, libzmq's default linger). */
#include "plain_perf.hpp"

int main(int argc, char** argv) {
    size_t size;
    long count;
    plain_args(argc, argv, "<connect-to>", &size, &count);
    void* ctx = zmq_ctx_new();
    void* s = plain_socket(ctx, ZMQ_PUSH);
    if (zmq_connect(s, argv[1]) != 0) plain_die("zmq_connect");
    for (long i = 0; i < count; ++i) plain_send_zeros(s, size, i);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return 0;
}
