// strix-link-curve-lat: REQ/REP round trips over tcp loopback with CURVE, strix::link or libzmq,
// in one process (client and server), so one command line compares the two:
//
//   strix-link-curve-lat strix|zmq <message-size> <roundtrip-count>
//
// strix: REP (server) on shard 0, REQ (client) on shard 1 (curve_lat_strix.cpp).
// zmq:   REP and REQ in two contexts of one I/O thread each, each on its own application thread
//        (curve_lat_zmq.cpp).
// Prints the plain latency tools' lines (../perf_common.hpp, print_lat).

#include "curve_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: strix-link-curve-lat strix|zmq <message-size> <roundtrip-count>\n"
                "\n"
                "The latency test with CURVE (a fresh server and client key pair per run) inside one\n"
                "process over tcp loopback: a REP socket (the CURVE server) binds 127.0.0.1 and echoes,\n"
                "a REQ socket (the client) connects and makes <roundtrip-count> round trips of\n"
                "<message-size> bytes one after another, each timed alone (the first may include the\n"
                "handshake, as in the plain tools). strix: REP on shard 0, REQ on shard 1 of one engine.\n"
                "zmq: REP and REQ on two threads, in two contexts of one I/O thread each. Prints\n"
                "strix-link-remote-lat's lines ('average latency' is half a round trip, as libzmq\n"
                "reports it; p50 and p99 are whole round trips, nearest rank). Every request and every\n"
                "reply is checked.\n"
                "\n") +
    std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("strix-link-curve-lat", usage);
    const lp::curve::command c = lp::curve::parse_command(t, argc, argv, "roundtrip-count");
    const lp::curve::keys k;
    lp::roundtrips r = c.lib == lp::curve::impl::strix ? lp::curve::strix_roundtrips(t, k, c.size, c.count)
                                                       : lp::curve::zmq_roundtrips(t, k, c.size, c.count);
    lp::print_lat(c.size, c.count, std::move(r));
    return 0;
}
