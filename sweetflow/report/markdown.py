"""The report as markdown (`reports/results.md`) and as data (`results.json`): the paper's Table 2
rebuilt from our evaluations, domain by domain, with the check of the paper's ordering."""

from __future__ import annotations

from dataclasses import asdict

from sweetflow.domain_report import DomainReport
from sweetflow.report.intervals import RESAMPLED
from sweetflow.report.read import NOT_RUN, DomainResults, label


def goal_sentences(check: dict, report: DomainReport) -> list[str]:
    name = report.columns[report.goal_index]
    if not check["made"]:
        names = ", ".join(f"{label(m)} (`{m}`)" for m in check["missing"])
        return [f"The check cannot be made: not run yet: {names}."]
    s = {m: _pct(v) for m, v in check["values"].items()}
    chain = f"{s['sweet']} > {s['mtdpo']} > {s['rft']} ≥ {s['zero_shot']}"
    if check["ordering_holds"]:
        ordering = f"SWEET-RL > MT-DPO > RFT ≥ Zero-shot on mean {name} **holds** ({chain})."
    else:
        fails = "; ".join(" vs ".join(label(m) for m in link.split(" vs ")) for link in check["ordering_fails_at"])
        ordering = f"SWEET-RL > MT-DPO > RFT ≥ Zero-shot on mean {name} **does not hold** ({chain}; fails at: {fails})."
    gap = f"The SWEET-RL − MT-DPO gap in mean {name} is {check['gap'] * 100:.1f} points"
    if check["spread"] is None:
        spread = f"{gap}; the seed spread cannot be estimated: SWEET-RL and MT-DPO need at least two seeds each."
    else:
        verdict = "**holds**" if check["gap_exceeds_spread"] else "**does not hold**"
        spread = (
            f"{gap}; the seed spread, defined as the larger of the two methods' sample standard "
            f"deviations of {name} over seeds, is {check['spread'] * 100:.1f} points: gap > spread {verdict}."
        )
    return [ordering, spread]


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.1f}"


def cell(mean: float | None, std: float | None) -> str:
    """ "mean ± std" in % for a run over seeds, the plain value for a single run."""
    if mean is None:
        return NOT_RUN
    return _pct(mean) if std is None else f"{_pct(mean)} ± {_pct(std)}"


def render_markdown(results: list[DomainResults], seeds: list[int], plots: str) -> str:
    """results.md; `plots` is the directory of the PNGs relative to where the file is read."""
    out = [
        "# sweetflow results: SWEET-RL on ColBench",
        "",
        (
            f"Each trained policy is trained, and each checkpoint evaluated, once per seed over "
            f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} ({', '.join(map(str, seeds))}); "
            f"the scripted agents run once."
        ),
        "",
        "The paper's numbers (arXiv 2503.15478) are for Llama-3.1-8B, as shipped, on the official ColBench. "
        + "".join(f"This run's {r.domain} starts from {r.base.describe()}. " for r in results if r.base)
        + "Compare the ordering of the methods, not the values.",
        "",
    ]
    for r in results:
        out += _domain_markdown(r, seeds)
    out += [
        "## Plots",
        "",
        f"![The headline metrics per method]({plots}/methods.png)",
        "",
        f"![Training loss curves]({plots}/training_curves.png)",
        "",
    ]
    return "\n".join(out)


def _domain_markdown(r: DomainResults, seeds: list[int]) -> list[str]:
    report = r.report
    a, b = report.columns
    out = [
        f"## {report.title} (`{r.domain}`)",
        "",
        f"Numbers are {report.description}, on the test tasks.",
        "",
        f"| method | key | {a} (%) | {b} (%) | seeds | paper: {a} (%) | paper: {b} (%) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in r.rows:
        paper = row.paper or ("—", "—")
        out.append(
            f"| {row.label} | `{row.method}` | {cell(row.means[0], row.stds[0])} | {cell(row.means[1], row.stds[1])} "
            f"| {row.n_seeds if row.ran else '—'} | {paper[0]} | {paper[1]} |"
        )
    out += ["", f"GPT-4o, collaborative, in the paper: {report.gpt4o[0]} / {report.gpt4o[1]}.", ""]
    counts = sorted({row.n_seeds for row in r.rows if row.ran and row.stds[0] is not None})
    if counts and [len(seeds)] != counts:
        out += [
            f"Note: params list {len(seeds)} seeds but the evaluated checkpoints have "
            f"{', '.join(map(str, counts))}; rerun the pipeline for the current seeds.",
            "",
        ]
    if r.reference is None:
        out += ["References scored as answers (sanity check of the benchmark): not run.", ""]
    else:
        values = ", ".join(f"{_pct(v)}% {name}" for v, name in zip(r.reference.means, report.columns))
        out += [f"References scored as answers (sanity check of the benchmark, expected 100%): {values}.", ""]
    out += [f"### Goal check ({r.domain})", "", *goal_sentences(r.check, report), ""]
    if r.intervals:
        out += interval_table(r)
    if r.behaviour:
        out += behaviour_table(r)
    if r.critics:
        out += [
            f"### Critics ({r.domain})",
            "",
            "Held-out: trajectory pairs kept out of training. Good vs bad: over every (good, bad) pair of "
            "candidate actions at a state, the share the critic ranks the good one higher. Informative / "
            "inverted: step pairs whose chosen action is good and rejected one bad / the other way round. "
            "Agreement: the critic's best and worst candidate played out to the end (decided states). "
            "Length: the correlation of the critic's score with the candidate's token count within a state, "
            "and the mean tokens of its step pairs' chosen / rejected actions. Drift: the critic as a language "
            "model on the held-out pairs' turns, its NLL before → after training and its mean per-token KL "
            "divergence from its reference.",
            "",
            "| critic | trajectory pairs | held-out pair accuracy (%) | good vs bad (%) | informative pairs (%) "
            "| inverted pairs (%) | ranking agreement (%) | score vs length (r) | chosen / rejected tokens "
            "| held-out NLL | KL to reference |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in r.critics:
            pairs = "—" if c["pairs"] is None else f"{c['pairs']:.0f}"
            acc, good, info, inv = (
                ("—" if c[k] is None else _pct(c[k]))
                for k in ("heldout_accuracy", "good_vs_bad_accuracy", "informative_pair_share", "inverted_pair_share")
            )
            agree = "—" if c["ranking_agreement"] is None else _pct(c["ranking_agreement"])
            if c["states_decided"] is not None and c["ranking_agreement"] is not None:
                agree += f" ({c['states_decided']:.0f})"
            corr = "—" if c.get("score_length_corr") is None else f"{c['score_length_corr']:+.2f}"
            tokens = (
                "—"
                if c.get("chosen_tokens") is None or c.get("rejected_tokens") is None
                else f"{c['chosen_tokens']:.0f} / {c['rejected_tokens']:.0f}"
            )
            nll = (
                "—"
                if c.get("nll_initial") is None or c.get("nll_final") is None
                else f"{c['nll_initial']:.3f} → {c['nll_final']:.3f}"
            )
            kl = "—" if c.get("kl_to_reference") is None else f"{c['kl_to_reference']:.3f}"
            out.append(
                f"| `{c['critic']}` | {pairs} | {acc} | {good} | {info} | {inv} | {agree} | {corr} | {tokens} "
                f"| {nll} | {kl} |"
            )
        out.append("")
    return out


def behaviour_table(r: DomainResults) -> list[str]:
    """Movement from the base policy and what the domain adds (backend: the failure breakdown;
    frontend: answers without a page, full contexts and dialogue lengths) of each method evaluated per seed."""
    moved = (
        "Moved: the share of test dialogues that differ from the zero-shot dialogue drawn with the same "
        "random numbers (0 for an untrained copy of the base)."
    )
    columns = r.report.behaviour_columns
    out = [
        f"### How the policies behave ({r.domain})",
        "",
        f"{moved} {r.report.behaviour_note}",
        "",
        "| method | " + " | ".join(c.header for c in columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for b in r.behaviour:
        cells = ["—" if b[c.key] is None else _pct(b[c.key]) if c.share else f"{b[c.key]:.1f}" for c in columns]
        out.append(f"| {r.label(b['method'])} | " + " | ".join(cells) + " |")
    return [*out, ""]


def interval_table(r: DomainResults) -> list[str]:
    """The paired differences between methods, with their two-level bootstrap intervals: one table per
    measure (backend: success; frontend: similarity, then wins against the reference page)."""
    level = f"{r.intervals[0].level:.0%}"
    out = [f"### Paired differences ({r.domain})", ""]
    for measure in dict.fromkeys(i.measure for i in r.intervals):
        rows = [i for i in r.intervals if i.measure == measure]
        what = (
            f"mean {measure}"
            if measure != "win rate"
            else "win rate against the page made from the description alone (a win 1, a tie ½)"
        )
        out += [
            f"Per task, the {what} over seeds and samples of one method minus the other's, averaged over "
            f"the {rows[0].tasks} test tasks; {level} intervals from resampling {RESAMPLED} (a paired "
            "two-level bootstrap: seeds that disagree widen it). A difference is resolved when its interval "
            "excludes 0.",
            "",
            f"| comparison | {measure}: difference (points) | {level} interval | resolved |",
            "|---|---|---|---|",
        ]
        for i in rows:
            resolved = "yes" if i.excludes_zero else "no"
            out.append(
                f"| {r.label(i.a)} − {r.label(i.b)} | {i.difference * 100:+.1f} "
                f"| [{i.low * 100:+.1f}, {i.high * 100:+.1f}] | {resolved} |"
            )
        out.append("")
    return out


def results_data(results: list[DomainResults], seeds: list[int]) -> dict:
    """The tables as data (results.json)."""
    return {
        "seeds": seeds,
        "domains": {
            r.domain: {
                "metrics": r.report.headline,
                "rows": [asdict(row) for row in r.rows],
                "reference": None if r.reference is None else asdict(r.reference),
                "goal_check": r.check,
                "critics": r.critics,
                "paired_differences": [asdict(i) for i in r.intervals],
                "behaviour": r.behaviour,
                "paper_gpt4o": r.report.gpt4o,
            }
            for r in results
        },
    }
