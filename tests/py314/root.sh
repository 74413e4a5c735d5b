#!/usr/bin/env bash
# The suite under Debian's Python 3.14 (issue #26): a Debian unstable root made with debootstrap
# from Debian's archive, its python3 and libraries from Debian's packages (the nearest thing here
# to Ubuntu 26.04's archive), cached outside the repository keyed by its inputs:
#
#     ${MAGICSTICK_CACHE_DIR:-$HOME/.cache/magicstick-host}/py314-root/<key>/
#
# <key> is the sha256 of the suite, the archive, the package list and this script. A root is built
# in <key>.tmp.<pid> and renamed to <key> only once complete, under a lock beside it, so a
# half-built root is never taken for a built one and concurrent runs build once.
#
#     tests/py314/root.sh build            build if needed, print the root's path
#     tests/py314/root.sh run CMD [ARG..]  run CMD in the root, the repo at its own path
#
# `run` works in a private mount namespace (unshare --mount): /proc, /dev, /sys, /tmp, the repo
# and the test apiserver's cache are bind-mounted into the root for the command only, and vanish
# with the namespace however the command ends (failure, SIGINT, SIGKILL); the cached root is
# never left with mounts in it. Needs root, debootstrap and unshare (util-linux).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SUITE="${PY314_SUITE:-unstable}"
# Debian's archive (debootstrap's own default)
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES_FILE="$HERE/packages.txt"
CACHE="${MAGICSTICK_CACHE_DIR:-$HOME/.cache/magicstick-host}"
ROOTS="$CACHE/py314-root"
PRUNE_DAYS=14

log() { echo "[py314-root] $*" >&2; }

packages() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$PACKAGES_FILE" | tr -s ' \t' '\n' | sed '/^$/d'; }

cache_key() {
  { printf 'suite=%s\0mirror=%s\0' "$SUITE" "$MIRROR"; packages | LC_ALL=C sort; printf '\0';
    cat "${BASH_SOURCE[0]}"; } | sha256sum | cut -d' ' -f1
}

need_root() {
  [ "$(id -u)" = 0 ] || { log "needs root (debootstrap, chroot, mount namespaces)"; exit 1; }
  command -v unshare >/dev/null || { log "unshare (util-linux) is missing"; exit 1; }
}

# in_root ROOT [BIND_SRC:BIND_DST ...] -- CMD...: CMD chrooted in ROOT inside a private mount
# namespace with /proc, /dev, /sys, /tmp and the given binds; all of them die with the namespace.
in_root() {
  local root="$1"; shift
  local binds=()
  while [ "$1" != "--" ]; do binds+=("$1"); shift; done
  shift
  unshare --mount --propagation private -- /bin/bash -euc '
    root="$1"; shift; n="$1"; shift
    # the root a mount point of its own: `ip -n NS` remounts / as a slave, refused otherwise
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount --rbind /sys "$root/sys"
    mount --bind /tmp "$root/tmp"
    for ((i = 0; i < n; i++)); do
      src="${1%%:*}"; dst="$root${1#*:}"; shift
      mkdir -p "$dst"; mount --bind "$src" "$dst"
    done
    exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" ${CI:+CI=$CI} "$@"
  ' in_root "$root" "${#binds[@]}" "${binds[@]}" "$@"
}

build() {
  need_root
  command -v debootstrap >/dev/null || { log "debootstrap is missing (make py314-root installs it)"; exit 1; }
  local key target lock
  key="$(cache_key)"
  target="$ROOTS/$key"
  if [ -x "$target/usr/bin/python3" ]; then
    touch "$target"  # "recently used", for pruning
    echo "$target"; return
  fi
  mkdir -p "$ROOTS"
  lock="$ROOTS/$key.lock"
  exec 9>"$lock"
  if ! flock -n 9; then log "another process is building; waiting for the lock $lock"; flock 9; fi
  if [ -x "$target/usr/bin/python3" ]; then log "another process built it"; echo "$target"; return; fi
  local started tmp
  started=$(date +%s)
  tmp="$ROOTS/$key.tmp.$$"
  # what a killed build left (we hold the lock: nobody else builds this key)
  rm -rf "$ROOTS/$key".tmp.*
  trap 'rm -rf "$tmp"' EXIT
  log "building a Debian $SUITE root into $target (debootstrap --variant=minbase, then apt-get)"
  debootstrap --variant=minbase "$SUITE" "$tmp" "$MIRROR" >"$tmp.log" 2>&1 \
    || { tail -n 40 "$tmp.log" >&2; rm -f "$tmp.log"; log "debootstrap failed"; exit 1; }
  rm -f "$tmp.log"
  # apt inside the root resolves the dependencies (debootstrap's --include resolver does not
  # follow virtual packages and alternatives)
  # shellcheck disable=SC2046
  in_root "$tmp" -- /bin/sh -ec '
    export DEBIAN_FRONTEND=noninteractive
    # the archive reached here can be a fixed copy whose Release has passed its Valid-Until
    # (apt refuses it then); its signatures are still checked
    echo "Acquire::Check-Valid-Until \"false\";" >/etc/apt/apt.conf.d/99py314-root
    apt-get update -q
    apt-get install -y -q --no-install-recommends "$@"
    apt-get clean
    rm -rf /var/lib/apt/lists/*
  ' install $(packages) >&2 || { log "installing the packages in the root failed"; exit 1; }
  in_root "$tmp" -- python3 -c 'import sys; assert sys.version_info[:2] == (3, 14), sys.version' \
    || { log "the root's python3 is not 3.14"; exit 1; }
  mv -T "$tmp" "$target"
  trap - EXIT
  log "built in $(( $(date +%s) - started )) s: $(in_root "$target" -- python3 --version)"
  # remove the roots of other inputs that nobody used for two weeks
  find "$ROOTS" -mindepth 1 -maxdepth 1 -type d ! -name "$key" ! -name '*.tmp.*' \
    -mtime +"$PRUNE_DAYS" -print0 | while IFS= read -r -d '' old; do
      log "removing an unused cached root $old"; rm -rf "$old" "$old.lock"; done
  echo "$target"
}

run() {
  need_root
  local root
  root="$(build)"
  mkdir -p "$CACHE/kubeserver"
  # the repo at its own path, and the test apiserver's cache (tests/kubeserver/build.py) where
  # the suite looks for it: the Go static binary runs inside the root, on its loopback
  in_root "$root" "$REPO:$REPO" "$CACHE/kubeserver:$CACHE/kubeserver" -- /bin/sh -c \
    'cd "$1" && shift && exec "$@"' run "$REPO" \
    env MAGICSTICK_CACHE_DIR="$CACHE" PYTHONPATH="$REPO" PYTHONPYCACHEPREFIX=/tmp/py314-pycache \
    "$@"
}

case "${1:-}" in
  build) build ;;
  key) cache_key ;;
  run) shift; [ $# -gt 0 ] || { log "usage: $0 run CMD [ARG...]"; exit 2; }; run "$@" ;;
  *) echo "usage: $0 build | key | run CMD [ARG...]" >&2; exit 2 ;;
esac
