#!/usr/bin/env python3
"""What a very large change costs hone after the model (issue 22, item 7).

A scripted model (`provider: script`, no network) runs one command that makes a change, then
finishes. hone verifies, guards, saves or refuses, restores and reports. The changes:
  one file      the reference: the same run with a one-file change
  N files       N new files of 2 bytes in one new directory
  big file      one file of the given size (a NUL byte, then lines of text)
with `limits.max_wall_time: 30s`, the figure of the issue. For each it prints the wall time of
the whole run, the time after the model's last turn (guards, save or refusal, restore, reports),
that time as a multiple of the reference's, whether the reports were written, and whether the
checkout was left clean. The time after the model is bound by the file system (hone removes what the
model made, one file at a time), so each case also times `rm -rf` of the same files, made the same way
outside hone, in the same run: the last column is hone's time after the model over that.

    bench/large_change.py [HONE] [COUNTS...]     (default: target/release/hone 10000 100000 400000)
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A run still going after this long is stopped and reported as such.
LIMIT = 900
# The run's wall-time budget (the 30 s; WALL=120s lets a slow disk finish the command).
WALL = os.environ.get("WALL", "30s")


def ts(s: str) -> float:
    s = s.rstrip("Z")
    head, _, frac = s.partition(".")
    return datetime.fromisoformat(head).timestamp() + float("0." + (frac or "0")[:6])


def run(hone: Path, name: str, command: str) -> dict:
    work = Path(tempfile.mkdtemp(prefix="hone-large-"))
    repo = work / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "status.txt").write_text("broken\n")
    subprocess.run(git + ["-C", str(repo), "add", "."], check=True)
    subprocess.run(git + ["-C", str(repo), "commit", "-qm", "init"], check=True)
    script = {"turns": [
        {"content": "", "tool_calls": [{"name": "run_cmd", "arguments": {"command": command}}]},
        {"content": "Done."},
    ]}
    (work / "script.json").write_text(json.dumps(script))
    (work / "policy.yaml").write_text("version: 1\ncommands:\n  default: allow\n")
    (work / "job.yaml").write_text(
        f"version: 1\nname: {name}\ntask: t\n"
        f"model: {{ provider: script, name: s, script: {work / 'script.json'} }}\n"
        f"repo: {{ path: {repo} }}\nreport: {{ dir: {work / 'reports'} }}\npolicy: {work / 'policy.yaml'}\n"
        "verify:\n  - { name: check, run: \"true\", timeout: 60s }\n"
        f"limits: {{ max_turns: 5, max_wall_time: {WALL} }}\nplan: false\ntools: {{ cmd_timeout: 120s }}\n"
    )
    start = time.monotonic()
    try:
        p = subprocess.run([str(hone), "run", str(work / "job.yaml")], capture_output=True, text=True,
                           timeout=LIMIT)
    except subprocess.TimeoutExpired:
        subprocess.run(["rm", "-rf", str(work)])
        return {"exit": "killed", "wall": LIMIT, "after": None, "reports": False, "clean": False,
                "line": f"still running after {LIMIT} s"}
    wall = time.monotonic() - start
    events = [json.loads(l) for l in (work / "reports/events.jsonl").read_text().splitlines()] \
        if (work / "reports/events.jsonl").exists() else []
    # The model's work ends with its command's end (its last turn asks for nothing more).
    last_turn = max((ts(e["ts"]) for e in events if e["type"] == "tool_call_completed"), default=None)
    done = max((ts(e["ts"]) for e in events if e["type"] == "run_completed"), default=None)
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=normal"],
                            capture_output=True, text=True).stdout
    reports = all((work / "reports" / f).exists() for f in ["report.json", "junit.xml", "summary.md"])
    subprocess.run(["rm", "-rf", str(work)])
    return {"exit": p.returncode, "wall": wall, "after": (done - last_turn) if done and last_turn else None,
            "reports": reports, "clean": status.strip() == "", "line": p.stdout.strip()[:160]}


def rm_rf(command: str) -> float:
    """Seconds `rm -rf` takes on what `command` makes, run the same way outside hone."""
    work = Path(tempfile.mkdtemp(prefix="hone-large-rm-"))
    subprocess.run(["sh", "-c", command], cwd=work, check=True)
    start = time.monotonic()
    subprocess.run(["rm", "-rf", str(work)], check=True)
    return time.monotonic() - start


def main() -> None:
    hone = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target/release/hone"
    counts = [int(c) for c in sys.argv[2:]] or [10_000, 100_000, 400_000]
    cases = [("one file", "echo fixed > status.txt")]
    for n in counts:
        cases.append((f"{n:,} files", "python3 -c \"import os\nos.makedirs('many', exist_ok=True)\n"
                      f"for i in range({n}): open(f'many/f{{i}}', 'w').write('x\\\\n')\""))
    cases.append(("600 MB file", "python3 -c \"f = open('big.txt', 'wb'); f.write(b'\\\\0')\n"
                  "for _ in range(60): f.write(b'0123456789' * 1000000)\""))
    ref = None
    print("| change | exit | whole run | after the model | ÷ reference | reports | checkout clean "
          "| `rm -rf` of the same | after ÷ `rm -rf` |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, command in cases:
        r = run(hone, "large", command)
        ref = ref or r["after"]
        ratio = f"{r['after'] / ref:.1f}" if r["after"] and ref else "?"
        after = f"{r['after']:.2f} s" if r["after"] is not None else "?"
        rm = rm_rf(command)
        over_rm = f"{r['after'] / rm:.1f}" if r["after"] and rm > 0 else "?"
        print(f"| {label} | {r['exit']} | {r['wall']:.1f} s | {after} | {ratio} | "
              f"{'yes' if r['reports'] else 'NO'} | {'yes' if r['clean'] else 'NO'} | {rm:.2f} s | {over_rm} |",
              flush=True)
        print(f"  {r['line']}", file=sys.stderr)


if __name__ == "__main__":
    main()
