"""Debian versions held to `dpkg --compare-versions` (issue #25): what dpkg reads without a word
our parser accepts, what dpkg calls bad syntax (an error, exit 2, or a warning) our parser
refuses, and the order of every accepted pair is dpkg's.

The order is checked cheaply and widely: a batch of accepted versions is sorted by our
comparator and dpkg confirms each neighbour (`lt` or `eq`), which by dpkg's own transitivity
confirms the order of every pair of the batch (n*(n-1)/2 pairs for n-1 runs of dpkg); random
pairs are asked directly on top.

Divergences kept:
- `""` and `<unknown>`: dpkg --compare-versions takes them for "no version" (below every
  version, equal to each other) without a word; they are not versions, and a Version field
  never holds them, so our parser refuses them.
- a version dpkg only *warns* about (a first character that is not an ASCII digit, a character
  outside deb-version(7)'s set, a non-ASCII digit) is still compared by dpkg; it is refused
  here (dpkg says "bad syntax"), so the plan blocks instead of ordering it.
dpkg 1.21 (Debian 12) exits 2 on an error; the exit status is not relied on beyond 0/1/other.
"""

from __future__ import annotations

import functools
import itertools
import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magicstick_host.domain.versions import compare_versions, is_valid_version
from tests.owners.dpkg_oracle import compare_batch, dpkg_version

pytestmark = pytest.mark.real_commands

NO_VERSION = ("", "<unknown>")  # dpkg's empty version: see the module's divergences

# characters deb-version(7) allows, a few it does not, blanks and other white space, and
# digits that are digits only outside ASCII
_alphabet = st.sampled_from(list("0123456789.+~-:abzAZ") * 3 + list(" \t_!é١٢\n\r\v/"))
_free = st.text(_alphabet, min_size=1, max_size=12)
_digits = st.text("0123456789", min_size=1, max_size=4)
_epochs = st.sampled_from([
    "", "", "", "0:", "1:", "2:", "10:", "00:", "+1:", "-0:", "-1:", "\n1:", " 1:", "1 :",
    "x:", ":", "2147483647:", "2147483648:", "4294967296:", "99999999999999999999:", "1x:",
    "١:",
])
_word = st.text(st.sampled_from(list("0123456789.+~abzAZ")), min_size=0, max_size=5)
_structured = st.builds(
    lambda epoch, head, up, rev, pad: f"{pad[0]}{epoch}{head}{up}{rev}{pad[1]}",
    _epochs,
    _digits,
    _word,
    st.sampled_from(["", "", "-1", "-0ubuntu1", "-1.2~24.04.1", "-", "-a_b", "-1-2", "--1"]),
    st.sampled_from([("", "")] * 6 + [(" ", ""), ("", "\t"), (" \t", "  "), ("", "\n")]),
)
version_texts = st.one_of(_structured, _structured, _free)


def _order(a: str, b: str) -> int:
    return compare_versions(a, b)


def _hold_to_dpkg(texts: list[str], pairs: list[tuple[str, str]]) -> int:
    """Ask dpkg about every text and pair; assert agreement. Returns the pairs confirmed."""
    texts = [t for t in dict.fromkeys(texts) if t not in NO_VERSION]
    accepted = sorted((t for t in texts if is_valid_version(t)), key=functools.cmp_to_key(_order))
    refused = [t for t in texts if not is_valid_version(t)]
    questions: list[tuple[str, str, str]] = []
    for a, b in itertools.pairwise(accepted):
        questions.append(("lt" if compare_versions(a, b) < 0 else "eq", a, b))
    questions += [("eq", t, t) for t in refused]
    direct = [(a, b) for a, b in pairs if is_valid_version(a) and is_valid_version(b)]
    questions += [("lt", a, b) for a, b in direct] + [("gt", a, b) for a, b in direct]
    answers = compare_batch(questions)
    for (op, a, b), answer in zip(questions[:len(accepted) - 1], answers, strict=False):
        assert answer.clean, f"dpkg calls {a!r} or {b!r} bad syntax; our parser accepts both"
        assert answer.status == 0, f"dpkg: not {a!r} {op} {b!r}; ours says it is"
    start = max(len(accepted) - 1, 0)
    for t, answer in zip(refused, answers[start:start + len(refused)], strict=True):
        assert not answer.clean, f"dpkg reads {t!r} without a word; our parser refuses it"
    rest = answers[start + len(refused):]
    lt, gt = rest[:len(direct)], rest[len(direct):]
    for (a, b), is_lt, is_gt in zip(direct, lt, gt, strict=True):
        assert is_lt.clean and is_gt.clean
        theirs = -1 if is_lt.status == 0 else (1 if is_gt.status == 0 else 0)
        assert compare_versions(a, b) == theirs, (a, b, theirs)
    n = len(accepted)
    return n * (n - 1) // 2 + len(direct)


@settings(max_examples=12, deadline=None, derandomize=False,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.large_base_example])
@given(texts=st.lists(version_texts, min_size=100, max_size=100),
       pair_indexes=st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99)),
                             min_size=20, max_size=20))
def test_generated_versions_are_read_and_ordered_as_dpkg_does(
    texts: list[str], pair_indexes: list[tuple[int, int]]
) -> None:
    _hold_to_dpkg(texts, [(texts[i], texts[j]) for i, j in pair_indexes])


# what issue #25 named, each asked of dpkg (and what dpkg 1.21 answered, for the reader)
NAMED = [
    "2147483647:1.0",  # accepted: the largest C int
    "2147483648:1.0",  # refused: epoch too big
    "99999999999999999999:1",  # refused (strtol's ERANGE)
    "١.0", "1.٢", "1:٣",  # refused: non-ASCII digits (dpkg warns)
    "1:2:3", "1:2:3-4", "0:1:2",  # accepted: a colon in upstream when there is an epoch
    " 1.0", "1.0 ", "\t1.0\t", " 1:1.0-1 ",  # accepted: blanks around
    "1 .0", "1.0-a b",  # refused: blanks inside
    "+1:1", "-0:1", "00:1", "\n1:1",  # accepted: strtol reads them
    "-1:1", "1x:1", ":1", "1:", "1.0-", "1:-1",  # refused: errors
    "a1.0", "1.0_x", "1.0-a_b", "1é", "1.0\n",  # refused: dpkg's warnings
    "7.0.0-31.31~24.04.1", "1.0--1", "0x1",  # accepted
]


def test_the_named_cases_are_what_dpkg_says() -> None:
    _hold_to_dpkg(NAMED, [(a, b) for a in NAMED[:8] for b in NAMED[-6:]])


def test_the_machines_own_versions_sort_as_dpkg_sorts_them() -> None:
    """Real data: every Version of this machine's dpkg status, in one sorted chain, plus
    neighbours' neighbours at random."""
    text = Path("/var/lib/dpkg/status").read_text(encoding="utf-8", errors="replace")
    found = re.findall(r"^Version: (.*)$", text, flags=re.MULTILINE)
    assert len(found) > 50, "this machine's dpkg status lists too few packages to be real"
    rng = random.Random(25)
    pairs = [(rng.choice(found), rng.choice(found)) for _ in range(200)]
    confirmed = _hold_to_dpkg(found, pairs)
    assert confirmed > 1000


def test_the_oracle_is_dpkg_itself() -> None:
    """Says which dpkg answered (in -v output), and that it can refuse at all."""
    assert dpkg_version().startswith("Debian 'dpkg'")
    (answer,) = compare_batch([("lt", "1:", "1")])
    assert not answer.clean
