#!/usr/bin/env bash
# Install every build, test and benchmark dependency on a fresh Debian
# machine. Does nothing when everything is already there.
set -euo pipefail

pkgs=(build-essential cmake pkg-config clang
      babeltrace2 python3-bt2
      lttng-tools liblttng-ust-dev liburcu-dev
      chromium chromium-driver)

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
