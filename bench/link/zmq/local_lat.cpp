// zmq-local-lat: the echoing half of libzmq's latency test (perf/local_lat), on libzmq.

#include "zmq_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: zmq-local-lat <bind-to> <message-size> <roundtrip-count> [--seq auto|on|off]\n"
                "\n"
                "The echoing half of the latency test: binds a REP socket at <bind-to> (tcp://HOST:PORT,\n"
                "ipc://PATH), receives <roundtrip-count> requests of <message-size> bytes from\n"
                "zmq-remote-lat or strix-link-remote-lat, checks each and sends it back. Prints nothing on\n"
                "success. Start it before the requester.\n"
                "\n") +
    std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("zmq-local-lat", usage);
    const lp::parsed_args a = t.parse(argc, argv, 3, false);
    const std::size_t size = t.message_size(a.positional[1]);
    const std::uint64_t count = t.message_count(a.positional[2], "roundtrip-count");

    lp::zcontext ctx(t);
    lp::zsocket s(t, ctx, ZMQ_REP);
    s.bind(a.positional[0]);
    lp::echo_all(t, s.get(), size, count, a.seq);
    return 0;
}
