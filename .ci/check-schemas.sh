#!/usr/bin/env bash
# Validate every example file that names one of hone's schemas in its first line
# (`# yaml-language-server: $schema=…/job.schema.json`) against the committed schema
# (docs/schemas/, generated from the types; a unit test keeps it current), and the built-in
# policy against the policy schema. Usage: .ci/check-schemas.sh PATH/TO/check-jsonschema
set -euo pipefail
cd "$(dirname "$0")/.."
check="$1"
checked=0
while IFS= read -r -d '' f; do
  first="$(head -n 1 "$f")"
  case "$first" in
    "# yaml-language-server: \$schema="*) ;;
    *) continue ;;
  esac
  schema="docs/schemas/$(basename "${first#*\$schema=}")"
  [ -f "$schema" ] || { echo "$f names $schema, which does not exist" >&2; exit 1; }
  "$check" --schemafile "$schema" "$f" >/dev/null
  checked=$((checked + 1))
done < <(find examples -name '*.yaml' -print0)
"$check" --schemafile docs/schemas/policy.schema.json src/policy/builtin.yaml >/dev/null
echo "schemas: $checked example file(s) and the built-in policy are valid"
