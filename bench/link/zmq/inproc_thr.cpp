// zmq-inproc-thr: libzmq's perf/inproc_thr, on libzmq: sender thread and receiver (main thread)
// in one process and one context, over inproc://.

#include <thread>

#include "zmq_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: zmq-inproc-thr <message-size> <message-count> [--pattern pushpull|pubsub] [--hwm N]\n"
                "\n"
                "The throughput test inside one process: the main thread binds PULL (pubsub: SUB) at\n"
                "inproc://strix-link-thr, a second thread connects PUSH (pubsub: XPUB) and sends\n"
                "<message-count> messages of <message-size> bytes. Prints zmq-local-thr's lines.\n"
                "\n") +
    std::string(lp::thr_options_help) + "\n" + std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("zmq-inproc-thr", usage);
    const lp::parsed_args a = t.parse(argc, argv, 2, true);
    const std::size_t size = t.message_size(a.positional[0]);
    const std::uint64_t count = t.message_count(a.positional[1], "message-count");
    const bool pubsub = a.pat == lp::pattern::pubsub;
    const std::string endpoint = "inproc://strix-link-thr";

    lp::zcontext ctx(t);
    double seconds = 0;
    {
        lp::zsocket s(t, ctx, lp::receiver_type(a.pat));
        lp::apply_hwm(s, a, false);
        if (pubsub) s.subscribe_all();
        s.bind(endpoint);

        std::thread sender([&] {
            lp::zsocket out(t, ctx, lp::sender_type(a.pat));
            lp::apply_hwm(out, a, true);
            out.connect(endpoint);
            if (pubsub) lp::wait_subscriptions(t, out.get(), 1);
            lp::send_all(t, out.get(), size, count);
        });
        seconds = lp::receive_all(t, s.get(), a, size, count);
        sender.join();
    }
    lp::print_thr(size, count, seconds);
    return 0;
}
