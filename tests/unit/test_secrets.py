"""Secrets never survive into stored text."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from sweetflow.core.secrets import MASK, redact, remember


def test_a_remembered_value_is_masked_wherever_it_appears():
    remember("plain-value-without-a-shape-42")
    assert redact("x plain-value-without-a-shape-42 y") == f"x {MASK} y"


def test_credential_shapes_are_masked_whatever_their_value():
    assert redact('{"Authorization": "Bearer abc.DEF-123"}') == '{"Authorization": "' + MASK + '"}'
    assert redact("header authorization: Bearer tok3n") == f"header authorization: {MASK}"
    assert redact("used key sk-ABCDEFGH12345678 here") == f"used key {MASK} here"
    assert redact("token hf_abcdefghijklmnop") == f"token {MASK}"
    assert redact("a bearer   t0ken!") == f"a {MASK}!"


def test_ordinary_text_is_left_alone():
    text = "HTTP 503: service unavailable; retry later (skip-list, sky-blue)"
    assert redact(text) == text


@given(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=8, max_size=40),
    st.text(max_size=50),
)
def test_a_remembered_secret_never_survives_in_any_surrounding_text(secret, around):
    assume(secret not in MASK)
    remember(secret)
    assert secret not in redact(around + secret + around)
