#!/bin/sh
# fetch-data.sh DIR: real, watertight meshes from Debian's libcgal-demo
# (data/meshes/*.off inside usr/share/doc/libcgal-dev/data.tar.gz) into DIR/meshes.
set -eu
dir=${1:-data}
want="bunny00 armadillo elephant knot1 fandisk"
missing=""
for m in $want; do [ -f "$dir/meshes/$m.off" ] || missing="$missing $m"; done
[ -z "$missing" ] && { echo "data: meshes present in $dir/meshes"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "data: downloading libcgal-demo (Debian package) for:$missing" >&2
if ! (cd "$tmp" && apt-get download libcgal-demo >/dev/null 2>&1); then
    if [ "$(id -u)" -eq 0 ]; then apt-get update -qq >/dev/null 2>&1 || true; fi
    (cd "$tmp" && apt-get download libcgal-demo >/dev/null) ||
        { echo "data: apt-get download libcgal-demo failed: no Debian mirror reachable?" >&2; exit 1; }
fi
dpkg -x "$tmp"/libcgal-demo_*.deb "$tmp/x"
tarball=$(find "$tmp/x" -name data.tar.gz | head -n 1)
[ -n "$tarball" ] || { echo "data: data.tar.gz not found in libcgal-demo" >&2; exit 1; }
mkdir -p "$dir/meshes"
tar -xzf "$tarball" -C "$tmp" --wildcards 'data/meshes/*.off' 2>/dev/null || tar -xzf "$tarball" -C "$tmp"
cp "$tmp"/data/meshes/*.off "$dir/meshes/"
for m in $want; do [ -f "$dir/meshes/$m.off" ] || { echo "data: $m.off missing from the archive" >&2; exit 1; }; done
echo "data: $(ls "$dir/meshes" | wc -l) meshes in $dir/meshes"
