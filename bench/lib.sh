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

# CPU time so far, in milliseconds (user + system), of every process whose
# name is one of the arguments (say idem postgres), or of the whole machine
# with the argument ALL. Two readings around a load point give where that
# point's CPU went: the machine's two cores are shared by the load
# generator, the server and the database, so CPU per request, not latency,
# decides throughput.
cpu_ms() {
  python3 - "$@" <<'PY'
import os, sys
hz = os.sysconf("SC_CLK_TCK")
names = set(sys.argv[1:])
if names == {"ALL"}:
    f = open("/proc/stat").readline().split()[1:]
    # user nice system idle iowait irq softirq steal: busy = all but idle, iowait
    busy = sum(int(x) for i, x in enumerate(f[:8]) if i not in (3, 4))
    print(busy * 1000 // hz)
    sys.exit()
total = 0
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        s = open(f"/proc/{pid}/stat").read()
    except OSError:
        continue
    if s[s.index("(") + 1 : s.rindex(")")] in names:
        f = s[s.rindex(")") + 2 :].split()
        total += int(f[11]) + int(f[12])
print(total * 1000 // hz)
PY
}
