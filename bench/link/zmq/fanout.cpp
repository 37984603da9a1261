// zmq-fanout: one XPUB to N subscriber threads in one process, on libzmq (the ServerLink porting
// log's 8-subscriber fan-out). The clock runs from the first send to the last subscriber's last
// receive.

#include <atomic>
#include <thread>

#include "zmq_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: zmq-fanout <bind-to> <subscribers> <message-size> <message-count>\n"
                "\n"
                "PUB/SUB fan-out inside one process: an XPUB binds at <bind-to> (tcp://HOST:PORT,\n"
                "ipc://PATH or inproc://NAME), <subscribers> threads each connect a SUB subscribed to\n"
                "everything; once the XPUB has received every subscription it sends <message-count>\n"
                "messages of <message-size> bytes, and every subscriber must receive all of them. HWM is 0\n"
                "(unlimited) on both sides so nothing is dropped. The clock runs from the first send to\n"
                "the last subscriber's last message; 'mean throughput' is messages published per second,\n"
                "'aggregate throughput' is messages delivered (messages x subscribers) per second.\n"
                "\n") +
    std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("zmq-fanout", usage);
    const lp::parsed_args a = t.parse(argc, argv, 4, false);
    const int subscribers = static_cast<int>(t.number(a.positional[1], "subscribers", 1, 1024));
    const std::size_t size = t.message_size(a.positional[2]);
    const std::uint64_t count = t.message_count(a.positional[3], "message-count");

    lp::zcontext ctx(t);
    lp::perf_clock::time_point start;
  // Each subscriber's last arrival, written by its thread before the join that publishes it.
    std::vector<lp::perf_clock::time_point> done(static_cast<std::size_t>(subscribers));
    {
        lp::zsocket pub(t, ctx, ZMQ_XPUB);
        pub.set(ZMQ_SNDHWM, 0);
        pub.set(ZMQ_XPUB_VERBOSE, 1);  // pass every subscriber's "" up, not only the first
        pub.bind(a.positional[0]);
        const std::string endpoint = pub.last_endpoint();

        std::vector<std::thread> threads;
        for (int i = 0; i < subscribers; ++i) {
            threads.emplace_back([&, i] {
                lp::zsocket sub(t, ctx, ZMQ_SUB);
                sub.set(ZMQ_RCVHWM, 0);
                sub.subscribe_all();
                sub.connect(endpoint);
                const std::string who = "subscriber " + std::to_string(i) + ": ";
                lp::zmessage msg;
                for (std::uint64_t n = 0; n < count; ++n) lp::receive_checked(t, sub.get(), msg, size, n, count, who);
                done[static_cast<std::size_t>(i)] = lp::perf_clock::now();
            });
        }
        lp::wait_subscriptions(t, pub.get(), subscribers);
        start = lp::perf_clock::now();
        lp::send_all(t, pub.get(), size, count);
        for (auto& th : threads) th.join();
    }
    const auto last = *std::max_element(done.begin(), done.end());
    lp::print_fanout(subscribers, size, count, lp::seconds_between(start, last));
    return 0;
}
