// zmq-remote-thr: the sending half of libzmq's throughput test (perf/remote_thr), on libzmq.
// Connects, sends <message-count> stamped messages, closes with a linger that delivers them.

#include "zmq_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: zmq-remote-thr <connect-to> <message-size> <message-count> "
                "[--pattern pushpull|pubsub] [--hwm N]\n"
                "\n"
                "The sending half of the throughput test: connects a PUSH socket (pubsub: an XPUB, which\n"
                "first waits for the subscriber's subscription) to <connect-to>, where zmq-local-thr or\n"
                "strix-link-local-thr listens, sends <message-count> messages of <message-size> bytes and\n"
                "exits once they are delivered (30 s linger). Prints nothing on success.\n"
                "\n") +
    std::string(lp::thr_options_help) + "\n" + std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("zmq-remote-thr", usage);
    const lp::parsed_args a = t.parse(argc, argv, 3, true);
    const std::size_t size = t.message_size(a.positional[1]);
    const std::uint64_t count = t.message_count(a.positional[2], "message-count");

    lp::zcontext ctx(t);
    const bool pubsub = a.pat == lp::pattern::pubsub;
    lp::zsocket s(t, ctx, lp::sender_type(a.pat));
    lp::apply_hwm(s, a, true);
    s.connect(a.positional[0]);
    if (pubsub) lp::wait_subscriptions(t, s.get(), 1);

    lp::send_all(t, s.get(), size, count);
    return 0;
}
