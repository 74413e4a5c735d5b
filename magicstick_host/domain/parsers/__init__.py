"""Pure parsers of host file formats (host-facts.md). No I/O here: text in, value out.

One style everywhere: a parser returns a value or raises `ParseError` with a short reason.
Arbitrary input never raises anything else (the property tests hold them to that).
"""

from magicstick_host.domain.parsers.common import ParseError

__all__ = ["ParseError"]
