#!/usr/bin/env bash
# The appliance VM's disk image (shared/design/appliance-vm.md): Debian trixie from Debian's
# archive by debootstrap, a partitioned raw disk with GRUB for BIOS, the rig's overlay
# (tests/vm/guest/) and the rig's own signed package repository. Cached outside the repository,
# keyed by its inputs:
#
#     ${MAGICSTICK_CACHE_DIR:-$HOME/.cache/magicstick-host}/vm-image/<key>/
#         disk.raw        the image (never written after the build: every VM runs on a qcow2
#                         overlay of its own)
#         rig_key         the ssh key the `guest` command logs in with (root, 0600)
#         known_hosts     the guest's host key, as HostKeyAlias "magicstick-vm"
#         repo-signing-key.asc   the repository's throwaway signing key (secret; the scenarios
#                         sign variants of the repository with it)
#         image.json      what was built, from what, in how long
#
# <key> is the sha256 of the suite, the archive, the package list, this script and every file of
# the overlay. The image is built in <key>.tmp.<pid> and renamed to <key> only once complete,
# under a lock beside it: a half-built image is never taken for a built one.
#
#     tests/vm/image.sh build    build if needed, print the image's directory
#     tests/vm/image.sh key      print the key of the current inputs
#
# Needs root (debootstrap, chroot, mount namespaces), debootstrap, sfdisk, mke2fs, gpg,
# apt-ftparchive and ssh-keygen: `make vm-tools` installs them.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SUITE=trixie
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES_FILE="$HERE/packages.txt"
OVERLAY="$HERE/guest"
CACHE="${MAGICSTICK_CACHE_DIR:-$HOME/.cache/magicstick-host}"
IMAGES="$CACHE/vm-image"
HOSTNAME_=magicstick-vm
DISK_SIZE_MIB=6144
PRUNE_DAYS=14

log() { echo "[vm-image] $*" >&2; }
die() { log "$*"; exit 1; }

packages() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$PACKAGES_FILE" | tr -s ' \t' '\n' | sed '/^$/d'; }

cache_key() {
  { printf 'suite=%s\0mirror=%s\0size=%s\0' "$SUITE" "$MIRROR" "$DISK_SIZE_MIB"
    packages | LC_ALL=C sort; printf '\0'
    cat "${BASH_SOURCE[0]}"
    (cd "$OVERLAY" && find . \( -type f -o -type l \) -print0 | LC_ALL=C sort -z \
       | xargs -0 -r stat -c '%n %a %F' && find . -type f -print0 | LC_ALL=C sort -z \
       | xargs -0 -r sha256sum)
  } | sha256sum | cut -d' ' -f1
}

need_tools() {
  [ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mount namespaces); run it as root"
  local missing="" t
  for t in debootstrap unshare sfdisk mke2fs gpg apt-ftparchive ssh-keygen; do
    command -v "$t" >/dev/null || missing="$missing $t"
  done
  [ -z "$missing" ] || die "missing:$missing (make vm-tools installs them)"
}

# in_root ROOT CMD...: CMD chrooted in ROOT, in a private mount namespace with /proc, /dev and
# /sys; the mounts die with the namespace however the command ends.
in_root() {
  local root="$1"; shift
  unshare --mount --propagation private -- /bin/bash -euc '
    root="$1"; shift
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount --rbind /sys "$root/sys"
    exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
  ' in_root "$root" "$@"
}

# the rig's package repository: a flat repository at /srv/rig-repo, signed with a throwaway key
# made for this image, trusted in the guest by signed-by= (apt refuses it unsigned or signed by
# another key)
make_repo() {
  local tmp="$1" root="$1/root" repo="$1/root/srv/rig-repo"
  # a short home: gpg-agent's socket path must fit in a sockaddr_un
  GNUPGHOME="$(mktemp -d /tmp/rig-gpg.XXXXXX)"
  export GNUPGHOME
  gpg --batch --quiet --passphrase '' \
    --quick-gen-key 'magicstick rig archive, throwaway <rig@invalid>' ed25519 sign never
  gpg --batch --export >"$root/usr/share/keyrings/magicstick-rig-archive.gpg"
  chmod 0644 "$root/usr/share/keyrings/magicstick-rig-archive.gpg"
  (umask 077 && gpg --batch --armor --export-secret-keys >"$tmp/repo-signing-key.asc")
  mkdir -p "$repo"
  sign_repo "$repo"
  gpgconf --kill gpg-agent
  rm -rf "$GNUPGHOME"
  unset GNUPGHOME
}

sign_repo() {
  local repo="$1"
  (cd "$repo" && apt-ftparchive packages . >Packages \
    && apt-ftparchive -o APT::FTPArchive::Release::Origin=magicstick-rig \
         -o APT::FTPArchive::Release::Label=magicstick-rig release . >Release \
    && rm -f InRelease Release.gpg \
    && gpg --batch --quiet --clearsign -o InRelease Release \
    && gpg --batch --quiet -abs -o Release.gpg Release)
}

build() {
  need_tools
  local key target lock
  key="$(cache_key)"
  target="$IMAGES/$key"
  if [ -f "$target/image.json" ]; then
    touch "$target"  # "recently used", for pruning
    echo "$target"; return
  fi
  mkdir -p "$IMAGES"
  lock="$IMAGES/$key.lock"
  exec 9>"$lock"
  if ! flock -n 9; then log "another process is building; waiting for the lock $lock"; flock 9; fi
  if [ -f "$target/image.json" ]; then log "another process built it"; echo "$target"; return; fi
  local started tmp root
  started=$(date +%s)
  tmp="$IMAGES/$key.tmp.$$"
  root="$tmp/root"
  # what a killed build left (we hold the lock: nobody else builds this key)
  rm -rf "$IMAGES/$key".tmp.*
  BUILD_TMP="$tmp"
  trap 'rm -rf "$BUILD_TMP"' EXIT
  mkdir -p "$tmp"
  log "building the appliance VM image (Debian $SUITE) into $target"
  debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$tmp/debootstrap.log" 2>&1 \
    || { tail -n 40 "$tmp/debootstrap.log" >&2; die "debootstrap failed"; }
  log "debootstrap done in $(( $(date +%s) - started )) s; installing the packages"
  # the overlay first, but for the package source and the OS identity (below): the initramfs
  # settings must be there before the kernel's postinst builds its initramfs
  (cd "$OVERLAY" && tar --exclude=./etc/apt --exclude=./etc/os-release -cf - .) \
    | tar -C "$root" --no-same-owner -xf -
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 0755 "$root/usr/sbin/policy-rc.d"
  # shellcheck disable=SC2046
  in_root "$root" /bin/sh -ec '
    # the archive reached here can be a fixed copy whose Release has passed its Valid-Until
    # (apt refuses it then); its signatures are still checked
    echo "Acquire::Check-Valid-Until \"false\";" >/etc/apt/apt.conf.d/99rig-build
    apt-get update -q
    apt-get install -y -q --no-install-recommends "$@"
    apt-get clean
  ' install $(packages) >"$tmp/apt.log" 2>&1 \
    || { tail -n 40 "$tmp/apt.log" >&2; die "installing the packages in the image failed"; }
  rm -f "$root/usr/sbin/policy-rc.d" "$root/etc/apt/apt.conf.d/99rig-build" \
    "$root/etc/apt/sources.list" "$root/etc/apt/sources.list.d/debian.sources"
  rm -rf "$root"/var/lib/apt/lists/*
  log "packages installed ($(( $(date +%s) - started )) s); configuring"

  # identity, mounts, consoles
  echo "$HOSTNAME_" >"$root/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$HOSTNAME_" >"$root/etc/hosts"
  echo '/dev/vda1 / ext4 errors=remount-ro 0 1' >"$root/etc/fstab"
  # an empty machine-id would make every boot of a fresh disk a "first boot" (preset-all)
  od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$root/etc/machine-id"; echo >>"$root/etc/machine-id"
  mkdir -p "$root/var/log/journal"
  # the getty on the serial console hangs up the console the boot writes to; apt's timers would
  # take the dpkg lock at random (the busy-package-manager scenario takes it on purpose)
  local unit
  for unit in serial-getty@ttyS0.service getty@tty1.service apt-daily.timer \
              apt-daily-upgrade.timer; do
    ln -sf /dev/null "$root/etc/systemd/system/$unit"
  done
  in_root "$root" systemctl enable -q systemd-networkd.service rig-apiserver.socket \
    rig-kubelet.service ssh.service >"$tmp/enable.log" 2>&1 \
    || { cat "$tmp/enable.log" >&2; die "enabling the guest's units failed"; }

  # the rig's way in: root by the rig's own key, the guest's host key pinned
  ssh-keygen -q -t ed25519 -N '' -C magicstick-rig -f "$tmp/rig_key"
  install -d -m 0700 "$root/root/.ssh"
  install -m 0600 "$tmp/rig_key.pub" "$root/root/.ssh/authorized_keys"
  echo "$HOSTNAME_ $(cut -d' ' -f1,2 "$root/etc/ssh/ssh_host_ed25519_key.pub")" >"$tmp/known_hosts"

  # the package source and the OS identity stand-in (Ubuntu 26.04; see the README)
  (cd "$OVERLAY" && tar -cf - ./etc/apt ./etc/os-release) | tar -C "$root" --no-same-owner -xf -
  rm -f "$root/etc/os-release.dpkg-dist"
  make_repo "$tmp"

  # GRUB for BIOS, written as grub-install would: the guest's own modules in /boot/grub, its
  # core.img after the MBR, boot.img's code in the MBR. A kernel installed later runs update-grub
  # (grub2-common's kernel hook), which replaces this first grub.cfg with a generated one.
  local kver
  kver="$(basename "$(ls -d "$root"/lib/modules/* | sort -V | tail -n1)")"
  mkdir -p "$root/boot/grub/i386-pc"
  cp "$root"/usr/lib/grub/i386-pc/*.mod "$root"/usr/lib/grub/i386-pc/*.lst "$root/boot/grub/i386-pc/"
  in_root "$root" grub-mkimage -O i386-pc -o /boot/grub/i386-pc/core.img \
    -p '(hd0,msdos1)/boot/grub' biosdisk part_msdos ext2
  cat >"$root/boot/grub/grub.cfg" <<GRUB
# the image's first grub.cfg (tests/vm/image.sh); update-grub replaces it
set default=0
set timeout=0
serial --unit=0 --speed=115200
terminal_input serial
terminal_output serial
insmod part_msdos
insmod ext2
set root=(hd0,msdos1)
menuentry 'Ubuntu (appliance VM), Linux $kver' {
  linux /boot/vmlinuz-$kver root=/dev/vda1 ro console=ttyS0,115200n8 net.ifnames=0
  initrd /boot/initrd.img-$kver
}
GRUB

  # the disk: one bootable partition from 1 MiB, the root copied into its new ext4
  local disk="$tmp/disk.raw"
  truncate -s "${DISK_SIZE_MIB}M" "$disk"
  echo 'start=2048, type=83, bootable' | sfdisk -q "$disk"
  mke2fs -q -F -t ext4 -L rigroot -E offset=1048576 -d "$root" "$disk" \
    "$(( (DISK_SIZE_MIB - 1) * 1024 ))k"
  dd if="$root/usr/lib/grub/i386-pc/boot.img" of="$disk" bs=440 count=1 conv=notrunc status=none
  dd if="$root/boot/grub/i386-pc/core.img" of="$disk" bs=512 seek=1 conv=notrunc status=none
  chmod 0444 "$disk"

  local seconds=$(( $(date +%s) - started ))
  printf '{"key": "%s", "suite": "%s", "kernel": "%s", "hostname": "%s", "builtAt": "%s", "buildSeconds": %s}\n' \
    "$key" "$SUITE" "$kver" "$HOSTNAME_" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$seconds" >"$tmp/image.json"
  rm -rf "$root" "$tmp"/*.log
  mv -T "$tmp" "$target"
  trap - EXIT
  log "built in $seconds s (kernel $kver)"
  # remove the images of other inputs that nobody used for two weeks
  find "$IMAGES" -mindepth 1 -maxdepth 1 -type d ! -name "$key" ! -name '*.tmp.*' \
    -mtime +"$PRUNE_DAYS" -print0 | while IFS= read -r -d '' old; do
      log "removing an unused cached image $old"; rm -rf "$old" "$old.lock"; done
  echo "$target"
}

case "${1:-}" in
  build) build ;;
  key) cache_key ;;
  *) echo "usage: $0 build | key" >&2; exit 2 ;;
esac
