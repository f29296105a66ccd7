#!/usr/bin/env bash
# Rehearses a GPU session's first call on a machine without a GPU, as the GPU
# server will see it: a clean clone of this repository's HEAD, its carried
# folder made by scripts/gpu-carry.sh, and then scripts/gpu-session.sh (which
# starts with scripts/gpu-check.sh) inside a
# private mount namespace that hides what the server lacks (Qt, Eigen,
# nlohmann/json, zlib's headers and oneDNN), so the build can only succeed
# from the carried headers. A build that needs something the server does not
# have fails here, not in the few minutes of a lent GPU.
#
#   sudo scripts/gpu-rehearse.sh [WORK_DIR]   (default: a new /tmp/gpu-rehearse.*)
#
# Needs root (mount namespaces) and the CUDA toolkit. Exit 0 when the check
# built and then stopped at "no GPU" (exit 2, nothing checked), as it must
# on a machine without one; 1 when the build failed (the check's exit 3) or
# the session ended otherwise; 3 when the rehearsal could not start. The
# session's files are left in WORK_DIR/out.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
  echo "gpu-rehearse: needs root for a private mount namespace (run it with sudo)" >&2
  exit 3
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d /tmp/gpu-rehearse.XXXXXX)}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
rm -rf "$work/src" "$work/out"
git clone -q "$repo" "$work/src"
(cd "$work/src" && scripts/gpu-carry.sh >/dev/null)
echo "gpu-rehearse: $(git -C "$work/src" log --oneline -1) in $work"

# In the namespace: /usr/include becomes a folder of links to the real one's
# entries (through a second mount of it: links to /usr/include itself would
# point back into the folder of links) less the hidden ones, and empty folders
# cover the hidden libraries' CMake packages. Mounting an empty file over a
# header does not hide it: CMake still finds the file.
set +e
unshare -m --propagation private bash -s "$work" <<'EOF'
set -euo pipefail
work="$1"
mkdir -p "$work/ns/real-include" "$work/ns/include" "$work/ns/empty"
mount --bind /usr/include "$work/ns/real-include"
for entry in "$work/ns/real-include"/*; do
  case "$(basename "$entry")" in
    eigen3 | nlohmann | zlib.h | zconf.h | oneapi | dnnl*) continue ;;
  esac
  ln -sfn "$entry" "$work/ns/include/$(basename "$entry")"
done
mount --bind "$work/ns/include" /usr/include
for package in /usr/lib/x86_64-linux-gnu/cmake/Qt6 /usr/lib/x86_64-linux-gnu/cmake/dnnl /usr/share/eigen3 \
  /usr/share/cmake/nlohmann_json /usr/lib/x86_64-linux-gnu/cmake/nlohmann_json; do
  if [ -d "$package" ]; then mount --bind "$work/ns/empty" "$package"; fi
done
cd "$work/src"
OUT="$work/out" scripts/gpu-session.sh
EOF
status=$?
set -e
echo "gpu-rehearse: scripts/gpu-session.sh ended with exit $status (log: $work/out/gpu-check.log)"
case "$status" in
  2) echo "gpu-rehearse: built from the carried headers alone and stopped at 'no GPU', as it should" ;;
  3) echo "gpu-rehearse: the build failed; the server would fail the same way" >&2 ;;
  *) echo "gpu-rehearse: unexpected on a machine without a GPU" >&2 ;;
esac
[ "$status" = 2 ]
