#!/bin/bash
# Builds the Debian 13 guest the VM tier boots: systemd 257 with logind and user managers,
# OpenSSH 10's sshd, sudo, polkit 126 (pkexec, pkttyagent), tmux, and fprintd 1.94 with
# libfprint's virtual reader. The product is NOT in the image: the tests install the .deb of the code under test
# into each boot (so a code change needs no new image). images.py calls this and keeps the
# result in a cache keyed on this directory's files; run it by hand only to look at an image.
#
# usage: build.sh OUTDIR [--desktop] [--suite SUITE] [--sources FILE] [--include PKG,PKG...]
#   OUTDIR     a new or empty directory, outside every repository. Gets: disk.img (raw ext4,
#              no partition table: root=LABEL=localauth-vm), vmlinuz, vmlinux (the same kernel
#              uncompressed, when it can be unpacked), initrd.img, ssh/id_ed25519 (the key
#              that logs in as root and as alice), build.log, and built (written last: the
#              image is complete)
#   --desktop  also packages-desktop (GDM 48, GNOME 48); gdm3 runs only when the kernel
#              command line says systemd.unit=graphical.target
#   --suite    the Debian release (default trixie); the sources must name its suites
#   --sources  the guest's apt sources naming SUITE's suites (default: the host's own, deb822
#              or one-line; images.py passes the host's with their suites renamed)
#   --include  more packages (images.py passes the product's Depends here)
# Needs root, mmdebstrap, e2fsprogs (mkfs.ext4 -d), openssh-client (ssh-keygen), python3.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; }
[ $# -ge 1 ] || { usage >&2; exit 2; }
out=$1; shift
desktop=0; suite=trixie; sources=; include=
while [ $# -gt 0 ]; do
  case $1 in
    --desktop) desktop=1; shift ;;
    --suite) suite=$2; shift 2 ;;
    --sources) sources=$2; shift 2 ;;
    --include) include=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$sources" ]; then
  for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    [ -s "$f" ] && { sources=$f; break; }
  done
fi
[ -n "$sources" ] && [ -s "$sources" ] || { echo "build.sh: no apt sources file (--sources FILE)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "build.sh: run as root (mmdebstrap --mode=root, mkfs.ext4 -d)" >&2; exit 1; }
for tool in mmdebstrap mkfs.ext4 ssh-keygen python3; do
  command -v "$tool" >/dev/null || { echo "build.sh: $tool not found (scripts/install-deps)" >&2; exit 1; }
done
mkdir -p "$out"; out=$(cd "$out" && pwd)
[ -z "$(ls -A "$out")" ] || { echo "build.sh: $out is not empty" >&2; exit 1; }
start=$(date +%s)

# The package list: the files' lines without comments, then --include.
pkgs=$(sed 's/#.*//' "$here/packages" $([ $desktop = 1 ] && echo "$here/packages-desktop") \
  | tr -s ' \t\n' '\n' | grep . | paste -sd,)
[ -z "$include" ] || pkgs+=",$include"

mkdir -p "$out/ssh" "$out/tmp"
ssh-keygen -q -t ed25519 -N '' -C localauth-vm -f "$out/ssh/id_ed25519"
cp "$here/setup.sh" "$out/tmp/setup.sh"
cp "$out/ssh/id_ed25519.pub" "$out/tmp/authorized_keys"
# In a PID namespace of its own, with its own /proc: maintainer scripts in the chroot stop
# daemons by executable (polkitd's postinst runs start-stop-daemon --stop --exec
# /usr/lib/polkit-1/polkitd where no systemd runs), and through the host's /proc they would
# stop this machine's own, e.g. the polkitd of every integration test bed running beside.
unshare --pid --fork --kill-child --mount-proc \
mmdebstrap --mode=root --variant=important --format=directory --include="$pkgs" \
  --customize-hook='copy-in '"$out"'/tmp/setup.sh '"$out"'/tmp/authorized_keys /tmp' \
  --customize-hook='chroot "$1" env DESKTOP='"$desktop"' bash /tmp/setup.sh' \
  --customize-hook='rm -f "$1"/tmp/setup.sh "$1"/tmp/authorized_keys' \
  "$suite" "$out/rootfs" "$sources"
rm -rf "$out/tmp"

kver=$(ls "$out"/rootfs/boot/ | sed -n 's/^vmlinuz-//p' | sort -V | tail -1)
[ -n "$kver" ] || { echo "build.sh: no kernel in the image" >&2; exit 1; }
cp "$out/rootfs/boot/vmlinuz-$kver" "$out/vmlinuz"
cp "$out/rootfs/boot/initrd.img-$kver" "$out/initrd.img"
# The uncompressed kernel too, booted by its PVH entry where KVM emulates ring 0 slowly: it
# skips the kernel's own XZ decompression. Optional: boots fall back to vmlinuz.
python3 "$here/unpack-kernel.py" "$out/vmlinuz" "$out/vmlinux" || rm -f "$out/vmlinux"
size=6G; [ $desktop = 1 ] && size=10G
truncate -s "$size" "$out/disk.img"
mkfs.ext4 -q -F -L localauth-vm -d "$out/rootfs" "$out/disk.img"
rm -rf "$out/rootfs"
printf 'suite %s\nkernel %s\ndesktop %s\nseconds %s\n' "$suite" "$kver" "$desktop" \
  "$(( $(date +%s) - start ))" > "$out/built"
echo "build.sh: built $out in $(( $(date +%s) - start )) s"
