#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Prepares the RoCE test bed's guest in a build directory: Debian's kernel package fetched with
# `apt-get download` and unpacked (never installed), its modules.dep, and a busybox initramfs.
# Cached: a second run with the same kernel package does nothing.
#   prepare-kernel.sh OUTDIR SOURCE_DIR
# OUTDIR receives kernel.env (KVER, KROOT, VMLINUZ, INITRD) for run-vm.sh.
# RDMA_QOS_VM_KERNEL_PKG overrides the package (default: what linux-image-amd64 depends on).
set -euo pipefail
out=$1
src=$2
mkdir -p "$out"
out=$(cd "$out" && pwd)

pkg=${RDMA_QOS_VM_KERNEL_PKG:-$(apt-cache depends linux-image-amd64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n1)}
if [ -z "$pkg" ]; then
    echo "prepare-kernel: no kernel package known to apt (apt-cache depends linux-image-amd64);" \
        "run apt-get update" >&2
    exit 1
fi
kver=${pkg#linux-image-}

# The initramfs embeds paths of this build directory and the init script: rebuild it when
# either changes.
stamp="$pkg $(sha256sum "$0" "$src/init" "$src/modprobe" | sha256sum | cut -d' ' -f1) $out"
if [ -f "$out/kernel.env" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
    exit 0
fi

kroot=$out/root
if [ ! -f "$kroot/lib/modules/$kver/modules.dep" ]; then
    rm -rf "$out/dl" "$kroot"
    mkdir -p "$out/dl"
    # apt warns that its _apt user cannot write here; the download itself is fine.
    (cd "$out/dl" && apt-get download -q "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
    deb=$(ls "$out/dl/${pkg}"_*.deb 2>/dev/null | head -n1)
    [ -n "$deb" ] || { echo "prepare-kernel: apt-get download $pkg failed" >&2; exit 1; }
    dpkg-deb -x "$deb" "$kroot"
    depmod -b "$kroot" "$kver"
    rm -rf "$out/dl"
fi

# The initramfs: static busybox, the modules that mount the host's / over virtio-9p (in
# dependency order, as modprobe would load them), our init and the modprobe the kernel calls.
ird=$out/initramfs
rm -rf "$ird"
mkdir -p "$ird"/{bin,sbin,dev,proc,sys,newroot,lib/modules}
cp /bin/busybox "$ird/bin/busybox"
if ldd /bin/busybox >/dev/null 2>&1; then
    echo "prepare-kernel: /bin/busybox is dynamically linked (install busybox-static)" >&2
    exit 1
fi
ln -s busybox "$ird/bin/sh"
: > "$ird/modules.order"
while read -r _ ko _; do
    name=$(basename "$ko")
    grep -qx "$name" "$ird/modules.order" && continue
    cp "$ko" "$ird/lib/modules/$name"
    echo "$name" >> "$ird/modules.order"
done < <(modprobe -d "$kroot" -S "$kver" -a --show-depends virtio_pci 9pnet_virtio 9p | grep '^insmod ')
sed -e "s|@KROOT@|$kroot|g" -e "s|@KVER@|$kver|g" "$src/init" > "$ird/init"
sed -e "s|@KROOT@|$kroot|g" -e "s|@KVER@|$kver|g" "$src/modprobe" > "$ird/sbin/modprobe"
chmod 755 "$ird/init" "$ird/sbin/modprobe"
(cd "$ird" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) > "$out/initrd.img.tmp"
mv "$out/initrd.img.tmp" "$out/initrd.img"

cat > "$out/kernel.env" <<ENV
KVER=$kver
KROOT=$kroot
VMLINUZ=$kroot/boot/vmlinuz-$kver
INITRD=$out/initrd.img
ENV
echo "$stamp" > "$out/stamp"
echo "prepare-kernel: $pkg ready in $out"
