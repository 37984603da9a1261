#!/usr/bin/env bash
# cppzmq's own unit tests, built unchanged from Debian's cppzmq source package and run against one
# libzmq (ctest label zmq-suite).
#
#   tests/zmq/cppzmq/run.sh <build_dir> <strix|libzmq>
#
#   libzmq  the system's library, found through pkg-config at prefix /usr (Debian's libzmq3-dev)
#   strix   strix's libzmq.so.5 under <build_dir>/zmq (the strix_zmq target)
#
# The tarball (pinned by version and sha256 below) is downloaded once into <build_dir>/zmq-suite/
# and unpacked there; its tests/ directory is built by cppzmq's own CMakeLists with the draft API
# off and Catch2 v2 from Debian (catch2), never fetched from the net. Each test case runs in its own
# process under a time limit, so one that hangs or crashes is counted and the others still run.
# Reports: <build_dir>/zmq-suite/cppzmq-<name>.txt (summary, failures with their output) and
# cppzmq-<name>.junit.xml.
# Exit 0: every test case passed (strix: or failed and is listed in docs/zmq-abi.md under "cppzmq
# tests that do not pass"); 1: another failure, or the binary loaded the wrong libzmq; 77 (skip): the
# tarball could not be downloaded and is not cached.
set -euo pipefail

usage="usage: run.sh <build_dir> <strix|libzmq>"
build=$(cd "${1:?$usage}" && pwd)
name=${2:?$usage}
here=$(cd "$(dirname "$0")" && pwd)
source_root=$(cd "$here/../../.." && pwd)

version=4.10.0
tarball=cppzmq_${version}.orig.tar.gz
url=http://deb.debian.org/debian/pool/main/c/cppzmq/$tarball
sha256=c81c81bba8a7644c84932225f018b5088743a22999c6d82a2b5f5cd1e6942b74
# A test case that runs longer than this has hung: against libzmq the slowest takes 25 ms and all
# 102 together under a second.
case_timeout_s=${CPPZMQ_CASE_TIMEOUT_S:-20}

case "$name" in
  libzmq) prefix=/usr ;;
  strix) prefix=$build/zmq ;;
  *)
    echo "$usage" >&2
    exit 2
    ;;
esac

root=$build/zmq-suite
work=$root/cppzmq
src=$work/cppzmq-$version
bin=$work/build-$name
cases=$work/cases-$name
mkdir -p "$work"

# The libzmq and strix runs may start at once: one of them downloads and unpacks, under a lock.
fetch_status=0
(
  flock 9
  if [ ! -f "$src/tests/CMakeLists.txt" ]; then
    if [ ! -f "$root/$tarball" ]; then
      timeout 120 curl -fsSL --retry 2 -o "$root/$tarball.part" "$url" || exit 77
      mv "$root/$tarball.part" "$root/$tarball"
    fi
    if ! echo "$sha256  $root/$tarball" | sha256sum -c --quiet -; then
      echo "cppzmq: $root/$tarball does not have the pinned sha256 $sha256; delete it to download it again" >&2
      exit 1
    fi
    rm -rf "$src"
    tar -xzf "$root/$tarball" -C "$work"
  fi
) 9>"$work/fetch.lock" || fetch_status=$?
if [ "$fetch_status" -eq 77 ]; then
  rm -f "$root/$tarball.part"
  echo "cppzmq: SKIP: could not download $url"
  exit 77
fi
[ "$fetch_status" -eq 0 ] || exit 1

# pkg-config at the prefix only: PKG_CONFIG_LIBDIR replaces the default search path, so strix's
# run cannot fall back to the system's libzmq.pc.
if [ "$prefix" = /usr ]; then
  pc=(pkg-config)
else
  pc=(env PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig" PKG_CONFIG_PATH= pkg-config)
fi
if ! "${pc[@]}" --exists libzmq; then
  echo "cppzmq: no libzmq.pc under $prefix (strix: build the strix_zmq target first)" >&2
  exit 1
fi
libdir=$("${pc[@]}" --variable=libdir libzmq)
includedir=$("${pc[@]}" --variable=includedir libzmq)
[ -f "$libdir/libzmq.so" ] && [ -f "$includedir/zmq.h" ] || {
  echo "cppzmq: $name's libzmq.pc names $libdir/libzmq.so and $includedir/zmq.h; one is missing" >&2
  exit 1
}

# cppzmq's FindZeroMQ.cmake searches the system paths before pkg-config's, so the library and
# header are handed to it as its own cache variables. cppzmq's tests/CMakeLists.txt takes an
# installed Catch2 when find_package finds one and otherwise clones v2.13.9 from GitHub: Catch2_DIR
# points it at Debian's 2.13.10 and FETCHCONTENT_FULLY_DISCONNECTED forbids the clone.
# CMAKE_MODULE_PATH lets its `include(Catch)` find Debian's Catch2 modules (cppzmq adds them to the
# path only when it has downloaded Catch2 itself).
[ -f /usr/lib/cmake/Catch2/Catch2Config.cmake ] || {
  echo "cppzmq: Debian's Catch2 v2 is not installed (scripts/install-deps.sh installs catch2)" >&2
  exit 1
}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
log=$work/build-$name.log
if ! {
  cmake -S "$src" -B "$bin" "${generator[@]}" "${launcher[@]}" \
    -DENABLE_DRAFTS=OFF -DCPPZMQ_BUILD_TESTS=ON \
    -DCatch2_DIR=/usr/lib/cmake/Catch2 -DCMAKE_MODULE_PATH=/usr/lib/cmake/Catch2 \
    -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
    -DZeroMQ_LIBRARY="$libdir/libzmq.so" -DZeroMQ_INCLUDE_DIR="$includedir" &&
    timeout 600 cmake --build "$bin" -j "${JOBS:-2}" --target unit_tests
} >"$log" 2>&1; then
  tail -40 "$log"
  echo "cppzmq: the build against $name failed (log: $log)" >&2
  exit 1
fi
exe=$bin/tests/unit_tests
if grep -rqs ZMQ_BUILD_DRAFT_API "$bin/build.ninja" "$bin/tests/CMakeFiles/unit_tests.dir/flags.make"; then
  echo "cppzmq: the tests were built with ZMQ_BUILD_DRAFT_API; the stable API only is tested" >&2
  exit 1
fi
grep -qs '^Catch2_DIR:[A-Z]*=/usr/lib/cmake/Catch2$' "$bin/CMakeCache.txt" || {
  echo "cppzmq: cppzmq's CMake did not take Debian's Catch2 from /usr/lib/cmake/Catch2" >&2
  exit 1
}

# The binary must load the prefix's libzmq.so.5 and no other: LD_LIBRARY_PATH is set to its lib
# dir for the runs below, and ldd (the same loader) says what it resolves to.
export LD_LIBRARY_PATH=$libdir
loaded=$(ldd "$exe" | awk '$1 == "libzmq.so.5" { print $3 }')
want=$(readlink -f "$libdir/libzmq.so.5" 2>/dev/null || true)
if [ -z "$loaded" ] || [ -z "$want" ] || [ "$(readlink -f "$loaded")" != "$want" ]; then
  echo "cppzmq: WRONG LIBRARY: $exe loads libzmq.so.5 from '${loaded:-nothing}', not $name's $libdir/libzmq.so.5" >&2
  ldd "$exe" >&2
  exit 1
fi
echo "cppzmq: $exe loads $want"

# One process per test case. A test spec treats , [ ] * \ " ~ as syntax, so they are escaped.
rm -rf "$cases"
mkdir -p "$cases"
# (Catch2 v2 exits with the number of names listed.)
{ "$exe" --list-test-names-only || true; } | sed '/^$/d' >"$cases/names"
i=0
while IFS= read -r test_name; do
  i=$((i + 1))
  id=$(printf '%03d' "$i")
  spec=$(printf '%s' "$test_name" | sed 's/[][,*\\"~]/\\&/g')
  status=0
  start=$EPOCHREALTIME
  timeout -k 5 "$case_timeout_s" "$exe" "$spec" -r xml -o "$cases/$id.xml" >"$cases/$id.log" 2>&1 </dev/null ||
    status=$?
  printf '%s\n' "$test_name" >"$cases/$id.name"
  echo "$status" >"$cases/$id.rc"
  echo "$start $EPOCHREALTIME" >"$cases/$id.seconds"
done <"$cases/names"

exceptions=()
[ "$name" = strix ] && exceptions=(--exceptions "$source_root/docs/zmq-abi.md")
/usr/bin/python3 "$here/summarize.py" --name "$name" --library "$want" --cases "$cases" \
  --timeout "$case_timeout_s" --text "$root/cppzmq-$name.txt" --junit "$root/cppzmq-$name.junit.xml" \
  "${exceptions[@]}"
