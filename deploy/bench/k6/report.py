"""Turns k6's summary of the mixed workload (mixed.js's handleSummary) into the load report:
a Markdown table of each endpoint's throughput and p50/p95/p99, and a PNG of the same, stating the
machine, the commit and the load.

Usage: report.py <k6-results.json> <out-dir>   (writes load.md and load.png there)
"""
import json
import os
import pathlib
import platform
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

results, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
summary = json.loads(results.read_text())


def command(*arguments):
    try:
        return subprocess.run(arguments, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


commit = command("git", "rev-parse", "--short", "HEAD")
dirty = " (with uncommitted changes)" if command("git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!deploy/bench/results") else ""
cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), platform.processor())
machine = f"{os.cpu_count()} cores ({cpu}), {round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GiB, {platform.system()} {platform.release()}"
config = summary["config"]
failed = summary["totals"].get("http_req_failed", {}).get("rate", float("nan"))
checks = summary["totals"].get("checks", {}).get("rate", float("nan"))
total = summary["totals"].get("http_reqs", {})
endpoints = summary["endpoints"]
sessions = summary["totals"].get("ws_sessions", {})
connecting = summary["totals"].get("ws_connecting", {})

lines = [
    "# Load report: the mixed workload through the gateway",
    "",
    f"- Commit: `{commit}`{dirty}; machine: {machine}.",
    f"- Load: {config['duration']} of k6 (`deploy/bench/k6/mixed.js`, scale {config['scale']}): flows per second "
    + ", ".join(f"{name} {rate * config['scale']:g}" for name, rate in config["rates"].items())
    + f", and {config['realtimeClients']} realtime clients holding a WebSocket; the tracking simulator's drivers and customers beside it.",
    f"- In all: {total.get('count', 0):,} requests, {total.get('rate', 0):.1f}/s; failed requests {failed:.2%}; checks passed {checks:.2%}.",
    f"- Realtime: {sessions.get('count', 0):,} WebSocket sessions of 20 s (`/v1/realtime`, channels `me` and `profiles`), "
    f"connected in p50 {connecting.get('p(50)', float('nan')):.1f} ms, p99 {connecting.get('p(99)', float('nan')):.1f} ms.",
    "",
    "| endpoint | requests | per second | failed | p50 | p95 | p99 | max |",
    "|---|---|---|---|---|---|---|---|",
]
for name, figures in endpoints.items():
    lines.append(f"| `{name}` | {figures['requests']:,} | {figures['rate']:.1f} | {figures['failed']:.1%} | {figures['p(50)']:.1f} ms | {figures['p(95)']:.1f} ms | {figures['p(99)']:.1f} ms | {figures['max']:.1f} ms |")
(out / "load.md").write_text("\n".join(lines) + "\n")

names = list(endpoints)
figure, (latency, rate) = plt.subplots(1, 2, figsize=(14, 0.45 * len(names) + 2), sharey=True, gridspec_kw={"width_ratios": [3, 1]})
positions = range(len(names))
for offset, (stat, label, hatch) in enumerate([("p(50)", "p50", ""), ("p(95)", "p95", "//"), ("p(99)", "p99", "..")]):
    latency.barh([p + (offset - 1) * 0.27 for p in positions], [endpoints[n][stat] for n in names], height=0.27, label=label, hatch=hatch, edgecolor="black")
latency.set_yticks(list(positions), names, fontsize=8)
latency.invert_yaxis()
latency.set_xlabel("latency (ms)")
latency.legend(loc="lower right")
rate.barh(list(positions), [endpoints[n]["rate"] for n in names], color="grey", edgecolor="black")
rate.set_xlabel("requests per second")
figure.suptitle(f"Splash, mixed load through the gateway, commit {commit}{dirty}\n{machine}", fontsize=9)
figure.tight_layout()
figure.savefig(out / "load.png", dpi=110)
print((out / "load.md").read_text())
