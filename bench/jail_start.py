#!/usr/bin/env python3
"""The time to start a command in hone's jail, for two builds side by side (issue 40: the view
built from what commands need may cost no more than 1.2x the masked view it replaces).

Each build runs two jobs on the same small repository, both with the scripted model
(`provider: script`, so no model server and no network), RUNS times, interleaved (the order of
the builds and of the jobs alternates from round to round):

  commands  COMMANDS turns that each run `true` through `run_cmd` (one per turn), then the fix;
  files     the same turns with a `read_file` instead, which starts no command.

**Per command, wall** (the figure held to the limit): how long each `run_cmd` of `true` took,
from hone's own events (`tool_call_started` to `tool_call_completed`, in nanoseconds), over every
call of every round: the policy's check, then the command started in the run's jail (`hone
__jail-exec`: setns into the run's namespaces, a mount and PID namespace of its own, /proc,
Landlock, exec) and waited for. The same figure for `read_file` is the tool call's cost without a
command. **Per command, CPU**: (CPU time of the commands run - CPU time of the files run) /
COMMANDS, per round: hone's and that of every process it waited for (the holder, each
command's helper), which varies much less than wall time on a machine others load. **Run with
no command**: the files run's wall time (hone's start, the jail built once by the holder, the
baseline and final checks): where the cost of building the view itself lands.

hone runs with this shell's HOME and PATH, so that the view holds what it would hold for you (your
toolchains in the home, the directories on PATH): the cost of a view grows with what it holds.

Exit 0 when this build's per-command wall time (`--by cpu`: CPU time) is within LIMIT times the
reference's, 1 otherwise.

Usage: bench/jail_start.py --reference OLD_HONE [--hone target/release/hone]
                           [--runs 9] [--commands 60] [--limit 1.2] [--by wall|cpu]
"""
import datetime
import json
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECK = "grep -qx fixed status.txt\n"
POLICY = "version: 1\ncommands:\n  default: allow\n"


def job(turns):
    """The job spec: the scripted model, the check, room for every turn."""
    return (
        "version: 1\nname: jailstart\ntask: Make check.sh pass.\n"
        "model: { provider: script, script: script.yaml }\n"
        "verify:\n  - { name: check, run: \"sh check.sh\", timeout: 60s }\n"
        f"limits: {{ max_turns: {turns + 5}, max_wall_time: 10m, max_fix_attempts: 0 }}\n"
        "plan: false\npolicy: policy.yaml\n"
    )


def script(call, n):
    """`n` turns of `call` (one tool call each, the i-th with `{i}` replaced: hone stops a model
    that repeats a call), then the fix and a final answer."""
    turns = [f"  - tool_calls:\n      - {call.replace('{i}', str(i))}\n" for i in range(n)]
    turns.append('  - tool_calls:\n      - { name: write_file, arguments: { path: status.txt, content: "fixed\\n" } }\n')
    turns.append("  - content: Set status.txt to fixed.\n")
    return "turns:\n" + "".join(turns)


CALLS = {
    "commands": '{ name: run_cmd, arguments: { command: "true {i}" } }',
    "files": "{ name: read_file, arguments: { path: notes/{i}.txt } }",
}


def git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@example.com", "-c", "init.defaultBranch=main",
                    "-c", "commit.gpgsign=false", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def origin(work, kind, n):
    """A repository whose check fails until status.txt says fixed, with the job for `kind`."""
    work.mkdir(parents=True)
    git(work, "init", "-q")
    files = {"status.txt": "broken\n", "check.sh": CHECK, "job.yaml": job(n), "policy.yaml": POLICY,
             "script.yaml": script(CALLS[kind], n)}
    files.update({f"notes/{i}.txt": f"{i}\n" for i in range(n)})
    for name, body in files.items():
        (work / name).parent.mkdir(exist_ok=True)
        (work / name).write_text(body)
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "initial")


def seconds(ts):
    """An event's RFC 3339 time (nanoseconds, UTC) in seconds, to the microsecond."""
    day, clock = ts.rstrip("Z").split("T")
    h, m, sec = clock.split(":")
    days = datetime.date.fromisoformat(day).toordinal() - 738000
    return days * 86400 + int(h) * 3600 + int(m) * 60 + float(sec)


def call_times(events):
    """{tool: [ms of each call]} from a run's events.jsonl."""
    started, out = {}, {}
    for line in events.read_text().splitlines():
        e = json.loads(line)
        if e.get("type") == "tool_call_started":
            started[e["call_id"]] = seconds(e["ts"])
        elif e.get("type") == "tool_call_completed" and e.get("call_id") in started:
            out.setdefault(e["tool"], []).append((seconds(e["ts"]) - started[e["call_id"]]) * 1000)
    return out


def one(hone, src, scratch):
    """(wall time, CPU time, {tool: [ms per call]}) of `hone run` on a fresh clone of `src`; the
    CPU time is hone's and that of every process it waited for."""
    work = Path(tempfile.mkdtemp(dir=scratch))
    git(scratch, "clone", "-q", str(src), str(work / "repo"))
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "USER", "LOGNAME")}
    cmd = [hone, "run", "job.yaml", "--dry-run", "--no-memory", "--report-dir", str(work / "reports")]
    log = work / "hone.log"
    with open(log, "w") as out:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=work / "repo", env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{hone} failed (exit {code}):\n{log.read_text()}")
    return wall, usage.ru_utime + usage.ru_stime, call_times(work / "reports" / "events.jsonl")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hone", default=str(ROOT / "target" / "release" / "hone"))
    ap.add_argument("--reference", required=True)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--commands", type=int, default=60)
    ap.add_argument("--limit", type=float, default=1.2)
    ap.add_argument("--by", choices=["wall", "cpu"], default="wall",
                    help="the per-command figure held to the limit (cpu: on a machine others load)")
    a = ap.parse_args()
    builds = [("reference", os.path.abspath(a.reference)), ("this build", os.path.abspath(a.hone))]
    with tempfile.TemporaryDirectory(prefix="jail-start-") as scratch:
        scratch = Path(scratch)
        src = {kind: scratch / f"origin-{kind}" for kind in CALLS}
        for kind, path in src.items():
            origin(path, kind, a.commands)
        for _, h in builds:  # warm up: page cache, the binaries' first start
            one(h, src["files"], scratch)
        # By label: the same binary may be given twice (to see the noise).
        runs = {label: {k: [] for k in CALLS} for label, _ in builds}
        for r in range(a.runs):
            for label, h in builds if r % 2 == 0 else builds[::-1]:
                for k in list(CALLS) if r % 2 == 0 else list(CALLS)[::-1]:
                    runs[label][k].append(one(h, src[k], scratch))
    report(a, builds, runs)


def spread(values, digits=2):
    """`median (p10-p90)` of `values`."""
    v = sorted(values)
    lo, hi = v[len(v) // 10], v[(len(v) * 9) // 10 - (1 if len(v) >= 10 else 0)]
    return f"{statistics.median(v):.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"


def figures(a, got):
    """One build's figures from its runs: per command wall (every call), per command CPU (per
    round), read_file calls, and the files runs' wall time (ms)."""
    cmd_calls = [ms for (_, _, t) in got["commands"] for ms in t.get("run_cmd", [])]
    read_calls = [ms for (_, _, t) in got["files"] for ms in t.get("read_file", [])]
    cpu = [(c[1] - f[1]) / a.commands * 1000 for c, f in zip(got["commands"], got["files"])]
    assert len(cmd_calls) == a.runs * a.commands, f"{len(cmd_calls)} run_cmd calls in the events"
    return cmd_calls, cpu, read_calls, [f[0] * 1000 for f in got["files"]]


def report(a, builds, runs):
    """The table, the ratios, and the exit status."""
    print(f"{a.runs} rounds, {a.commands} commands (`true`) per run; median (p10-p90)\n")
    print("| build | per command, wall | per command, CPU | read_file call, wall | run with no command |")
    print("|---|---|---|---|---|")
    med = {}
    for label, h in builds:
        cmd, cpu, read, run = figures(a, runs[label])
        med[label] = [statistics.median(x) for x in (cmd, cpu, run)]
        print(f"| {label} (`{h}`) | {spread(cmd)} ms | {spread(cpu)} ms | {spread(read)} ms | {spread(run, 0)} ms |")
    ref, new = med[builds[0][0]], med[builds[1][0]]
    wall, cpu, run = (n / r for n, r in zip(new, ref))
    if abs(wall - cpu) > 0.15:
        print("\nwarning: the wall and CPU ratios disagree: the machine may have been busy (load "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores); run again when it is quiet")
    limit = {a.by: f" (limit {a.limit})"}
    print(f"\nper command (wall), this build / reference: {wall:.2f}{limit.get('wall', '')}")
    print(f"per command (CPU), this build / reference: {cpu:.2f}{limit.get('cpu', '')}")
    print(f"run with no command (wall), this build / reference: {run:.2f}")
    sys.exit(0 if (wall if a.by == "wall" else cpu) <= a.limit else 1)


if __name__ == "__main__":
    main()
