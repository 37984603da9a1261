"""What bench/zmq_abi/pyzmq_thr.py and pyzmq_lat.py share: arguments, and the libzmq this
process loaded (the benchmark checks that pyzmq runs on the library it says it measures)."""
import os
import sys


def parse(usage, roles):
    """(role, endpoint, size, count) from argv, or the usage on stderr and exit 2."""
    args = sys.argv[1:]
    try:
        role, endpoint, size, count = args[0], args[1], int(args[2]), int(args[3])
        if role not in roles or size < 1 or count < 1 or len(args) != 4:
            raise ValueError
    except (IndexError, ValueError):
        print(f"usage: {usage}", file=sys.stderr)
        sys.exit(2)
    return role, endpoint, size, count


def loaded_libzmq():
    """The real path of the libzmq mapped into this process (after `import zmq`)."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "/libzmq" in path:
                return os.path.realpath(path)
    return "none"
