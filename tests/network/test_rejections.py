"""A network request refused before any effect on the host ends Rejected (issue 24, N9;
network.md, "The request"): a Secret that is missing, of another UID, not immutable, of the
wrong type or labels, not strict base64, or settings that break a rule. The message names the
rule, the Secret the request names is still deleted, and nothing happens on the host (no
netplan file written, the simulator's effects log empty, no timer). Failed is for an effect
that went wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from magicstick_host.domain.network.request import SECRET_NAMESPACE
from tests.harness.world import random_hex
from tests.kubeserver.fixtures import KubeCluster
from tests.network.helpers import CLUSTER_ETH
from tests.network.world import (
    SECRETS,
    STATIC_KEEPING_THE_CLUSTER_ADDRESS,
    NetworkWorld,
    create_network_secret,
    hostop_status,
)

pytestmark = pytest.mark.apiserver

@pytest.fixture
def world(tmp_path: Path, kube: KubeCluster) -> NetworkWorld:
    return NetworkWorld(tmp_path, kube, "network-ethernet-dhcp", CLUSTER_ETH)


status = hostop_status


def rejected_with_nothing_on_the_host(w: NetworkWorld, before: dict[str, bytes]) -> str:
    assert w.drive_network() == "Rejected", status(w)
    # refused as intake refuses: no tick exits "effect failed" (6), nothing was attempted
    assert 6 not in w.exit_codes, w.exit_codes
    message = str(status(w)["message"])
    assert "Nothing was changed" in message or "nothing was changed" in message, message
    assert w.netplan() == before
    assert not (w.root / "etc/netplan/90-magicstick-network.yaml").exists()
    assert w.effects() == []  # no netplan generate or apply, no timer, no scan
    assert not w.timer_armed()
    op = w.state().operation
    assert op is not None and op.phase == "Rejected"
    w.tick()
    assert w.store.load_trial() is None and w.store.read_settings() is None
    return message


# each settings rule of network.md, violated
RULE_VIOLATIONS = [
    ("an unknown field", {**STATIC_KEEPING_THE_CLUSTER_ADDRESS, "mtu": 9000}, "mtu"),
    ("not an interface of this host", {**STATIC_KEEPING_THE_CLUSTER_ADDRESS,
                                       "interface": "eth9"}, "eth9"),
    ("a virtual interface", {**STATIC_KEEPING_THE_CLUSTER_ADDRESS, "interface": "cni0"},
     "cni0"),
    ("an unknown mode", {**STATIC_KEEPING_THE_CLUSTER_ADDRESS, "mode": "ppp"}, "mode"),
    ("a static address without a prefix", {"interface": "enp2s0", "mode": "static",
                                           "address": "10.20.0.33", "gateway": "10.20.0.1",
                                           "dns": [], "metric": 100}, "prefix"),
    ("a gateway outside the subnet", {"interface": "enp2s0", "mode": "static",
                                      "address": "10.20.0.33/24", "gateway": "10.30.0.1",
                                      "dns": [], "metric": 100}, "gateway"),
    ("too many DNS servers", {"interface": "enp2s0", "mode": "static",
                              "address": "10.20.0.33/24", "gateway": "10.20.0.1",
                              "dns": ["1.1.1.1", "1.0.0.1", "8.8.8.8", "8.8.4.4", "9.9.9.9"],
                              "metric": 100}, "dns"),
    ("a metric out of range", {"interface": "enp2s0", "mode": "dhcp", "metric": -1}, "metric"),
    ("moving the cluster address", {**STATIC_KEEPING_THE_CLUSTER_ADDRESS,
                                    "address": "192.168.1.77/24"}, "cluster address"),
    ("a WPA passphrase too short", {"interface": "wlp3s0", "mode": "dhcp", "ssid": "Home",
                                    "security": "wpa-psk", "password": "short",
                                    "hidden": False, "metric": 600}, "passphrase"),
    ("an SSID too long", {"interface": "wlp3s0", "mode": "dhcp", "ssid": "x" * 33,
                          "security": "open", "password": "", "hidden": False,
                          "metric": 600}, "ssid"),
    ("Wi-Fi fields on Ethernet", {"interface": "enp2s0", "mode": "dhcp", "metric": 100,
                                  "ssid": "Home"}, "ssid"),
]


@pytest.mark.parametrize(("name", "settings", "rule"), RULE_VIOLATIONS,
                         ids=[v[0] for v in RULE_VIOLATIONS])
def test_each_settings_rule_rejects_its_violation_before_any_host_change(
    world: NetworkWorld, name: str, settings: dict[str, Any], rule: str
) -> None:
    before = world.netplan()
    request_id = world.request_network(settings)
    message = rejected_with_nothing_on_the_host(world, before)
    assert "rejected" in message and rule.lower() in message.lower(), message
    assert world.secret(request_id) is None  # consumed: a password must not stay behind


REQUEST_LABEL, NODE_LABEL = ("appliance.magicstick.dev/request-id",
                             "appliance.magicstick.dev/network-node")


def make_request(w: NetworkWorld, settings: Any, *, action: str = "configure-network",
                 uid: str | None = None, labels: Any = None, **secret: Any) -> str:
    """As the dashboard, with one thing wrong: `labels(request_id, node_uid)` gives the
    Secret's labels, `uid` the networkRef's UID, `secret` other fields of the Secret."""
    w.tick()
    report = w.report()
    assert report is not None
    request_id = random_hex(32)
    if labels is not None:
        secret["labels"] = labels(request_id, w.node_uid)
    created = create_network_secret(w, request_id, settings, **secret)
    ref = {"name": created["metadata"]["name"], "uid": uid or created["metadata"]["uid"]}
    w.create_request(action, requestId=request_id, planId=report["network"]["id"],
                     networkRef=ref)
    return request_id


SECRET_FAULTS = [
    ("another UID", {"uid": "d6f1a8a0-0000-4000-8000-000000000000"}, False, "another UID"),
    ("another type", {"type": "Opaque"}, True, "does not have the type"),
    ("labelled for another request",
     {"labels": lambda request, node: {REQUEST_LABEL: "0" * 32, NODE_LABEL: node}}, True,
     "labelled for another request"),
    ("labelled for another node",
     {"labels": lambda request, node: {REQUEST_LABEL: request, NODE_LABEL: "other-node"}},
     True, "labelled for another node"),
    ("without the node label", {"labels": lambda request, node: {REQUEST_LABEL: request}},
     True, "labelled for another node"),
    ("mutable", {"immutable": False}, True, "not immutable"),
]


@pytest.mark.parametrize(("name", "fault", "ours", "says"), SECRET_FAULTS,
                         ids=[f[0] for f in SECRET_FAULTS])
def test_a_wrong_secret_is_rejected_with_nothing_applied(
    world: NetworkWorld, name: str, fault: dict[str, Any], ours: bool, says: str
) -> None:
    before = world.netplan()
    request_id = make_request(world, STATIC_KEEPING_THE_CLUSTER_ADDRESS, **fault)
    message = rejected_with_nothing_on_the_host(world, before)
    assert says in message, message
    # the Secret the request names is consumed; one with another UID is not ours to delete
    assert (world.secret(request_id) is None) == ours


def test_a_missing_secret_is_rejected(world: NetworkWorld) -> None:
    before = world.netplan()
    request_id = world.request_network(STATIC_KEEPING_THE_CLUSTER_ADDRESS)
    code, out = world.kube.request("DELETE", f"{SECRETS}/host-network-{request_id}")
    assert code == 200, out
    message = rejected_with_nothing_on_the_host(world, before)
    assert "does not exist" in message, message


def test_settings_that_are_not_strict_base64_are_rejected_and_the_secret_deleted(
    world: NetworkWorld,
) -> None:
    """The apiserver stores Secret data canonically, so the non-canonical base64 comes from
    the transport: the worker's own Kubernetes port answers it (a hostile or broken server)."""
    before = world.netplan()
    request_id = world.request_network(STATIC_KEEPING_THE_CLUSTER_ADDRESS)
    worker = world.worker
    real_get = worker.get_secret

    def get_secret(namespace: str, name: str) -> dict[str, Any] | None:
        secret = real_get(namespace, name)
        if secret is not None and namespace == SECRET_NAMESPACE:
            secret = {**secret, "data": {"settings.json": secret["data"]["settings.json"]
                                         .rstrip("=") + "\n"}}
        return secret

    worker.get_secret = get_secret  # type: ignore[method-assign]
    message = rejected_with_nothing_on_the_host(world, before)
    assert "not valid base64" in message, message
    assert world.secret(request_id) is None


def test_scan_wifi_of_an_interface_that_cannot_scan_is_rejected(world: NetworkWorld) -> None:
    before = world.netplan()
    request_id = world.request_network({"interface": "enp1s0"}, action="scan-wifi")
    message = rejected_with_nothing_on_the_host(world, before)
    assert "enp1s0" in message and "rejected" in message, message
    assert world.secret(request_id) is None


def test_scan_wifi_with_a_wrong_secret_is_rejected(world: NetworkWorld) -> None:
    before = world.netplan()
    request_id = make_request(world, {"interface": "wlp3s0"}, action="scan-wifi",
                              immutable=False)
    message = rejected_with_nothing_on_the_host(world, before)
    assert "not immutable" in message, message
    assert world.secret(request_id) is None
