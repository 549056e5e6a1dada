#!/usr/bin/env python3
"""Mining a history of N commits (issue 46): `hone eval mine` on a made repository whose tests
are fast, reporting tasks per minute and the share of the time spent in the setup and test
commands themselves (the rest is hone's: walking the history, making each task's repository,
building jails, reading reports).

The history: every fifth commit fixes a bug with a test (a task), the others change docs, a
source file alone, or tests alone (no test runs for them). The test runner is one Python process
that runs every test file and writes a JUnit report.

  bench/eval_mine.py [--hone target/release/hone] [--commits 500]
"""
import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNNER = """import glob, os, runpy, sys
sys.path.insert(0, '.')
out = ['<testsuite>']
for t in sorted(glob.glob('tests/test_*.py')):
    n = os.path.basename(t)[:-3]
    try:
        runpy.run_path(t)
        out.append('<testcase name="%s"/>' % n)
    except BaseException:
        out.append('<testcase name="%s"><failure/></testcase>' % n)
out.append('</testsuite>')
open('junit.xml', 'w').write('\\n'.join(out))
"""
JOB = """version: 1
name: mine
task: unused
model: { provider: openai-compatible, name: m, base_url: "http://127.0.0.1:9/v1" }
verify:
  - { name: tests, run: "python3 run_tests.py", junit: junit.xml, timeout: 60s }
"""


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def commit(repo, message, files):
    for path, text in files.items():
        p = repo / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qm", message)


def make(repo, n):
    """A history of `n` commits after the start; each bug fix is a function made right."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "start", {"run_tests.py": RUNNER, "job.yaml": JOB, "tests/test_ok.py": "assert True\n",
                           "README.md": "bench\n"})
    fixes = 0
    for i in range(n):
        kind = i % 5
        if kind == 0:
            # A bug, then its fix with a test (the bug is committed as part of a docs change).
            name = f"f{fixes}"
            commit(repo, f"Add {name}", {f"mod_{name}.py": f"def {name}():\n    return 0\n"})
            commit(repo, f"Fix {name}", {f"mod_{name}.py": f"def {name}():\n    return 1\n",
                                         f"tests/test_{name}.py": f"from mod_{name} import {name}\nassert {name}() == 1\n"})
            fixes += 1
        elif kind == 1:
            commit(repo, f"Docs {i}", {"README.md": f"bench {i}\n"})
        elif kind == 2:
            commit(repo, f"Refactor {i}", {f"util_{i}.py": f"X = {i}\n"})
        elif kind == 3:
            commit(repo, f"Tests {i}", {f"tests/test_more_{i}.py": "assert True\n"})
        else:
            commit(repo, f"Data {i}", {f"data/{i}.json": "{}\n"})
    return fixes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hone", default=str(ROOT / "target" / "release" / "hone"))
    ap.add_argument("--commits", type=int, default=500)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hone-bench-mine-") as tmp:
        repo = Path(tmp) / "repo"
        t = time.monotonic()
        fixes = make(repo, a.commits)
        made = time.monotonic() - t
        total = len(subprocess.run(["git", "-C", str(repo), "rev-list", "HEAD"], capture_output=True, text=True).stdout.split())
        t = time.monotonic()
        out = subprocess.run([a.hone, "eval", "mine", "--job", "job.yaml", "--out", str(Path(tmp) / "tasks.jsonl")],
                             cwd=repo, capture_output=True, text=True)
        wall = time.monotonic() - t
        if out.returncode != 0:
            sys.exit(out.stderr)
        line = out.stdout.strip()
        tasks = int(re.search(r"(\d+) task\(s\)", line).group(1))
        share = int(re.search(r"(\d+)% of it in the setup and test commands", line).group(1))
    print(f"history: {total} commits ({fixes} fixes with tests; made in {made:.0f} s)")
    print(f"| commits | tasks | wall time | tasks per minute | in the test commands | hone's own |")
    print(f"|---|---|---|---|---|---|")
    print(f"| {total} | {tasks} | {wall:.1f} s | {60 * tasks / wall:.1f} | {share}% | {100 - share}% |")
    print(line)


if __name__ == "__main__":
    main()
