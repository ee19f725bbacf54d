"""Equal-budget tuning on the validation split, with DVC's own experiments.

Every tuned policy gets the same grid (learning rate × epochs; the preference methods also the
NLL term: none, 0.01 on the responses, and the official actor's 0.01 over the whole dialogue). Each
configuration is one DVC experiment whose only target is
`validate@<domain>-<policy>`: it retrains that policy and evaluates it on the validation tasks,
never on the test tasks. The choice per policy is the configuration with the best validation goal
metric (backend: success rate), ties broken by the other headline metric, then by fewer epochs.

    sweetflow tune queue --domain backend    # one `dvc exp run --queue` per configuration
    dvc queue start -j 1                     # run them; `dvc queue status` to follow
    sweetflow tune run --domain backend      # or: run each at once, in the workspace
    sweetflow tune table --domain backend    # reports/tuning/<domain>.{md,json}: every run and the choice

With `--overlay configs/experiments/<name>.yaml` every configuration runs on that experiment's
values, its experiment's name ends in `-on-<name>`, and `tune table --overlay` reads those only.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from sweetflow.core import paths
from sweetflow.core.errors import InputError

LEARNING_RATES = (1e-4, 1e-3)
EPOCHS = (1, 4)
# The preference methods only (RFT has no preference term to mix with): the settings of the NLL term.
OFFICIAL_NLL = {"nll_coef": 0.01, "nll_span": "dialogue", "nll_mean": "sequence"}
NLL_SETTINGS = ({"nll_coef": 0.0}, {"nll_coef": 0.01}, OFFICIAL_NLL)
NLL_KEYS = ("nll_coef", "nll_span", "nll_mean")
DEFAULT_NLL = {"nll_span": "response", "nll_mean": "token"}  # what experiments without those keys ran
PREFIX = "tune"
ON = "on-"  # names a tuning on an experiment file: tune-backend-rft-lr1e-04-ep1-on-smollm2


def configurations(
    method: str, nll: bool = True, learning_rates: tuple[float, ...] = LEARNING_RATES, epochs: tuple[int, ...] = EPOCHS
) -> list[dict]:
    """The grid one policy is tuned over; the same for every policy of the same loss. Without `nll`,
    learning rate × epochs only, for every method alike (the NLL term stays as params.yaml has it)."""
    grid = [{"learning_rate": lr, "epochs": e} for lr in learning_rates for e in epochs]
    if method == "rft" or not nll:
        return grid
    return [{**g, **nll} for g in grid for nll in NLL_SETTINGS]


def experiment_name(domain: str, policy: str, config: dict, on: str | None = None) -> str:
    """A git-ref-safe name that says what the experiment tried, and `on` which experiment file (its
    stem): the same configuration tuned on two experiments of one commit makes two experiments."""
    lr = config["learning_rate"]
    rate = f"{lr:.0e}" if float(f"{lr:.0e}") == lr else repr(lr)  # 1e-04 as before; 2.5e-05 not as 2e-05
    parts = [PREFIX, domain, policy, f"lr{rate}", f"ep{config['epochs']}"]
    if "nll_coef" in config:
        parts.append(f"nll{config['nll_coef']:g}")
    if config.get("nll_span") == "dialogue":
        parts.append(f"dialogue-{config['nll_mean']}")
    if on:
        parts.append(f"{ON}{on}")
    return _ref_safe("-".join(parts))


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
    sets = [arg for key, value in config.items() for arg in ("-S", f"policies.{policy}.{key}={value}")]
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
    nll: bool = True,
    root: Path = Path("."),
    queued: bool = True,
    learning_rates: tuple[float, ...] = LEARNING_RATES,
    epochs: tuple[int, ...] = EPOCHS,
    on: str | None = None,
) -> list[str]:
    """Queue every configuration of every policy (name → method), each on `overlay` (`-S` arguments
    of the experiment file `on`); returns the experiment names. Not `queued`: run them one after
    another in the workspace instead, without a temporary copy of the project each. Either way every
    stage a configuration ran goes to DVC's run cache (the queue's temporary copies share the
    workspace's cache), so the final run with the chosen configurations restores their policies and
    validations instead of training them again. A configuration whose experiment this commit already
    has is skipped, so that an interrupted tuning resumes where it stopped."""
    done = recorded(root)
    names = []
    for policy, method in policies.items():
        for config in configurations(method, nll, learning_rates, epochs):
            name = experiment_name(domain, policy, config, on)
            if name in done:
                print(f"{name}: this commit has it already, skipped (`dvc exp remove {name}` runs it again)")
            else:
                subprocess.run(queue_command(domain, policy, config, overlay, queued, on), cwd=root, check=True)
            names.append(name)
    return names


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
        metrics = _git_json(root, row["rev"], paths.validation_metrics(domain, policy))
        if metrics is None:
            continue  # failed before validating
        keys = ("learning_rate", "epochs", *NLL_KEYS)
        config = {k: row[f"policies.{policy}.{k}"] for k in keys if row.get(f"policies.{policy}.{k}") is not None}
        config["epochs"] = int(config["epochs"])  # DVC reports every number as it parsed it, 4 as 4.0
        if method_of.get(policy) == "rft":
            for k in NLL_KEYS:  # RFT has no preference term: its NLL settings are not tuned
                config.pop(k, None)
        else:
            config = {**DEFAULT_NLL, **config}
        trials.append(Trial(policy, name, config, metrics))
    if not trials:
        raise InputError(
            f"no finished experiment named {PREFIX}-{domain}-…{f'-{ON}{on}' if on else ''}: run `sweetflow tune queue` "
            "and the queue first"
        )
    return trials


def _policy_of(name: str, domain: str) -> str:
    rest = name[len(f"{PREFIX}-{domain}-") :]
    return rest[: rest.index("-lr")]


def _git_json(root: Path, rev: str, path: str) -> dict | None:
    shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=root, capture_output=True, text=True)
    return json.loads(shown.stdout) if shown.returncode == 0 else None


def render(domain: str, trials: list[Trial], best: dict[str, Trial], headline: tuple[str, str]) -> str:
    """The markdown table of every configuration tried, the chosen ones marked."""
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
        f"(means over seeds, %). Chosen: the best {b}, then {a}, then fewer epochs.",
        "",
        f"| policy | learning rate | epochs | nll_coef | {a} (%) | {b} (%) | chosen |",
        "|---|---|---|---|---|---|---|",
    ]

    def order(t: Trial) -> tuple:
        c = t.config
        return t.policy, c["learning_rate"], c["epochs"], c.get("nll_coef", -1), c.get("nll_span", "")

    for t in sorted(trials, key=order):
        c = t.config
        nll = "—" if "nll_coef" not in c else f"{c['nll_coef']:g}"
        if c.get("nll_span") == "dialogue":
            nll += f" (dialogue, per {c['nll_mean']})"
        mark = "**yes**" if best[t.policy].experiment == t.experiment else ""
        out.append(
            f"| `{t.policy}` | {c['learning_rate']:g} | {c['epochs']} | {nll} "
            f"| {t.metrics[a] * 100:.1f} | {t.metrics[b] * 100:.1f} | {mark} |"
        )
    return "\n".join(out) + "\n"


def describe(config: dict) -> str:
    """A configuration as params.yaml values, e.g. `learning_rate: 0.001, epochs: 1, nll_span: response`."""
    return ", ".join(f"{k}: {v:g}" if isinstance(v, float | int) else f"{k}: {v}" for k, v in config.items())


def write_table(domain: str, trials: list[Trial], best: dict[str, Trial], headline: tuple[str, str], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{domain}.md").write_text(render(domain, trials, best, headline))
    data = {"trials": [asdict(t) for t in trials], "chosen": {p: asdict(t) for p, t in best.items()}}
    (out / f"{domain}.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_choices(table: Path | str) -> dict[str, dict]:
    """{policy: configuration} that a table of `write_table` chose."""
    table = Path(table)
    if not table.is_file():
        raise FileNotFoundError(f"{table}: no such tuning table (`sweetflow tune table --out` writes it)")
    try:
        return {policy: trial["config"] for policy, trial in json.loads(table.read_text())["chosen"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{table}: not a tuning table (`chosen`: {{policy: {{config: ...}}}}): {e!r}") from None
