"""What prepare-gpu declares to the registry: the steps it runs and the cluster objects it
reads. Its decisions (phases.py and the modules it uses) load only when it runs."""

from __future__ import annotations

from magicstick_host.domain.cluster import APPLIANCE_API, SYSTEM_NAMESPACE, ClusterRead
from magicstick_host.domain.phase import Phase

INSTALL_PACKAGES = "install-packages"
REFRESH_EVIDENCE = "refresh-gpu-evidence"
ACTIVATE_MODULE = "activate-module"

MODULE_NAME = "amd-gpu"
MODULE_ACTIVATION = ClusterRead(
    "module-activation", APPLIANCE_API, "moduleactivations", SYSTEM_NAMESPACE, MODULE_NAME
)
APPLIANCE_NAME = "local"
# the legacy Validating phase completes through the same registration checks
REGISTRATION_PHASES = frozenset({Phase.REGISTERING, Phase.VALIDATING})
APPLIANCE = ClusterRead(
    "appliance",
    APPLIANCE_API,
    "appliances",
    SYSTEM_NAMESPACE,
    APPLIANCE_NAME,
    phases=REGISTRATION_PHASES,
    check_served=True,
)
