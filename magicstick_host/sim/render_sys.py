"""Render /sys and /dev: PCI devices, DRM, KFD topology, modules, DMI and the cgroup tree."""

from __future__ import annotations

from magicstick_host.sim.entries import Tree
from magicstick_host.sim.model import TTM_MODULES, Host, PciDevice, Uma

PCI_ROOT = "sys/devices/pci0000:00"
DRM_MAJOR = 226
MIB = 1024 * 1024


def ttm_pages(host: Host) -> int | None:
    """The active TTM pages_limit: the module's parameter, or the kernel default."""
    for mod in host.modules:
        if mod.name in TTM_MODULES:
            value = mod.parameters.get("pages_limit")
            return int(value) if value is not None else host.default_ttm_pages()
    return None


def render_sys(host: Host, tree: Tree) -> None:
    for dev in host.pci:
        _pci_device(host, dev, tree)
    _modules(host, tree)
    _kfd(host, tree)
    for key, value in host.dmi.items():
        tree.line(f"sys/class/dmi/id/{key}", value)
    tree.file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n")
    for path, value in host.cgroup_memory_max.items():
        tree.line(f"sys/fs/cgroup/{path.strip('/')}/memory.max", value)
    if host.dev_kfd:
        tree.file("dev/kfd", "")


def _uevent(dev: PciDevice) -> str:
    lines = [f"DRIVER={dev.driver}"] if dev.driver else []
    lines += [
        f"PCI_CLASS={int(dev.pci_class, 16):X}",
        f"PCI_ID={dev.vendor.upper()}:{dev.device.upper()}",
        f"PCI_SUBSYS_ID={dev.subsystem_vendor.upper()}:{dev.subsystem_device.upper()}",
        f"PCI_SLOT_NAME={dev.address}",
        f"MODALIAS={_modalias(dev)}",
    ]
    return "\n".join(lines) + "\n"


def _modalias(dev: PciDevice) -> str:
    cls = dev.pci_class
    return (
        f"pci:v0000{dev.vendor.upper()}d0000{dev.device.upper()}"
        f"sv0000{dev.subsystem_vendor.upper()}sd0000{dev.subsystem_device.upper()}"
        f"bc{cls[0:2].upper()}sc{cls[2:4].upper()}i{cls[4:6].upper()}"
    )


def _pci_device(host: Host, dev: PciDevice, tree: Tree) -> None:
    base = f"{PCI_ROOT}/{dev.address}"
    attrs: dict[str, str] = {
        "vendor": f"0x{dev.vendor}",
        "device": f"0x{dev.device}",
        "subsystem_vendor": f"0x{dev.subsystem_vendor}",
        "subsystem_device": f"0x{dev.subsystem_device}",
        "revision": f"0x{dev.revision}",
        "class": f"0x{dev.pci_class}",
        "enable": "1" if dev.driver else "0",
        "irq": str(dev.irq),
        "numa_node": "-1",
        "local_cpulist": f"0-{host.cpu.threads - 1}",
        "power_state": "D0",
        "modalias": _modalias(dev),
    }
    if dev.is_vga:
        attrs["boot_vga"] = "1" if dev.boot_vga else "0"
    for name, value in attrs.items():
        if name not in dev.missing:
            tree.line(f"{base}/{name}", value)
    tree.file(f"{base}/uevent", _uevent(dev))
    tree.link(f"sys/bus/pci/devices/{dev.address}", f"../../../devices/pci0000:00/{dev.address}")
    if dev.driver is None:
        return
    tree.link(f"{base}/driver", f"../../../bus/pci/drivers/{dev.driver}")
    drv = f"sys/bus/pci/drivers/{dev.driver}"
    tree.link(f"{drv}/{dev.address}", f"../../../../devices/pci0000:00/{dev.address}")
    tree.file(f"{drv}/bind", "")
    tree.file(f"{drv}/unbind", "")
    if host.module(dev.driver) is not None:
        tree.link(f"{drv}/module", f"../../../../module/{dev.driver}")
    _drm_children(dev, base, tree)
    if dev.driver == "amdgpu":
        _amdgpu_attrs(host, dev, base, tree)
    if dev.driver == "nvidia":
        minor = sum(1 for d in host.pci if d.driver == "nvidia" and d.address < dev.address)
        tree.file(f"dev/nvidia{minor}", "")
        for name in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"):
            tree.file(f"dev/{name}", "")


def _drm_children(dev: PciDevice, base: str, tree: Tree) -> None:
    for node in dev.cards + dev.renders:
        minor = int(node.removeprefix("card").removeprefix("renderD"))
        path = f"{base}/drm/{node}"
        tree.line(f"{path}/dev", f"{DRM_MAJOR}:{minor}")
        tree.file(f"{path}/uevent", f"MAJOR={DRM_MAJOR}\nMINOR={minor}\nDEVNAME=dri/{node}\n")
        tree.link(f"{path}/device", f"../../../{dev.address}")
        tree.link(f"sys/class/drm/{node}", f"../../devices/pci0000:00/{dev.address}/drm/{node}")
        tree.file(f"dev/dri/{node}", "")
    for card in dev.cards:
        for conn in dev.connectors:
            path = f"{base}/drm/{card}/{card}-{conn}"
            tree.line(f"{path}/status", "disconnected")
            tree.line(f"{path}/enabled", "disabled")
            tree.link(f"{path}/device", f"../../{card}")
            tree.link(
                f"sys/class/drm/{card}-{conn}",
                f"../../devices/pci0000:00/{dev.address}/drm/{card}/{card}-{conn}",
            )


def _amdgpu_attrs(host: Host, dev: PciDevice, base: str, tree: Tree) -> None:
    if dev.vram_mib is not None:
        vram = dev.vram_mib * MIB
        tree.line(f"{base}/mem_info_vram_total", vram)
        tree.line(f"{base}/mem_info_vis_vram_total", vram)
        tree.line(f"{base}/mem_info_vram_used", min(vram, 190 * MIB))
        pages = ttm_pages(host) or host.default_ttm_pages()
        gtt = pages * 4096
        if dev.integrated:  # newer kernels cap GTT at MemTotal on APUs
            gtt = min(gtt, host.mem_total_kib() * 1024)
        tree.line(f"{base}/mem_info_gtt_total", gtt)
        tree.line(f"{base}/mem_info_gtt_used", dev.gtt_used_bytes)
    if dev.uma is not None:
        tree.file(f"{base}/uma/carveout_options", render_carveout_options(dev.uma))
        tree.line(f"{base}/uma/carveout", dev.uma.selected)


def render_carveout_options(uma: Uma) -> str:
    lines = []
    for opt in uma.options:
        mib = opt.size_mib
        size = f"{mib // 1024} GB" if mib % 1024 == 0 else f"{mib} MB"
        lines.append(f"{opt.index}: {opt.name} ({size})")
    return "\n".join(lines) + "\n"


def _modules(host: Host, tree: Tree) -> None:
    for mod in host.modules:
        base = f"sys/module/{mod.name}"
        tree.line(f"{base}/initstate", "live")
        tree.line(f"{base}/refcnt", len(mod.holders))
        params = dict(mod.parameters)
        if mod.name in TTM_MODULES:
            default = str(host.default_ttm_pages())
            params.setdefault("pages_limit", default)
            params.setdefault("page_pool_size", default)
            params.setdefault("dma32_pages_limit", "524288")
        for key, value in params.items():
            tree.line(f"{base}/parameters/{key}", value)
        if not mod.holders:
            tree.dir(f"{base}/holders")
        for holder in mod.holders:
            tree.link(f"{base}/holders/{holder}", f"../../{holder}")
        if mod.version is not None:
            tree.line(f"{base}/version", mod.version)


def _kfd(host: Host, tree: Tree) -> None:
    if not host.kfd_nodes:
        return
    top = "sys/class/kfd/kfd/topology"
    tree.line(f"{top}/generation_id", 1)
    tree.file(f"{top}/system_properties", "platform_oem 0\nplatform_id 0\nplatform_rev 0\n")
    for node in host.kfd_nodes:
        base = f"{top}/nodes/{node.node_id}"
        text = "".join(f"{k} {v}\n" for k, v in node.properties.items())
        tree.file(f"{base}/properties", text)
        tree.line(f"{base}/gpu_id", node.gpu_id)
        tree.line(f"{base}/name", node.name)
