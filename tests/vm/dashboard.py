"""The dashboard's part, by hand, against the appliance VM of `make vm DIR=...`:

    python -m tests.vm.dashboard DIR reboot | poweroff     (make vm-request DIR=... ACTION=...)

creates the HostOperation as the dashboard does (from the report it reads on the Node, as the
dashboard's own ServiceAccount, replacing a finished request) and follows it: each phase the
worker reports, each boot of the VM, until the request ends. A power-off leaves the VM off:
`DIR/power on` starts it again, and the request then ends.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.vm.access import guest_boot_id
from tests.vm.appliance import TERMINAL, Appliance
from tests.vm.rigdir import RigError

ACTIONS = ("reboot", "poweroff")


def follow(appliance: Appliance, request_id: str, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    phase, boot, power = "", "", ""
    while time.monotonic() < deadline:
        status = appliance.status()
        if status.get("requestId") == request_id and status.get("phase") != phase:
            phase = str(status["phase"])
            print(f"{time.strftime('%H:%M:%S')} phase {phase}: {status.get('message', '')}",
                  flush=True)
            if phase in TERMINAL:
                return phase
        now_power = appliance.power_state()
        if now_power != power:
            power = now_power
            print(f"{time.strftime('%H:%M:%S')} the VM is {power}"
                  + (f" (start it again: {appliance.config['power']} on)"
                     if power == "off" else ""), flush=True)
        if power == "running":
            now_boot = guest_boot_id(appliance.rig, timeout=10) or ""
            if now_boot and now_boot != boot:
                if boot:
                    print(f"{time.strftime('%H:%M:%S')} the VM booted again: boot ID "
                          f"{now_boot}", flush=True)
                boot = now_boot
        time.sleep(2)
    return phase


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in ACTIONS:
        print(f"usage: python -m tests.vm.dashboard DIR {'|'.join(ACTIONS)}", file=sys.stderr)
        return 2
    try:
        appliance = Appliance(Path(argv[0]))
        request_id = appliance.request(argv[1])
    except (RigError, OSError, AssertionError) as exc:
        print(f"dashboard: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
              file=sys.stderr)
        return 1
    print(f"the dashboard created HostOperation {appliance.namespace}/{appliance.hostop}: "
          f"{argv[1]}, request {request_id}", flush=True)
    phase = follow(appliance, request_id, 900)
    return 0 if phase == "Succeeded" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
