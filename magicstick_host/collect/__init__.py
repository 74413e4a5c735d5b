"""Evidence collection: read the host through the filesystem port, never fail on its content.

`collect_evidence` is the whole collector. Each area lives in its own small module; all of
them read through one `Reader`, which turns every unreadable or garbage value into an
`Unknown` with the host path and a short reason.
"""

from __future__ import annotations

from collections.abc import Sequence

from magicstick_host.collect.kfd import collect_dev_kfd, collect_kfd_nodes
from magicstick_host.collect.nvidia import collect_nvidia
from magicstick_host.collect.os_kernel import (
    collect_arch,
    collect_boot_id,
    collect_cpu_model,
    collect_dmi,
    collect_kernel,
    collect_os,
)
from magicstick_host.collect.packages import collect_packages
from magicstick_host.collect.pci import collect_pci
from magicstick_host.collect.reader import Reader
from magicstick_host.collect.services import collect_services
from magicstick_host.collect.system_memory import collect_memory
from magicstick_host.collect.ttm import collect_ttm
from magicstick_host.domain.evidence import Evidence
from magicstick_host.domain.network.evidence import NetworkEvidence
from magicstick_host.domain.parsers.cmdline import split_cmdline
from magicstick_host.lite_dataclasses import replace
from magicstick_host.ports.command_memo import CommandMemo, MemoFactory
from magicstick_host.ports.hostfs import HostFS
from magicstick_host.ports.runner import CommandRunner

__all__ = ["collect_evidence"]


def collect_evidence(
    fs: HostFS,
    runner: CommandRunner,
    package_names: Sequence[str],
    memo_for: MemoFactory | None = None,
    *,
    network: bool = True,
) -> Evidence:
    """Everything the planner needs to know about the host, with an Unknown per gap.

    `package_names` are the profile packages whose installed versions matter; the running
    kernel's `linux-image-<release>` is always added. `memo_for(name)`, when given, is where
    a costly parse or command is remembered by its input (the timer's ticks:
    ports/command_memo.py). `network=False` leaves the network unread (None): inspect does not
    report it (the tick's network section needs the Node and the state directory), and reading
    it runs `ip` twice and `netplan get` (0.2 s of CPU).
    """
    memo = memo_for or (lambda name: None)
    r = Reader(fs)
    # read once: both the TTM overrides and cloud-init's disable switch live there
    cmdline = r.parsed("/proc/cmdline", "ttm.overrides", split_cmdline)
    kernel = collect_kernel(r)
    pci = collect_pci(r)
    dmi_vendor, dmi_product = collect_dmi(r)
    evidence = Evidence(
        os=collect_os(r),
        arch=collect_arch(r),
        kernel=kernel,
        boot_id=collect_boot_id(r),
        cpu_model=collect_cpu_model(r),
        dmi_vendor=dmi_vendor,
        dmi_product=dmi_product,
        pci=pci,
        kfd_nodes=collect_kfd_nodes(r),
        dev_kfd=collect_dev_kfd(r),
        memory=collect_memory(r),
        ttm=collect_ttm(r, cmdline),
        packages=collect_packages(r, package_names, kernel.release, memo("dpkg-status.json")),
        nvidia=collect_nvidia(r, runner, pci),
        services=collect_services(r, cmdline),
        network=_network(fs, runner, memo("netplan-get.json")) if network else None,
    )
    # the unknowns are complete only once every area above has been read
    return replace(evidence, unknowns=tuple(r.unknowns))


def collect_gpu_health(fs: HostFS, runner: CommandRunner) -> Evidence:
    """Only the PCI devices and the NVIDIA facts: what `status` shows of the host's health. The
    console view runs no network tools and reads no package database."""
    r = Reader(fs)
    pci = collect_pci(r)
    return Evidence(pci=pci, nvidia=collect_nvidia(r, runner, pci), unknowns=tuple(r.unknowns))


def _network(fs: HostFS, runner: CommandRunner, memo: CommandMemo | None) -> NetworkEvidence:
    from magicstick_host.collect.network import collect_network  # the tick's, not inspect's

    return collect_network(fs, runner, memo)
