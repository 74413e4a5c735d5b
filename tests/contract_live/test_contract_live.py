"""`make contract-live` against the suite's own test apiserver, dressed as an administrator's
cluster: a kubeconfig of several contexts (the chosen one not current), unrelated objects in
ai-system and elsewhere, and the HostOperation CRD current, absent or older.

After every run, everything outside the run's namespace is as before: every object of every
listable resource has the resourceVersion it had (the one thing that moves by itself, the
apiserver's own identity lease, is left out). The run's namespace stays Terminating here (this
server has no namespace controller), with nothing in it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.contract.cases import CRD_NAME, CRD_PATH, REPO, hostops, shipped_crd
from tests.contract.dashboard_objects import dashboard_object, dashboard_spec
from tests.contract_live.client import listable_resources, namespace_objects
from tests.contract_live.suite import LABEL, PREFIX
from tests.kubeserver import build
from tests.kubeserver.fixtures import apiserver_unavailable
from tests.kubeserver.harness import KubeServer, StartupError

pytestmark = [pytest.mark.apiserver, pytest.mark.real_commands, pytest.mark.slow]

IDENTITY_LEASE = "apiserver.kubernetes.io/identity"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeServer]:
    try:
        build.ensure_binary()
    except build.GoMissingError as exc:
        apiserver_unavailable(str(exc))
    server = KubeServer(tmp_path_factory.mktemp("contract-live") / "server")
    try:
        server.start()
    except StartupError as exc:
        server.stop()
        pytest.fail(f"the test apiserver did not start:\n{exc}", pytrace=False)
    try:
        unrelated(server)
        yield server
    finally:
        server.stop()


def ok(server: KubeServer, method: str, path: str, body: Any = None, user: str = "admin",
       content_type: str = "application/json") -> Any:
    status, out = server.request(method, path, body, user=user, content_type=content_type)
    assert 200 <= status <= 299, (method, path, status, out)
    return out


def unrelated(server: KubeServer) -> None:
    """What an administrator's cluster has besides: none of it may change."""
    ok(server, "POST", "/api/v1/namespaces",
       {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "someone-else"}})
    for ns in ("someone-else", "default", "ai-system"):
        ok(server, "POST", f"/api/v1/namespaces/{ns}/configmaps",
           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep-me"},
            "data": {"k": "v"}})
    ok(server, "POST", "/api/v1/namespaces/host-management/secrets",
       {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "keep-me"},
        "stringData": {"k": "v"}})
    ok(server, "POST", "/api/v1/nodes",
       {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "appliance-1"}})


def admin_kubeconfig(server: KubeServer, path: Path) -> Path:
    """Several contexts; the appliance's (`default`, K3s's shape) is not the current one."""
    k3s = yaml.safe_load(server.kubeconfig("admin-cert").read_text())
    cluster = k3s["clusters"][0]["cluster"]
    cfg = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "default", "cluster": cluster},
                     {"name": "laptop", "cluster": {**cluster, "server": "https://127.0.0.1:9"}}],
        "users": [{"name": "default", "user": k3s["users"][0]["user"]},
                  {"name": "dashboard", "user": {"token": server.tokens["dashboard"]}}],
        "contexts": [{"name": "default", "context": {"cluster": "default", "user": "default"}},
                     {"name": "dashboard",
                      "context": {"cluster": "default", "user": "dashboard"}},
                     {"name": "rancher-desktop",
                      "context": {"cluster": "laptop", "user": "default"}}],
        "current-context": "dashboard",
    }
    path.write_text(yaml.safe_dump(cfg))
    path.chmod(0o600)
    return path


@pytest.fixture
def kubeconfig(server: KubeServer, tmp_path: Path) -> Path:
    return admin_kubeconfig(server, tmp_path / "config")


def snapshot(server: KubeServer) -> dict[str, str]:
    """(resource, namespace, name) -> resourceVersion of every object the server lists."""
    def get(path: str) -> tuple[int, Any]:
        return server.request("GET", path)

    found: dict[str, str] = {}
    for base, plural, _ in listable_resources(get):
        status, listed = get(f"{base}/{plural}")
        assert status == 200, (base, plural, status)
        for item in listed["items"]:
            meta = item["metadata"]
            if plural == "leases" and IDENTITY_LEASE in (meta.get("labels") or {}):
                continue  # renewed by the apiserver itself every few seconds
            # componentstatuses are computed, with no resourceVersion
            found[f"{base}/{plural}/{meta.get('namespace', '')}/{meta['name']}"] = str(
                meta.get("resourceVersion", ""))
    return found


def outside(snap: dict[str, str], namespace: str) -> dict[str, str]:
    return {k: v for k, v in snap.items()
            if f"/{namespace}/" not in k and not k.endswith(f"/namespaces//{namespace}")}


def set_crd(server: KubeServer, state: str) -> None:
    """The HostOperation CRD `current` (as shipped), `absent`, or `older` (three differences)."""
    path = f"{CRD_PATH}/{CRD_NAME}"
    status, crd = server.request("GET", path)
    wanted = None if state == "absent" else shipped_crd() if state == "current" else older_crd()
    if status == 200 and wanted is not None and crd["spec"] == {
            **wanted["spec"], "conversion": {"strategy": "None"}}:
        return
    if status == 200:
        ok(server, "DELETE", path)
        deadline = time.monotonic() + 60
        while server.request("GET", path)[0] != 404:
            assert time.monotonic() < deadline, "the CRD is not going away"
            time.sleep(0.2)
    if wanted is None:
        return
    ok(server, "POST", CRD_PATH, wanted)
    deadline = time.monotonic() + 60
    while True:
        status, crd = server.request("GET", path)
        conditions = (crd.get("status") or {}).get("conditions") or [] if status == 200 else []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions) and \
                server.request("GET", hostops("ai-system"))[0] == 200:
            break
        assert time.monotonic() < deadline, "the CRD is not Established"
        time.sleep(0.2)
    # someone's request in ai-system, as the dashboard made it
    ok(server, "POST", hostops("ai-system"), dashboard_object(dashboard_spec("reboot")),
       user="dashboard")


def older_crd() -> dict[str, Any]:
    crd = shipped_crd()
    (version,) = crd["spec"]["versions"]
    props = version["schema"]["openAPIV3Schema"]["properties"]
    props["spec"]["x-kubernetes-validations"].pop()  # no rule 12
    props["spec"]["properties"]["nodeName"]["maxLength"] = 63
    del props["status"]["properties"]["phase"]  # an older CRD without a phase
    return crd


def run(kubeconfig: Path | None, *args: str, make: bool = False,
        interrupt: signal.Signals | None = None) -> tuple[int, dict[str, Any] | None, str]:
    """(exit code, the JSON summary or None, stderr) of one run."""
    if make:
        argv = ["make", "--no-print-directory", "-o", ".venv/.installed", "contract-live",
                *args] + ([f"KUBECONFIG={kubeconfig}"] if kubeconfig else [])
    else:
        argv = [sys.executable, "-m", "tests.contract_live", *args] + (
            ["--kubeconfig", str(kubeconfig)] if kubeconfig else [])
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = str(kubeconfig.parent if kubeconfig else REPO)  # no ~/.kube/config of ours
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = ""
    if interrupt is not None:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen += line
            if "created namespace" in line:
                break
        time.sleep(0.5)
        proc.send_signal(interrupt)
    out, err = proc.communicate(timeout=600)
    start = out.find("\n{") + 1 if not out.startswith("{") else 0
    summary = json.loads(out[start:]) if "{" in out else None
    return proc.returncode, summary, seen + err


def left_behind(server: KubeServer, namespace: str) -> list[str]:
    def get(path: str) -> tuple[int, Any]:
        return server.request("GET", path)

    left = []
    status, ns = get(f"/api/v1/namespaces/{namespace}")
    if status == 200:
        if ns["status"]["phase"] != "Terminating":
            left.append(f"namespace {namespace} {ns['status']['phase']}")
        left += [what for what, _, _ in namespace_objects(get, namespace)]
    _, crds = get(f"{CRD_PATH}?labelSelector={LABEL}")
    left += [c["metadata"]["name"] for c in crds["items"]]
    _, namespaces = get("/api/v1/namespaces")
    left += [n["metadata"]["name"] for n in namespaces["items"]
             if n["metadata"]["name"].startswith(PREFIX) and n["status"]["phase"] != "Terminating"]
    return left


def failed(summary: dict[str, Any]) -> dict[str, str]:
    return {c["name"]: c.get("detail", "") for c in summary["checks"] if c["result"] != "passed"}


def assert_clean_run(server: KubeServer, summary: dict[str, Any] | None,
                     before: dict[str, str]) -> dict[str, Any]:
    assert summary is not None
    assert summary["realPowerCommands"] == 0 and summary["realFirmwareWrites"] == 0
    assert summary["nodesModified"] == 0 and summary["processesStarted"] == 0
    assert summary["context"] == "default" and summary["server"] == server.url
    namespace = summary["namespace"]
    assert namespace.startswith(PREFIX) and len(namespace) == len(PREFIX) + 10
    assert outside(snapshot(server), namespace) == outside(before, namespace)
    assert left_behind(server, namespace) == []
    return summary


# -- refused before anything is sent ------------------------------------------------------------


@pytest.mark.parametrize(("args", "says"), [
    ((), "no context named"),
    (("--context", "nope"), "no context 'nope'"),
    (("--context", ""), "no context named"),
])
def test_a_missing_or_unknown_context_is_refused_before_any_request(
    server: KubeServer, kubeconfig: Path, args: tuple[str, ...], says: str
) -> None:
    set_crd(server, "current")
    before = snapshot(server)
    code, summary, err = run(kubeconfig, *args)
    assert code == 2 and summary is None, err
    assert says in err and "nothing was sent" in err
    if "nope" in args:
        assert "(it has: dashboard, default, rancher-desktop)" in err
    assert snapshot(server) == before


def test_make_without_context_is_refused(server: KubeServer, kubeconfig: Path) -> None:
    before = snapshot(server)
    code, summary, err = run(kubeconfig, make=True)
    assert code != 0 and summary is None
    assert "refused: no context named" in err and "usage: make contract-live CONTEXT=" in err
    assert snapshot(server) == before


# -- full runs --------------------------------------------------------------------------------


def test_with_the_current_crd_every_check_passes_and_nothing_else_changes(
    server: KubeServer, kubeconfig: Path
) -> None:
    set_crd(server, "current")
    before = snapshot(server)
    code, summary, err = run(kubeconfig, "CONTEXT=default", make=True)
    assert code == 0, (err[-3000:], summary and failed(summary))
    first = assert_clean_run(server, summary, before)
    assert first["result"] == "passed" and first["failed"] == 0 and first["passed"] > 250
    assert first["crd"].startswith("present: matches")
    assert f"context 'default' of {kubeconfig}" in err and server.url in err
    names = {c["name"] for c in first["checks"]}
    for expected in ("crd/matches-the-contract", "crd/rule12/reboot-with-preview",
                     "crd/immutable/dashboard/reboot-bootId", "status/rejected/phase",
                     "rbac/dashboard/may-not/patch-hostoperations/status",
                     "rbac/dashboard/may-not/patch-nodes",
                     "rbac/worker/may/patch-hostoperations/status",
                     "worker-port/gpu-memory/8-Succeeded", "cleanup/nothing-left-behind"):
        assert expected in names

    # a second run finds nothing left behind (the first run's namespace: Terminating, empty)
    before = snapshot(server)
    code, summary, err = run(kubeconfig, "--context", "default")
    assert code == 0, summary and failed(summary)
    second = assert_clean_run(server, summary, before)
    assert first["namespace"] in err.split("Terminating and empty")[1].splitlines()[0]
    assert second["namespace"] != first["namespace"]


def test_without_the_crd_it_is_installed_for_the_run_and_removed(
    server: KubeServer, kubeconfig: Path
) -> None:
    set_crd(server, "absent")
    before = snapshot(server)
    code, summary, _ = run(kubeconfig, "--context", "default")
    assert code == 0, summary and failed(summary)
    summary = assert_clean_run(server, summary, before)
    assert summary["crd"].startswith("absent: installed")
    assert server.request("GET", f"{CRD_PATH}/{CRD_NAME}")[0] == 404
    set_crd(server, "current")


def test_an_older_crd_is_reported_field_by_field_and_never_replaced(
    server: KubeServer, kubeconfig: Path
) -> None:
    set_crd(server, "older")
    before = snapshot(server)
    code, summary, _ = run(kubeconfig, "--context", "default")
    assert code == 1
    summary = assert_clean_run(server, summary, before)  # the CRD's resourceVersion included
    assert summary["result"] == "failed"
    assert summary["crd"] == ("present: differs from the contract in 3 field(s); reported, "
                              "not replaced")
    bad = failed(summary)
    detail = bad["crd/matches-the-contract"]
    versions = "spec.versions.v1alpha1.schema.openAPIV3Schema.properties"
    assert f"{versions}.spec.properties.nodeName.maxLength: the contract has 253, the cluster " \
           "has 63" in detail
    assert f"{versions}.spec.x-kubernetes-validations[11]: missing" in detail
    assert f"{versions}.status.properties.phase: missing" in detail
    # what the differences break, each named
    assert {"crd/rule12/apply-software-without-preview", "status/rejected/phase",
            "crd/nodeName-admitted/'a'x253"} <= set(bad)
    assert not [n for n in bad if n.startswith(("cleanup/", "rbac/", "setup/"))], bad
    _, crd = server.request("GET", f"{CRD_PATH}/{CRD_NAME}")
    assert crd["spec"]["versions"][0]["schema"] == older_crd()["spec"]["versions"][0]["schema"]
    set_crd(server, "current")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_the_run_and_it_cleans_up(
    server: KubeServer, kubeconfig: Path, sig: signal.Signals
) -> None:
    set_crd(server, "absent")  # the run installs the CRD: it must remove it too
    before = snapshot(server)
    code, summary, err = run(kubeconfig, "--context", "default", interrupt=sig)
    assert code == 128 + sig, err[-2000:]
    assert summary is not None
    assert list(failed(summary)) == ["interrupted"], failed(summary)
    summary = assert_clean_run(server, summary, before)
    assert summary["interrupted"] == sig.name and summary["result"] == "failed"
    assert server.request("GET", f"{CRD_PATH}/{CRD_NAME}")[0] == 404
    set_crd(server, "current")
