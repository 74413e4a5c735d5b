"""prepare-gpu while another package manager run holds the host (operations.md, "When another
package manager run holds the host"): Preparing waits and says who, for at most 30 minutes; the
plan is computed again before the install; packages that run leaves between states are its
own, not a block. Pure decisions; tests/gpu/test_package_manager_e2e.py runs them through the
tick with a real lock held on a simulated host.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from magicstick_host.domain.cluster import ClusterView
from magicstick_host.domain.convergence.gate import GateFacts, Run, Skip, converge_gate
from magicstick_host.domain.decisions import RunStep, SetPhase, Situation, Wait
from magicstick_host.domain.evidence import Evidence, PackageManagerRun, ServicesInfo
from magicstick_host.domain.limits import DEFAULT_LIMITS
from magicstick_host.domain.operations.decide import decide
from magicstick_host.domain.operations.prepare_gpu import PREPARE_GPU
from magicstick_host.domain.parsers.dpkg_status import Unsettled
from magicstick_host.domain.phase import Phase
from magicstick_host.domain.plan.planner import plan_preparation
from magicstick_host.domain.state import Operation
from magicstick_host.errors import ExitCode
from tests.domain.builders import host, shipped_profiles
from tests.gpu.test_decisions import OTHER_BOOT, PREPARE, op

PLAN_ID = "b" * 64
UNATTENDED = PackageManagerRun("/var/lib/dpkg/lock-frontend", 812, "unattended-upgr")
TO_INSTALL = {**PREPARE, "installDone": False}


def preparing(**kw: Any) -> Operation:
    return op("prepare-gpu", "Preparing", TO_INSTALL, **kw)


def busy(ev: Evidence, run: PackageManagerRun | None = UNATTENDED, known: bool = True,
         unsettled: tuple[Unsettled, ...] = ()) -> Evidence:
    return replace(ev, packages=replace(ev.packages, manager_run=run, manager_run_known=known,
                                        unsettled=unsettled))


def now(ev: Evidence, boottime: float = 110.0, plan_id: str = PLAN_ID) -> Situation:
    return Situation(ev=ev, wall=datetime(2026, 11, 30, 12, tzinfo=UTC), boottime=boottime,
                     limits=DEFAULT_LIMITS, cluster=ClusterView(),
                     capabilities={"plan": {"id": plan_id, "state": "available"}})


def test_while_another_run_holds_the_host_preparing_waits_and_says_who() -> None:
    decision = decide(PREPARE_GPU, preparing(), now(busy(host())))
    assert isinstance(decision, Wait)
    assert decision.message.startswith(
        "Waiting for another package manager run to finish (unattended-upgr, pid 812); nothing "
        "has been installed.")


def test_a_holder_the_kernel_does_not_name_is_said_so() -> None:
    hidden = PackageManagerRun("/var/lib/dpkg/lock", 0, "")
    decision = decide(PREPARE_GPU, preparing(), now(busy(host(), hidden)))
    assert isinstance(decision, Wait)
    assert "a process the kernel does not name, holding /var/lib/dpkg/lock" in decision.message


def test_locks_that_cannot_be_probed_never_mean_free() -> None:
    decision = decide(PREPARE_GPU, preparing(), now(busy(host(), None, known=False)))
    assert isinstance(decision, Wait)
    assert "cannot be told" in decision.message


def test_the_wait_ends_after_30_minutes_with_nothing_installed() -> None:
    op_ = preparing()  # Preparing since CLOCK_BOOTTIME 100 s
    still = decide(PREPARE_GPU, op_, now(busy(host()), boottime=100.0 + 1800.0))
    assert isinstance(still, Wait)
    over = decide(PREPARE_GPU, op_, now(busy(host()), boottime=100.0 + 1800.5))
    assert isinstance(over, SetPhase) and over.phase is Phase.FAILED
    assert over.message.startswith(
        "The package manager stayed busy for 30 minutes; nothing was installed.")


def test_when_the_run_ends_the_same_plan_installs() -> None:
    decision = decide(PREPARE_GPU, preparing(), now(host()))
    assert isinstance(decision, RunStep) and decision.step == "install-packages"


def test_a_run_that_changed_the_plan_fails_the_request_with_nothing_installed() -> None:
    decision = decide(PREPARE_GPU, preparing(), now(host(), plan_id="c" * 64))
    assert isinstance(decision, SetPhase) and decision.phase is Phase.FAILED
    assert "nothing was installed" in decision.message
    assert "Review the new plan" in decision.message


def test_a_restart_before_the_install_interrupts_with_nothing_installed() -> None:
    moved = replace(host(), boot_id=OTHER_BOOT)
    decision = decide(PREPARE_GPU, preparing(), now(moved))
    assert isinstance(decision, SetPhase) and decision.phase is Phase.INTERRUPTED
    assert "nothing was installed" in decision.message


def test_after_the_install_the_wait_is_over() -> None:
    # the install is done: the restart step follows whatever runs now
    done = op("prepare-gpu", "Preparing", PREPARE)
    decision = decide(PREPARE_GPU, done, now(busy(host(boot_kernels=("6.17.0-14-generic",
                                                                      PREPARE["targetKernel"])))))
    assert isinstance(decision, RunStep) and decision.step == "schedule-shutdown"


HALF = (Unsettled("linux-image-7.0.0-31-generic", "amd64", "install ok unpacked"),)


def plan_of(ev: Evidence) -> dict[str, Any]:
    return dict(plan_preparation(ev, shipped_profiles()).to_json())


def test_packages_between_states_while_a_run_holds_the_host_are_that_run_s() -> None:
    assert plan_of(busy(host(), None, unsettled=HALF))["state"] == "blocked"
    plan = plan_of(busy(host(), UNATTENDED, unsettled=HALF))
    assert plan["state"] == "available", plan["message"]
    # the plan says nothing of the run: its id is the same busy or not, so a plan reviewed
    # before the run is still the one the host computes while it runs
    assert plan == plan_of(busy(host(), None))


def test_convergence_skips_a_busy_host_and_says_why() -> None:
    facts = GateFacts(state=None, state_error="", services=ServicesInfo(cloud_init_present=False),
                      manager_run=UNATTENDED)
    skip = converge_gate(facts)
    assert isinstance(skip, Skip) and skip.exit_code is ExitCode.BUSY
    assert skip.reason == "package-manager"
    assert "unattended-upgr, pid 812" in skip.message
    unknown = converge_gate(replace(facts, manager_run=None, manager_run_known=False))
    assert isinstance(unknown, Skip) and unknown.reason == "package-manager"
    assert isinstance(converge_gate(replace(facts, manager_run=None)), Run)
