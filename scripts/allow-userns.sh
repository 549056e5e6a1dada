#!/usr/bin/env bash
# Let hone jail commands on this machine: hone runs the model's commands (and the checks) in
# unprivileged user namespaces, which Ubuntu 24.04 (GitHub's ubuntu-latest) restricts through
# AppArmor (kernel.apparmor_restrict_unprivileged_userns=1). This lifts the restriction until the
# next boot, which on a CI runner means for this job only, and says so. Run by the Actions
# (action.yml, install/action.yml); needs passwordless sudo, as hosted runners have.
# Without it, hone stops at intake and its error names this remedy.
set -euo pipefail
knob=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
if [ "$(cat "$knob" 2>/dev/null)" = "1" ]; then
  echo "hone: lifting AppArmor's restriction on unprivileged user namespaces for this job (sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0), so that hone can jail the model's commands"
  sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 >/dev/null
else
  echo "hone: unprivileged user namespaces are allowed here; nothing to change"
fi
