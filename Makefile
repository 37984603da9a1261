# strix: the user's entry point. Every target first installs what is missing (scripts/install-deps.sh).
#   make run    build and start strix-chat-server on 127.0.0.1 with an embedded SQLite database
#   make test   build and run every test through ctest
#   make bench  component benchmarks and shoot-outs, tables and plots under build/bench/
#   make bench-cluster-hop  the chat cluster's Redis hop between two nodes into build/bench/cluster-hop.md
#   make bench-cluster  the Chat server portfolio's chat load over two cluster nodes and Redis next to one
#               node, then Redis and a node killed mid-run, into build/bench/cluster.md (CLUSTER_RUNS,
#               CLUSTER_DURATION: scripts/bench-cluster.sh)
#   make bench-api  the server API's message posts from 50 keep-alive connections (wrk) while the Chat
#               server portfolio's chat load runs, next to the chat load alone, into build/bench/api.md
#               (API_RUNS, API_DURATION: scripts/bench-api.sh)
#   make bench-c1m  connections per node: CONNS (1,000,000, or what RLIMIT_NOFILE allows) held by
#               strix-chat-hold over TCP or WebSocket (TRANSPORT), their memory, a broadcast to them,
#               the chat load's latency beside them, a restart, into build/bench/c1m.md (scripts/bench-c1m.sh)
#   make bench-link  strix::link against libzmq (the ServerLink porting log's tables) into build/bench/link.md
#   make bench-zmq   strix's libzmq.so.5 against Debian's libzmq: libzmq's own perf programs and pyzmq built
#               against each, side by side, into build/bench/zmq.md (ZMQ_RUNS and more: scripts/bench-zmq.sh)
#   make bench-echo-tls  the echo shoot-out's TLS section alone (make bench-echo runs it too) into build/bench/echo-tls.md
#   make bench-echo-ws   its WebSocket section alone (make bench-echo runs it too) into build/bench/echo-ws.md
#   make soak   an hour of the Chat server portfolio's chat load (SOAK_DURATION=600: ten minutes): latency
#               and RSS drift per 10 min
#   make format applies .clang-format to the C++ sources (make format-check only reports, as CI does)
#   make fuzz   libFuzzer targets (clang, ASan + UBSan) in build-fuzz/, FUZZ_SECONDS each (default 60)
# SANITIZE=1 builds into build-asan/ with AddressSanitizer + UndefinedBehaviorSanitizer (clang).

SANITIZE ?= 0
JOBS     ?= $(shell nproc)
# The sanitized build uses clang (SANITIZE_CXX): it compiles the tree about a third faster than
# gcc with the sanitizers on (tests/chat/api_actions_test.cpp: 28 s with gcc 12, 17.5 s with
# clang 16), which is most of CI's time, and its warnings hold the code to a second compiler.
SANITIZE_CXX ?= clang++-16
SANITIZE_CC  ?= clang-16
ifeq ($(SANITIZE),1)
BUILD_DIR ?= build-asan
CMAKE_FLAGS += -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRIX_SANITIZE=ON -DSTRIX_BUILD_BENCH=OFF \
               -DCMAKE_CXX_COMPILER=$(SANITIZE_CXX) -DCMAKE_C_COMPILER=$(SANITIZE_CC)
else
BUILD_DIR ?= build
CMAKE_FLAGS += -DCMAKE_BUILD_TYPE=Release
endif
CTEST_ARGS ?=
# ctest runs twice as many tests at once as there are cores: most of the suite waits rather than
# computes (servers starting, deadlines, round trips to peers). On 2 cores the whole suite took
# 339 s at -j4 against 633 s at -j2, using 1.2 cores on average; the sanitized one 347 s against
# 586 s.
CTEST_JOBS ?= $(shell echo $$(( $(JOBS) * 2 )))

.PHONY: format format-check all deps configure build test bench bench-components bench-scaling bench-echo bench-echo-tls bench-echo-ws bench-chat bench-link bench-zmq bench-cluster-hop bench-cluster bench-api bench-c1m fuzz run clean soak

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS) > /dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(CTEST_JOBS) $(CTEST_ARGS)

bench: bench-components bench-scaling bench-echo bench-chat bench-link bench-zmq

bench-components: build
	@scripts/bench-components.sh $(BUILD_DIR)

bench-scaling: build
	@scripts/bench-scaling.sh $(BUILD_DIR)

bench-cluster-hop: build
	@scripts/bench-cluster-hop.sh $(BUILD_DIR)

bench-cluster: build
	@scripts/bench-cluster.sh $(BUILD_DIR)

# Not part of make bench: it needs wrk and measures one feature (the server API) under the chat load.
bench-api: build
	@scripts/bench-api.sh $(BUILD_DIR)

# Not part of make bench: it raises kernel limits (restored on exit) and holds CONNS connections
# (1,000,000; fewer where RLIMIT_NOFILE's hard limit cannot be raised): scripts/bench-c1m.sh.
bench-c1m: build
	@scripts/bench-c1m.sh $(BUILD_DIR)

bench-chat: build
	@if [ -x scripts/bench-chat.sh ]; then scripts/bench-chat.sh $(BUILD_DIR); else echo "strix: chat benchmark not available yet"; fi

# An hour of the Chat server portfolio's chat load (SOAK_DURATION=600 for ten minutes), reporting
# latency and the server's RSS drift per 10 minutes into build/bench/soak.md. Not part of make test.
soak: build
	@scripts/soak.sh $(BUILD_DIR) $(SOAK_DURATION)

bench-echo: build
	@scripts/bench-echo.sh $(BUILD_DIR) all

# Only the TLS section of bench-echo (strix over TLS vs tokio-rustls and Go crypto/tls, echoes and
# handshakes/s) into build/bench/echo-tls.md; bench-echo runs it too unless ECHO_TLS=0.
bench-echo-tls: build
	@scripts/bench-echo.sh $(BUILD_DIR) tls

# Only the WebSocket section of bench-echo (strix's WebSocket echo vs fastwebsockets,
# tokio-tungstenite and gobwas/ws, plus the broadcast test) into build/bench/echo-ws.md;
# bench-echo runs it too unless ECHO_WS=0.
bench-echo-ws: build
	@scripts/bench-echo.sh $(BUILD_DIR) ws

bench-link: build
	@scripts/bench-link.sh $(BUILD_DIR)

bench-zmq: build
	@scripts/bench-zmq.sh $(BUILD_DIR)

# Its own clang build (fuzz/ is a separate CMake project); report in build-fuzz/fuzz-report.md.
FUZZ_SECONDS ?= 60
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) scripts/fuzz.sh

# Builds only the programs scripts/run-chat.sh starts or tells the user to start (the server, the
# interactive client, the load tool), not the tests and benchmarks.
RUN_TARGETS = strix-chat-server strix-chat-client strix-chat-load

run: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target $(RUN_TARGETS)
	@exec scripts/run-chat.sh $(BUILD_DIR)

# Applies .clang-format (clang-format-16) to every C++ file git tracks (the peers are Rust and Go).
format: deps
	@git ls-files '*.cpp' '*.hpp' | grep -v '^bench/peers/' | xargs clang-format-16 -i

# Fails when any of those files differs from .clang-format (.ci/run calls it); `make format` fixes it.
format-check: deps
	@git ls-files '*.cpp' '*.hpp' | grep -v '^bench/peers/' | xargs clang-format-16 --dry-run --Werror \
	  || { echo "strix: C++ formatting differs from .clang-format: run 'make format' and commit the result" >&2; exit 1; }

clean:
	rm -rf build build-asan
