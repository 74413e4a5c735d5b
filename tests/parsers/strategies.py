"""Shared hypothesis strategies for the parser property tests."""

from __future__ import annotations

from hypothesis import strategies as st

# arbitrary host content: any text, including control characters and odd newlines
garbage = st.one_of(
    st.text(max_size=300),
    st.binary(max_size=300).map(lambda b: b.decode("utf-8", "replace")),
    st.text(alphabet="0123456789xabcdefABCDEF:.= \t\n\"'#\\-_()GBMk", max_size=120),
)

lower_hex = "0123456789abcdef"
word_chars = st.characters(min_codepoint=0x21, max_codepoint=0x7E)


def words(alphabet: str, min_size: int = 1, max_size: int = 12) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=min_size, max_size=max_size)


ident = words("abcdefghijklmnopqrstuvwxyz0123456789_")
