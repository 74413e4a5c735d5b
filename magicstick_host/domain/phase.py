"""The phases of an operation: the contract's status phases, as an enum (contract.md, Status).

The values are the contract's strings; state.json, the journal and the HostOperation status
carry exactly these. A `StrEnum`, so a phase is written and compared as its string.
"""

from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    ACCEPTED = "Accepted"
    PREPARING = "Preparing"
    APPLYING = "Applying"
    AWAITING_CONFIRMATION = "AwaitingConfirmation"
    ROLLED_BACK = "RolledBack"
    REBOOT_SCHEDULED = "RebootScheduled"
    POWEROFF_SCHEDULED = "PoweroffScheduled"
    VERIFYING = "Verifying"
    REGISTERING = "Registering"
    VALIDATING = "Validating"
    SUCCEEDED = "Succeeded"
    PREPARED_UNVERIFIED = "PreparedUnverified"
    FAILED = "Failed"
    REJECTED = "Rejected"
    INTERRUPTED = "Interrupted"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_PHASES


TERMINAL_PHASES = frozenset(
    {
        Phase.SUCCEEDED,
        Phase.PREPARED_UNVERIFIED,
        Phase.FAILED,
        Phase.REJECTED,
        Phase.INTERRUPTED,
        Phase.ROLLED_BACK,
    }
)
# a shutdown is due: the console view tells the administrator to save their work
SHUTDOWN_PHASES = frozenset({Phase.REBOOT_SCHEDULED, Phase.POWEROFF_SCHEDULED})
# what the processed-request memory records for a request the original worker completed
# (domain/legacy_state.py): not a phase of this worker
LEGACY_COMPLETED = "Completed"


def parse_phase(value: str) -> Phase | None:
    """The Phase a string names, or None (a legacy file may name any phase)."""
    try:
        return Phase(value)
    except ValueError:
        return None
