"""The network capability's pure rules (network.md): what the host's network is, what a
configure-network or scan-wifi request may change, and how a trial of new settings goes.

- evidence.py: what the host shows about its network (collect/network.py gathers it);
- netplan_entries.py: one netplan interface entry; editable.py: why an interface is not
  editable from the dashboard;
- capability.py: the inventory and the report's `network` section;
- request.py: the request Secret; settings.py: the settings rules, checked again here;
- netplan_config.py: a trial's managed netplan file (one interface changed);
- operation.py: what the request must be, and the trial's next step; trial.py: the
  trial's record and its decisions;
- scan.py: a Wi-Fi scan's result as the report publishes it.

Each module is imported by its own name; this package imports none of them (an idle tick
loads only what it uses).
"""
