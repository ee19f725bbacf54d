"""An experiment run a point at a time, for a run longer than a machine lasts.

A point is one method at one training seed: a policy's training, its validation and its test evaluation
(`policy`, `validate`, `evaluate_policy` with `seeds: [k]`), or the base model's test evaluation
(`evaluate_base`). Each point runs as its own DVC experiment, `<file>-<method>-seed<k>`, and as soon as it
finishes its results are written into a folder git keeps:

    RECORD/points/<method>/seed<k>.json                 the seed's test metrics, a policy's training summary
                                                        and validation metrics, the experiment, its commit
                                                        and its CPU
    RECORD/outcomes/<method>/trajectories-seed<k>.parquet  each test episode's outcome, no dialogue: what
                                                        the paired intervals read
    RECORD/points.md, points.json                       every method over the seeds it has so far, and the
                                                        paired intervals of the comparisons (tasks and seeds
                                                        resampled: sweetflow/report/intervals.py)

DVC's run cache dies with the machine; the record does not. `sweetflow experiment FILE --points RECORD`
runs the points the record lacks, seed by seed, so a run carried on across machines trains and evaluates
only what no machine finished, and a finished point costs a commit. A seed's training and evaluation do not
depend on the other seeds (each seed trains from the base model with its own generator, and each seed's
episodes have their own), so the points of one seed are what the same experiment with `seeds: [0, 1, 2]`
computes for that seed. Points of different machines differ by their CPUs' float kernels (and, where the
shared stages ran again, by those stages' outputs): each point names its CPU.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl
import yaml

from sweetflow.core.artifacts import code_version, cpu, read_run_record, write_json
from sweetflow.core.definition import definition
from sweetflow.core.errors import InputError
from sweetflow.core.tables import SEED_TRAJECTORIES
from sweetflow.domain_report import get_domain_report
from sweetflow.params import Params
from sweetflow.report.intervals import COMPARISONS, RESAMPLED, paired_bootstrap, read_seed_task_means
from sweetflow.report.read import WARM_STARTED, label, read_base_policy

BASE = "zero_shot"  # the base model's point: the paper's zero-shot row
LOCK = "dvc.lock"
POINTS, OUTCOMES, TABLE = "points", "outcomes", "points"
# The decision rule committed before the faithful run's first test task was read (docs/real-model.md): the
# first comparison decides, once both methods have every planned seed; an interval inside ± this margin (in
# fractions of the episode measure) is equivalence.
EQUIVALENCE_MARGIN = 0.05
# What an episode's outcome keeps of its trajectory: enough for every interval and failure count, ~11 KB a seed.
OUTCOME_COLUMNS = ("task_id", "sample", "seed", "success", "reward", "n_turns", "ended_by")


@dataclass(frozen=True)
class Point:
    method: str  # a policy of params.yaml, or BASE
    seed: int

    def __str__(self) -> str:
        return f"{self.method} seed {self.seed}"

    def experiment(self, stem: str) -> str:
        """The DVC experiment's name: the experiment file's stem, the method and the seed."""
        return f"{stem}-{self.method}-seed{self.seed}"

    def targets(self, domain: str) -> list[str]:
        """The stages that make the point; DVC runs what they depend on first."""
        if self.method == BASE:
            return [f"evaluate_base@{domain}"]
        return [f"validate@{domain}-{self.method}", f"evaluate_policy@{domain}-{self.method}"]


def plan(params: Params, methods: list[str] | None = None) -> list[Point]:
    """The points of `methods` (default: the base model, then each policy as params.yaml lists them), seed by seed
    in that order, so that a run cut short holds whole seeds of those methods rather than every seed of a few."""
    known = (BASE, *params.policies)
    unknown = sorted(set(methods or ()) - set(known))
    if unknown:
        raise InputError(f"--methods: no policy {unknown} in the params; known: {list(known)}")
    return [Point(method, seed) for seed in params.seeds for method in (methods or known)]


def point_file(record: Path, point: Point) -> Path:
    return record / POINTS / point.method / f"seed{point.seed}.json"


def missing(record: Path, points: list[Point]) -> list[Point]:
    """The points `record` does not hold (a point's file is written last, so one that exists is whole)."""
    return [p for p in points if not point_file(record, p).is_file()]


def write_point(record: Path, domain: str, point: Point, experiment: str, precision: str) -> Path:
    """The finished point's results, read from the workspace (the working directory) where its experiment just
    ran, into `record`: everything is read first, then its outcomes are written, then its point file, so that a
    point file is never there without its outcomes."""
    stage, item = ("evaluate_base", None) if point.method == BASE else ("evaluate_policy", point.method)
    test = definition(stage, domain, item)
    trajectories = Path(test.out) / SEED_TRAJECTORIES.format(seed=point.seed)
    try:
        frame = pl.read_parquet(trajectories, columns=list(OUTCOME_COLUMNS))
    except (FileNotFoundError, pl.exceptions.ColumnNotFoundError) as e:
        raise InputError(f"{trajectories}: not the finished evaluation of {point} ({e})") from None
    data = {
        "method": point.method,
        "seed": point.seed,
        "experiment": experiment,
        "code": code_version(),  # the commit it ran on: with the experiment file, tuning tables and seed, its params
        "test": _seed_metrics(Path(test.metrics), point),
        "ran_on": {**cpu(), "kernels": _kernels(point.targets(domain)[-1]), "precision": precision},
        "inputs": upstream_outputs(Path(LOCK), point.targets(domain)),
    }
    if point.method == BASE:  # the paper's zero-shot is the base as shipped; say when it is not
        base = read_base_policy(domain)
        data["warm_started"] = base is not None and base.warm_started
    else:  # what its training learnt (its losses), and how it did on the validation tasks
        data["training"] = _seed_metrics(Path(definition("policy", domain, point.method).metrics), point)
        data["validation"] = _seed_metrics(Path(definition("validate", domain, point.method).metrics), point)
    outcomes = record / OUTCOMES / point.method / trajectories.name
    outcomes.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(outcomes)
    path = point_file(record, point)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, data)
    return path


def upstream_outputs(lock: Path, stages: list[str]) -> dict[str, str]:
    """Every output the `stages` read, directly or through the stages before them, with its hash from `lock` (the
    workspace's dvc.lock after the point's experiment): the tasks, rollouts, candidates, critic, step pairs and base
    model a point was computed from, so that points of different machines can be told to share them or not."""
    try:
        entries = yaml.safe_load(lock.read_text())["stages"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as e:
        raise InputError(f"{lock}: not a DVC lock file with stages ({e})") from None
    made_by = {out["path"]: name for name, entry in entries.items() for out in entry.get("outs", [])}
    found: dict[str, str] = {}
    todo = [name for name in stages if name in entries]
    while todo:
        for dep in entries[todo.pop()].get("deps", []):
            if dep["path"] in made_by and dep["path"] not in found:
                found[dep["path"]] = dep.get("md5") or dep.get("hash") or ""
                todo.append(made_by[dep["path"]])
    return dict(sorted(found.items()))


def _kernels(stage: str) -> str | None:
    """The float kernels torch ran `stage` with, from its run record (None where it has none): with the CPU
    they decide the bytes; an AVX-512 machine told to use AVX2 ones (`ATEN_CPU_CAPABILITY`) computes as AVX2 ones."""
    machine = (read_run_record(stage) or {}).get("machine") or {}
    return (machine.get("kernels") or {}).get("aten_kernels")


def _seed_metrics(path: Path, point: Point) -> dict:
    try:
        seeds = json.loads(path.read_text())["seeds"]
        return seeds[str(point.seed)]
    except (FileNotFoundError, json.JSONDecodeError, KeyError, TypeError):
        raise InputError(f"{path}: field 'seeds.{point.seed}': no metrics of {point} (did its stage finish?)") from None


def read_points(record: Path) -> dict[str, dict[int, dict]]:
    """Every point `record` holds, {method: {seed: point}}."""
    found: dict[str, dict[int, dict]] = {BASE: {}}  # the base's row first, as in the report
    for path in sorted((record / POINTS).glob("*/seed*.json")):
        try:
            data = json.loads(path.read_text())
            found.setdefault(data["method"], {})[int(data["seed"])] = data
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise InputError(f"{path}: not a point file ({e})") from None
    return {method: by_seed for method, by_seed in found.items() if by_seed}


def outcome_files(record: Path, method: str, seeds: set[int]) -> list[Path]:
    return [record / OUTCOMES / method / SEED_TRAJECTORIES.format(seed=seed) for seed in sorted(seeds)]


def decide(low: float, high: float, margin: float = EQUIVALENCE_MARGIN) -> str:
    """The rule's reading of an interval of A − B: A better or worse if it excludes 0, else equivalent if it lies
    within ± `margin`, else the two are not told apart."""
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    return "equivalent" if -margin <= low and high <= margin else "not told apart"


def ordered_comparisons(record: Path, decide: tuple[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """The comparisons of a record, the one its decision rule reads first: `decide`, else the one the record's
    points.json already decides on (a re-render keeps each record's rule), else `COMPARISONS`' first."""
    if decide is None:
        try:
            decision = json.loads((record / f"{TABLE}.json").read_text())["decision"]
            decide = (decision["a"], decision["b"])
        except (FileNotFoundError, json.JSONDecodeError, KeyError, TypeError):
            decide = COMPARISONS[0]
    return (tuple(decide), *(c for c in COMPARISONS if c != tuple(decide)))


def summary(record: Path, domain: str, seeds: list[int], comparisons=COMPARISONS) -> dict:
    """Each method's headline metrics over the seeds it has (their mean, and each seed's), where it ran, each
    comparison A − B of `comparisons` both methods have: the paired interval of the domain's episode measure (the
    backend's success) over the seeds both have, resampling tasks and each method's seeds, as the report's; and
    the decision: the first comparison read by `decide` once both its methods have all of `seeds`, else pending."""
    report = get_domain_report(domain)
    headline, column = report.headline, report.episode_column
    found = read_points(record)
    methods = {}
    for method, by_seed in found.items():
        have = sorted(by_seed)
        methods[method] = {
            "seeds": have,
            **{key: sum(by_seed[s]["test"][key] for s in have) / len(have) for key in headline},
            "per_seed": {str(s): {key: by_seed[s]["test"][key] for key in headline} for s in have},
            "ran_on": sorted({_where(by_seed[s]["ran_on"]) for s in have}),
            "label": WARM_STARTED if any(by_seed[s].get("warm_started") for s in have) else label(method),
        }
    compared = []
    for a, b in comparisons:
        if a not in found or b not in found:
            continue
        common = set(found[a]) & set(found[b])
        if not common:
            continue
        means = (read_seed_task_means(outcome_files(record, m, common), column) for m in (a, b))
        interval = paired_bootstrap(*means, (a, b))
        compared.append({**asdict(interval), "measure": report.episode_measure, "seeds": sorted(common)})
    a, b = comparisons[0]
    decisive = next((c for c in compared if (c["a"], c["b"]) == (a, b) and c["seeds"] == sorted(seeds)), None)
    decision = {"a": a, "b": b, "seeds": sorted(seeds), "margin": EQUIVALENCE_MARGIN}
    decision["verdict"] = decide(decisive["low"], decisive["high"]) if decisive else "pending"
    return {"methods": methods, "comparisons": compared, "decision": decision}


def _where(ran_on: dict) -> str:
    cpu_type = f" (family {ran_on['family']}, model {ran_on['model']})" if ran_on.get("family") else ""
    kernels = f", {ran_on['kernels']} kernels" if ran_on.get("kernels") else ""
    return f"{ran_on['cpu']}{cpu_type}{kernels}, {ran_on['precision']}"


def render(data: dict, domain: str) -> str:
    """points.md: the methods' table and the comparisons' intervals, in points of percentage."""
    headline = get_domain_report(domain).headline
    lines = [
        "# Points so far",
        "",
        "Written by `sweetflow experiment --points` after each point (sweetflow/points.py): each method on the test "
        "tasks at the training seeds it has so far, the mean over them, and where each ran.",
        "",
        f"| method | seeds | {' | '.join(headline)} | per seed | ran on |",
        f"|---|---|{'---|' * len(headline)}---|---|",
    ]
    for method, row in data["methods"].items():
        means = " | ".join(f"{100 * row[key]:.1f}" for key in headline)
        per_seed = "; ".join(
            f"{seed}: " + ", ".join(f"{100 * values[key]:.1f}" for key in headline)
            for seed, values in row["per_seed"].items()
        )
        seeds = ", ".join(map(str, row["seeds"]))
        lines.append(f"| {row['label']} | {seeds} | {means} | {per_seed} | {'; '.join(row['ran_on'])} |")
    if data["comparisons"]:
        lines += [
            "",
            "A − B over the seeds both have (each method's mean over its seeds, paired by task), with its 95% "
            f"percentile bootstrap interval resampling {RESAMPLED} (sweetflow/report/intervals.py):",
            "",
            "| A − B | measure | seeds | difference | interval | tasks |",
            "|---|---|---|---|---|---|",
        ]
        for c in data["comparisons"]:
            a, b = (data["methods"][m]["label"] for m in (c["a"], c["b"]))
            lines.append(
                f"| {a} − {b} | {c['measure']} | {', '.join(map(str, c['seeds']))} | "
                f"{100 * c['difference']:+.1f} | [{100 * c['low']:+.1f}, {100 * c['high']:+.1f}] | {c['tasks']} |"
            )
    decision = data["decision"]
    a, b = (label(m) for m in (decision["a"], decision["b"]))
    margin = f"{100 * decision['margin']:.0f}"
    reading = {
        "pending": f"pending until both have seeds {', '.join(map(str, decision['seeds']))}",
        "better": f"**{a} is better than {b}**",
        "worse": f"**{a} is worse than {b}**",
        "equivalent": f"**{a} and {b} are equivalent within ±{margin} points**",
        "not told apart": f"**{a} and {b} are not told apart**",
    }[decision["verdict"]]
    lines += [
        "",
        f"The decision rule (docs/real-model.md), on {a} − {b}'s interval at every seed: {reading}. (Better or "
        f"worse when the interval excludes 0, equivalent when it lies inside ±{margin} points, otherwise not told "
        "apart.)",
    ]
    return "\n".join(lines) + "\n"


def write_summary(record: Path, domain: str, seeds: list[int], decide: tuple[str, str] | None = None) -> dict:
    """points.json and points.md of `record`, the decision on `decide` (`ordered_comparisons`)."""
    data = summary(record, domain, seeds, ordered_comparisons(record, decide))
    write_json(record / f"{TABLE}.json", data)
    (record / f"{TABLE}.md").write_text(render(data, domain))
    return data
