"""Kubeconfig variants against the real apiserver: each way of giving the server, the CA and the
credentials works on the transport that serves it, and each wrong one fails as the taxonomy says.
"""

from __future__ import annotations

import base64
import json
import shutil
import stat
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from magicstick_host.errors import KubeConfigError, KubePermanentError, KubeTemporaryError
from magicstick_host.ports.kube import RealKube
from tests.contract.helpers import hexs
from tests.kubeserver.fixtures import KubeCluster

pytestmark = pytest.mark.apiserver


def b64file(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def kubeconfig(tmp_path: Path, cluster: dict[str, Any], user: dict[str, Any]) -> str:
    doc = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "cfg" / "kubeconfig.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.fixture
def node(kube: KubeCluster) -> dict[str, Any]:
    return kube.create_node("variant-" + hexs(8), boot_id=str(uuid.uuid4()), kernel="6.17.0-1")


def token(kube: KubeCluster) -> str:
    return kube.server.tokens["worker"]


def pki(kube: KubeCluster) -> Path:
    return kube.server.client_pki


def variants(kube: KubeCluster, tmp_path: Path) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    server, ca = kube.server.url, kube.server.ca_file
    cfg_dir = tmp_path / "cfg"
    cfg_dir.mkdir(exist_ok=True)
    shutil.copy(ca, cfg_dir / "ca.crt")
    # no line break at the end: the official client sends it along (the lean one strips it)
    (cfg_dir / "token").write_text(token(kube))
    shutil.copy(pki(kube) / "worker-cert.crt", cfg_dir / "client.crt")
    shutil.copy(pki(kube) / "worker-cert.key", cfg_dir / "client.key")
    return {
        "token, inline CA": (
            {"server": server, "certificate-authority-data": b64file(ca)},
            {"token": token(kube)}),
        "token file and CA file, relative": (
            {"server": server + "/", "certificate-authority": "ca.crt"},
            {"tokenFile": "token"}),
        "client certificate files, relative": (
            {"server": server, "certificate-authority": "ca.crt"},
            {"client-certificate": "client.crt", "client-key": "client.key"}),
        "inline client certificate": (
            {"server": server, "certificate-authority-data": b64file(ca)},
            {"client-certificate-data": b64file(pki(kube) / "worker-cert.crt"),
             "client-key-data": b64file(pki(kube) / "worker-cert.key")}),
        "insecure-skip-tls-verify": (
            {"server": server, "insecure-skip-tls-verify": True},
            {"token": token(kube)}),
        "tls-server-name": (
            {"server": server, "certificate-authority": str(ca),
             "tls-server-name": "kubernetes.default.svc"},
            {"token": token(kube)}),
        # a name to resolve, not an address (the certificate names kubernetes.default.svc)
        "host name and tls-server-name": (
            {"server": server.replace("127.0.0.1", "localhost"),
             "certificate-authority": str(ca), "tls-server-name": "kubernetes.default.svc"},
            {"token": token(kube)}),
    }


VARIANTS = ["token, inline CA", "token file and CA file, relative",
            "client certificate files, relative", "inline client certificate",
            "insecure-skip-tls-verify", "tls-server-name", "host name and tls-server-name"]
# what the official client of both supported versions serves the same way
OFFICIAL = VARIANTS[:5]


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_reads_the_node_on_the_lean_transport(
    kube: KubeCluster, tmp_path: Path, node: dict[str, Any], variant: str
) -> None:
    cluster, user = variants(kube, tmp_path)[variant]
    port = RealKube(kubeconfig(tmp_path, cluster, user), timeout=10)
    assert port.transport_name == "lean"
    assert port.read_node(node["metadata"]["name"])["metadata"]["uid"] == node["metadata"]["uid"]


@pytest.mark.parametrize("variant", OFFICIAL)
def test_each_variant_reads_the_node_on_the_official_client(
    kube: KubeCluster, tmp_path: Path, node: dict[str, Any], variant: str
) -> None:
    cluster, user = variants(kube, tmp_path)[variant]
    port = RealKube(kubeconfig(tmp_path, cluster, user), timeout=10, transport="official")
    assert port.read_node(node["metadata"]["name"])["metadata"]["uid"] == node["metadata"]["uid"]


def test_a_wrong_server_name_or_ca_is_temporary_a_wrong_token_permanent(
    kube: KubeCluster, tmp_path: Path
) -> None:
    server, ca = kube.server.url, str(kube.server.ca_file)
    wrong_name = {"server": server, "certificate-authority": ca, "tls-server-name": "wrong.test"}
    wrong_ca = {"server": server, "certificate-authority": str(pki(kube) / "client-ca.crt")}
    for cluster in (wrong_name, wrong_ca):
        with pytest.raises(KubeTemporaryError, match="CERTIFICATE_VERIFY_FAILED"):
            RealKube(kubeconfig(tmp_path, cluster, {"token": token(kube)})).read_node("x")
    port = RealKube(kubeconfig(tmp_path, {"server": server, "certificate-authority": ca},
                               {"token": "not-a-token"}))
    with pytest.raises(KubePermanentError, match="401"):
        port.read_node("x")


def test_a_certificate_that_does_not_match_its_key_is_bad_input(
    kube: KubeCluster, tmp_path: Path
) -> None:
    user = {"client-certificate-data": b64file(pki(kube) / "admin-cert.crt"),
            "client-key-data": b64file(pki(kube) / "worker-cert.key")}
    port = RealKube(kubeconfig(tmp_path, {"server": kube.server.url,
                                          "certificate-authority": str(kube.server.ca_file)},
                               user))
    with pytest.raises(KubeConfigError) as raised:
        port.read_node("x")
    assert "\n" not in str(raised.value)


@pytest.mark.real_commands  # the official client runs the exec plugin
def test_an_exec_plugin_kubeconfig_is_served_by_the_official_client(
    kube: KubeCluster, tmp_path: Path, node: dict[str, Any]
) -> None:
    credential = {"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                  "status": {"token": token(kube)}}
    plugin = tmp_path / "credential-plugin"
    plugin.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(credential)}\nEOF\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    cluster = {"server": kube.server.url, "certificate-authority": str(kube.server.ca_file)}
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                     "command": str(plugin), "interactiveMode": "Never"}}
    port = RealKube(kubeconfig(tmp_path, cluster, user), timeout=10)
    assert port.transport_name == "official"
    assert port.read_node(node["metadata"]["name"])["metadata"]["uid"] == node["metadata"]["uid"]
    with pytest.raises(KubeConfigError, match="exec"):
        RealKube(kubeconfig(tmp_path, cluster, user), transport="lean").read_node("x")
