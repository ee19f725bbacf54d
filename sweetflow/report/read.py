"""Reading what the evaluations and stages wrote, where their entries in dvc.yaml put it, and checking the paper's
ordering. Every input may be missing (stages not run yet); a missing method becomes a "not run" row
and a missing curve a missing line, so the report can be written at any point of the pipeline.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl

from sweetflow.core.definition import definition, outputs_of
from sweetflow.core.errors import InputError
from sweetflow.core.tables import EPISODE_FILES
from sweetflow.domain_report import DomainReport, get_domain_report
from sweetflow.report.behaviour import behaviour_rows
from sweetflow.report.intervals import Interval, method_intervals

# Rows of Table 2 in the paper's order; trained methods not listed here go after these.
TRAINED = {
    "zero_shot": "Zero-shot",
    "rft": "Rejection fine-tuning",
    "mtdpo": "Multi-turn DPO",
    "sweet": "SWEET-RL",
}


SCRIPTED = {
    "expert": "Expert (scripted, upper bound)",
    "no_ask": "No questions (scripted, lower bound)",
}


LABELS = {**TRAINED, "sweet_no_info": "SWEET-RL without training-time information", **SCRIPTED}
# The paper's zero-shot is the base model as shipped; a base warm-started on demonstrations is not that.
WARM_STARTED = "Base policy, warm-started (sampled as the zero-shot)"


# The reference solutions scored as answers: a check of the benchmark, not a method.
REFERENCE = "reference"


NOT_RUN = "not run"


@dataclass(frozen=True)
class BasePolicy:
    """What the trained methods start from, as the base_model stage recorded it."""

    parameters: int
    warm_started: bool  # trained on demonstrations; else adopted as is (the paper's zero-shot)

    def describe(self) -> str:
        size = f"{self.parameters / 1e6:.2f}M" if self.parameters < 1e8 else f"{self.parameters / 1e6:.0f}M"
        how = "warm-started on scripted demonstrations" if self.warm_started else "as shipped"
        return f"a {size}-parameter base policy, {how}"


def read_base_policy(domain: str) -> BasePolicy | None:
    """From the base_model stage's metrics; None where the domain has no base model."""
    path = Path(definition("base_model", domain, None).metrics)
    if not path.is_file():
        return None
    data = read_json(path)
    parameters = data.get("parameters", data.get("data", {}).get("parameters"))
    if not isinstance(parameters, int):
        raise InputError(f"{path}: field 'parameters' (or data.parameters) must be an integer")
    return BasePolicy(parameters, data.get("steps", 0) > 0)


@dataclass(frozen=True)
class Row:
    """One method of a domain's table; means and stds are fractions, stds None for a single run."""

    method: str
    label: str
    ran: bool
    means: tuple[float | None, float | None] = (None, None)
    stds: tuple[float | None, float | None] = (None, None)
    n_seeds: int = 0
    paper: tuple[float, float] | None = None


def read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _number(data: dict, key: str, path: Path) -> float:
    if key not in data:
        raise InputError(f"{path}: field {key!r} is missing")
    value = data[key]
    # bool is an int subclass; a true/false here is a bug upstream, not a rate.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{path}: field {key!r} must be a finite number, got {value!r}")
    return float(value)


def method_row(method: str, data: dict, path: Path, report: DomainReport) -> Row:
    """A Row from one metrics.json: a single run, or a checkpoint's means over seeds (has "seeds")."""
    means = tuple(_number(data, key, path) for key in report.headline)
    if "seeds" not in data:
        return Row(method, label(method), True, means, (None, None), 1, report.paper.get(method))
    if not isinstance(data["seeds"], dict) or not data["seeds"]:
        raise InputError(f"{path}: field 'seeds' must be a non-empty mapping of seed to metrics")
    stds = tuple(_number(data, f"{key}_std", path) for key in report.headline)
    return Row(method, label(method), True, means, stds, len(data["seeds"]), report.paper.get(method))


def label(method: str) -> str:
    return LABELS.get(method, method)


# The stages that evaluate a method, each writing its metrics where dvc.yaml says: the reference
# solutions, the scripted agents, the base model and every trained policy.
METHOD_STAGES = ("score_references", "evaluate", "evaluate_base", "evaluate_policy")


def method_metrics(domain: str) -> dict[str, Path]:
    """The metrics file of every method of `domain` evaluated so far, by method name, sorted."""
    files = {method: path for kind in METHOD_STAGES for method, path in outputs_of(kind, domain, "metrics").items()}
    return dict(sorted(files.items()))


def read_methods(domain: str, report: DomainReport) -> dict[str, Row]:
    """A row for every method of `domain` evaluated so far, by method name."""
    return {
        method: method_row(method, read_json(path), path, report) for method, path in method_metrics(domain).items()
    }


def table_rows(methods: dict[str, Row], report: DomainReport, trained: bool = True) -> list[Row]:
    """Table 2's rows: the paper's methods (present or not, when the domain is trained), other
    trained methods, the scripted bounds (present or not), then any other single-run agent; the
    reference is left out."""
    others = sorted(m for m in methods if m not in TRAINED and m not in SCRIPTED and m != REFERENCE)
    paper_rows = list(TRAINED) if trained else [m for m in TRAINED if m in methods]
    order = (
        paper_rows
        + [m for m in others if methods[m].n_seeds and methods[m].stds[0] is not None]
        + list(SCRIPTED)
        + [m for m in others if methods[m].stds[0] is None]
    )
    return [methods.get(m) or Row(m, label(m), False, paper=report.paper.get(m)) for m in order]


CRITIC_FIELDS = {  # stage -> (row field, metrics key) of its metrics
    "critic": (
        ("pairs", "train_pairs"),
        ("heldout_accuracy", "heldout_accuracy"),
        ("nll_initial", "eval_nll_initial"),
        ("nll_final", "eval_nll_final"),
        ("kl_to_reference", "heldout_kl_to_reference"),
    ),
    "critic_check": (("ranking_agreement", "ranking_agreement"), ("states_decided", "states_decided")),
    "step_pairs": (
        ("score_length_corr", "score_length_corr"),
        ("chosen_tokens", "chosen_tokens"),
        ("rejected_tokens", "rejected_tokens"),
    ),
    "critic_quality": (
        ("good_vs_bad_accuracy", "good_vs_bad_accuracy"),
        ("informative_pair_share", "informative_pair_share"),
        ("inverted_pair_share", "inverted_pair_share"),
    ),
}


def read_critics(domain: str) -> list[dict]:
    """Per critic of `domain`, the optional numbers of its stages' metrics (CRITIC_FIELDS), where
    dvc.yaml puts them: training pairs, held-out pair accuracy and drift as a language model, ranking
    agreement with played-out outcomes, good-vs-bad accuracy, its length bias and the make-up of its step
    pairs; None where absent."""
    names = sorted({name for kind in CRITIC_FIELDS for name in outputs_of(kind, domain, "metrics")})
    rows = []
    for name in names:
        row = {"critic": name} | {field: None for fields in CRITIC_FIELDS.values() for field, _ in fields}
        for kind, fields in CRITIC_FIELDS.items():
            path = Path(definition(kind, domain, name).metrics)
            if path.is_file():
                data = read_json(path)
                for field, key in fields:
                    if data.get(key) is not None:
                        row[field] = _number(data, key, path)
        rows.append(row)
    return rows


def read_curve(path: Path) -> tuple[list[float], list[float]]:
    """A DVCLive TSV (`step<TAB>name` header, one row per logged step) as (steps, values)."""
    lines = path.read_text().splitlines()
    if not lines or not lines[0].startswith("step\t"):
        raise InputError(f"{path}: expected a DVCLive TSV with a 'step<TAB><name>' header")
    steps, values = [], []
    for i, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            step, value = line.split("\t")[:2]
            steps.append(float(step))
            values.append(float(value))
        except ValueError:
            raise InputError(f"{path}: line {i}: expected '<step>\\t<value>', got {line!r}") from None
    return steps, values


def find_curves(domain: str, prefix: str = "") -> list[tuple[str, list[tuple[str, Path]]]]:
    """Panels of training curves as (title, [(line label, TSV path)]) of `domain`'s base model,
    critics and policies, from the plots their entries declare, only for files present."""
    panels = []

    def panel(title: str, lines: list[tuple[str, Path]]) -> None:
        present = [(name, p) for name, p in lines if p.is_file()]
        if present:
            panels.append((prefix + title, present))

    def train_eval(metrics: Path) -> list[tuple[str, Path]]:
        return [("train", metrics / "train" / "loss.tsv"), ("eval", metrics / "eval" / "loss.tsv")]

    panel("base policy (SFT)", train_eval(Path(definition("base_model", domain, None).plots)))
    for name, plots in outputs_of("critic", domain, "plots").items():
        panel(f"critic {name}", train_eval(plots))
    for name, plots in outputs_of("policy", domain, "plots").items():
        seeds = [s for s in _subdirs(plots) if s.name.startswith("seed") and s.name[4:].isdigit()]
        seeds.sort(key=lambda s: int(s.name[4:]))
        panel(
            f"policy {name}", [(s.name.replace("seed", "seed "), s / "metrics" / "train" / "loss.tsv") for s in seeds]
        )
    return panels


def _subdirs(path: Path) -> list[Path]:
    return sorted(d for d in path.iterdir() if d.is_dir()) if path.is_dir() else []


def goal_check(rows: list[Row], report: DomainReport) -> dict:
    """Does SWEET-RL > MT-DPO > RFT ≥ zero-shot hold on the domain's goal metric (backend: success;
    frontend: win rate), and is the SWEET-RL − MT-DPO gap larger than the seed spread (the larger
    of the two methods' sample stds)?"""
    k = report.goal_index
    ran = {r.method: r for r in rows if r.ran}
    needed = ["sweet", "mtdpo", "rft", "zero_shot"]
    missing = [m for m in needed if m not in ran]
    if missing:
        return {"made": False, "missing": missing, "metric": report.headline[k]}
    s = {m: ran[m].means[k] for m in needed}
    links = [
        ("sweet", "mtdpo", s["sweet"] > s["mtdpo"]),
        ("mtdpo", "rft", s["mtdpo"] > s["rft"]),
        ("rft", "zero_shot", s["rft"] >= s["zero_shot"]),
    ]
    # A spread needs at least two seeds of both methods; a single run has no std.
    multi_seed = all(ran[m].n_seeds >= 2 for m in ("sweet", "mtdpo"))
    spread = max(ran["sweet"].stds[k], ran["mtdpo"].stds[k]) if multi_seed else None
    gap = s["sweet"] - s["mtdpo"]
    return {
        "made": True,
        "metric": report.headline[k],
        "values": s,
        "ordering_holds": all(ok for _, _, ok in links),
        "ordering_fails_at": [f"{a} vs {b}" for a, b, ok in links if not ok],
        "gap": gap,
        "spread": spread,
        "gap_exceeds_spread": None if spread is None else gap > spread,
    }


@dataclass
class DomainResults:
    """Everything the report shows for one domain."""

    report: DomainReport
    rows: list[Row]
    check: dict
    reference: Row | None
    critics: list[dict]
    intervals: list[Interval]
    behaviour: list[dict]  # per trained method: movement from the base policy, failure shares
    base: BasePolicy | None = None

    @property
    def domain(self) -> str:
        return self.report.name

    def label(self, method: str) -> str:
        """A method's name in this domain's tables: the zero-shot row says when its base was warm-started."""
        if method == "zero_shot" and self.base is not None and self.base.warm_started:
            return WARM_STARTED
        return label(method)


def episodes_have(evaluations: Path, column: str) -> bool:
    """Whether the evaluated episodes record `column` (every method's are scored alike in a run)."""
    files = sorted(evaluations.glob(f"*/{EPISODE_FILES}"))
    return bool(files) and column in pl.read_parquet_schema(files[0])


def read_domain(evaluations: Path, domain: str, trained: bool, test_tasks: Path | None = None) -> DomainResults:
    """A domain's results from its evaluations' metrics and, for the paired intervals,
    its episodes under `evaluations` (data/<domain>/evaluations) and, for paired wins, the
    reference scores of its `test_tasks` table."""
    report = get_domain_report(domain)
    methods = read_methods(domain, report)
    rows = table_rows(methods, report, trained)
    critics = read_critics(domain)
    intervals = method_intervals(evaluations, report.episode_column, measure=report.episode_measure)
    if report.paired_wins and intervals and test_tasks is not None and test_tasks.is_file():
        if episodes_have(evaluations, "win"):  # each episode's win, by the metric the evaluations chose
            intervals += method_intervals(evaluations, "win", measure="win rate")
        else:  # episodes scored before the design metric: wins of the reward against the reference's
            frame = pl.read_parquet(test_tasks, columns=["task_id", "reference_similarity"])
            reference = dict(zip(frame["task_id"].to_list(), frame["reference_similarity"].to_list()))
            intervals += method_intervals(evaluations, report.episode_column, measure="win rate", reference=reference)
    metrics = {m: read_json(path) for m, path in method_metrics(domain).items()}
    behaviour = behaviour_rows(evaluations, {m: metrics[m] for m in [*TRAINED, *sorted(metrics)] if m in metrics})
    base = read_base_policy(domain)
    if base is not None and base.warm_started:
        rows = [replace(row, label=WARM_STARTED) if row.method == "zero_shot" else row for row in rows]
    check = goal_check(rows, report)
    return DomainResults(report, rows, check, methods.get(REFERENCE), critics, intervals, behaviour, base)
