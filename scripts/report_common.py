"""Helpers the benchmark report scripts share (die, cpu_model; run_gnuplot: the echo and link reports)."""
import os
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
