"""A static site of a run: plain HTML, one stylesheet and one script, opened from disk (file://) with
no server and nothing fetched from the network.

    index.html               the results tables with paired intervals, the method and training plots
    dialogues-<domain>.html  every test dialogue, filterable by method, seed, outcome and task family
    sweet-<domain>.html      SWEET-RL's inside at sampled states
    data/*.js                each page's data, a script that sets `window.SITE_DATA` (file:// pages
                             may load scripts but not fetch JSON)
    img/                     frontend pages and targets as small JPEGs; plots as PNGs

The pages are built in the browser from the data by site.js; this module writes the frame of each
page and the data. Nothing is copied from a template engine: the HTML is short enough to write here.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import polars as pl

from sweetflow.core.definition import output_of
from sweetflow.core.tables import task_file
from sweetflow.domain_report import get_domain_report
from sweetflow.params import Params
from sweetflow.report.episodes import dialogues, read_episodes, sweet_states
from sweetflow.report.intervals import Interval
from sweetflow.report.markdown import cell, goal_sentences
from sweetflow.report.read import LABELS, REFERENCE, DomainResults

ASSETS = Path(__file__).parent / "assets"
BOLD = re.compile(r"\*\*(.+?)\*\*")


def page(title: str, body: str, data: str | None = None, nav: list[tuple[str, str]] = ()) -> str:
    """One page: the shared stylesheet and script, its data script first, then `body`."""
    links = " ".join(f'<a href="{html.escape(href)}">{html.escape(text)}</a>' for href, text in nav)
    scripts = (f'<script src="data/{data}"></script>\n' if data else "") + '<script src="site.js"></script>'
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<link rel="stylesheet" href="site.css">
</head>
<body>
<nav>{links}</nav>
<h1>{html.escape(title)}</h1>
{body}
{scripts}
</body>
</html>
"""


def write_data(site: Path, name: str, data: dict) -> str:
    # json.dumps escapes nothing HTML cares about, but this is a separate script file, never inlined.
    (site / "data").mkdir(parents=True, exist_ok=True)
    (site / "data" / name).write_text("window.SITE_DATA = " + json.dumps(data, ensure_ascii=False) + ";\n")
    return name


def copy_assets(site: Path) -> None:
    site.mkdir(parents=True, exist_ok=True)
    for name in ("site.css", "site.js"):
        shutil.copyfile(ASSETS / name, site / name)


def _inline(text: str) -> str:
    """A report sentence as HTML: escaped, its markdown bold kept."""
    return BOLD.sub(r"<strong>\1</strong>", html.escape(text))


def results_section(r: DomainResults) -> str:
    report = r.report
    a, b = report.columns
    rows = "".join(
        f"<tr><td>{html.escape(row.label)}</td><td><code>{html.escape(row.method)}</code></td>"
        f"<td>{cell(row.means[0], row.stds[0])}</td><td>{cell(row.means[1], row.stds[1])}</td>"
        f"<td>{row.n_seeds if row.ran else '—'}</td><td>{' / '.join(map(str, row.paper or ('—', '—')))}</td></tr>"
        for row in r.rows
    )
    out = [
        f'<section id="results-{r.domain}"><h2>{html.escape(report.title)} (<code>{r.domain}</code>)</h2>',
        f"<p>Numbers are {html.escape(report.description)}, on the test tasks; "
        "mean ± standard deviation over seeds.</p>",
        f'<table class="results"><thead><tr><th>method</th><th>key</th><th>{a} (%)</th><th>{b} (%)</th>'
        f"<th>seeds</th><th>paper: {a} / {b} (%)</th></tr></thead><tbody>{rows}</tbody></table>",
    ]
    for measure in dict.fromkeys(i.measure for i in r.intervals):
        out.append(intervals_table([i for i in r.intervals if i.measure == measure], measure, r.label))
    out += [f"<p>{_inline(s)}</p>" for s in goal_sentences(r.check, report)]
    out.append("</section>")
    return "\n".join(out)


def intervals_table(intervals: list[Interval], name: str, label: Callable[[str], str]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(label(i.a))} − {html.escape(label(i.b))}</td><td>{i.difference * 100:+.1f}</td>"
        f"<td>[{i.low * 100:+.1f}, {i.high * 100:+.1f}]</td><td>{i.tasks}</td>"
        f"<td>{'yes' if i.excludes_zero else 'no'}</td></tr>"
        for i in intervals
    )
    level = f"{intervals[0].level * 100:.0f}%"
    return (
        f"<h3>Paired differences in {html.escape(name)} (points)</h3>"
        f'<table class="intervals"><thead><tr><th>comparison</th><th>difference</th><th>{level} interval '
        f"(tasks and seeds resampled)</th><th>tasks</th><th>excludes 0</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def index_page(results: list[DomainResults], plots: list[tuple[str, str]], links: list[tuple[str, str]]) -> str:
    """The front page: each domain's table and intervals, the plots, the other pages."""
    body = ["<p>This run's results. Each page of the site opens from disk; nothing is fetched.</p>"]
    if links:
        body.append(
            '<ul class="pages">' + "".join(f'<li><a href="{h}">{html.escape(t)}</a></li>' for h, t in links) + "</ul>"
        )
    body += [results_section(r) for r in results]
    for src, alt in plots:
        body.append(
            f'<figure><img src="{src}" alt="{html.escape(alt)}"><figcaption>{html.escape(alt)}</figcaption></figure>'
        )
    return page("sweetflow: SWEET-RL on ColBench", "\n".join(body), nav=[("index.html", "results"), *links])


def dialogues_page(domain: str, data_file: str, nav: list[tuple[str, str]]) -> str:
    body = f"""<p>Test dialogues of every method on the {domain} tasks. Filters combine; the list shows the
first matches, with more on demand.</p>
<form id="filters" class="filters">
<label>method <select name="method"></select></label>
<label>seed <select name="seed"></select></label>
<label>outcome <select name="outcome"></select></label>
<label>task family <select name="family"></select></label>
<label>task id <input name="task" type="search" placeholder="part of an id"></label>
</form>
<p id="count"></p>
<div id="dialogues" data-domain="{domain}"></div>
<button id="more" type="button">show more</button>"""
    return page(f"Test dialogues: {domain}", body, data_file, nav)


def sweet_page(domain: str, data_file: str, nav: list[tuple[str, str]]) -> str:
    body = """<p>SWEET-RL's inside at sampled training states: the candidate actions sampled from the base
policy, each critic's score (its mean log-ratio against its reference, the model its loss compared it
with), the action's label (a question that gets a new fact told, or an answer that passes, is good), the
critic check's played-out outcome where
that state was checked (the critic's best and worst candidate, each continued to the end by the base
policy), and the step pairs each critic chose (chosen ≻ rejected).</p>
<form id="state-filters" class="filters">
<label>state <select name="state"></select></label>
<label><input name="checked" type="checkbox"> only states the critic check played out</label>
</form>
<div id="states"></div>"""
    return page(f"SWEET-RL at sampled states: {domain}", body, data_file, nav)


def read_tasks_by_id(paths: list[Path]) -> dict[str, dict]:
    """Tasks by id from task tables (parquet) that exist."""
    return {t["task_id"]: t for p in paths if p.is_file() for t in pl.read_parquet(p).to_dicts()}


def write_domain_pages(
    site: Path,
    domain: str,
    methods: dict[str, pl.DataFrame],
    tasks: dict[str, dict],
    params: Params,
    states: dict | None = None,
) -> list[tuple[str, str]]:
    """The dialogues page of `methods`' episodes and, given `states`, the SWEET-RL page; their links.
    The domain draws its pictures (frontend pages: with the run's renderer and similarity, params
    frontend.scoring)."""
    links = []
    if methods:
        report = get_domain_report(domain)
        with report.pictures(site, params.domain(domain)) as pictures:
            data = dialogues(report, methods, tasks, pictures)
        links.append((f"dialogues-{domain}.html", f"test dialogues: {domain}"))
        name = write_data(site, f"dialogues-{domain}.js", data)
        pages = {links[-1][0]: dialogues_page(domain, name, [])}
    else:
        pages = {}
    if states is not None:
        links.append((f"sweet-{domain}.html", f"SWEET-RL at sampled states: {domain}"))
        pages[links[-1][0]] = sweet_page(domain, write_data(site, f"sweet-{domain}.js", states), [])
    for href, text in pages.items():
        (site / href).write_text(text)
    return links


def write_run_site(
    site: Path,
    results: list[DomainResults],
    plots: list[tuple[Path, str]],
    params: Params,
    evaluations: dict[str, Path],
) -> None:
    """The site of a run: the results, the plots (copied in), each domain's test dialogues (the methods'
    directories under its `evaluations`) and, for trained domains, SWEET-RL at sampled states."""
    copy_assets(site)
    links = []
    for r in results:
        methods = {
            m: f
            for m in _method_order(evaluations[r.domain])
            if (f := read_episodes(evaluations[r.domain] / m)) is not None
        }
        tasks = read_tasks_by_id([output_of("tasks", r.domain, file=task_file("test"))])
        train = read_tasks_by_id([output_of("tasks", r.domain, file=task_file("train"))])
        states = sweet_states(r.domain, train) if r.domain in params.train_domains else None
        links += write_domain_pages(site, r.domain, methods, tasks, params, states)
    shown = []
    for path, caption in plots:
        shutil.copyfile(path, site / path.name)
        shown.append((path.name, caption))
    _navigate(site, links)
    (site / "index.html").write_text(index_page(results, shown, links))


def write_view_site(site: Path, domain: str, trajectories: Path, tasks: Path, params: Params, method: str) -> None:
    """A site of one trajectories file (`sweetflow view`): its dialogues on the tasks of `tasks`."""
    frame = pl.read_parquet(trajectories).with_columns(seed_index=pl.lit(None, pl.Int64))
    copy_assets(site)
    links = write_domain_pages(site, domain, {method: frame}, read_tasks_by_id([tasks]), params)
    _navigate(site, links)
    (site / "index.html").write_text(
        page(
            f"sweetflow: {trajectories.name}",
            '<ul class="pages">' + "".join(f'<li><a href="{h}">{html.escape(t)}</a></li>' for h, t in links) + "</ul>",
            nav=links,
        )
    )


def _navigate(site: Path, links: list[tuple[str, str]]) -> None:
    """Give every page but the index the navigation to all of them."""
    nav = (
        "<nav>"
        + " ".join(f'<a href="{h}">{html.escape(t)}</a>' for h, t in [("index.html", "results"), *links])
        + "</nav>"
    )
    for href, _ in links:
        path = site / href
        path.write_text(path.read_text().replace("<nav></nav>", nav, 1))


def _method_order(evaluations: Path) -> list[str]:
    """Evaluated methods in the table's order (the paper's, then the others), the references left out."""
    present = sorted(d.name for d in evaluations.iterdir() if d.is_dir()) if evaluations.is_dir() else []
    known = [m for m in LABELS if m in present]
    return [m for m in known + [m for m in present if m not in known] if m != REFERENCE]
