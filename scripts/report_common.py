"""Helpers the benchmark report scripts share (imported by chat_report.py and echo_report.py)."""
import platform


def cpu_model():
    """The CPU's model name from /proc/cpuinfo, else what platform knows, else 'unknown'."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
