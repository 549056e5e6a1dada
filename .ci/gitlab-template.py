"""Render a GitLab CI/CD template with `spec: inputs:` as GitLab does for `include: inputs:`, so
that check-jsonschema and shellcheck can read what GitLab would run (.ci/run). On the parsed
YAML, a string that is one `$[[ inputs.NAME ]]` becomes the input's value (an array stays an
array), and inside a longer string (or a key) the value is written in.

usage: gitlab-template.py TEMPLATE OUT_DIR [NAME=VALUE ...]   (each VALUE is YAML: tags=[hone])
Writes OUT_DIR/header.json (the spec), OUT_DIR/jobs.json (the rendered jobs) and
OUT_DIR/script.sh (every job's script, as the runner joins it). Fails on an input used but not
declared, declared but never used, mandatory but not given, or a value of the wrong type,
outside its options or not matching its regex.
"""
import json, re, sys
from ruamel.yaml import YAML

yaml = YAML(typ="safe")
INPUT = re.compile(r"\$\[\[\s*inputs\.([A-Za-z0-9_-]+)\s*\]\]")
template, out = sys.argv[1], sys.argv[2]
given = {k: yaml.load(v) for k, v in (a.split("=", 1) for a in sys.argv[3:])}
text = open(template, encoding="utf-8").read()
head, sep, body = text.partition("\n---\n")
if not sep:
    sys.exit(f"{template}: no `---` after the spec header")
inputs = yaml.load(head)["spec"]["inputs"]
errors, values = [], {}
used = set(INPUT.findall(body))
errors += [f"input `{n}` is used but not declared" for n in sorted(used - set(inputs))]
errors += [f"input `{n}` is declared but never used" for n in sorted(set(inputs) - used)]
for name, spec in inputs.items():
    spec = spec or {}
    if name not in given and "default" not in spec:
        errors.append(f"input `{name}` has no default and no value was given")
        continue
    value = given.get(name, spec.get("default"))
    kind = spec.get("type", "string")
    types = {"string": (str,), "boolean": (bool,), "number": (int, float), "array": (list,)}[kind]
    if not isinstance(value, types) or (kind == "number" and isinstance(value, bool)):
        errors.append(f"input `{name}`: {value!r} is not a {kind}")
    if "options" in spec and value not in spec["options"]:
        errors.append(f"input `{name}`: {value!r} is not one of {spec['options']}")
    if "regex" in spec and isinstance(value, str) and not re.search(spec["regex"], value):
        errors.append(f"input `{name}`: {value!r} does not match {spec['regex']}")
    values[name] = value
if errors:
    sys.exit("\n".join(f"{template}: {e}" for e in errors))

def text_of(v):
    return json.dumps(v) if isinstance(v, (list, bool)) else str(v)

def interpolate(node):
    if isinstance(node, dict):
        return {interpolate(k): interpolate(v) for k, v in node.items()}
    if isinstance(node, list):
        return [interpolate(v) for v in node]
    if isinstance(node, str):
        whole = INPUT.fullmatch(node.strip())
        if whole:
            return values[whole.group(1)]
        return INPUT.sub(lambda m: text_of(values[m.group(1)]), node)
    return node

jobs = interpolate(yaml.load(body))
with open(f"{out}/header.json", "w", encoding="utf-8") as f:
    json.dump(yaml.load(head), f, indent=1)
with open(f"{out}/jobs.json", "w", encoding="utf-8") as f:
    json.dump(jobs, f, indent=1)
with open(f"{out}/script.sh", "w", encoding="utf-8") as f:
    f.write("#!/bin/sh\n")
    for job in jobs.values():
        for key in ("before_script", "script", "after_script"):
            f.write("\n".join(job.get(key, [])) + "\n")
