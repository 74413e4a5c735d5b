"""Scenario 1 (appliance-vm.md): the worker's timer under a real systemd.

The ticks start 15 s after the previous one ended and never overlap; a long tick delays the next;
while the apiserver is stopped the unit is inactive with its last exit 5, not failed; the
journal carries the worker's own levels. Read from the guest's systemd and journald.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from datetime import datetime

import pytest

from tests.vm.appliance import SERVICE, Appliance, wait_for

pytestmark = pytest.mark.real_commands

# In the guest: every 0.5 s, the service's last run as systemd records it (monotonic µs), for
# SECONDS; one JSON line per run seen.
SAMPLER = r"""
end=$(( $(date +%s) + SECONDS ))
last=""
while [ "$(date +%s)" -lt "$end" ]; do
  now=$(systemctl show magicstick-host-management.service -p ExecMainStartTimestampMonotonic \
        -p ExecMainExitTimestampMonotonic -p ExecMainStatus -p ActiveState \
        | tr '\n' ' ')
  if [ "$now" != "$last" ]; then echo "$now"; last="$now"; fi
  sleep 0.5
done
"""


def runs(appliance: Appliance, seconds: int) -> list[tuple[float, float, int]]:
    """(start, end, exit status) of each run of the tick that began and ended while watched,
    in seconds of CLOCK_MONOTONIC."""
    out = appliance.sh(SAMPLER.replace("SECONDS", str(seconds)), timeout=seconds + 60)
    seen: dict[int, tuple[float, float, int]] = {}
    for line in out.splitlines():
        props = dict(field.split("=", 1) for field in line.split() if "=" in field)
        start = int(props.get("ExecMainStartTimestampMonotonic") or 0)
        end = int(props.get("ExecMainExitTimestampMonotonic") or 0)
        if start and end > start and props.get("ActiveState") != "activating":
            seen[start] = (start / 1e6, end / 1e6, int(props.get("ExecMainStatus") or 0))
    return [seen[k] for k in sorted(seen)]


def gaps(observed: list[tuple[float, float, int]]) -> list[float]:
    return [nxt[0] - prev[1] for prev, nxt in itertools.pairwise(observed)]


@pytest.mark.vm_budget(300)
def test_ticks_start_15_s_after_the_previous_one_ended_and_never_overlap(
        appliance: Appliance) -> None:
    observed = runs(appliance, 75)
    assert len(observed) >= 3, observed
    for gap in gaps(observed):
        # OnUnitInactiveSec=15s with AccuracySec=1s: 15 to 16 s after the last run ended (a
        # little more when the guest, emulated, is slow to wake)
        assert 15.0 <= gap < 18.0, (gap, observed)


@pytest.mark.vm_budget(400)
def test_a_long_tick_delays_the_next(appliance: Appliance) -> None:
    # the apiserver stops answering (its process frozen): the tick waits for its Kubernetes
    # calls until the worker's own deadline, then ends
    kubeserver = appliance.kubeserver_pid()
    os.kill(kubeserver, signal.SIGSTOP)
    try:
        observed = runs(appliance, 110)
    finally:
        os.kill(kubeserver, signal.SIGCONT)
    long_ones = [i for i, (start, end, _) in enumerate(observed) if end - start > 10]
    assert long_ones, f"no tick waited on the frozen apiserver: {observed}"
    for gap in gaps(observed):
        assert 15.0 <= gap < 18.0, (gap, observed)
    # the long tick ended 5 (Kubernetes did not answer), as a success for systemd
    assert observed[long_ones[0]][2] == 5, observed


@pytest.mark.vm_budget(400)
def test_while_the_apiserver_is_stopped_the_unit_is_inactive_with_exit_5_not_failed(
        appliance: Appliance) -> None:
    # a tick that reached Kubernetes first, so that an outage of an earlier scenario has ended
    started = time.time()
    wait_for(lambda: observed_at(appliance) >= started, 120, "a fresh report")
    cursor = appliance.sh("journalctl -n 0 --show-cursor --no-pager | sed -n 's/^-- cursor: //p'")
    appliance.apiserver(up=False)
    try:
        def a_tick_ran_and_ended() -> bool:
            unit = appliance.unit("ActiveState", "ExecMainStatus", "ExecMainStartTimestamp")
            return (unit["ActiveState"] == "inactive" and unit["ExecMainStatus"] == "5")

        wait_for(a_tick_ran_and_ended, 120, "an ended tick with exit 5")
        unit = appliance.unit("ActiveState", "SubState", "Result", "ExecMainStatus")
        assert unit == {"ActiveState": "inactive", "SubState": "dead", "Result": "success",
                        "ExecMainStatus": "5"}
        status = appliance.sh(f"systemctl status --no-pager {SERVICE}", check=False)
        # systemd 257 prints "status=5"; older versions add "/NOTINSTALLED"
        assert "inactive (dead)" in status and "(code=exited, status=5" in status, status
        assert appliance.sh(f"systemctl is-failed {SERVICE} || true").strip() == "inactive"
        assert appliance.sh("systemctl --failed --no-legend --plain").strip() == ""
    finally:
        appliance.apiserver(up=True)
    resumed = time.time()
    # the report comes back once the apiserver answers again
    wait_for(lambda: observed_at(appliance) >= resumed - 2, 180, "a report after the outage")
    lines = appliance.journal(f"--after-cursor='{cursor}'", "-u", SERVICE)
    worker = [e for e in lines if e.get("SYSLOG_IDENTIFIER") == "magicstick-host"]
    # the condition, said once when it began (warning) whatever the number of ticks, and its end
    down = [e for e in worker if e["MESSAGE"].startswith(
        "magicstick-host: Kubernetes cannot be reached")]
    assert len(down) == 1, [e["MESSAGE"] for e in worker]
    assert down[0]["PRIORITY"] == "4"
    back = [e for e in worker if e["MESSAGE"].startswith(
        "magicstick-host: no longer the case: Kubernetes cannot be reached")]
    assert len(back) == 1 and back[0]["PRIORITY"] == "5", [e["MESSAGE"] for e in worker]
    # PID 1's per-run lines are info: LogLevelMax=notice keeps them out
    assert not [e for e in lines if e["MESSAGE"].startswith(("Starting ", "Finished "))], lines
    assert {e["PRIORITY"] for e in worker} <= {"3", "4", "5"}
    assert all(e.get("_TRANSPORT") == "stdout" for e in worker)


def observed_at(appliance: Appliance) -> float:
    """The report's observedAt, in seconds since the epoch (0 without a report)."""
    observed = appliance.report().get("observedAt", "")
    if not observed:
        return 0.0
    return datetime.fromisoformat(observed.replace("Z", "+00:00")).timestamp()
