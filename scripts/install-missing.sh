#!/usr/bin/env bash
# Install the Debian packages of the list that are not installed yet, and nothing else:
# bash scripts/install-missing.sh LABEL PACKAGE...   (LABEL names the caller in the one line it prints)
set -euo pipefail
label="$1"
shift
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "$label: installing system packages: ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
