"""Scenarios 2 and 3 (appliance-vm.md): restart and power-off through the dashboard's request,
with a real `shutdown`, a real reboot through GRUB, a real power-off of the VM.

Checked from outside the worker: the HostOperation's status, the guest's journal (its list of
boots), logind's schedule (/run/systemd/shutdown/scheduled) and qemu's state.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.vm.appliance import Appliance

pytestmark = pytest.mark.real_commands

# the worker's tick comes every ~15 s plus its own few seconds under TCG: two ticks and a margin
TWO_TICKS = 50.0


def scheduled_at(schedule: str) -> float:
    """USEC= of /run/systemd/shutdown/scheduled, in seconds since the epoch."""
    found = re.search(r"^USEC=(\d+)$", schedule, re.M)
    assert found, schedule
    return int(found.group(1)) / 1e6


def first_entry(appliance: Appliance, boot: str) -> float:
    """When the guest's journal of `boot` begins, in seconds since the epoch."""
    for entry in appliance.journal_boots():
        if entry["boot_id"] == boot.replace("-", ""):
            return int(entry["first_entry"]) / 1e6
    raise AssertionError(f"boot {boot} is not in the guest's journal")


def assert_no_second_shutdown(appliance: Appliance, boots: list[str]) -> None:
    """Two more ticks in the new boot: nothing scheduled, no boot after the one expected."""
    time.sleep(TWO_TICKS)
    assert appliance.shutdown_scheduled() == ""
    assert appliance.boots() == boots
    assert appliance.power_state() == "running"


@pytest.mark.vm_budget(700)
def test_restart_is_one_orderly_reboot_and_succeeds_after_the_new_boot(
        appliance: Appliance) -> None:
    before = appliance.boots()
    old = appliance.boot_id()
    request = appliance.request("reboot")
    status = appliance.wait_phase("RebootScheduled", 180, request)
    assert "about 1 minute" in status["message"]
    schedule = appliance.shutdown_scheduled()
    assert "MODE=reboot" in schedule, schedule
    due = scheduled_at(schedule)
    assert 20 < due - time.time() <= 65, schedule  # `shutdown -r +1`: about a minute ahead

    new = appliance.wait_boot(old, 360)
    status = appliance.wait_phase("Succeeded", 240, request)
    assert status["message"] == "The computer restarted (a new boot was observed)."
    assert status["bootId"] == new
    after = appliance.boots()
    assert after == [*before, new.replace("-", "")], "exactly one boot more"
    # the reboot came when logind had it scheduled, through the orderly shutdown
    assert first_entry(appliance, new) >= due - 2
    last_boot = appliance.sh("journalctl -b -1 --no-pager -o cat -u systemd-logind "
                             "| tail -n 20")
    assert "reboot" in last_boot.lower(), last_boot
    assert_no_second_shutdown(appliance, after)


@pytest.mark.vm_budget(700)
def test_poweroff_really_powers_off_and_succeeds_after_power_on(appliance: Appliance) -> None:
    before = appliance.boots()
    old = appliance.boot_id()
    console_before = appliance.rig.console.stat().st_size
    request = appliance.request("poweroff")
    appliance.wait_phase("PoweroffScheduled", 180, request)
    assert "MODE=poweroff" in appliance.shutdown_scheduled()

    appliance.wait_power_off(240)
    with appliance.rig.console.open("rb") as console:
        console.seek(console_before)
        assert b"reboot: Power down" in console.read()
    # nothing reports while the machine is off
    assert appliance.status()["phase"] == "PoweroffScheduled"

    appliance.power_on()
    new = appliance.wait_boot(old, 300)
    status = appliance.wait_phase("Succeeded", 240, request)
    assert "cannot prove the physical power-off" in status["message"]
    assert status["bootId"] == new
    after = appliance.boots()
    assert after == [*before, new.replace("-", "")]
    assert_no_second_shutdown(appliance, after)


def test_the_guest_s_clock_follows_the_host_s(appliance: Appliance) -> None:
    """Requests expire after 300 s and may be 30 s ahead: the scenarios rely on the emulated
    guest keeping the host's time."""
    guest_now = float(appliance.sh("date +%s.%N"))
    assert abs(guest_now - time.time()) < 5
