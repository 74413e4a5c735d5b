"""KFD (ROCm compute) topology nodes and /dev/kfd."""

from __future__ import annotations

from magicstick_host.collect.reader import Reader
from magicstick_host.domain.evidence import KfdNode
from magicstick_host.domain.parsers.kfd import parse_kfd_properties

KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"


def collect_kfd_nodes(r: Reader) -> tuple[KfdNode, ...]:
    # no topology at all means amdgpu (or its KFD part) is not loaded: a fact, not unknown
    names = r.list_dir(KFD_NODES, "kfd_nodes", optional=True)
    if names is None:
        return ()
    nodes: list[KfdNode] = []
    for name in names:
        if not (name.isascii() and name.isdigit() and len(name) <= 6):
            r.unknown("kfd_nodes", f"{KFD_NODES}/{name}", "not a node number")
            continue
        node_id = int(name)
        path = f"{KFD_NODES}/{name}/properties"
        field = f"kfd_nodes.{node_id}"
        props = r.parsed(path, field, parse_kfd_properties)
        gfx = minor = None
        if props is not None:
            gfx, minor = props.gfx_target_version, props.drm_render_minor
            if gfx is None or minor is None:
                r.unknown(field, path, "no gfx_target_version or drm_render_minor")
        nodes.append(KfdNode(node_id=node_id, gfx_target_version=gfx, drm_render_minor=minor))
    return tuple(sorted(nodes, key=lambda node: node.node_id))


def collect_dev_kfd(r: Reader) -> bool:
    return r.exists("/dev/kfd", "dev_kfd", otherwise=False)
