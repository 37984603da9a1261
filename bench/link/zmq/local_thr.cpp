// zmq-local-thr: the receiving half of libzmq's throughput test (perf/local_thr), on libzmq.
// Binds, receives <message-count> messages, checks each, prints libzmq's four lines.

#include "zmq_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: zmq-local-thr <bind-to> <message-size> <message-count> [--pattern pushpull|pubsub] "
                "[--hwm N]\n"
                "\n"
                "The receiving half of the throughput test: binds a PULL socket (pubsub: a SUB subscribed\n"
                "to everything) at <bind-to> (tcp://HOST:PORT, ipc://PATH), receives <message-count>\n"
                "messages of <message-size> bytes from zmq-remote-thr or strix-link-remote-thr, and prints\n"
                "libzmq's local_thr lines. The clock starts at the first message; Mb/s is megabits\n"
                "(msg/s * size * 8 / 10^6). Start it before the sender.\n"
                "\n") +
    std::string(lp::thr_options_help) + "\n" + std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("zmq-local-thr", usage);
    const lp::parsed_args a = t.parse(argc, argv, 3, true);
    const std::size_t size = t.message_size(a.positional[1]);
    const std::uint64_t count = t.message_count(a.positional[2], "message-count");

    lp::zcontext ctx(t);
    lp::zsocket s(t, ctx, lp::receiver_type(a.pat));
    lp::apply_hwm(s, a, false);
    if (a.pat == lp::pattern::pubsub) s.subscribe_all();
    s.bind(a.positional[0]);

    const double seconds = lp::receive_all(t, s.get(), a, size, count);
    lp::print_thr(size, count, seconds);
    return 0;
}
