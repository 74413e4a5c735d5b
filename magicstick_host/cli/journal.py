"""Printing for a person or for the journal. Under systemd (the journal stream of
$JOURNAL_STREAM is this process's stdout or stderr) every line carries its syslog level as the
`<N>` prefix systemd reads, so the unit's LogLevelMax=notice keeps it; at a console it is
plain text. Notices go to stdout, warnings and errors to stderr.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TextIO

    from magicstick_host.domain.log_lines import Level

PRIORITY = {"err": 3, "warning": 4, "notice": 5}


def connected_to_journal(stream: TextIO) -> bool:
    """systemd.exec(5), $JOURNAL_STREAM: "<device>:<inode>" of the journal stream."""
    expected = os.environ.get("JOURNAL_STREAM", "")
    if not expected:
        return False
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):  # a test's capture has no descriptor
        return False
    return f"{st.st_dev}:{st.st_ino}" == expected


def say(level: Level, text: str) -> None:
    stream = sys.stdout if level == "notice" else sys.stderr
    prefix = f"<{PRIORITY[level]}>" if connected_to_journal(stream) else ""
    # one line: a message never spans lines in the journal
    line = f"{prefix}magicstick-host: {' '.join(text.split())}\n"
    try:
        stream.write(line)
    except UnicodeEncodeError:  # a console whose encoding cannot show a name in the text
        stream.write(line.encode("ascii", "backslashreplace").decode("ascii"))
    stream.flush()
