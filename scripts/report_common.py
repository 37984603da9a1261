"""Helpers the benchmark report scripts share (die, cpu_model; run_gnuplot: the echo and link reports)."""
import os
import statistics
import platform
import shutil
import subprocess
import sys


def die(why):
    """Prints '<report>: FAILED: <why>' on stderr and exits 1."""
    print(f"{os.path.splitext(os.path.basename(sys.argv[0]))[0]}: FAILED: {why}", file=sys.stderr)
    sys.exit(1)


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


def run_gnuplot(script, png, width, height):
    """Runs a gnuplot script into png (width x height pixels); None, or why it failed."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        return "gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)"
    # pngcairo draws smoother lines; a gnuplot built without cairo has only png.
    terms = subprocess.run([gnuplot, "-e", "set terminal"], capture_output=True, text=True)
    term = "pngcairo" if "pngcairo" in (terms.stdout + terms.stderr) else "png"
    res = subprocess.run([gnuplot], input=f"\nset terminal {term} size {width},{height}\nset output '{png}'" + script,
                         capture_output=True, text=True)
    if res.returncode != 0 or not os.path.exists(png):
        return f"gnuplot failed: {res.stderr.strip()}"
    return None


class Cell:
    """One configuration and family of a benchmark's runs: its passing values of one metric,
    failures, not-built. text() writes the median with [min-max] and (failed runs); a report may
    swap the marks (`ranges`, `failures`)."""

    ranges = "[]"
    failures = "()"

    def __init__(self, rows, metric):
        self.rows = rows
        self.ok = [r for r in rows if r["status"] == "ok" and r.get(metric) is not None]
        self.failed = [r for r in rows if r["status"] == "failed"]
        self.not_built = bool(rows) and all(r["status"] == "not_built" for r in rows)
        self.values = [float(r[metric]) for r in self.ok]
        self.median = statistics.median(self.values) if self.values else None

    def text(self, fmt):
        if not self.rows:
            return "not run"
        if self.not_built:
            return "not built"
        if not self.values:
            return f"FAILED ({len(self.failed)} of {len(self.rows)} runs)"
        s = fmt(self.median)
        if len(self.values) > 1:
            s += f" {self.ranges[0]}{fmt(min(self.values))}-{fmt(max(self.values))}{self.ranges[1]}"
        if self.failed:
            s += f" {self.failures[0]}{len(self.failed)} of {len(self.rows)} runs failed{self.failures[1]}"
        return s


def fmt_int(v):
    return f"{v:,.0f}"


def fmt_us(v):
    return f"{v:,.2f}"


def ratio(a, b):
    """a's median over b's, or None when either has none."""
    if a.median is None or b.median is None or b.median == 0:
        return None
    return a.median / b.median
