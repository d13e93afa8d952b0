#!/bin/sh
# ensure-packages.sh PKG...: install the Debian packages that dpkg says are
# missing (apt-get update once first). Needs root; says what to do otherwise.
missing=""
for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "hapticd: installing missing Debian packages:$missing" >&2
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
        echo "hapticd: not root and no sudo: install these packages yourself:$missing" >&2; exit 1; fi
else SUDO=""; fi
$SUDO apt-get update -qq || { echo "hapticd: apt-get update failed" >&2; exit 1; }
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null \
    || { echo "hapticd: apt-get install failed for:$missing" >&2; exit 1; }
