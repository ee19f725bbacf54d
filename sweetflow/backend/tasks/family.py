"""What a family of ColBench-style backend tasks is, for the procedural generator.

A family is one parameterised programming task: a request a person makes (told through a persona),
a reference implementation template, and hidden parameters that the person knows but does not say.
An agent has to ask about each hidden parameter; guessing its obvious default gives wrong answers.

Two placeholder syntaxes appear in a family's texts:
- `@fn` and `@<role>` stand for the function name and the argument names. They are filled in when a
  task is drafted (`Family.fill_names`), so one family yields many differently named functions.
- `${param}` stands for a hidden parameter in the reference template. It is filled with
  `repr(value)` by `sweetflow.backend.tasks.procedural.render_reference`, with true values or guesses.

The families themselves are in `sweetflow.backend.tasks.themes`, one module per theme. Standard library only.
"""

from __future__ import annotations

import math
import random
import string
from collections.abc import Callable
from dataclasses import dataclass


class _NameTemplate(string.Template):
    """`@name` placeholders, leaving the `${param}` placeholders of the reference untouched."""

    delimiter = "@"


@dataclass(frozen=True)
class Param:
    """A hidden fact: its true value is drawn from `choices`; `guess` is what a non-asker assumes."""

    name: str
    topic: str  # what the fact is about, in the words an agent would use to ask
    fact: str | Callable[[object], str]  # format string over `v`, or a function of the value
    choices: tuple
    guess: object

    def fact_for(self, value: object) -> str:
        return self.fact(value) if callable(self.fact) else self.fact.format(v=value)


@dataclass(frozen=True)
class Family:
    name: str
    domain: str
    personas: tuple[str, ...]
    function_names: tuple[str, ...]
    arguments: dict[str, tuple[str, ...]]  # role -> alternative names, in signature order
    request: str  # what the person asks for, without the persona and the signature line
    template: str
    params: tuple[Param, ...]
    make_args: Callable[[random.Random], tuple]  # one test call's arguments

    @property
    def capacity(self) -> int:
        """How many distinct references the family can produce."""
        name_choices = len(self.function_names) * math.prod(len(names) for names in self.arguments.values())
        return name_choices * math.prod(len(p.choices) for p in self.params)

    def fill_names(self, text: str, function_name: str, arg_names: dict[str, str]) -> str:
        return _NameTemplate(text).substitute(arg_names, fn=function_name)


def quoted(items) -> str:
    """'a', 'b' and 'c' — for facts that list strings or characters exactly."""
    quoted = [repr(item) for item in items]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
