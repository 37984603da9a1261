// zmq-remote-lat: the timing half of libzmq's latency test (perf/remote_lat), on libzmq.
// Times every round trip alone and adds p50 and p99 to libzmq's lines.

#include "zmq_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: zmq-remote-lat <connect-to> <message-size> <roundtrip-count>\n"
                "\n"
                "The timing half of the latency test: connects a REQ socket to <connect-to>, where\n"
                "zmq-local-lat or strix-link-local-lat listens, and makes <roundtrip-count> request/reply\n"
                "round trips of <message-size> bytes one after another, each timed with a steady clock.\n"
                "Prints libzmq's remote_lat lines, where 'average latency' is the whole run's time divided\n"
                "by 2 x roundtrip-count (half a round trip, as libzmq reports it), then the median (p50)\n"
                "and 99th percentile (p99, nearest rank) of the individual round trips.\n"
                "\n") +
    std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("zmq-remote-lat", usage);
    const lp::parsed_args a = t.parse(argc, argv, 3, false);
    const std::size_t size = t.message_size(a.positional[1]);
    const std::uint64_t count = t.message_count(a.positional[2], "roundtrip-count");

    lp::zcontext ctx(t);
    lp::zsocket s(t, ctx, ZMQ_REQ);
    s.connect(a.positional[0]);
    lp::print_lat(size, count, lp::request_all(t, s.get(), size, count));
    return 0;
}
