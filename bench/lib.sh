# Shared by the bench/*.sh load scripts (source it; it defines functions only).

# A free TCP port on 127.0.0.1.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wrk's text report (stdin, run with --latency) -> "rps p50_ms p99_ms non2xx",
# the last field suffixed "+socket-errors:…" when wrk met any.
wrk_summary() {
  python3 -c '
import re, sys
t = sys.stdin.read()
def ms(v):
    n, u = re.match(r"([\d.]+)(us|ms|s)", v).groups()
    return float(n) * {"us": 0.001, "ms": 1, "s": 1000}[u]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
p50 = ms(re.search(r"\n\s+50%\s+(\S+)", t).group(1))
p99 = ms(re.search(r"\n\s+99%\s+(\S+)", t).group(1))
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
err = re.search(r"Socket errors: (.*)", t)
extra = ("+socket-errors:" + err.group(1).replace(" ", "")) if err else ""
print(f"{rps:.0f} {p50:.2f} {p99:.2f} {bad.group(1) if bad else 0}{extra}")'
}
