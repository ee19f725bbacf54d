"""configs/presets/paper.yaml: a complete params file that validates, holds the paper's values, and
takes the frontend's changes docs/gpu.md gives; the batch layouts it makes on GPUs."""

from __future__ import annotations

import re

import pytest
import yaml

from sweetflow.cli import main
from sweetflow.core.params import ParamsError
from sweetflow.params import Params, load_params
from sweetflow.rl.loop import BatchLayout, batch_layout
from tests.support.project import ROOT, merge

PRESET = ROOT / "configs/presets/paper.yaml"


def test_the_paper_preset_validates_with_sweetflow_params(capsys):
    assert main(["params", "--file", str(PRESET)]) == 0
    assert "2e-07" in capsys.readouterr().out


def test_the_paper_preset_holds_the_papers_values():
    p = load_params(PRESET)
    assert p.train_domains == ["backend"] and p.backend.tasks.source == "colbench"
    assert p.backend.model.base == p.frontend.model.base == "models/external/Llama-3.1-8B-Instruct"
    assert p.backend.model.epochs == p.frontend.model.epochs == 0  # the paper's zero-shot base: no warm start
    trained = [*p.critics.values(), *p.policies.values()]
    assert {t.learning_rate for t in trained} == {2e-7} and {t.beta for t in trained} == {0.1}
    assert {n: c.epochs for n, c in p.critics.items()} == {"with_info": 4, "no_info": 4}
    assert all(c.warmup_epochs == 0 and c.length_normalize for c in p.critics.values())
    assert {n: (q.epochs, q.batch_size) for n, q in p.policies.items()} == {
        "rft": (4, 32),
        "mtdpo": (4, 8),
        "sweet": (1, 8),
        "sweet_no_info": (1, 8),
    }
    assert p.policies["sweet"].nll_coef == 0.01 and not p.policies["sweet"].length_normalize
    assert (p.candidates.n, p.candidates.share, p.step_pairs.num_pairs, p.step_pairs.rule) == (16, 0.1, 4, "halves")
    assert p.rank.baseline == "reference" and p.episodes.max_turns == 10
    assert p.agents["base"].temperature == p.candidates.policy.temperature == p.evaluate.policy.temperature == 1.0
    # The official agent generates up to 1,024 new tokens a turn: fewer would cut its long answers.
    assert p.agents["base"].max_new_tokens == p.candidates.policy.max_new_tokens == 1024
    assert p.evaluate.policy.max_new_tokens == 1024
    simulator = p.backend.simulator
    assert simulator.backend == "openai" and "70B" in simulator.endpoint.model
    assert simulator.endpoint.api_key_env == "OPENAI_API_KEY"  # a variable's name; no key in the file
    similarity = p.frontend.scoring.similarity
    assert similarity.metric == "clip" and similarity.clip_checkpoint.name == "clip-vit-base-patch32"
    engine = p.training
    assert engine.precision == "bf16" and engine.accelerate_config == "configs/accelerate/zero3.yaml"
    assert (ROOT / engine.accelerate_config).is_file() and engine.lora is None


def test_the_frontend_experiment_of_the_docs_validates_with_its_epochs():
    text = (ROOT / "docs/gpu.md").read_text()
    command = re.search(r"dvc exp run (-S .*?)\n```", text, re.DOTALL).group(1)
    changes: dict = {}
    for key, value in re.findall(r"-S '?([\w.]+)=([^\s']+)'?", command):
        node = changes
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(value)
    p = Params.model_validate(merge(yaml.safe_load(PRESET.read_text()), changes))
    assert p.train_domains == ["frontend"] and p.frontend.tasks.source == "colbench"
    assert {c.epochs for c in p.critics.values()} == {8}
    assert (p.policies["rft"].epochs, p.policies["mtdpo"].epochs, p.policies["sweet"].epochs) == (8, 8, 1)


@pytest.mark.parametrize("gpus, rft_accumulation", [(8, 4), (4, 8), (1, 32)])
def test_the_papers_batches_on_gpus(gpus, rft_accumulation):
    p = load_params(PRESET)
    micro = p.training.micro_batch_size
    sweet = batch_layout(p.policies["sweet"].batch_size, micro, gpus, "sweet")
    assert sweet == BatchLayout(8, 1, gpus, 8 // gpus)
    assert batch_layout(p.policies["rft"].batch_size, micro, gpus, "rft").accumulation == rft_accumulation


def test_more_gpus_than_the_batch_is_refused():
    p = load_params(PRESET)
    with pytest.raises(ParamsError, match="sweet: batch_size 8 .* training.micro_batch_size 1 x 16 processes"):
        batch_layout(p.policies["sweet"].batch_size, p.training.micro_batch_size, 16, "sweet")
