#!/usr/bin/env bash
# zmq.exports: a libzmq.so.5 exports exactly the stable zmq_* functions of the reference libzmq
# (Debian's libzmq 4.3.4), nothing else (no C++ symbols, no data), under SONAME libzmq.so.5.
#
#   tests/zmq/exports.sh LIBRARY REFERENCE ZMQ_H [COVERED_DIR]
#
# LIBRARY    the library under test (strix's build/zmq/lib/libzmq.so.5, or the reference itself,
#            which checks the method)
# REFERENCE  the system's libzmq.so.5
# ZMQ_H      the system's zmq.h: the stable functions are those it declares without
#            ZMQ_BUILD_DRAFT_API; every one of them must be among the reference's exports
# COVERED_DIR  optional: a directory of C sources (the misuse test) that must call every one of
#            the expected functions
# CC picks the preprocessor (default cc). Exit 0 when everything matches.
set -euo pipefail

if [ $# -lt 3 ]; then
    echo "usage: $0 LIBRARY REFERENCE ZMQ_H [COVERED_DIR]" >&2
    exit 2
fi
library=$1 reference=$2 header=$3 covered=${4:-}
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# Function names a preprocessed zmq.h declares (after -E no macro is left, and the header has no
# inline bodies, so every "zmq_name (" is a declaration).
declared() { "$cc" -E -P "$@" -x c "$header" | grep -oE '\bzmq_[a-z0-9_]+[[:space:]]*\(' | sed -E 's/[[:space:]]*\($//' | sort -u; }
declared > "$tmp/stable"
declared -DZMQ_BUILD_DRAFT_API | comm -23 - "$tmp/stable" > "$tmp/draft"
defined() { nm -D --defined-only "$1" | awk '{print $NF}' | sort -u; }
defined "$reference" > "$tmp/reference"

# The method: libzmq exports every stable function, and whatever else it exports is draft API.
comm -23 "$tmp/stable" "$tmp/reference" > "$tmp/unexported"
[ -s "$tmp/unexported" ] && fail "stable functions the reference does not export: $(tr '\n' ' ' < "$tmp/unexported")"
comm -13 "$tmp/stable" "$tmp/reference" | comm -23 - "$tmp/draft" > "$tmp/unexplained"
[ -s "$tmp/unexplained" ] && fail "reference exports neither stable nor draft: $(tr '\n' ' ' < "$tmp/unexplained")"
comm -12 "$tmp/stable" "$tmp/reference" > "$tmp/expected"
echo "expected: $(wc -l < "$tmp/expected") stable functions ($(wc -l < "$tmp/draft") draft functions left out)"

# The library under test: exactly those, each a function (nm type T), nothing else.
defined "$library" > "$tmp/got"
missing=$(comm -23 "$tmp/expected" "$tmp/got" | tr '\n' ' ')
extra=$(comm -13 "$tmp/expected" "$tmp/got" | tr '\n' ' ')
[ -n "$missing" ] && fail "$library does not export: $missing"
[ -n "$extra" ] && fail "$library also exports: $extra"
cxx=$(grep -c '^_Z' "$tmp/got" || true)
[ "$cxx" -gt 0 ] && fail "$library exports $cxx C++ symbols"
not_functions=$(nm -D --defined-only "$library" | awk '$2 != "T" {print $NF}' | tr '\n' ' ')
[ -n "$not_functions" ] && fail "$library exports symbols that are not functions: $not_functions"
soname=$(readelf -d "$library" | sed -nE 's/.*\(SONAME\).*\[(.*)\].*/\1/p')
[ "$soname" = libzmq.so.5 ] || fail "$library has SONAME '$soname', want libzmq.so.5"
echo "$library: $(wc -l < "$tmp/got") exported symbols, SONAME $soname"

# Every expected function is called by the misuse test.
if [ -n "$covered" ]; then
    cat "$covered"/*.c | grep -oE '\bzmq_[a-z0-9_]+[[:space:]]*\(' | sed -E 's/[[:space:]]*\($//' | sort -u > "$tmp/called"
    uncalled=$(comm -23 "$tmp/expected" "$tmp/called" | tr '\n' ' ')
    [ -n "$uncalled" ] && fail "functions the misuse test never calls: $uncalled"
    echo "misuse test calls all $(comm -12 "$tmp/expected" "$tmp/called" | wc -l) of them"
fi
exit $failed
