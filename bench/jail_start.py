#!/usr/bin/env python3
"""The time to start a command in hone's jail, for two builds side by side (issue 40: the view
built from what commands need may cost no more than 1.2x the masked view it replaces).

Each build runs two jobs on the same small repository, both with the scripted model
(`provider: script`, so no model server and no network), RUNS times, interleaved (the order of
the builds and of the jobs alternates from round to round):

  commands  COMMANDS turns that each run `true` through `run_cmd` (one per turn), then the fix;
  files     the same turns with a `read_file` instead, which starts no command.

Both runs build the jail once (the holder makes the view) and run the job's check twice (the
baseline and the final check); the only difference is COMMANDS commands started in the jail
(`hone __jail-exec`: setns into the run's namespaces, a mount and PID namespace of its own, /proc,
Landlock, exec). So per command = (commands run - files run) / COMMANDS, taken per round and
build, and its median is compared. The median wall time of the files run (hone's start, the jail
built once, two checks) is shown too: it is where the cost of building the view itself lands.

hone runs with this shell's HOME and PATH, so that the view holds what it would hold for you (your
toolchains in the home, the directories on PATH): the cost of a view grows with what it holds.

The CPU time per command (hone's and that of the processes it waited for: the holder, each
command's helper) is shown beside the wall time: on a busy machine the wall time varies with the
load and the CPU time much less; the script warns when their ratios disagree.

Exit 0 when this build's per-command wall time is within LIMIT times the reference's, 1 otherwise.

Usage: bench/jail_start.py --reference OLD_HONE [--hone target/release/hone]
                           [--runs 9] [--commands 60] [--limit 1.2]
"""
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


def one(hone, src, scratch):
    """(wall time, CPU time) in seconds of `hone run` on a fresh clone of `src`; the CPU time is
    hone's and that of every process it waited for (the jail's holder, each command's helper)."""
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
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{hone} failed (exit {proc.returncode}):\n{log.read_text()}")
    return wall, usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hone", default=str(ROOT / "target" / "release" / "hone"))
    ap.add_argument("--reference", required=True)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--commands", type=int, default=60)
    ap.add_argument("--limit", type=float, default=1.2)
    a = ap.parse_args()
    builds = [("reference", os.path.abspath(a.reference)), ("this build", os.path.abspath(a.hone))]
    with tempfile.TemporaryDirectory(prefix="jail-start-") as scratch:
        scratch = Path(scratch)
        src = {kind: scratch / f"origin-{kind}" for kind in CALLS}
        for kind, path in src.items():
            origin(path, kind, a.commands)
        for _, h in builds:  # warm up: page cache, the binaries' first start
            one(h, src["files"], scratch)
        walls = {(h, k): [] for _, h in builds for k in CALLS}
        per_cmd = {h: [] for _, h in builds}
        cpu_per_cmd = {h: [] for _, h in builds}
        for r in range(a.runs):
            order = builds if r % 2 == 0 else builds[::-1]
            for _, h in order:
                kinds = list(CALLS) if r % 2 == 0 else list(CALLS)[::-1]
                got = {k: one(h, src[k], scratch) for k in kinds}
                for k, (w, _) in got.items():
                    walls[(h, k)].append(w)
                per_cmd[h].append((got["commands"][0] - got["files"][0]) / a.commands * 1000)
                cpu_per_cmd[h].append((got["commands"][1] - got["files"][1]) / a.commands * 1000)
    report(a, builds, walls, per_cmd, cpu_per_cmd)


def spread(values, scale=1.0, digits=0):
    """`median (min-max)` of `values` times `scale`."""
    m, lo, hi = statistics.median(values) * scale, min(values) * scale, max(values) * scale
    return f"{m:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"


def report(a, builds, walls, per_cmd, cpu_per_cmd):
    """The table, the ratios, and the exit status."""
    print(f"{a.runs} rounds, {a.commands} commands (`true`) per run; median (min-max)\n")
    print("| build | per command, wall | per command, CPU | run with no command (jail built once, 2 checks) |")
    print("|---|---|---|---|")
    for label, h in builds:
        print(f"| {label} (`{h}`) | {spread(per_cmd[h], digits=2)} ms | {spread(cpu_per_cmd[h], digits=2)} ms "
              f"| {spread(walls[(h, 'files')], 1000)} ms |")
    ref, new = builds[0][1], builds[1][1]
    ratio = statistics.median(per_cmd[new]) / statistics.median(per_cmd[ref])
    cpu = statistics.median(cpu_per_cmd[new]) / statistics.median(cpu_per_cmd[ref])
    run_ratio = statistics.median(walls[(new, "files")]) / statistics.median(walls[(ref, "files")])
    if abs(ratio - cpu) > 0.15:
        print("\nwarning: the wall and CPU ratios disagree: the machine was busy (load "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores); run again when it is quiet")
    print(f"\nper command (wall), this build / reference: {ratio:.2f} (limit {a.limit})")
    print(f"per command (CPU), this build / reference: {cpu:.2f}")
    print(f"run with no command (wall), this build / reference: {run_ratio:.2f}")
    sys.exit(0 if ratio <= a.limit else 1)


if __name__ == "__main__":
    main()
