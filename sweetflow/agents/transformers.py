"""The `transformers` agent backend: a local checkpoint generating in process, in batches.

Each view becomes the chat-template text of `policy_chat(view)` with the assistant prompt appended;
the views are generated in chunks of `batch_size`, left-padded so that every row's next token sits
in the last column. Sampling is per episode: row i draws from its own `torch.Generator`, seeded by
(episode seed, turn), so an episode's turn does not depend on which other episodes share its batch
or on the global random state, and the same (task, sample, turn) samples the same way in every run.
A row leaves the batch as soon as it stops (a decoding step costs in proportion to its rows), so
a chunk of short questions is not held up by one long answer.

Log-probs. For each generated token we record log softmax of the model's raw logits at that step —
the policy's own distribution, before temperature and top-p — because that is the π(a|o) that the
critic's advantage, candidate ranking and DPO compute later from a forward pass. The end-of-message
token that stops generation is part of the action (the chat template's generation block, and so
the SFT and DPO masks, include it), so it is counted in `n_tokens` and `logprob_sum`.

Context. A prompt that leaves no room in the model's context is not truncated: the episode gets an
exception (recorded as its failure reason), as an OpenAI-compatible server answers such a request
with an error. Generation stops at the context's end otherwise.

Prefix reuse (`reuse_prefix`). A turn's prompt is the previous turn's prompt, the agent's message and
the human's reply: with the knob on, an episode keeps the keys and values of every token it has read
or written, and its next turn reads only the tokens after the longest prefix it shares with them
(compared token by token, so a message that tokenizes differently when read back is simply read
again). The tokens are the same as without it, but not always the bits: keys computed one token at
a time and keys computed in one prompt pass round differently (docs/performance.md, "Generation:
prefix reuse, bf16").
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import Cache, DynamicLayer

from sweetflow.core.params import TransformersAgentParams
from sweetflow.core.requirements import check
from sweetflow.dialogue import AgentTurn, ContextOverflow, EpisodeView
from sweetflow.models.checkpoint import load_checkpoint
from sweetflow.views import policy_chat

check()  # generation's `cache=`: an older transformers decodes without it, wrong tokens


@dataclass
class Prefix:
    """What an episode has read or written so far: the token ids, and each layer's keys and values
    of exactly those tokens ([heads, tokens, head_dim])."""

    ids: list[int]
    keys: list[torch.Tensor]
    values: list[torch.Tensor]

    def shared(self, ids: list[int]) -> int:
        """How many leading tokens of `ids` this prefix already holds."""
        n = 0
        for a, b in zip(self.ids, ids):
            if a != b:
                break
            n += 1
        return n


def turn_seed(view: EpisodeView) -> int:
    """The sampling seed of one turn; the `openai` backend sends the same one with its request."""
    return view.seed * 100 + view.turn


class TransformersAgent:
    def __init__(self, params: TransformersAgentParams):
        self.params = params
        device = "cuda" if torch.cuda.is_available() else "cpu"
        # One thread generates the tiny model 4x faster than two on this 2-core machine: its
        # matrices are too small to split. `threads` (0: torch's default) is for bigger models.
        threads = params.threads
        if device == "cpu" and threads:
            torch.set_num_threads(threads)
        self.model, self.tokenizer = load_checkpoint(params.checkpoint, device, params.dtype)
        config, generation = self.model.config, self.model.generation_config
        self.max_context = getattr(config, "max_position_embeddings", None) or self.tokenizer.model_max_length
        # Instruct models may end a turn with several tokens (Llama 3: <|eot_id|>, <|eom_id|>, ...).
        stop = generation.eos_token_id if generation.eos_token_id is not None else self.tokenizer.eos_token_id
        self.stop_ids = torch.tensor(stop if isinstance(stop, list) else [stop], device=device)
        self.pad_id = self.tokenizer.pad_token_id
        if self.pad_id is None:
            self.pad_id = self.stop_ids[0].item()  # never attended to: padding is masked out
        # With reuse_prefix: each episode's prefix (by task and episode seed), from its last turn.
        self.prefixes: dict[tuple[str, int], Prefix] = {}

    def act(self, views: list[EpisodeView]) -> list[AgentTurn | Exception]:
        turns = []
        for start in range(0, len(views), self.params.batch_size):
            turns += self._act_batch(views[start : start + self.params.batch_size])
        # The rollout engine asks for every live episode's turn at once: an episode not asked for is over.
        asked = {(v.task_id, v.seed) for v in views}
        self.prefixes = {k: p for k, p in self.prefixes.items() if k in asked}
        return turns

    def _act_batch(self, views: list[EpisodeView]) -> list[AgentTurn | Exception]:
        prompts = [
            self.tokenizer.apply_chat_template(policy_chat(v), tokenize=False, add_generation_prompt=True)
            for v in views
        ]
        # The template already writes the BOS token: don't let the tokenizer add a second one.
        ids = [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        fits = [i for i, x in enumerate(ids) if len(x) < self.max_context]
        results: list[AgentTurn | Exception] = [
            ContextOverflow(f"the prompt has {len(x)} tokens; the model's context holds {self.max_context}")
            for x in ids
        ]
        if not fits:
            return results
        generators = [torch.Generator(self.model.device).manual_seed(turn_seed(views[i])) for i in fits]
        prefixes = None
        if self.params.reuse_prefix:
            prefixes = [self.prefixes.get((views[i].task_id, views[i].seed)) for i in fits]
        generated = sample(
            self.model,
            [ids[i] for i in fits],
            generators,
            self.params.temperature,
            self.params.top_p,
            self.params.max_new_tokens,
            self.max_context,
            self.stop_ids,
            self.pad_id,
            prefixes,
        )
        for i, (tokens, logprobs, prefix) in zip(fits, generated):
            if prefix is not None:
                self.prefixes[(views[i].task_id, views[i].seed)] = prefix
            raw = self.tokenizer.decode(tokens, skip_special_tokens=True)
            results[i] = AgentTurn(
                prompt=prompts[i],
                raw=raw,
                message=raw.strip(),
                logprob_sum=sum(logprobs),
                logprob_mean=sum(logprobs) / len(logprobs),
                n_tokens=len(tokens),
            )
        return results


@torch.no_grad()
def sample(
    model,
    prompts: list[list[int]],
    generators: list[torch.Generator],
    temperature: float,
    top_p: float,
    max_new_tokens: int,
    max_context: int,
    stop_ids: torch.Tensor,
    pad_id: int,
    prefixes: list[Prefix | None] | None = None,
) -> list[tuple[list[int], list[float], Prefix | None]]:
    """Generate a continuation of each prompt; return (token ids, their log-probs, prefix) per prompt.

    A row stops after a token of `stop_ids` (kept), after `max_new_tokens`, or at the end of the
    context. Temperature 0 is greedy decoding. With `prefixes` (one per prompt, or None), a prompt is
    read from the end of the tokens it shares with its prefix, and each row's returned prefix holds
    its prompt and every generated token but the last (the one not yet read); without, it is None.
    """
    device = model.device
    # Equal prompts (the candidates of one state, the samples of a task at its first turn) are read
    # once: the prompt pass dominates the cost, and its cache is then copied to each of their rows.
    index: dict[tuple[int, ...], int] = {}
    which = torch.tensor([index.setdefault(tuple(p), len(index)) for p in prompts], device=device)
    distinct = [list(p) for p in index]
    # How many leading tokens of each distinct prompt come from a prefix (at most all but the last:
    # its logits give the first new token), and from which.
    held, reused = [0] * len(distinct), [None] * len(distinct)
    for row, d in enumerate(which.tolist()):
        if prefixes is not None and prefixes[row] is not None and reused[d] is None:
            n = min(prefixes[row].shared(distinct[d]), len(distinct[d]) - 1)
            held[d], reused[d] = n, (prefixes[row] if n else None)
    held_width = max(held)
    width = max(len(p) - h for p, h in zip(distinct, held))  # the tokens read now, left-padded
    input_ids = torch.full((len(distinct), width), pad_id, dtype=torch.long, device=device)
    # Columns: each row's held tokens right-aligned in the first held_width, then its new ones.
    attention = torch.zeros((len(distinct), held_width + width), dtype=torch.long, device=device)
    for i, (p, h) in enumerate(zip(distinct, held)):
        input_ids[i, width - (len(p) - h) :] = torch.tensor(p[h:], device=device)
        attention[i, held_width - h : held_width] = 1
        attention[i, held_width + width - (len(p) - h) :] = 1
    # Positions count real tokens only, so a left-padded row sees the positions it would see alone.
    positions = (attention.cumsum(-1) - 1).clamp(min=0)[:, held_width:]
    budget = torch.tensor([min(max_new_tokens, max_context - len(p)) for p in prompts], device=device)
    steps = int(budget.max())

    # Room for the prompt and every token to come, reserved once: a cache grown by concatenation
    # copies itself at every step, half of a decoding step's time at a context of 1,000 tokens.
    capacity = held_width + width + steps
    if held_width:
        layers = [ReservedLayer(capacity) for _ in range(model.config.num_hidden_layers)]
        for n, layer in enumerate(layers):
            layer.preload(*(_held(distinct, held, reused, held_width, kind, n) for kind in ("keys", "values")))
        cache = Cache(layers=layers)
    else:
        cache = Cache(layer_class_to_replicate=lambda: ReservedLayer(capacity))
    # logits_to_keep=1: only the last position's logits are needed, not the whole prompt's.
    out = model(input_ids, attention_mask=attention, position_ids=positions, cache=cache, logits_to_keep=1)
    cache.batch_select_indices(which)
    logits, attention, positions = out.logits[which, -1], attention[which], positions[which]
    tokens: list[list[int]] = [[] for _ in prompts]
    logprobs: list[list[float]] = [[] for _ in prompts]
    kept: list[Prefix | None] = [None] * len(prompts)
    # Every uniform a row may need, drawn up front from its own generator (one call per row, not one
    # per row and step): its `budget` draws depend on nothing but the row itself.
    uniforms = torch.zeros((len(prompts), steps), dtype=torch.float64, device=device)
    if temperature > 0:
        for i, (g, n) in enumerate(zip(generators, budget.tolist())):
            uniforms[i, :n] = torch.rand(n, generator=g, dtype=torch.float64, device=device)
    live = list(range(len(prompts)))  # the prompts still generating, in the order of the batch's rows
    for step in range(steps):
        choice = choose(logits.float(), temperature, top_p, uniforms[live, step])
        chosen_logp = torch.log_softmax(logits.float(), dim=-1).gather(1, choice[:, None]).squeeze(1)
        for i, token, logp in zip(live, choice.tolist(), chosen_logp.tolist()):
            tokens[i].append(token)
            logprobs[i].append(logp)
        going = ~torch.isin(choice, stop_ids) & (step + 1 < budget)
        if prefixes is not None:  # a row that stops keeps what it has read
            for k in (~going).nonzero().flatten().tolist():
                kept[live[k]] = _row_prefix(cache, attention, k, prompts[live[k]] + tokens[live[k]][:-1])
        if not going.any():
            break
        if not going.all():  # drop finished rows: a step costs in proportion to the rows it decodes
            keep = going.nonzero().flatten()
            cache.batch_select_indices(keep)
            attention, positions, choice, budget = attention[keep], positions[keep], choice[keep], budget[keep]
            live = [live[k] for k in keep.tolist()]
        attention = torch.cat([attention, torch.ones((len(live), 1), dtype=torch.long, device=device)], dim=1)
        positions = positions[:, -1:] + 1
        out = model(choice[:, None], attention_mask=attention, position_ids=positions, cache=cache)
        logits = out.logits[:, -1]
    return list(zip(tokens, logprobs, kept))


def _held(distinct, held, reused, width: int, kind: str, layer: int) -> torch.Tensor:
    """One layer's keys or values of the held tokens, [rows, heads, width, head_dim], right-aligned
    (zeros where a row holds fewer: those columns are masked out, and zeros keep them finite)."""
    some = next(r for r in reused if r is not None)
    heads, _, dim = getattr(some, kind)[layer].shape
    out = getattr(some, kind)[layer].new_zeros((len(distinct), heads, width, dim))
    for i, (h, r) in enumerate(zip(held, reused)):
        if h:
            out[i, :, width - h :] = getattr(r, kind)[layer][:, :h]
    return out


def _row_prefix(cache: Cache, attention: torch.Tensor, row: int, ids: list[int]) -> Prefix:
    """Row `row`'s keys and values of its real (unpadded) columns, as its prefix of `ids`."""
    real = attention[row].bool()
    keys = [layer.keys[row][:, real] for layer in cache.layers]
    values = [layer.values[row][:, real] for layer in cache.layers]
    return Prefix(ids, keys, values)


def choose(logits: torch.Tensor, temperature: float, top_p: float, uniforms: torch.Tensor) -> torch.Tensor:
    """The next token of each row: greedy at temperature 0, else a draw from the tempered
    distribution restricted to its top-p nucleus, by inverting its CDF at the row's uniform in [0, 1)."""
    if temperature == 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p < 1:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        # Keep the most likely tokens until their mass reaches top_p (the first one always).
        keep = sorted_probs.cumsum(-1) - sorted_probs < top_p
        probs = torch.zeros_like(probs).scatter(1, order, sorted_probs * keep)
    cdf = probs.double().cumsum(-1)
    # The first token whose cumulative mass exceeds u · total: a token of zero mass is never chosen.
    chosen = torch.searchsorted(cdf, (uniforms * cdf[:, -1])[:, None], right=True).squeeze(1)
    return chosen.clamp(max=probs.shape[-1] - 1)


class ReservedLayer(DynamicLayer):
    """A key/value cache layer that writes into buffers of a fixed `capacity` (positions) and hands
    attention views of their filled part, instead of concatenating a new tensor at every step."""

    def __init__(self, capacity: int):
        super().__init__()
        self.capacity = capacity
        self.length = 0

    def preload(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Start with `keys` and `values` ([rows, heads, tokens, head_dim]) already cached."""
        self.length = 0
        self.update(keys, values)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
            rows, heads, _, dim = key_states.shape
            self.key_buffer = key_states.new_empty((rows, heads, self.capacity, dim))
            self.value_buffer = value_states.new_empty((rows, heads, self.capacity, value_states.shape[-1]))
        end = self.length + key_states.shape[-2]
        self.key_buffer[:, :, self.length : end] = key_states
        self.value_buffer[:, :, self.length : end] = value_states
        self.length = end
        self.keys, self.values = self.key_buffer[:, :, :end], self.value_buffer[:, :, :end]
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        rows = indices.tolist()
        if all(a < b for a, b in zip(rows, rows[1:])):
            # Dropping finished rows: the rows kept move up in place, their filled part only, in one copy
            # per buffer (the rows before the first dropped one stay). Indexing would copy every kept
            # row's whole capacity, a fifth of a decoding run's time.
            moved = next((to for to, row in enumerate(rows) if to != row), len(rows))
            for buffer in (self.key_buffer, self.value_buffer):
                buffer[moved : len(rows), :, : self.length] = buffer[indices[moved:], :, : self.length]
            self.key_buffer, self.value_buffer = self.key_buffer[: len(rows)], self.value_buffer[: len(rows)]
        else:  # rows repeated (a prompt's cache copied to each of its samples)
            self.key_buffer, self.value_buffer = self.key_buffer[indices], self.value_buffer[indices]
        self.keys, self.values = self.key_buffer[:, :, : self.length], self.value_buffer[:, :, : self.length]
