"""Visual similarity of an answer's screenshot to the target's: the frontend reward, and win rate.

Two metrics (`SimilarityParams.metric`):

- `clip`: cosine similarity of CLIP image embeddings, as in the paper (ViT-B/32), from a local
  checkpoint directory (model + image processor); nothing is downloaded. The processor's own resize
  and centre crop apply, as in any CLIP pipeline: for a 1280 x 800 screenshot that is the middle
  800 x 800 square of the top of the page.
- `pixels` (default, needs no weights): both screenshots are placed top-left on a common white
  canvas (the larger width and height: a missing part of a page counts as blank), shrunk by area
  averaging to at most `GRID_WIDTH` columns (8 x 8 px blocks for a 1280-wide page: layout, colour
  and blocks of text survive, glyph shapes do not), and compared in CIELAB:
      colour    = mean over blocks of max(0, 1 − ΔE76 / DELTA_E_ZERO)
      structure = max(0, SSIM of the L channel over 7 x 7 windows, averaged with each window
                  weighted by its contrast (the larger standard deviation of the two images), so
                  that the flat background two pages share does not outvote their content)
      pixels    = (colour + structure) / 2
  It lies in [0, 1], is symmetric, is 1 for identical screenshots; a blank page against a real one
  scores clearly lower (its structure term is low). It is NOT comparable with the paper's CLIP
  numbers: use it to compare methods with each other on this machine, not with Table 2.

A missing screenshot (None: no `<html>` snippet, or the page timed out or crashed) scores 0.

Win rate: the share of tasks on which a method's similarity beats a reference method's; a tie
counts half, so a method against itself scores 0.5 (as GPT-4o's 50.0 against itself in the paper).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from sweetflow.core.errors import InputError
from sweetflow.frontend.params import SimilarityParams

GRID_WIDTH = 160
DELTA_E_ZERO = 50.0  # a colour difference this large (e.g. a saturated colour against grey) counts as no match
SSIM_WINDOW = 7
# SSIM's stabilisers for L in [0, 100] (Wang et al. 2004: K1 = 0.01, K2 = 0.03 of the dynamic range).
SSIM_C1, SSIM_C2 = (0.01 * 100) ** 2, (0.03 * 100) ** 2


def load_image(png: bytes) -> Image.Image:
    return Image.open(io.BytesIO(png)).convert("RGB")


def _lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB (0..255) to CIELAB under D65."""
    c = rgb.astype(np.float64) / 255.0
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    xyz = linear @ np.array(
        [[0.4124564, 0.2126729, 0.0193339], [0.3575761, 0.7151522, 0.1191920], [0.1804375, 0.0721750, 0.9503041]]
    )
    xyz /= np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def _grid(image: Image.Image, width: int, height: int) -> np.ndarray:
    """The image top-left on a white width x height canvas, area-averaged to at most GRID_WIDTH columns, in Lab."""
    canvas = Image.new("RGB", (width, height), "white")
    canvas.paste(image, (0, 0))
    columns = min(GRID_WIDTH, width)
    rows = max(1, round(height * columns / width))
    return _lab(np.asarray(canvas.resize((columns, rows), Image.Resampling.BOX)))


def _window_means(x: np.ndarray, size: int) -> np.ndarray:
    return np.lib.stride_tricks.sliding_window_view(x, (size, size)).mean(axis=(-1, -2))


def _ssim(x: np.ndarray, y: np.ndarray) -> float:
    size = min(SSIM_WINDOW, *x.shape)
    mx, my = _window_means(x, size), _window_means(y, size)
    vx = _window_means(x * x, size) - mx * mx
    vy = _window_means(y * y, size) - my * my
    cov = _window_means(x * y, size) - mx * my
    ssim = ((2 * mx * my + SSIM_C1) * (2 * cov + SSIM_C2)) / ((mx * mx + my * my + SSIM_C1) * (vx + vy + SSIM_C2))
    # Weighted by the windows' contrast in either image, so that the flat background both pages share
    # does not outvote the content (after information-content-weighted SSIM, Wang & Li 2011).
    weight = np.sqrt(np.maximum(np.maximum(vx, vy), 0))
    total = weight.sum()
    return float((ssim * weight).sum() / total) if total > 0 else float(ssim.mean())


def pixel_similarity(a: Image.Image, b: Image.Image) -> float:
    """The `pixels` metric (module docstring) of two RGB images: in [0, 1], 1 for identical ones."""
    width, height = max(a.width, b.width), max(a.height, b.height)
    lab_a, lab_b = _grid(a, width, height), _grid(b, width, height)
    delta_e = np.linalg.norm(lab_a - lab_b, axis=-1)
    colour = float(np.clip(1 - delta_e / DELTA_E_ZERO, 0, 1).mean())
    structure = min(1.0, max(0.0, _ssim(lab_a[..., 0], lab_b[..., 0])))
    return (colour + structure) / 2


class ClipEmbedder:
    """CLIP image embeddings from a local checkpoint directory (CLIPModel + CLIPImageProcessor)."""

    def __init__(self, checkpoint: Path | str, batch_size: int = 16):
        from transformers import CLIPImageProcessor, CLIPModel

        path = Path(checkpoint)
        if not path.is_dir():
            raise InputError(
                f"CLIP checkpoint {str(checkpoint)!r} (similarity.clip_checkpoint) is not a local directory; nothing "
                "is downloaded: save a CLIP model and its image processor there (save_pretrained) and give its path"
            )
        try:
            self.model = CLIPModel.from_pretrained(path, local_files_only=True).eval()
            self.processor = CLIPImageProcessor.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError) as e:
            raise InputError(f"CLIP checkpoint {path}: cannot load a CLIP model and image processor: {e}") from None
        self.batch_size = batch_size

    def embed(self, images: Sequence[Image.Image]):
        """Unit-norm image embeddings, one row per image, computed batch_size images at a time."""
        import torch

        rows = []
        with torch.inference_mode():
            for start in range(0, len(images), self.batch_size):
                pixels = self.processor(images=list(images[start : start + self.batch_size]), return_tensors="pt")
                features = self.model.get_image_features(pixel_values=pixels["pixel_values"])
                if not isinstance(features, torch.Tensor):  # transformers 5 wraps the projection in an output object
                    features = features.pooler_output
                rows.append(torch.nn.functional.normalize(features.float(), dim=-1))
        return torch.cat(rows) if rows else torch.empty(0, 0, device=self.model.device)


class Similarity:
    """Scores answers' screenshots against their targets' with the configured metric."""

    def __init__(self, params: SimilarityParams):
        self.params = params
        self._clip = (
            ClipEmbedder(self.params.clip_checkpoint, self.params.batch_size) if self.params.metric == "clip" else None
        )

    def __call__(self, answers: Sequence[bytes | None], targets: Sequence[bytes]) -> list[float]:
        """One similarity per (answer, target) pair of PNG screenshots; an answer without one scores 0."""
        if len(answers) != len(targets):
            raise ValueError(f"{len(answers)} answers but {len(targets)} targets")
        missing = [i for i, t in enumerate(targets) if t is None]
        if missing:
            raise ValueError(
                f"targets {missing[:10]} have no screenshot; a target that fails to render cannot be scored"
            )
        # Each distinct screenshot is decoded (and embedded) once: targets repeat across samples of a task.
        images = {png: load_image(png) for png in {*targets, *(a for a in answers if a is not None)}}
        if self._clip is not None:
            vectors = dict(zip(images, self._clip.embed(list(images.values()))))

            def pair(a: bytes, b: bytes) -> float:
                return max(-1.0, min(1.0, float(vectors[a] @ vectors[b])))  # rounding can step past 1
        else:

            def pair(a: bytes, b: bytes) -> float:
                return pixel_similarity(images[a], images[b])

        return [0.0 if a is None else pair(a, t) for a, t in zip(answers, targets)]


def win(ours: float, reference: float) -> float:
    """1 if our score beats the reference's, 0.5 for a tie, else 0."""
    return 1.0 if ours > reference else 0.5 if ours == reference else 0.0


def win_rate(ours: Sequence[float], reference: Sequence[float]) -> float:
    """Share of tasks where our similarity beats the reference method's; a tie counts half."""
    if len(ours) != len(reference):
        raise ValueError(f"win rate needs one score per task from each method: {len(ours)} vs {len(reference)}")
    if not ours:
        raise ValueError("win rate of no tasks")
    return sum(map(win, ours, reference)) / len(ours)
