"""Scenario 8, first part (appliance-vm.md): power cuts around the restart's side effect.

A cut is qemu killed: whatever the guest had not flushed to its disk is lost, as on a real power
loss (the disk is never opened with cache=unsafe). After `power on`: no step runs twice, nothing
is replayed, no reboot loop, the state and its journal read back, and the outcome is the one
operations.md gives for that point.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.vm.appliance import Appliance, wait_for
from tests.vm.test_2_power import assert_no_second_shutdown

pytestmark = pytest.mark.real_commands


def open_step(appliance: Appliance) -> str:
    """The name of the state file's step that has an intent and no outcome, or ""."""
    op = appliance.state().get("operation") or {}
    steps = op.get("steps") or []
    return str(steps[-1]["name"]) if steps and steps[-1].get("outcome") is None else ""


def history(appliance: Appliance, request_id: str) -> tuple[str, list[str]]:
    """One request as `magicstick-host history --json` reads it from the worker's journal on
    the guest's disk: its outcome and the phases of its transitions."""
    read = json.loads(appliance.sh("magicstick-host history --json"))
    assert read["journalError"] == "" and read["skippedLines"] == 0, read
    for entry in read["operations"]:
        if entry.get("requestId") == request_id:
            return str(entry["outcome"]), [str(t["phase"]) for t in entry["transitions"]]
    raise AssertionError(f"request {request_id} is not in the history: {read}")


@pytest.mark.vm_budget(700)
def test_a_cut_after_the_shutdown_was_scheduled_is_the_restart(appliance: Appliance) -> None:
    before = appliance.boots()
    old = appliance.boot_id()
    request = appliance.request("reboot")
    appliance.wait_phase("RebootScheduled", 180, request)
    assert "MODE=reboot" in appliance.shutdown_scheduled()
    appliance.cut()
    assert appliance.power_state() == "off"

    appliance.power_on()
    new = appliance.wait_boot(old, 300)
    # a new boot after the scheduled shutdown: the restart happened (operations.md, reboot 3)
    status = appliance.wait_phase("Succeeded", 240, request)
    assert status["bootId"] == new
    after = appliance.boots()
    assert after == [*before, new.replace("-", "")]
    assert appliance.state()["operation"]["phase"] == "Succeeded"
    assert_no_second_shutdown(appliance, after)


@pytest.mark.vm_budget(800)
def test_a_cut_between_the_shutdown_intent_and_its_outcome_is_never_replayed(
        appliance: Appliance) -> None:
    before = appliance.boots()
    old = appliance.boot_id()
    # logind frozen: `shutdown` waits on its call to logind, after the worker saved its intent
    appliance.sh("kill -STOP $(pidof systemd-logind)")
    request = appliance.request("reboot")
    wait_for(lambda: open_step(appliance) == "schedule-shutdown", 180,
             "the schedule-shutdown intent in the state file")
    # the intent was fsynced: the power cut right after it must not lose it
    appliance.cut()
    appliance.power_on()
    new = appliance.wait_boot(old, 300)

    # classified from the evidence of the new boot, never run again (operations.md)
    status = appliance.wait_phase("Interrupted", 240, request)
    assert "the scheduled shutdown was not confirmed" in status["message"]
    assert "Nothing was repeated" in status["message"]
    state = appliance.state()
    step = state["operation"]["steps"][-1]
    assert (step["name"], step["outcome"]) == ("schedule-shutdown", "unknown")
    assert step["bootId"] == old
    assert history(appliance, request)[0] == "Interrupted"
    after = appliance.boots()
    assert after == [*before, new.replace("-", "")]
    assert_no_second_shutdown(appliance, after)


@pytest.mark.vm_budget(700)
def test_a_cut_right_after_a_state_save_keeps_the_save(appliance: Appliance) -> None:
    """The worker's fsyncs, for real: the state file is read on the host the moment it shows
    the new phase, and the power is cut at once, long before the guest's page cache would have
    reached the disk by itself (dirty data waits 30 s there)."""
    old = appliance.boot_id()
    request = appliance.request("reboot")

    def saved() -> bool:
        return (appliance.state().get("operation") or {}).get("phase") == "RebootScheduled"

    wait_for(saved, 180, "RebootScheduled in the state file", every=0.2)
    appliance.cut()
    started = time.monotonic()
    appliance.power_on()
    new = appliance.wait_boot(old, 300)
    op = appliance.state()["operation"]
    assert op["requestId"] == request
    # the save survived: the operation continues from RebootScheduled to Succeeded
    assert op["phase"] in ("RebootScheduled", "Succeeded"), op
    status = appliance.wait_phase("Succeeded", 240, request)
    assert status["bootId"] == new
    outcome, phases = history(appliance, request)
    assert outcome == "Succeeded" and "RebootScheduled" in phases, phases
    assert time.monotonic() - started < 600
