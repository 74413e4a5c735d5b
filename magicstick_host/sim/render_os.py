"""Render /etc, /proc, /boot, /run, /usr and /var: the OS side of a simulated host."""

from __future__ import annotations

import json
import uuid

from magicstick_host.sim.entries import Tree
from magicstick_host.sim.model import Host, Package, boot_id_namespace, kernel_sort_key
from magicstick_host.sim.model_cache import render_mounts

ROOT_UUID_NAMESPACE = uuid.uuid5(boot_id_namespace(), "root-filesystem")
GRUB_HEADER = """\
# If you change this file or any /etc/default/grub.d/*.cfg file,
# run 'update-grub' afterwards to update
# /boot/grub/grub.cfg.
# For full documentation of the options in these files, see:
#   info -f grub -n 'Simple configuration'

GRUB_DEFAULT=0
GRUB_TIMEOUT_STYLE=hidden
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=`( . /etc/os-release; echo ${NAME:-Ubuntu} ) 2>/dev/null || echo Ubuntu`
"""


def render_os(host: Host, tree: Tree) -> None:
    tree.file("etc/os-release", "".join(f"{k}={v}\n" for k, v in host.os_release.items()))
    tree.line("etc/hostname", host.hostname)
    tree.line("etc/machine-id", uuid.uuid5(boot_id_namespace(), host.scenario).hex)
    tree.file(
        "etc/default/grub",
        GRUB_HEADER
        + f'GRUB_CMDLINE_LINUX_DEFAULT="{host.grub_cmdline_linux_default}"\n'
        + f'GRUB_CMDLINE_LINUX="{host.grub_cmdline_linux}"\n',
    )
    for path, text in host.modprobe_files.items():
        tree.file(path, text)
    _proc(host, tree)
    _packages(host, tree)
    _run(host, tree)
    if host.merged_usr:
        for name in ("bin", "sbin", "lib", "lib64"):
            tree.dir(f"usr/{name}")
            tree.link(name, f"usr/{name}")
    if host.cloud_init.installed:
        tree.file("usr/bin/cloud-init", "#!/usr/bin/python3\n")
    if host.gpu_publisher:
        tree.file("usr/local/sbin/magicstick-gpu-publish", "#!/bin/sh\n")


def _proc(host: Host, tree: Tree) -> None:
    k = host.kernel
    tree.line("proc/sys/kernel/osrelease", k.release)
    tree.line("proc/sys/kernel/arch", k.arch)
    tree.line("proc/sys/kernel/ostype", "Linux")
    tree.line("proc/sys/kernel/hostname", host.hostname)
    tree.line("proc/sys/kernel/random/boot_id", host.boot_id)
    if k.version_signature is not None:
        tree.line("proc/version_signature", k.version_signature)
    root = uuid.uuid5(ROOT_UUID_NAMESPACE, host.scenario)
    tree.line("proc/cmdline", f"BOOT_IMAGE=/boot/vmlinuz-{k.release} root=UUID={root} "
              + host.cmdline_args)
    tree.file("proc/meminfo", meminfo(host))
    tree.file("proc/cpuinfo", cpuinfo(host))
    tree.line("proc/self/cgroup", f"0::{host.cgroup_path}")
    render_mounts(host, tree)  # /proc/self/mountinfo (sim/model_cache.py)
    nvidia = host.module("nvidia")
    if nvidia is not None and nvidia.version is not None:
        tree.file(
            "proc/driver/nvidia/version",
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
            f"{nvidia.version}  Release Build  (dvs-builder@U22-I3-AF03-09-1)  "
            "Tue Sep 23 09:26:50 UTC 2025\n"
            "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04) \n",
        )


def meminfo(host: Host) -> str:
    total = host.mem_total_kib()
    rows: list[tuple[str, int]] = [
        ("MemTotal", total),
        ("MemFree", total * 81 // 100),
        ("MemAvailable", total * 92 // 100),
        ("Buffers", 412_316),
        ("Cached", total * 9 // 100),
        ("SwapCached", 0),
        ("Active", total * 4 // 100),
        ("Inactive", total * 7 // 100),
        ("Active(anon)", 1_683_412),
        ("Inactive(anon)", 0),
        ("Active(file)", total * 4 // 100 - 1_683_412),
        ("Inactive(file)", total * 7 // 100),
        ("Unevictable", 31_972),
        ("Mlocked", 27_648),
        ("SwapTotal", 8_388_604),
        ("SwapFree", 8_388_604),
        ("Zswap", 0),
        ("Zswapped", 0),
        ("Dirty", 1_204),
        ("Writeback", 0),
        ("AnonPages", 1_702_336),
        ("Mapped", 873_016),
        ("Shmem", 92_148),
        ("KReclaimable", 398_224),
        ("Slab", 702_596),
        ("SReclaimable", 398_224),
        ("SUnreclaim", 304_372),
        ("KernelStack", 24_352),
        ("PageTables", 31_188),
        ("SecPageTables", 0),
        ("NFS_Unstable", 0),
        ("Bounce", 0),
        ("WritebackTmp", 0),
        ("CommitLimit", total // 2 + 8_388_604),
        ("Committed_AS", 9_134_780),
        ("VmallocTotal", 34_359_738_367),
        ("VmallocUsed", 251_964),
        ("VmallocChunk", 0),
        ("Percpu", 38_400),
        ("HardwareCorrupted", 0),
        ("AnonHugePages", 0),
        ("ShmemHugePages", 0),
        ("ShmemPmdMapped", 0),
        ("FileHugePages", 0),
        ("FilePmdMapped", 0),
        ("Unaccepted", 0),
    ]
    text = "".join(f"{name + ':':<16}{value:>8} kB\n" for name, value in rows)
    for name in ("HugePages_Total", "HugePages_Free", "HugePages_Rsvd", "HugePages_Surp"):
        text += f"{name + ':':<16}{0:>8}\n"
    text += f"{'Hugepagesize:':<16}{2048:>8} kB\n{'Hugetlb:':<16}{0:>8} kB\n"
    text += f"{'DirectMap4k:':<16}{1_034_112:>8} kB\n"
    text += f"{'DirectMap2M:':<16}{total // 3:>8} kB\n"
    return text


def cpuinfo(host: Host) -> str:
    c = host.cpu
    stanzas = []
    for n in range(c.threads):
        core = n % c.cores
        stanzas.append(
            f"processor\t: {n}\n"
            f"vendor_id\t: {c.vendor_id}\n"
            f"cpu family\t: {c.family}\n"
            f"model\t\t: {c.model}\n"
            f"model name\t: {c.model_name}\n"
            f"stepping\t: {c.stepping}\n"
            f"microcode\t: {c.microcode}\n"
            f"cpu MHz\t\t: {c.mhz:.3f}\n"
            f"cache size\t: {c.cache_kb} KB\n"
            "physical id\t: 0\n"
            f"siblings\t: {c.threads}\n"
            f"core id\t\t: {core}\n"
            f"cpu cores\t: {c.cores}\n"
            f"apicid\t\t: {n}\n"
            f"initial apicid\t: {n}\n"
            "fpu\t\t: yes\nfpu_exception\t: yes\ncpuid level\t: 16\nwp\t\t: yes\n"
            f"flags\t\t: {c.flags}\n"
            "bugs\t\t: sysret_ss_attrs spectre_v1 spectre_v2 spec_store_bypass\n"
            f"bogomips\t: {c.bogomips:.2f}\n"
            "clflush size\t: 64\ncache_alignment\t: 64\n"
            f"address sizes\t: {c.address_sizes}\n"
            "power management:\n\n"
        )
    return "".join(stanzas)


def dpkg_stanza(pkg: Package) -> str:
    lines = [f"Package: {pkg.name}", f"Status: {pkg.status}"]
    if pkg.essential:
        lines.append("Essential: yes")
    lines += [
        f"Priority: {pkg.priority}",
        f"Section: {pkg.section}",
        f"Installed-Size: {pkg.installed_size}",
        f"Maintainer: {pkg.maintainer}",
        f"Architecture: {pkg.architecture}",
    ]
    if pkg.multi_arch:
        lines.append(f"Multi-Arch: {pkg.multi_arch}")
    if pkg.source:
        lines.append(f"Source: {pkg.source}")
    lines.append(f"Version: {pkg.version}")
    if pkg.depends:
        lines.append(f"Depends: {pkg.depends}")
    summary, _, body = pkg.description.partition("\n")
    lines.append(f"Description: {summary or pkg.name}")
    lines += [f" {line}" if line else " ." for line in body.splitlines()]
    return "\n".join(lines) + "\n"


def _packages(host: Host, tree: Tree) -> None:
    if host.packages:
        tree.file("var/lib/dpkg/status", "\n".join(dpkg_stanza(p) for p in host.packages))
    kernels = sorted(host.boot_kernels, key=kernel_sort_key)
    for rel in kernels:
        tree.file(f"boot/vmlinuz-{rel}", f"simulated kernel image {rel}\n")
        tree.file(f"boot/initrd.img-{rel}", f"simulated initramfs {rel}\n")
        tree.file(f"boot/config-{rel}", f"CONFIG_LOCALVERSION=\"\"\n# {rel}\n")
        tree.file(f"boot/System.map-{rel}", f"ffffffff81000000 T _stext\n# {rel}\n")
        tree.dir(f"usr/lib/modules/{rel}/kernel")
    if kernels:
        tree.link("boot/vmlinuz", f"vmlinuz-{kernels[-1]}")
        tree.link("boot/initrd.img", f"initrd.img-{kernels[-1]}")
    if len(kernels) > 1:
        tree.link("boot/vmlinuz.old", f"vmlinuz-{kernels[-2]}")
        tree.link("boot/initrd.img.old", f"initrd.img-{kernels[-2]}")


def _run(host: Host, tree: Tree) -> None:
    if host.nvidia_persistenced_socket:
        tree.socket("run/nvidia-persistenced/socket")
        tree.line("run/nvidia-persistenced/nvidia-persistenced.pid", 1234)
    if host.shutdown is not None:
        s = host.shutdown
        tree.file(
            "run/systemd/shutdown/scheduled",
            f"USEC={s.usec}\nWARN_WALL={1 if s.warn_wall else 0}\nMODE={s.mode}\nUID=0\n",
        )
    if host.reboot_required_pkgs is not None:
        tree.file("run/reboot-required", "*** System restart required ***\n")
        tree.file("run/reboot-required.pkgs", "".join(f"{p}\n" for p in host.reboot_required_pkgs))
    ci = host.cloud_init
    if not ci.installed:
        return
    if ci.boot_finished:
        tree.file("var/lib/cloud/instance/boot-finished", "boot finished\n")
    if ci.state == "none":
        return
    errors = ["simulated critical error in stage init"] if ci.state == "error" else []
    status = {"v1": {"datasource": ci.datasource, "stage": None, "errors": errors}}
    if ci.state == "running":
        status["v1"]["stage"] = "modules-config"
    tree.file("run/cloud-init/status.json", json.dumps(status, indent=1, sort_keys=True) + "\n")
    if ci.state in ("done", "error"):
        result = {"v1": {"datasource": ci.datasource, "errors": errors}}
        tree.file("run/cloud-init/result.json", json.dumps(result, indent=1, sort_keys=True) + "\n")
