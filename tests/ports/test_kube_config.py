"""Reading a kubeconfig: what each transport gets, and one clear line for a malformed file."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host.errors import KubeConfigError
from magicstick_host.ports.kubeconfig import KubeConfig, load_kubeconfig

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
CERT = b"-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"
KEY = b"-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----\n"


def b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def document(cluster: dict[str, Any] | None = None, user: dict[str, Any] | None = None,
             **top: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "default", "cluster": cluster if cluster is not None else {
            "server": "https://127.0.0.1:6443", "certificate-authority-data": b64(CA)}}],
        "users": [{"name": "default", "user": user if user is not None else {"token": "abc"}}],
        "contexts": [{"name": "default", "context": {"cluster": "default", "user": "default"}}],
        "current-context": "default",
    }
    doc.update(top)
    return doc


def write(tmp_path: Path, doc: Any, name: str = "k3s.yaml") -> str:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return str(path)


def test_the_k3s_local_admin_kubeconfig(tmp_path: Path) -> None:
    """What K3s writes to /etc/rancher/k3s/k3s.yaml: inline CA, client certificate and key."""
    text = f"""apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {b64(CA)}
    server: https://127.0.0.1:6443
  name: default
contexts:
- context:
    cluster: default
    user: default
  name: default
current-context: default
kind: Config
preferences: {{}}
users:
- name: default
  user:
    client-certificate-data: {b64(CERT)}
    client-key-data: {b64(KEY)}
"""
    cfg = load_kubeconfig(write(tmp_path, text))
    assert (cfg.scheme, cfg.host, cfg.port, cfg.base_path) == ("https", "127.0.0.1", 6443, "")
    assert cfg.ca_pem == CA and cfg.client_cert_pem == CERT and cfg.client_key_pem == KEY
    assert cfg.token is None and not cfg.insecure and cfg.official_only == ()


def test_file_variants_are_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_text(CA)
    (tmp_path / "pki" / "client.crt").write_bytes(CERT)
    (tmp_path / "pki" / "client.key").write_bytes(KEY)
    (tmp_path / "token").write_text("s3cret\n")
    doc = document(
        {"server": "https://kube.example:8443/prefix/", "certificate-authority": "pki/ca.crt",
         "tls-server-name": "kubernetes"},
        {"client-certificate": "pki/client.crt", "client-key": str(tmp_path / "pki/client.key"),
         "tokenFile": "token"},
    )
    cfg = load_kubeconfig(write(tmp_path, doc))
    assert (cfg.host, cfg.port, cfg.base_path) == ("kube.example", 8443, "/prefix")
    assert cfg.ca_pem == CA and cfg.client_cert_pem == CERT and cfg.client_key_pem == KEY
    assert cfg.token == "s3cret" and cfg.tls_server_name == "kubernetes"


def test_inline_data_wins_over_files_and_a_token_over_a_token_file(tmp_path: Path) -> None:
    doc = document(
        {"server": "https://[::1]:6443", "certificate-authority-data": b64(CA),
         "certificate-authority": "missing.crt"},
        {"token": "inline", "tokenFile": "missing-token"},
    )
    cfg = load_kubeconfig(write(tmp_path, doc))
    assert cfg.host == "::1" and cfg.ca_pem == CA and cfg.token == "inline"


def test_insecure_skip_tls_verify_and_plain_defaults(tmp_path: Path) -> None:
    cfg = load_kubeconfig(write(tmp_path, document(
        {"server": "https://10.1.2.3", "insecure-skip-tls-verify": True}, {})))
    assert cfg.insecure and cfg.ca_pem is None and cfg.port == 443 and cfg.token is None


@pytest.mark.parametrize(("cluster", "user", "needs"), [
    ({}, {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "x"}},
     ["user exec"]),
    ({}, {"auth-provider": {"name": "oidc"}}, ["user auth-provider"]),
    ({}, {"username": "u", "password": "p"}, ["user password", "user username"]),
    ({"proxy-url": "http://proxy:3128"}, {"token": "t"}, ["cluster proxy-url"]),
    ({"something-new": 1}, {"as": "someone"}, ["cluster something-new", "user as"]),
])
def test_what_only_the_official_client_serves_is_named(
    tmp_path: Path, cluster: dict[str, Any], user: dict[str, Any], needs: list[str]
) -> None:
    base = {"server": "https://127.0.0.1:6443"}
    cfg = load_kubeconfig(write(tmp_path, document({**base, **cluster}, user)))
    assert list(cfg.official_only) == needs


MALFORMED = {
    "not YAML": "clusters: [\n  - {name: x\n",
    "not a mapping": "- just\n- a list\n",
    "empty": "",
    "no current context": json.dumps(document(**{"current-context": ""})),
    "a missing context": json.dumps(document(**{"current-context": "other"})),
    "a missing cluster": json.dumps({**document(), "clusters": []}),
    "a missing user": json.dumps({**document(), "users": [{"name": "nobody", "user": {}}]}),
    "no server": json.dumps(document({"certificate-authority-data": b64(CA)})),
    "a port that is not a number": json.dumps(document({"server": "https://127.0.0.1:64x3"})),
    "a port out of range": json.dumps(document({"server": "https://127.0.0.1:99999"})),
    "no host": json.dumps(document({"server": "https://:6443"})),
    "a broken IPv6 literal": json.dumps(document({"server": "https://[::1:6443"})),
    "a space in the host": json.dumps(document({"server": "https://kube example:6443"})),
    "an empty label in the host": json.dumps(document({"server": "https://kube..example:6443"})),
    "a label of 64 characters": json.dumps(document({"server": f"https://{'k' * 64}.example"})),
    "an empty label in tls-server-name": json.dumps(document(
        {"server": "https://h", "tls-server-name": ".kubernetes"})),
    "another scheme": json.dumps(document({"server": "ftp://127.0.0.1:6443"})),
    "a bare host": json.dumps(document({"server": "127.0.0.1:6443"})),
    "CA data that is not base64": json.dumps(document(
        {"server": "https://h", "certificate-authority-data": "not base64!"})),
    "a missing CA file": json.dumps(document(
        {"server": "https://h", "certificate-authority": "nowhere/ca.crt"})),
    "a certificate without its key": json.dumps(document(
        None, {"client-certificate-data": b64(CERT)})),
    "a token with a line break": json.dumps(document(None, {"token": "abc\r\nX-Evil: 1"})),
    "insecure that is not a boolean": json.dumps(document(
        {"server": "https://h", "insecure-skip-tls-verify": "yes"})),
}


@pytest.mark.parametrize("text", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_kubeconfig_is_one_line_of_bad_input(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(KubeConfigError) as raised:
        load_kubeconfig(path)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"cannot load kubeconfig {path}: ")


def test_what_is_not_a_readable_file_is_bad_input_and_never_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer
    huge = tmp_path / "huge.yaml"
    huge.write_text("# " + "x" * (1024 * 1024) + "\n" + yaml.safe_dump(document()))
    for path in (tmp_path, tmp_path / "absent.yaml", fifo, Path("/dev/null"), huge):
        with pytest.raises(KubeConfigError):
            load_kubeconfig(str(path))


@pytest.mark.parametrize("text", ["[" * 50000 + "]" * 50000, "- " * 50000 + "x\n",
                                  "a:\n" + "".join(" " * i + "b:\n" for i in range(1, 200))],
                         ids=["flow", "compact-block", "indented-block"])
def test_deep_nesting_is_bad_input_not_a_crash(tmp_path: Path, text: str) -> None:
    """The C loader's composer recurses in C: PyYAML 6.0.1 (Ubuntu 24.04) segfaulted here."""
    with pytest.raises(KubeConfigError, match="nest"):
        load_kubeconfig(write(tmp_path, text))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["name", "cluster", "user", "context", "server",
                                       "token", "clusters", "users", "contexts",
                                       "current-context", "certificate-authority-data"]),
                      inner, max_size=5),
    max_leaves=20,
)


def load_or_config_error(tmp_path: Path, text: str | bytes) -> KubeConfig | None:
    path = tmp_path / "fuzz.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    try:
        return load_kubeconfig(str(path))
    except KubeConfigError as exc:
        assert "\n" not in str(exc)
        return None


FUZZ = {"deadline": None, "suppress_health_check": [HealthCheck.function_scoped_fixture]}


@settings(max_examples=150, **FUZZ)
@given(st.binary(max_size=200))
def test_any_bytes_load_or_are_one_line_of_bad_input(tmp_path: Path, raw: bytes) -> None:
    load_or_config_error(tmp_path, raw)


@settings(max_examples=200, **FUZZ)
@given(json_values, st.sampled_from(["clusters", "users", "contexts", "current-context"]))
def test_any_document_shape_loads_or_is_one_line_of_bad_input(
    tmp_path: Path, value: Any, where: str
) -> None:
    doc = document()
    doc[where] = value
    load_or_config_error(tmp_path, json.dumps(doc))
    load_or_config_error(tmp_path, json.dumps(value))
