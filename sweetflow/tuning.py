"""Equal-budget tuning on the validation split, with DVC's own experiments.

Every tuned policy gets a grid of the same size (`GRIDS`): `full`, learning rate × epochs, the
preference methods also the NLL term (none, 0.01 on the responses, and the official actor's 0.01 over
the whole dialogue); `lr-epochs`, learning rate × epochs for every method; `faithful`, four
configurations a learning rate for every method, each over its own knobs (`faithful`); `official`,
the learning rate alone, the rest as the official actor has it (SWEET-RL only). Each
configuration is one DVC experiment whose only target is
`validate@<domain>-<policy>`: it retrains that policy and evaluates it on the validation tasks,
never on the test tasks. The choice per policy is the configuration with the best validation goal
metric (backend: success rate), ties broken by the other headline metric, then by fewer epochs.

The critics are tuned before the policies, on the training split alone (`--critics`): each learning
rate of one grid is an experiment targeting `critic_quality@<domain>-<critic>`, which trains the
critic, ranks the candidates and measures its good-vs-bad accuracy on the labelled training states;
the choice is the highest good-vs-bad accuracy, then the held-out pair accuracy, then the lower rate
(`choose_critics`), the same rule for both critics; or, with a bound on how far a critic may drift from
its reference (`CriticRule`, `tune table --critics --kl-bound`), one rate for both, then a gate on
the length-matched comparison of the two that decides whether policies are trained on them.

    sweetflow tune queue --domain backend    # one `dvc exp run --queue` per configuration
    dvc queue start -j 1                     # run them; `dvc queue status` to follow
    sweetflow tune run --domain backend      # or: run each at once, in the workspace
    sweetflow tune table --domain backend    # reports/tuning/<domain>.{md,json}: every run and the choice
    sweetflow tune table --bracket 1e-4 1e-3 # the same, exit 1 while a choice is the grid's edge (`at_edge`)
    sweetflow tune run --critics --learning-rates 1e-5 1e-4 1e-3   # the critics' rates, then:
    sweetflow tune table --critics           # reports/tuning/<domain>-critics.{md,json}

With `--overlay configs/experiments/<name>.yaml` every configuration runs on that experiment's
values, its experiment's name ends in `-on-<name>`, and `tune table --overlay` reads those only.
The critics' table also compares the first two critics on the same labelled states, paired by state,
at every rate both ran and at the rates chosen for each (`compare_critics`). With `--resume` the table
at `--out`, committed, is the tuning's record across machines: `run` skips the configurations it holds,
`table` keeps its trials that are no experiment of this clone (`with_recorded`).
"""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from sweetflow.core.artifacts import RUNS
from sweetflow.core.definition import Definition, definition
from sweetflow.core.errors import InputError
from sweetflow.rl.methods import registry

LEARNING_RATES = (1e-4, 1e-3)
EPOCHS = (1, 4)
# The preference methods only (RFT has no preference term to mix with): the settings of the NLL term.
OFFICIAL_NLL = {"nll_coef": 0.01, "nll_span": "dialogue", "nll_mean": "sequence"}
# Each setting names all three keys: a trial run in the workspace must not inherit the span of the one before.
NO_NLL = {"nll_coef": 0.0, "nll_span": "response", "nll_mean": "token"}
NLL_SETTINGS = (NO_NLL, {"nll_coef": 0.01, "nll_span": "response", "nll_mean": "token"}, OFFICIAL_NLL)
NLL_KEYS = ("nll_coef", "nll_span", "nll_mean")
DEFAULT_NLL = {"nll_span": "response", "nll_mean": "token"}  # what experiments without those keys ran
# A configuration's key is its policy's own (policies.<policy>.<key>) unless it is a dotted params key:
# the step-pair rule is the step_pairs stage's, which SWEET-RL and its ablation share.
STEP_PAIR_RULE = "step_pairs.rule"
# Per learning rate, four configurations for every method, each over the knobs of its own method: RFT
# 1 to 4 epochs; MT-DPO the grid's two epochs × the NLL term (none or the official actor's); SWEET-RL, at
# the official actor's one epoch, the step-pair rule (the paper's halves or the largest critic gaps) × the
# NLL term.
FAITHFUL_NLL = (NO_NLL, OFFICIAL_NLL)
STEP_PAIR_RULES = ("halves", "largest_gaps")


def _faithful_rft(epochs: tuple[int, ...]) -> list[dict]:
    return [{"epochs": e} for e in (1, 2, 3, 4)]


def _faithful_mtdpo(epochs: tuple[int, ...]) -> list[dict]:
    if len(epochs) != 2:
        raise ValueError(f"the faithful grid gives MT-DPO two epoch counts (four configurations); got {epochs}")
    return [{"epochs": e, **nll} for e in epochs for nll in FAITHFUL_NLL]


def _faithful_sweet(epochs: tuple[int, ...]) -> list[dict]:
    return [{"epochs": 1, STEP_PAIR_RULE: rule, **nll} for rule in STEP_PAIR_RULES for nll in FAITHFUL_NLL]


# The faithful grid is each method's own knobs, as its paper tunes them: a method tuned there names its four here.
FAITHFUL = {"rft": _faithful_rft, "mtdpo": _faithful_mtdpo, "sweet": _faithful_sweet}


def faithful(method: str, epochs: tuple[int, ...]) -> list[dict]:
    """The `faithful` grid's four configurations of `method` at one learning rate."""
    if method not in FAITHFUL:
        raise ValueError(f"the faithful grid has no configurations of method {method!r} (tuning.FAITHFUL)")
    return FAITHFUL[method](epochs)


# The `official` grid: the learning rate alone, every other knob as the official actor has it (SWEET-RL: one epoch,
# the paper's step pairs and the NLL term over each whole chosen dialogue).
OFFICIAL = {"sweet": {"epochs": 1, STEP_PAIR_RULE: "halves", **OFFICIAL_NLL}}

GRIDS = ("full", "lr-epochs", "faithful", "official")
PREFIX = "tune"
CRITIC_PREFIX = "tunecritic"  # not "tune-": a critic's name must never read as a policy's
ON = "on-"  # names a tuning on an experiment file: tune-backend-rft-lr1e-04-ep1-on-smollm2


def configurations(
    method: str,
    grid: str = "full",
    learning_rates: tuple[float, ...] = LEARNING_RATES,
    epochs: tuple[int, ...] = EPOCHS,
) -> list[dict]:
    """The grid one policy is tuned over (`GRIDS`); every method gets as many configurations in `faithful`
    (`faithful`: only MT-DPO reads `epochs`) and `lr-epochs` (where the NLL term stays as params.yaml has
    it), every method of a loss the same ones in `full`; `official` tunes the learning rate alone (`OFFICIAL`)."""
    if grid not in GRIDS:
        raise ValueError(f"unknown grid {grid!r}: expected one of {GRIDS}")
    if grid == "faithful":
        return [{"learning_rate": lr, **variant} for lr in learning_rates for variant in faithful(method, epochs)]
    if grid == "official":
        if method not in OFFICIAL:
            raise ValueError(f"the official grid has no configuration of method {method!r} (tuning.OFFICIAL)")
        return [{"learning_rate": lr, **OFFICIAL[method]} for lr in learning_rates]
    plain = [{"learning_rate": lr, "epochs": e} for lr in learning_rates for e in epochs]
    if not registry.params_class(method).reads_preference or grid == "lr-epochs":
        return plain
    return [{**g, **nll} for g in plain for nll in NLL_SETTINGS]


def params_key(policy: str, key: str) -> str:
    """The params.yaml key a configuration's `key` sets for `policy`."""
    return key if "." in key else f"policies.{policy}.{key}"


def experiment_name(domain: str, policy: str, config: dict, on: str | None = None) -> str:
    """A git-ref-safe name that says what the experiment tried, and `on` which experiment file (its
    stem): the same configuration tuned on two experiments of one commit makes two experiments."""
    parts = [PREFIX, domain, policy, f"lr{_rate(config['learning_rate'])}", f"ep{config['epochs']}"]
    if "nll_coef" in config:
        parts.append(f"nll{config['nll_coef']:g}")
    if config.get("nll_span") == "dialogue":
        parts.append(f"dialogue-{config['nll_mean']}")
    if STEP_PAIR_RULE in config:
        parts.append(config[STEP_PAIR_RULE].replace("_", ""))
    if on:
        parts.append(f"{ON}{on}")
    return _ref_safe("-".join(parts))


def _rate(lr: float) -> str:
    return f"{lr:.0e}" if float(f"{lr:.0e}") == lr else repr(lr)  # 1e-04 as before; 2.5e-05 not as 2e-05


def _ref_safe(text: str) -> str:
    return text.replace("+", "").replace(".", "p")


def tuned_on(name: str) -> str | None:
    """The experiment file (stem) a tuning experiment of `experiment_name` ran on; None: params.yaml's own.
    The first `-on-` ends the configuration (no part of it holds one); the stem may hold more."""
    _, on, stem = name.partition(f"-{ON}")
    return stem if on else None


def queue_command(
    domain: str, policy: str, config: dict, overlay: list[str] = (), queued: bool = True, on: str | None = None
) -> list[str]:
    """The experiment of one configuration; `overlay`: `-S` arguments of the experiment file `on`
    (`sweetflow.experiments`) it runs on, before the configuration's own. Not `queued`: it runs at
    once, in the workspace."""
    sets = [arg for key, value in config.items() for arg in ("-S", f"{params_key(policy, key)}={value}")]
    return [
        "dvc",
        "exp",
        "run",
        *(["--queue"] if queued else []),
        "-n",
        experiment_name(domain, policy, config, on),
        *overlay,
        *sets,
        f"validate@{domain}-{policy}",
    ]


def launch(
    domain: str,
    policies: dict[str, str],
    overlay: list[str] = (),
    grid: str = "full",
    root: Path = Path("."),
    queued: bool = True,
    learning_rates: tuple[float, ...] = LEARNING_RATES,
    epochs: tuple[int, ...] = EPOCHS,
    on: str | None = None,
    skip: frozenset[str] = frozenset(),
) -> list[str]:
    """Queue every configuration of every policy (name → method), each on `overlay` (`-S` arguments
    of the experiment file `on`); returns the names of those it ran or queued. Not `queued`: run them one after
    another in the workspace instead, without a temporary copy of the project each. Either way every
    stage a configuration ran goes to DVC's run cache (the queue's temporary copies share the
    workspace's cache), so the final run with the chosen configurations restores their policies and
    validations instead of training them again. A configuration whose experiment this commit already
    has is skipped, so that an interrupted tuning resumes where it stopped, and so is one named in `skip`
    (the trials of a tuning table: `table_records`)."""
    done = recorded(root) | skip
    names = []
    for policy, method in policies.items():
        for config in configurations(method, grid, learning_rates, epochs):
            name = experiment_name(domain, policy, config, on)
            if _run_once(name, done, queue_command(domain, policy, config, overlay, queued, on), root):
                names.append(name)
    return names


def _run_once(name: str, done: set[str], command: list[str], root: Path) -> bool:
    """Run (or queue) `command` unless `name` is `done`; whether it did."""
    if name in done:
        print(f"{name}: ran already (an experiment of this commit, or a trial of the tuning table), skipped")
        return False
    subprocess.run(command, cwd=root, check=True)
    return True


def recorded(root: Path = Path(".")) -> set[str]:
    """The names of the experiments that ran on the workspace's commit."""
    listed = subprocess.run(["dvc", "exp", "list", "--name-only"], cwd=root, check=True, capture_output=True, text=True)
    return set(listed.stdout.split())


@dataclass(frozen=True)
class Trial:
    """One configuration of one policy and what it scored on the validation tasks."""

    policy: str
    experiment: str
    config: dict
    metrics: dict  # the validate stage's metrics: means over seeds, their spread, each seed's own
    ran_on: str | None = None  # where its policy trained (`ran_on`); None: not known here


def choose(trials: list[Trial], headline: tuple[str, str], goal: str) -> dict[str, Trial]:
    """The best trial per policy: highest `goal`, then the other headline metric, then fewer epochs."""
    other = next(m for m in headline if m != goal)
    best: dict[str, Trial] = {}
    for t in trials:
        key = (t.metrics[goal], t.metrics[other], -t.config["epochs"])
        held = best.get(t.policy)
        if held is None or key > (held.metrics[goal], held.metrics[other], -held.config["epochs"]):
            best[t.policy] = t
    return best


def at_edge(trials: list[Trial], best: dict[str, Trial], grid: tuple[float, ...]) -> dict[str, str]:
    """The policies whose choice is the lowest or highest learning rate of the committed `grid` while none of
    their trials ran past that edge: {policy: "lower" or "upper"}. The grid then does not bracket the choice,
    and the next rate past the edge runs first (`tune table --bracket`). One extension settles it whatever it
    chooses: the grid grows once, disclosed (`render`), not until the choice stops moving."""
    low, high = min(grid), max(grid)
    extended = past(trials, grid)
    edges = {}
    for policy, chosen in best.items():
        rate = chosen.config["learning_rate"]
        beyond = [t.config["learning_rate"] for t in extended if t.policy == policy]
        if math.isclose(rate, low) and not any(r < low for r in beyond):
            edges[policy] = "lower"
        elif math.isclose(rate, high) and not any(r > high for r in beyond):
            edges[policy] = "upper"
    return edges


def past(trials: list[Trial], grid: tuple[float, ...]) -> list[Trial]:
    """The trials whose learning rate is none of the committed `grid`'s: its extensions."""
    return [t for t in trials if not any(math.isclose(t.config["learning_rate"], r) for r in grid)]


def collect(
    domain: str, method_of: dict[str, str], root: Path = Path("."), commits: int = 1, on: str | None = None
) -> list[Trial]:
    """Every finished tuning experiment of `domain` on the experiment file `on` (None: on params.yaml
    alone), read from DVC's experiment refs, on the last `commits` commits of HEAD (1: the experiments
    of HEAD itself, as `dvc exp show`); `method_of` maps each policy to its method."""
    import dvc.api

    trials = []
    for row in dvc.api.exp_show(repo=str(root), num=commits):
        name = row.get("Experiment") or ""
        if not name.startswith(f"{PREFIX}-{domain}-") or row.get("State") not in (None, "Success"):
            continue
        if tuned_on(name) != (_ref_safe(on) if on else None):
            continue
        policy = _policy_of(name, domain)
        metrics = _git_json(root, row["rev"], definition("validate", domain, policy, root=root).metrics)
        if metrics is None:
            continue  # failed before validating
        method = registry.params_class(method_of[policy]) if method_of.get(policy) in registry.known() else None
        step_pairs = method is not None and method.reads_critic  # learns from step pairs, so from their rule
        keys = ("learning_rate", "epochs", *NLL_KEYS) + ((STEP_PAIR_RULE,) if step_pairs else ())
        config = {k: row[params_key(policy, k)] for k in keys if row.get(params_key(policy, k)) is not None}
        config["epochs"] = int(config["epochs"])  # DVC reports every number as it parsed it, 4 as 4.0
        if method is not None and not method.reads_preference:
            for k in NLL_KEYS:  # no preference term (RFT): its NLL settings are not tuned
                config.pop(k, None)
        else:
            config = {**DEFAULT_NLL, **config}
        trained = definition("policy", domain, policy, root=root)
        trials.append(Trial(policy, name, config, metrics, ran_on(root, row, trained)))
    return trials


RAN_ON_NOTE = (
    "Ran on: where the trial trained (CPU or GPU, the kernels torch chose, the precision), from its run record; "
    "— where the record is not in this clone (a trial of another machine, kept by the table)."
)


def ran_on(root: Path, row: dict, trained: Definition) -> str | None:
    """Where the stage `trained` of the experiment `row` ran, from its run record at the experiment's commit:
    the CPU (or GPUs), the kernels torch chose and the precision, e.g. "AMD EPYC, AVX2 kernels, fp32", since
    float results, bf16's above all, differ with them. None where the record is not in this clone's DVC cache
    (an experiment of another machine)."""
    import dvc.api
    from dvc.exceptions import DvcException

    record = next((o for o in trained.outs if Path(o).parent == RUNS), None)
    if record is None:  # a stage that keeps no run record
        return None
    try:
        machine = json.loads(dvc.api.read(record, repo=str(root), rev=row["rev"]))["machine"]
    except (DvcException, FileNotFoundError):
        return None
    gpus = machine.get("gpus") or []
    where = ", ".join(sorted({g["name"] for g in gpus})) if gpus else machine["cpu"]
    kernels = machine.get("kernels", {}).get("aten_kernels")
    parts = [where, *([f"{kernels} kernels"] if kernels and not gpus else []), row.get("training.precision")]
    return ", ".join(p for p in parts if p)


def _policy_of(name: str, domain: str) -> str:
    rest = name[len(f"{PREFIX}-{domain}-") :]
    return rest[: rest.index("-lr")]


def _git_json(root: Path, rev: str, path: str) -> dict | None:
    shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=root, capture_output=True, text=True)
    return json.loads(shown.stdout) if shown.returncode == 0 else None


def render(
    domain: str,
    trials: list[Trial],
    best: dict[str, Trial],
    headline: tuple[str, str],
    committed: tuple[float, ...] | None = None,
) -> str:
    """The markdown table of every configuration tried, the chosen ones marked; with the `committed` grid of
    learning rates, the trials past it are named as its extensions."""
    a, b = headline
    nll_settings: dict[str, set] = {}  # per policy: the NLL settings its trials ran with
    for t in trials:
        nll_settings.setdefault(t.policy, set()).add(tuple(t.config.get(k) for k in NLL_KEYS))
    rates = ", ".join(f"{lr:g}" for lr in sorted({t.config["learning_rate"] for t in trials}))
    epochs = ", ".join(str(e) for e in sorted({t.config["epochs"] for t in trials}))
    grid = f"learning rate ({rates}) × epochs ({epochs})" + (
        ", and for the preference methods the NLL term (`nll_coef`; 'dialogue' marks the "
        "official actor's NLL over the whole dialogue, per sequence)"
        if max(map(len, nll_settings.values())) > 1
        else " (the NLL term as params.yaml has it)"
    )
    out = [
        f"# Tuning on the validation tasks ({domain})",
        "",
        f"Every policy got the same grid: {grid}. "
        "Each row is one DVC experiment that retrained the policy and evaluated it on the validation tasks only "
        f"(means over seeds, %). Chosen: the best {b}, then {a}, then fewer epochs. {RAN_ON_NOTE}",
        *_extensions(trials, best, committed),
        "",
        f"| policy | learning rate | epochs | nll_coef | step pairs | {a} (%) | {b} (%) | chosen | ran on |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def order(t: Trial) -> tuple:
        c = t.config
        return t.policy, c["learning_rate"], c["epochs"], c.get("nll_coef", -1), c.get("nll_span", ""), rule(t)

    def rule(t: Trial) -> str:
        return t.config.get(STEP_PAIR_RULE, "—")

    for t in sorted(trials, key=order):
        c = t.config
        nll = "—" if "nll_coef" not in c else f"{c['nll_coef']:g}"
        if c.get("nll_span") == "dialogue":
            nll += f" (dialogue, per {c['nll_mean']})"
        mark = "**yes**" if best[t.policy].experiment == t.experiment else ""
        out.append(
            f"| `{t.policy}` | {c['learning_rate']:g} | {c['epochs']} | {nll} | {rule(t)} "
            f"| {t.metrics[a] * 100:.1f} | {t.metrics[b] * 100:.1f} | {mark} | {t.ran_on or '—'} |"
        )
    return "\n".join(out) + "\n"


def _extensions(trials: list[Trial], best: dict[str, Trial], grid: tuple[float, ...] | None) -> list[str]:
    """The sentences that disclose the trials past the committed grid, and a choice still at its edge."""
    if grid is None:
        return []
    lines = []
    if extended := past(trials, grid):
        rates = sorted({(t.policy, t.config["learning_rate"]) for t in extended})  # a rate may hold several trials
        named = ", ".join(f"`{policy}` at {rate:g}" for policy, rate in rates)
        lines.append(f"Past the committed grid ({', '.join(f'{r:g}' for r in sorted(grid))}), one extension: {named}.")
    for policy, side in sorted(at_edge(trials, best, grid).items()):
        lines.append(
            f"`{policy}` chose the {side} edge of the grid and nothing past it ran: the grid does not bracket it."
        )
    return ["", *lines] if lines else []


def describe(config: dict) -> str:
    """A configuration as params.yaml values, e.g. `learning_rate: 0.001, epochs: 1, nll_span: response`."""
    return ", ".join(f"{k}: {v:g}" if isinstance(v, float | int) else f"{k}: {v}" for k, v in config.items())


def write_table(
    domain: str,
    trials: list[Trial],
    best: dict[str, Trial],
    headline: tuple[str, str],
    out: Path,
    grid: tuple[float, ...] | None = None,
) -> str:
    """`table_path(out, domain)` and its markdown beside it; returns the markdown."""
    markdown = render(domain, trials, best, headline, grid)
    _write(table_path(out, domain), markdown, "policies", trials, best)
    return markdown


def table_path(out: Path, domain: str, critics: bool = False) -> Path:
    """The JSON tuning table `write_table` (or `write_critic_table`) writes under `out`."""
    return out / (f"{domain}-critics.json" if critics else f"{domain}.json")


def table_records(table: Path, key: str = "trials") -> list[dict]:
    """The trials (or the critics' `pairs`) a tuning table holds; none where it does not exist yet. Committed
    with the project, the table is the record of what ran: a tuning resumed on another machine, without the
    experiments of the first, neither runs those configurations again nor loses them."""
    if not table.is_file():
        return []
    try:
        records = json.loads(table.read_text()).get(key, [])
        if not all(isinstance(r, dict) for r in records):
            raise TypeError(f"an entry of {key!r} is not a mapping")
        return records
    except (ValueError, TypeError, AttributeError) as e:
        raise InputError(f"{table}: not a tuning table ({key!r}: a list of mappings): {e!r}") from None


def with_recorded(
    found: list, table: Path, kind: type, key: str = "trials", identity: tuple[str, ...] = ("experiment",)
) -> list:
    """What `found` holds (trials among the experiments, or critic pairs), and the records of `table` under
    `key` that it does not hold again (told apart by the fields `identity`), as `kind`: an earlier machine's
    trials keep their place."""
    seen = {tuple(getattr(item, f) for f in identity) for item in found}
    try:
        earlier = [kind(**r) for r in table_records(table, key) if tuple(r.get(f) for f in identity) not in seen]
    except TypeError as e:
        raise InputError(f"{table}: an entry of {key!r} does not have the fields of {kind.__name__}: {e}") from None
    return earlier + found


def _write(table: Path, markdown: str, section: str, trials: list, best: dict, **more: list) -> None:
    """`table` (JSON, `table_path`) and its markdown beside it (.md)."""
    table.parent.mkdir(parents=True, exist_ok=True)
    table.with_suffix(".md").write_text(markdown)
    data = {
        "section": section,
        "trials": [asdict(t) for t in trials],
        "chosen": {n: asdict(t) for n, t in best.items()},
    } | more
    table.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_choices(table: Path | str) -> tuple[str, dict[str, dict]]:
    """The params section a table of `write_table` or `write_critic_table` tuned ("policies" or
    "critics"), and {name: configuration} it chose."""
    table = Path(table)
    if not table.is_file():
        raise FileNotFoundError(f"{table}: no such tuning table (`sweetflow tune table --out` writes it)")
    try:
        data = json.loads(table.read_text())
        section = data.get("section", "policies")  # tables written before critics were tuned
        if section not in ("policies", "critics"):
            raise ValueError(f"section {section!r}")
        return section, {name: trial["config"] for name, trial in data["chosen"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{table}: not a tuning table (`chosen`: {{name: {{config: ...}}}}): {e!r}") from None


# --- the critics -------------------------------------------------------------------------------------


def critic_experiment_name(domain: str, critic: str, learning_rate: float, on: str | None = None) -> str:
    """tunecritic-backend-with_info-lr1e-05[-on-<stem>]."""
    parts = [CRITIC_PREFIX, domain, critic, f"lr{_rate(learning_rate)}"] + ([f"{ON}{on}"] if on else [])
    return _ref_safe("-".join(parts))


def critic_command(
    domain: str, critic: str, learning_rate: float, overlay: list[str] = (), queued: bool = True, on: str | None = None
) -> list[str]:
    """The experiment of one critic learning rate: the critic, its ranking and its good-vs-bad accuracy
    on the labelled training states (`critic_quality`); nothing of the validation or test tasks."""
    return [
        "dvc",
        "exp",
        "run",
        *(["--queue"] if queued else []),
        "-n",
        critic_experiment_name(domain, critic, learning_rate, on),
        *overlay,
        "-S",
        f"critics.{critic}.learning_rate={learning_rate}",
        f"critic_quality@{domain}-{critic}",
    ]


def launch_critics(
    domain: str,
    critics: list[str],
    learning_rates: tuple[float, ...],
    overlay: list[str] = (),
    root: Path = Path("."),
    queued: bool = True,
    on: str | None = None,
    skip: frozenset[str] = frozenset(),
) -> list[str]:
    """Every learning rate of every critic, as `launch` does for policies (the same grid for each)."""
    done, names = recorded(root) | skip, []
    for critic in critics:
        for lr in learning_rates:
            name = critic_experiment_name(domain, critic, lr, on)
            if _run_once(name, done, critic_command(domain, critic, lr, overlay, queued, on), root):
                names.append(name)
    return names


# What a critic's trial reads: stage -> the metrics kept from its metrics file (where dvc.yaml puts it).
CRITIC_METRICS = {
    "critic": ("heldout_accuracy", "eval_nll_initial", "eval_nll_final", "heldout_kl_to_reference"),
    "critic_quality": ("good_vs_bad_accuracy", "states_mixed", "length_matched_accuracy", "length_matched_states"),
    "step_pairs": ("score_length_corr",),
}


@dataclass(frozen=True)
class CriticTrial:
    """One learning rate of one critic and what it measured on the training split."""

    critic: str
    experiment: str
    config: dict  # {"learning_rate": ...}
    metrics: dict
    rev: str | None = None  # the experiment's commit, whose outputs `pair_critics` reads
    ran_on: str | None = None  # where the critic trained (`ran_on`); None: not known here


def collect_critics(domain: str, root: Path = Path("."), commits: int = 1, on: str | None = None) -> list[CriticTrial]:
    """Every finished critic tuning experiment of `domain` on the experiment file `on`, as `collect`."""
    import dvc.api

    trials, prefix = [], f"{CRITIC_PREFIX}-{domain}-"
    for row in dvc.api.exp_show(repo=str(root), num=commits):
        name = row.get("Experiment") or ""
        if not name.startswith(prefix) or row.get("State") not in (None, "Success"):
            continue
        if tuned_on(name) != (_ref_safe(on) if on else None):
            continue
        critic = name[len(prefix) : name.index("-lr")]
        metrics = {}
        for stage, keys in CRITIC_METRICS.items():
            found = _git_json(root, row["rev"], definition(stage, domain, critic, root=root).metrics) or {}
            metrics |= {key: found.get(key) for key in keys}
        if metrics["good_vs_bad_accuracy"] is None:
            continue  # failed before measuring it, or a domain without labels
        config = {"learning_rate": row[f"critics.{critic}.learning_rate"]}
        trained = definition("critic", domain, critic, root=root)
        trials.append(CriticTrial(critic, name, config, metrics, row["rev"], ran_on(root, row, trained)))
    return trials


def choose_critics(trials: list[CriticTrial], rule: CriticRule | None = None) -> dict[str, CriticTrial]:
    """Per critic: the highest good-vs-bad accuracy on the labelled training states, then the highest
    held-out pair accuracy, then the lower learning rate (the one that moved the model less). With a `rule`
    bounding the drift: one rate for every critic (`CriticRule`)."""
    if rule is not None:
        return rule.choose(trials)
    best: dict[str, CriticTrial] = {}
    for t in trials:
        if t.critic not in best or _critic_key(t) > _critic_key(best[t.critic]):
            best[t.critic] = t
    return best


def _critic_key(t: CriticTrial) -> tuple:
    return t.metrics["good_vs_bad_accuracy"], t.metrics["heldout_accuracy"] or 0.0, -t.config["learning_rate"]


@dataclass(frozen=True)
class CriticRule:
    """One learning rate for every critic, so that the training-time information is their only difference, among
    the rates at which each stayed a language model: every critic ran at it and its held-out KL to its reference
    is at most `kl_bound`. Of those, the best good-vs-bad accuracy of `lead` (the critic that reads the
    information), then its held-out pair accuracy, then the lower rate. None qualifies: nothing is chosen."""

    kl_bound: float
    lead: str = "with_info"

    def within(self, trials: list[CriticTrial]) -> dict[float, dict[str, CriticTrial]]:
        """The rates that qualify, each with its critics' trials."""
        critics = {t.critic for t in trials}
        by_rate: dict[float, dict[str, CriticTrial]] = {}
        for t in trials:
            by_rate.setdefault(t.config["learning_rate"], {})[t.critic] = t

        def stayed(t: CriticTrial) -> bool:
            kl = t.metrics.get("heldout_kl_to_reference")
            return kl is not None and kl <= self.kl_bound

        return {lr: ts for lr, ts in by_rate.items() if set(ts) == critics and all(map(stayed, ts.values()))}

    def choose(self, trials: list[CriticTrial]) -> dict[str, CriticTrial]:
        within = self.within(trials)
        if not within or self.lead not in {t.critic for t in trials}:
            return {}
        return within[max(within, key=lambda lr: _critic_key(within[lr][self.lead]))]

    def describe(self) -> str:
        return (
            f"one rate for both critics, among those at which each kept its held-out KL to its reference at most "
            f"{self.kl_bound:g}: the best good vs bad of `{self.lead}`, then its held-out pair accuracy, then the "
            "lower rate"
        )


def render_critics(
    domain: str, trials: list[CriticTrial], best: dict[str, CriticTrial], rule: CriticRule | None = None
) -> str:
    """The markdown table of every critic learning rate tried, the chosen ones marked."""
    from sweetflow.rl.critic_quality import LENGTH_MATCH

    rates = ", ".join(f"{lr:g}" for lr in sorted({t.config["learning_rate"] for t in trials}))
    choice = (
        rule.describe()
        if rule
        else "per critic, the best good vs bad, then held-out pair accuracy, then the lower rate"
    )
    out = [
        f"# Tuning the critics on the training split ({domain})",
        "",
        f"Every critic got the same learning rates ({rates}). Each row is one DVC experiment that trained the "
        "critic and ranked the candidates at the labelled training states; nothing of the validation or test "
        "tasks was read. Good vs bad: the share of (good, bad) candidate pairs at a state the critic ranks the "
        "right way round. Held-out pairs: trajectory pairs of tasks kept out of its training. Drift: the NLL of "
        "the held-out turns before → after, and the mean per-token KL to its reference there. Length-matched: good vs "
        f"bad on the (good, bad) combinations whose lengths are within {LENGTH_MATCH:g}× of each other, over the "
        f"states that hold one. Chosen: {choice}. {RAN_ON_NOTE}",
        "",
        "| critic | learning rate | good vs bad (%) | states | length-matched (%) | states | held-out pairs (%) "
        "| held-out NLL | KL to reference | score vs length (r) | chosen | ran on |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def number(value, form: str, scale: float = 1) -> str:
        return "—" if value is None else format(value * scale, form)

    for t in sorted(trials, key=lambda t: (t.critic, t.config["learning_rate"])):
        m = t.metrics
        cells = [
            f"`{t.critic}`",
            f"{t.config['learning_rate']:g}",
            number(m["good_vs_bad_accuracy"], ".1f", 100),
            number(m["states_mixed"], "d"),
            number(m.get("length_matched_accuracy"), ".1f", 100),
            number(m.get("length_matched_states"), "d"),
            number(m["heldout_accuracy"], ".1f", 100),
            f"{number(m['eval_nll_initial'], '.3f')} → {number(m['eval_nll_final'], '.3f')}",
            number(m["heldout_kl_to_reference"], ".3f"),
            number(m["score_length_corr"], "+.2f"),
            "**yes**" if t.critic in best and best[t.critic].experiment == t.experiment else "",
            t.ran_on or "—",
        ]
        out.append(f"| {' | '.join(cells)} |")
    if rule and not best:
        out += ["", f"**No rate qualifies** ({rule.describe()}): no critic is chosen, and the gate fails."]
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class CriticPair:
    """Critic `a` at `rate_a` against `b` at `rate_b`: their good-vs-bad accuracies on the same labelled
    training states and a − b, paired by state (`sweetflow.report.critic_intervals.accuracy_difference`)."""

    a: str
    b: str
    rate_a: float
    rate_b: float
    accuracy: dict  # "a", "b", "a_minus_b": {value, low, high, states}


PAIR_IDENTITY = ("rate_a", "rate_b")  # what tells a table's critic pairs apart


def pair_critics(
    domain: str,
    trials: list[CriticTrial],
    a: str,
    b: str,
    chosen: dict[str, CriticTrial],
    root: Path = Path("."),
    resamples: int = 2000,
) -> list[CriticPair]:
    """Critics `a` and `b` at every learning rate both were tried at, and at the rates `chosen` for each, each
    pair compared on the labelled candidates' scores of its two experiments (read from DVC's cache at each
    experiment's commit; `trials` without outputs here are left out): on every (good, bad) combination and, where
    the scores carry the candidates' lengths, on the length-matched ones."""
    at = {(t.critic, t.config["learning_rate"]): t for t in trials}
    return [
        CriticPair(
            a,
            b,
            rate_a,
            rate_b,
            _paired_accuracy(
                scored_candidates(domain, at[a, rate_a], root),
                scored_candidates(domain, at[b, rate_b], root),
                resamples,
            ),
        )
        for rate_a, rate_b in pair_rates(trials, a, b, chosen)
    ]


def scored_candidates(domain: str, trial: CriticTrial, root: Path = Path(".")):
    """The trial's critic_quality scored.parquet (each labelled candidate with its score), from DVC's cache at the
    experiment's commit."""
    import dvc.api
    import polars as pl

    from sweetflow.core.definition import output_of
    from sweetflow.core.tables import SCORED

    path = output_of("critic_quality", domain, trial.critic, SCORED, root=root)
    with dvc.api.open(str(path), repo=str(root), rev=trial.rev, mode="rb") as f:
        return pl.read_parquet(f)


def _paired_accuracy(scored_a, scored_b, resamples: int) -> dict:
    """a, b and a − b on every combination and, given the lengths, on the length-matched ones ("length_matched")."""
    from sweetflow.report.critic_intervals import accuracy_difference
    from sweetflow.rl.critic_quality import LENGTH_MATCH

    accuracy = {k: e.as_dict() for k, e in accuracy_difference(scored_a, scored_b, resamples).items()}
    if "n_tokens" in scored_a.columns:  # scored before the length-matched figures carried no lengths
        matched = accuracy_difference(scored_a, scored_b, resamples, length_match=LENGTH_MATCH)
        accuracy["length_matched"] = {k: e.as_dict() for k, e in matched.items()}
    return accuracy


@dataclass(frozen=True)
class ControlPair:
    """A chosen critic against a control that reads no dialogue (`sweetflow.rl.critic_quality.CONTROLS`), paired
    by state on the same labelled candidates: accuracy as `CriticPair`'s, `b` being the control."""

    critic: str
    rate: float
    control: str
    accuracy: dict


CONTROL_IDENTITY = ("critic", "rate", "control")  # what tells a table's control pairs apart


def control_pairs(
    domain: str, chosen: dict[str, CriticTrial], root: Path = Path("."), resamples: int = 2000
) -> list[ControlPair]:
    """Each chosen critic against each control on its own labelled candidates (scores that carry the lengths and the
    base policy's log-probs; none before them)."""
    from sweetflow.rl.critic_quality import CONTROLS

    pairs = []
    for critic, trial in sorted(chosen.items()):
        frame = scored_candidates(domain, trial, root)
        if "base_logprob" not in frame.columns:
            continue
        for name, score in CONTROLS.items():
            accuracy = _paired_accuracy(frame, frame.with_columns(score=score), resamples)
            pairs.append(ControlPair(critic, trial.config["learning_rate"], name, accuracy))
    return pairs


def critic_gate(pairs: list[CriticPair], chosen: dict[str, CriticTrial], a: str, b: str) -> dict:
    """The gate of a drift-bounded choice (`CriticRule`): at the one rate chosen for both, `a` − `b` on the
    length-matched combinations, paired by state, lies above 0. No rate chosen, or no such figure: it fails."""
    rates = {chosen[c].config["learning_rate"] for c in (a, b) if c in chosen}
    rate = rates.pop() if len(rates) == 1 and len(chosen) >= 2 else None
    pair = next((p for p in pairs if (p.rate_a, p.rate_b) == (rate, rate)), None)
    matched = (pair.accuracy.get("length_matched") or {}).get("a_minus_b") if pair else None
    return {"a": a, "b": b, "rate": rate, "a_minus_b": matched, "passed": bool(matched and matched["low"] > 0)}


def compare_critics(
    domain: str,
    found: list[CriticTrial],
    trials: list[CriticTrial],
    chosen: dict[str, CriticTrial],
    a: str,
    b: str,
    table: Path | None = None,
    root: Path = Path("."),
) -> list[CriticPair]:
    """The critics' table's comparisons of `a` and `b` (`pair_rates` of all `trials`): each computed from the
    experiments `found` here where both of its experiments are, else taken from `table`'s record (None: not)."""
    pairs = pair_critics(domain, found, a, b, chosen, root)
    if table is not None:
        pairs = with_recorded(pairs, table, CriticPair, "pairs", PAIR_IDENTITY)
    by_rates = {(p.rate_a, p.rate_b): p for p in pairs}
    return [by_rates[r] for r in pair_rates(trials, a, b, chosen) if r in by_rates]


def pair_rates(trials: list[CriticTrial], a: str, b: str, chosen: dict[str, CriticTrial]) -> list[tuple[float, float]]:
    """The (rate of `a`, rate of `b`) pairs the critics' table compares: every rate both were tried at, then
    the rates `chosen` for each where they differ."""
    tried = {(t.critic, t.config["learning_rate"]) for t in trials}
    rates = sorted((lr, lr) for critic, lr in tried if critic == a and (b, lr) in tried)
    if a in chosen and b in chosen:
        best = (chosen[a].config["learning_rate"], chosen[b].config["learning_rate"])
        rates += [best] if best not in rates and (a, best[0]) in tried and (b, best[1]) in tried else []
    return rates


def render_pairs(pairs: list[CriticPair], chosen: dict[str, CriticTrial]) -> str:
    """The paired comparisons of `pair_critics` as a markdown section ("" when there are none), the pair of
    the rates `chosen` marked."""
    if not pairs:
        return ""
    a, b = pairs[0].a, pairs[0].b
    best = tuple(chosen[c].config["learning_rate"] if c in chosen else None for c in (a, b))

    def cell(e: dict, form: str) -> str:
        return f"{100 * e['value']:{form}} [{100 * e['low']:{form}}, {100 * e['high']:{form}}]"

    out = [
        "",
        f"## `{a}` against `{b}`, paired by state",
        "",
        "Good-vs-bad accuracy on the same labelled training states at each learning rate both ran, and at the "
        "rates chosen for each: percentile bootstrap 95% intervals over the states. Length-matched: the same on the "
        "(good, bad) combinations of like lengths, over the states that hold one.",
        "",
        f"| `{a}` rate | `{b}` rate | `{a}` (%) | `{b}` (%) | {a} − {b} (points) | states "
        f"| length-matched: `{a}` (%) | `{b}` (%) | {a} − {b} | states | chosen rates |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in pairs:
        e = p.accuracy
        cells = [
            f"{p.rate_a:g}",
            f"{p.rate_b:g}",
            cell(e["a"], ".1f"),
            cell(e["b"], ".1f"),
            cell(e["a_minus_b"], "+.1f"),
        ]
        cells.append(str(e["a"]["states"]))
        matched = e.get("length_matched")
        if matched:
            cells += [cell(matched[k], f) for k, f in (("a", ".1f"), ("b", ".1f"), ("a_minus_b", "+.1f"))]
            cells.append(str(matched["a"]["states"]))
        else:
            cells += ["—"] * 4
        marked = "**yes**" if (p.rate_a, p.rate_b) == best else ""
        out.append(f"| {' | '.join(cells)} | {marked} |")
    return "\n".join(out) + "\n"


def render_controls(controls: list[ControlPair]) -> str:
    """The chosen critics against the controls, as a markdown section ("" when there are none)."""
    if not controls:
        return ""

    def cell(e: dict, form: str) -> str:
        return f"{100 * e['value']:{form}} [{100 * e['low']:{form}}, {100 * e['high']:{form}}]"

    out = [
        "",
        "## The chosen critics against scorers that read no dialogue",
        "",
        "Each chosen critic's good-vs-bad accuracy beside a control's on the same labelled candidates, paired by "
        "state: shorter is better, longer is better, and the base policy's own mean log-prob of the action "
        "(recorded when it sampled it). A critic no better than a length scorer on every combination, and no better "
        "than chance on the length-matched ones, has learnt length.",
        "",
        "| critic | rate | control | control (%) | critic − control (points) | length-matched: control (%) "
        "| critic − control |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in controls:
        e, m = c.accuracy, c.accuracy.get("length_matched") or {}
        matched = [cell(m["b"], ".1f"), cell(m["a_minus_b"], "+.1f")] if m else ["—", "—"]
        cells = [f"`{c.critic}`", f"{c.rate:g}", c.control, cell(e["b"], ".1f"), cell(e["a_minus_b"], "+.1f"), *matched]
        out.append(f"| {' | '.join(cells)} |")
    return "\n".join(out) + "\n"


def render_gate(gate: dict) -> str:
    """The gate's verdict as a markdown section."""
    if gate["rate"] is None:
        reading = "no rate was chosen for both critics"
    elif gate["a_minus_b"] is None:
        reading = f"at {gate['rate']:g} the two critics have no length-matched comparison"
    else:
        e = gate["a_minus_b"]
        reading = (
            f"at {gate['rate']:g}, `{gate['a']}` − `{gate['b']}` on the length-matched combinations is "
            f"{100 * e['value']:+.1f} [{100 * e['low']:+.1f}, {100 * e['high']:+.1f}] points over {e['states']} states"
        )
    verdict = "**passed**: the policies are trained" if gate["passed"] else "**failed**: no policy is trained"
    return (
        f"\n## The gate\n\nPolicies are trained only if, at the chosen rate, the critic with the training-time "
        f"information beats the one without on length-matched pairs, the paired interval above 0: {reading}. "
        f"The gate {verdict}.\n"
    )


def write_critic_table(
    domain: str,
    trials: list[CriticTrial],
    best: dict[str, CriticTrial],
    out: Path,
    pairs: list[CriticPair] = (),
    rule: CriticRule | None = None,
    controls: list[ControlPair] = (),
    gate: dict | None = None,
) -> str:
    """<out>/<domain>-critics.{md,json}: every critic trial, the choice (`sweetflow experiment --tuned` reads it)
    and the critics' paired comparisons (`pair_critics`); with a drift-bounded `rule`, the rule, the chosen critics
    against the controls and the gate. Returns the markdown."""
    markdown = (
        render_critics(domain, trials, best, rule)
        + render_pairs(list(pairs), best)
        + render_controls(list(controls))
        + (render_gate(gate) if gate else "")
    )
    more = {"pairs": [asdict(p) for p in pairs]}
    if rule:
        more |= {"rule": asdict(rule), "controls": [asdict(c) for c in controls], "gate": gate}
    _write(table_path(out, domain, critics=True), markdown, "critics", trials, best, **more)
    return markdown
