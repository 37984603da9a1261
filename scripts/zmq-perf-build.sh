#!/usr/bin/env bash
# Builds libzmq's own perf programs (perf/local_thr, remote_thr, local_lat, remote_lat,
# inproc_thr, inproc_lat from libzmq 4.3.4's source, unchanged) and bench/zmq_abi/zmq_rtt.c
# against one libzmq, for scripts/bench-zmq.sh.
#
#   scripts/zmq-perf-build.sh <zmq_prefix> <out_dir>
#
# <zmq_prefix> holds include/zmq.h and lib/libzmq.so.5 (or lib/<multiarch>/, lib64/): /usr for
# Debian's libzmq, <build_dir>/zmq for strix's. The programs land in <out_dir>/bin/, compiled
# against the prefix's own zmq.h (the perf sources include "../include/zmq.h": <out_dir>/include/
# is a copy of the prefix's) and linked to the prefix's libzmq.so.5; outside the system's library
# directories with an RPATH (not RUNPATH, so an LD_LIBRARY_PATH cannot swap the library under a
# run). The script checks with ldd that every program loads the prefix's libzmq.so.5.
#
# libzmq's source comes from Debian's source package (zeromq3_4.3.4.orig.tar.gz, pinned by
# sha256), fetched once into <out_dir>/../zeromq3_4.3.4.orig.tar.gz. A rebuild happens only when
# the prefix, the sources or the compile commands change (<out_dir>/stamp). Builds into the same
# parent folder are serialised with flock, so two ctest runs can share the cache. Exits 77 when the
# source cannot be fetched, 1 on any other failure.
set -euo pipefail

prefix=${1:?usage: scripts/zmq-perf-build.sh <zmq_prefix> <out_dir>}
out=${2:?usage: scripts/zmq-perf-build.sh <zmq_prefix> <out_dir>}
here=$(cd "$(dirname "$0")" && pwd)
rtt_src=$here/../bench/zmq_abi/zmq_rtt.c
tar_name=zeromq3_4.3.4.orig.tar.gz
tar_url=http://deb.debian.org/debian/pool/main/z/zeromq3/$tar_name
tar_sha256=0ff5a531c9ffaf0dfdc7dc78d13d1383088f454896d252934c429b2554d10559
programs=(local_thr remote_thr local_lat remote_lat inproc_thr inproc_lat)

die() { echo "zmq-perf-build: FAILED: $*" >&2; exit 1; }

prefix=$(cd "$prefix" 2>/dev/null && pwd) || die "no such prefix: $1"
[ -f "$prefix/include/zmq.h" ] || die "$prefix/include/zmq.h is missing (is $prefix a libzmq prefix?)"
libdir=
for d in "$prefix/lib" "$prefix/lib/$(gcc -print-multiarch 2>/dev/null || echo none)" "$prefix/lib64"; do
  if [ -e "$d/libzmq.so.5" ]; then libdir=$d; break; fi
done
[ -n "$libdir" ] || die "no libzmq.so.5 under $prefix/lib, lib/<multiarch> or lib64"
lib=$(readlink -f "$libdir/libzmq.so.5")

mkdir -p "$out"
out=$(cd "$out" && pwd)
cache=$(dirname "$out")
exec 9>"$cache/.build.lock"
flock 9

# The source tarball, fetched once and checked against its pinned hash every time.
tarball=$cache/$tar_name
if [ ! -f "$tarball" ] || ! echo "$tar_sha256  $tarball" | sha256sum -c --status; then
  rm -f "$tarball.part"
  if ! curl -sSfL --max-time 120 -o "$tarball.part" "$tar_url"; then
    echo "zmq-perf-build: could not fetch $tar_url" >&2
    exit 77
  fi
  echo "$tar_sha256  $tarball.part" | sha256sum -c --status ||
    die "$tar_url does not have the pinned sha256 $tar_sha256"
  mv "$tarball.part" "$tarball"
fi

# The system's library directories need no RPATH; anything else gets one.
rpath=()
case $libdir in
  /usr/lib | /usr/lib64 | /lib | /lib64 | /usr/lib/*-linux-gnu | /lib/*-linux-gnu) ;;
  *) rpath=(-Wl,--disable-new-dtags,-rpath,"$libdir") ;;
esac
cxx=(c++ -O2 -pthread -I"$out/gen")
cc=(cc -O2 -pthread -I"$out/include")
stamp="prefix=$prefix lib=$libdir/libzmq.so.5 tar=$tar_sha256 rtt=$(sha256sum "$rtt_src" | cut -d' ' -f1)
zmq.h=$(sha256sum "$prefix/include/zmq.h" | cut -d' ' -f1) cxx=${cxx[*]} cc=${cc[*]} rpath=${rpath[*]:-}"

if [ "$(cat "$out/stamp" 2>/dev/null || true)" != "$stamp" ]; then
  rm -rf "$out/perf" "$out/include" "$out/gen" "$out/bin" "$out/stamp"
  mkdir -p "$out/include" "$out/gen" "$out/bin"
  tar -xzf "$tarball" -C "$out" --strip-components=1 \
    $(printf 'libzmq-4.3.4/perf/%s.cpp ' "${programs[@]}")
  cp "$prefix/include/zmq.h" "$out/include/"
  # perf/inproc_*.cpp include libzmq's generated platform.hpp only for its ZMQ_HAVE_WINDOWS test.
  printf '/* Stands in for libzmq'"'"'s generated platform.hpp (Linux: nothing to define). */\n' \
    >"$out/gen/platform.hpp"
  for p in "${programs[@]}"; do
    "${cxx[@]}" -o "$out/bin/$p" "$out/perf/$p.cpp" "$libdir/libzmq.so.5" "${rpath[@]}" ||
      die "compiling perf/$p.cpp against $prefix"
  done
  "${cc[@]}" -o "$out/bin/zmq_rtt" "$rtt_src" "$libdir/libzmq.so.5" "${rpath[@]}" ||
    die "compiling $rtt_src against $prefix"
  printf '%s\n' "$stamp" >"$out/stamp"
fi

# Every program must load this prefix's library, whatever LD_LIBRARY_PATH says.
for p in "${programs[@]}" zmq_rtt; do
  got=$(env -u LD_LIBRARY_PATH ldd "$out/bin/$p" | awk '$1 == "libzmq.so.5" { print $3 }')
  [ -n "$got" ] && [ "$(readlink -f "$got")" = "$lib" ] ||
    die "$out/bin/$p loads libzmq.so.5 from '${got:-nowhere}', not $lib"
done
printf '%s\n' "$lib" >"$out/library"
echo "zmq-perf-build: $out/bin: ${programs[*]} zmq_rtt against $lib"
