"""The backend domain's section of params.yaml (`backend`): its tasks, its simulated human and how
its answers are scored, on the bases every domain shares (`sweetflow.core.params`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from sweetflow.core.params import (
    ColbenchTasksParams,
    DomainParams,
    EndpointParams,
    ModelParams,
    Section,
    ServedBackend,
    SourceFile,
)


@dataclass(frozen=True)
class ScoringRules:
    """Which of ColBench's evaluator's behaviours backend scoring follows (BackendScoringParams)."""

    answer_filter: bool = False
    function_namespace: bool = False


class SandboxParams(Section):
    """Limits for executing untrusted code (ColBench: 1 s per call)."""

    workers: int = Field(ge=0, description="Worker processes; 0 means one per CPU core.")
    call_timeout_s: float = Field(gt=0, description="Time limit of one test call (ColBench: 1 s).")
    task_timeout_s: float = Field(gt=0, description="Wall-clock bound for one answer and all its test calls.")
    cpu_s: int = Field(ge=1, description="CPU-seconds limit (RLIMIT_CPU) of one answer's process.")
    memory_mb: int = Field(ge=64, description="Address-space limit (RLIMIT_AS) of one answer's process, MiB.")
    file_size_mb: int = Field(ge=0, description="Largest file an answer may write in its temporary directory, MiB.")
    open_files: int = Field(ge=8, description="Open file descriptors allowed to an answer (RLIMIT_NOFILE).")
    max_output_bytes: int = Field(ge=1024, description="Most bytes of encoded outputs accepted from one answer.")
    run_without_walls: bool = Field(
        description="Where the sandbox cannot put up its walls (no network, an empty root holding only Python's "
        "standard library, site-packages and system libraries, a private /tmp, no other process in sight), as it can "
        "as root or with unprivileged user namespaces, run untrusted code anyway, with a warning. false: the stage "
        "refuses to start, and says why."
    )


class LlmTasksParams(Section):
    """Tasks written by an LLM from passages of a local text corpus (tasks.source 'llm')."""

    endpoint: EndpointParams = Field(description="The endpoint of the model that writes the tasks.")
    corpus: SourceFile = Field(
        description="A local text file under data/sources/; its paragraphs are the passages the tasks start from."
    )
    temperature: float = Field(ge=0, description="Sampling temperature of the writer.")
    max_new_tokens: int = Field(ge=64, description="Most tokens of one written task.")
    max_requests: int = Field(ge=1, description="Give up after this many requests in a split.")


class TasksParams(ColbenchTasksParams):
    """Backend task generation or import (stage `tasks`)."""

    source: Literal["procedural", "colbench", "llm"] = Field(
        description="'procedural': generate offline tasks by seed; 'colbench': import official ColBench JSONL files; "
        "'llm': have an LLM write them from a local corpus (see `llm`)."
    )
    n_train: int = Field(
        ge=0, le=10_000, description="Training tasks to generate (procedural or llm; procedural capacity 10,000)."
    )
    n_test: int = Field(
        ge=1, le=1_000, description="Test tasks to generate (procedural or llm; procedural capacity 1,000)."
    )
    families: list[str] | None = Field(description="Restrict generation to these families; null means all.")
    llm: LlmTasksParams | None = Field(description="For source 'llm': the writer model and the corpus.")

    @model_validator(mode="after")
    def _llm_needs_its_writer(self) -> TasksParams:
        if self.source == "llm" and self.llm is None:
            raise ValueError("source 'llm' needs llm (endpoint and corpus)")
        return self


class SimulatorParams(ServedBackend):
    """The simulated human of backend tasks: it knows the hidden facts and answers the agent's questions."""

    backend: Literal["scripted", "openai"] = Field(
        description="'scripted': offline, answers from the hidden facts; 'openai': an LLM plays the human."
    )
    max_reply_chars: int = Field(ge=1, description="Replies are cut to this many characters (ColBench: 400).")
    max_facts: int = Field(ge=1, description="Scripted: most facts given in one reply.")
    match_threshold: float = Field(
        gt=0, le=1, description="Scripted: share of a fact's topic words a question must contain to get the fact."
    )
    max_new_tokens: int = Field(ge=1, description="Backend 'openai': most tokens generated per reply.")
    endpoint: EndpointParams | None = Field(description="Backend 'openai': the endpoint serving the simulator model.")


class BackendScoringParams(SandboxParams):
    """How backend answers are scored: ColBench's test rule, run in the sandbox with these limits."""

    answer_filter: Literal["auto", "always", "never"] = Field(
        description="ColBench's evaluator scores 0, without running it, an answer whose code contains 'import os', "
        "'from os', 'import sys', 'from sys', 'sudo', 'transformers', 'exit(', 'quit(' or 'argparse'. The sandbox "
        "does not need it; 'auto' turns it on for tasks.source 'colbench', so that scores compare with published ones."
    )
    namespace: Literal["auto", "module", "function"] = Field(
        description="Where an answer's top-level names live. 'module': one namespace, as when a file is run. "
        "'function': ColBench's evaluator execs the code inside a function, so a top-level import or helper lands "
        "in locals the answer's function cannot see (NameError, the test fails). 'auto': 'function' for "
        "tasks.source 'colbench', else 'module'."
    )


class BackendParams(DomainParams):
    """Backend programming (ColBench): a Python function, checked by hidden unit tests run in the sandbox."""

    tasks: TasksParams = Field(description=TasksParams.__doc__)
    simulator: SimulatorParams = Field(description=SimulatorParams.__doc__)
    scoring: BackendScoringParams = Field(description=BackendScoringParams.__doc__)
    model: ModelParams = Field(description=ModelParams.__doc__)

    # Official trajectories (rollout.source 'import') are ColBench backend rows: this domain reads them.
    imports_trajectories: ClassVar[bool] = True

    def scoring_rules(self) -> ScoringRules:
        """The scoring options with 'auto' resolved against the task source."""
        official = self.tasks.source == "colbench"
        s = self.scoring
        return ScoringRules(
            answer_filter=s.answer_filter == "always" or (s.answer_filter == "auto" and official),
            function_namespace=s.namespace == "function" or (s.namespace == "auto" and official),
        )
