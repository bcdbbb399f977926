#!/usr/bin/env python3
"""HTTP provider overhead, side by side in one run (docs/PERFORMANCE.md).

Starts Debian's nginx on 127.0.0.1 as an OpenAI-compatible server that
answers every POST at once with one fixed chat completion (HTTP/1.1
keep-alive, one event loop, no logging), then runs each client through the
same closed loop at each number of requests in flight, and stops the server:

  python    the official `openai` package's AsyncOpenAI (bench/http/
            openai_client.py, in a venv pinned by requirements.txt)
  libaf     libaf's openai provider, call by call (af_http_bench libaf)
  program   the same provider behind a compiled program (af_http_bench program)
  curl      a raw libcurl multi loop, the physical limit (af_http_bench curl)

Prints requests per second, CPU per request (client and server), the
connections each client opened, latency percentiles and a latency
histogram, and the ratios the goals are judged by.

  python3 bench/http/run.py --bin build-rel/bin/af_http_bench
"""

import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPLY = ('{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"bench",'
         '"choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help you today?"},'
         '"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21}}')
BUCKETS_MS = [0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500]


def venv_python():
    """The venv for the Python client, keyed by the pinned versions and the
    interpreter; made (pip, PyPI) on first use."""
    reqs = (HERE / "requirements.txt").read_bytes()
    key = hashlib.sha256(reqs + sys.version.encode()).hexdigest()[:12]
    venv = Path.home() / ".cache" / "libaf" / f"bench-venv-{key}"
    py = venv / "bin" / "python"
    if not py.exists():
        print(f"making {venv} (requirements.txt)", file=sys.stderr)
        made = (subprocess.run([sys.executable, "-m", "venv", str(venv)]).returncode == 0 and
                subprocess.run([str(py), "-m", "pip", "install", "-q", "-r", str(HERE / "requirements.txt")]).returncode == 0)
        if not made:
            shutil.rmtree(venv, ignore_errors=True)
            return None
    return str(py)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """One nginx process (no master, one event loop) serving REPLY."""

    def __init__(self):
        exe = shutil.which("nginx") or "/usr/sbin/nginx"
        self.dir = tempfile.mkdtemp(prefix="af-http-bench-")
        self.port, self.status = free_port(), free_port()
        d = self.dir
        conf = f"""
master_process off;
daemon off;
worker_rlimit_nofile 20000;
error_log {d}/error.log warn;
pid {d}/nginx.pid;
events {{ worker_connections 8192; multi_accept on; }}
http {{
  access_log off;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  server {{
    listen 127.0.0.1:{self.port} backlog=4096;
    location / {{ default_type application/json; return 200 '{REPLY}'; }}
  }}
  server {{
    listen 127.0.0.1:{self.status};
    location / {{ stub_status; }}
  }}
}}
"""
        Path(d, "nginx.conf").write_text(conf)
        self.proc = subprocess.Popen([exe, "-p", d, "-c", f"{d}/nginx.conf"], stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            self.stop()
            sys.exit(f"nginx did not start (see {d}/error.log)")
        # The server answers as the clients expect before anything is timed.
        req = urllib.request.Request(f"{self.url()}/chat/completions", data=b'{"model":"bench"}',
                                     headers={"Content-Type": "application/json"})
        reply = json.load(urllib.request.urlopen(req))
        assert reply["choices"][0]["message"]["content"], reply

    def url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def cpu_seconds(self):
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def accepted(self):
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.status}/").read().decode()
        return int(text.splitlines()[2].split()[0])  # "accepts handled requests"

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def percentile(sorted_ns, q):
    return sorted_ns[min(len(sorted_ns) - 1, int(q * len(sorted_ns)))] / 1e6 if sorted_ns else float("nan")


def run_client(server, cmd):
    lat_file = Path(server.dir, "latency.txt")
    load = os.getloadavg()[0]
    cpu0, acc0 = server.cpu_seconds(), server.accepted()
    p = subprocess.run(cmd + [str(lat_file)], capture_output=True, text=True)
    lines = p.stdout.strip().splitlines()
    if not lines or not lines[-1].startswith("{"):
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}{p.stdout}")
    r = json.loads(lines[-1])
    if r["errors"]:  # reported in the table, not hidden
        print(p.stderr.strip(), file=sys.stderr)
    r["server_cpu_seconds"] = server.cpu_seconds() - cpu0
    r["connections"] = server.accepted() - acc0 - 1  # less the status request itself
    r["load"] = load
    lat = sorted(int(x) for x in lat_file.read_text().split())
    r["p50_ms"], r["p90_ms"], r["p99_ms"] = (percentile(lat, q) for q in (0.5, 0.9, 0.99))
    r["max_ms"] = lat[-1] / 1e6 if lat else float("nan")
    hist, i = [], 0
    for edge in BUCKETS_MS + [float("inf")]:
        n = 0
        while i < len(lat) and lat[i] / 1e6 < edge:
            n += 1
            i += 1
        hist.append(n)
    r["histogram"] = hist
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build-rel/bin/af_http_bench", help="the af_http_bench binary")
    ap.add_argument("--in-flight", default="1,100,1000")
    ap.add_argument("--requests", type=int, default=20000, help="timed requests per client and run")
    ap.add_argument("--python-requests", type=int, default=3000,
                    help="timed requests for the Python client (it is far slower: a rate is a rate)")
    ap.add_argument("--clients", default="python,libaf,program,curl")
    ap.add_argument("--json", help="also write every result here")
    args = ap.parse_args()
    clients = args.clients.split(",")
    if not os.path.exists(shutil.which("nginx") or "/usr/sbin/nginx"):
        print("skipped: no nginx to serve the clients (apt-get install nginx-light)", file=sys.stderr)
        return
    py = venv_python() if "python" in clients else None
    if "python" in clients and not py:
        print("the python client is skipped: its venv could not be made (pip, PyPI)", file=sys.stderr)
        clients.remove("python")
    server = Nginx()
    results = []
    try:
        for k in (int(x) for x in args.in_flight.split(",")):
            for c in clients:
                if c == "python":
                    n = max(k, args.python_requests)
                    cmd = [py, str(HERE / "openai_client.py"), server.url(), str(k), str(n)]
                else:
                    cmd = [args.bin, c, server.url(), str(k), str(args.requests)]
                r = run_client(server, cmd)
                results.append(r)
                print(f"{r['client']:>10} {k:>5} in flight: {(r['requests'] - r['errors']) / r['seconds']:>9.0f} req/s "
                      f"(load {r['load']:.1f})", file=sys.stderr)
    finally:
        server.stop()
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def report(results):
    print("| client | in flight | req/s | errors | client CPU µs/req | server CPU µs/req | connections | "
          "p50 ms | p90 ms | p99 ms | max ms | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        n = r["requests"]
        print(f"| {r['client']} | {r['in_flight']} | {(n - r['errors']) / r['seconds']:.0f} | {r['errors']} | "
              f"{1e6 * r['cpu_seconds'] / n:.1f} | "
              f"{1e6 * r['server_cpu_seconds'] / n:.1f} | {r['connections']} | {r['p50_ms']:.3f} | "
              f"{r['p90_ms']:.3f} | {r['p99_ms']:.3f} | {r['max_ms']:.2f} | {r['load']:.1f} |")
    print()
    edges = [f"< {e:g}" for e in BUCKETS_MS] + [f">= {BUCKETS_MS[-1]:g}"]
    print("Latency histogram (requests per bucket, ms):\n")
    print("| client | in flight | " + " | ".join(edges) + " |")
    print("|---|---|" + "---|" * len(edges))
    for r in results:
        if r["p50_ms"] == r["p50_ms"]:  # not NaN: per-request latencies known
            print(f"| {r['client']} | {r['in_flight']} | " + " | ".join(str(n) for n in r["histogram"]) + " |")
    print()
    rps = {(r["client"], r["in_flight"]): (r["requests"] - r["errors"]) / r["seconds"] for r in results}
    print("Ratios (throughput, same run):\n")
    for k in sorted({r["in_flight"] for r in results}):
        parts = []
        for mine, theirs, label in (("libaf", "python", "libaf / python"),
                                    ("curl", "libaf", "curl / libaf"),
                                    ("libaf", "program", "libaf / program")):
            if (mine, k) in rps and (theirs, k) in rps:
                parts.append(f"{label} = {rps[(mine, k)] / rps[(theirs, k)]:.2f}")
        print(f"- {k} in flight: " + ", ".join(parts))


if __name__ == "__main__":
    main()
