"""bench/gpu_check/bundle.py: the wheels a lent GPU machine lacks, pinned to this venv, packed to travel within the
device's 64 MiB (docs/gpu.md, "Offline, on a lent GPU machine"). No network, no GPU."""

from __future__ import annotations

import importlib.util
import io
import re
import tarfile
import zipfile

from packaging.utils import canonicalize_name

from tests.support.project import ROOT

SCRIPT = ROOT / "bench" / "gpu_check" / "bundle.py"
spec = importlib.util.spec_from_file_location("gpu_bundle", SCRIPT)
bundle = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bundle)

REFRESH = "refresh it: .venv/bin/python bench/gpu_check/bundle.py pins (then `make gpu-bundle`)"


def test_every_runtime_requirement_travels_or_is_met_by_the_image():
    listed = bundle.pins()
    for requirement in bundle.roots():
        name = canonicalize_name(requirement.name)
        if name.startswith(bundle.TORCH_STACK):
            continue
        image = bundle.IMAGE_VERSIONS.get(name)
        met_there = name in bundle.IMAGE and (image is None or requirement.specifier.contains(image))
        assert name in listed or met_there, f"{requirement}: neither in wheels.txt nor in the image; {REFRESH}"
        if name in listed:
            assert requirement.specifier.contains(listed[name], prereleases=True), f"{requirement} vs {listed[name]}"
    # The image's transformers (5.17) is older than the code accepts: ours travels, and none of the torch stack does.
    assert "transformers" in listed and not [n for n in listed if n.startswith(bundle.TORCH_STACK)]
    assert not set(listed) & set(bundle.LEFT_OUT)


def test_the_size_check_refuses_a_carry_over_the_limit(tmp_path, capsys):
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "wheels-cp312.tar.xz").write_bytes(b"x" * 3000)
    assert bundle.check_size(1000, folder, limit=4000) == 0
    assert "fits" in capsys.readouterr().out
    assert bundle.check_size(1001, folder, limit=4000) == 1
    assert "TOO LARGE" in capsys.readouterr().err


def test_the_tree_leaves_room_for_the_bundle():
    """`make gpu-bundle` measured 52.7 MiB for Python 3.12 (docs/gpu.md): the tree that travels beside it must stay
    under what is left of the 64 MiB, or the GPU check no longer reaches a lent machine."""
    bundle_bytes = 53 * 2**20
    assert bundle.travelling() + bundle_bytes <= bundle.LIMIT, "leave wheels (wheels.txt) or files out of the tree"


def test_a_packed_wheel_keeps_its_members_stored_for_xz(tmp_path):
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("demo/__init__.py", "x = 1\n" * 200)
        z.writestr("demo-1.0.dist-info/RECORD", "demo/__init__.py,,\n")
    out = tmp_path / "wheels-cp312.tar.xz"
    bundle.pack([wheel], out, preset=1)
    with tarfile.open(out) as tar:
        assert tar.getnames() == [wheel.name]
        packed = zipfile.ZipFile(io.BytesIO(tar.extractfile(wheel.name).read()))
    assert {i.compress_type for i in packed.infolist()} == {zipfile.ZIP_STORED}
    assert packed.read("demo/__init__.py") == b"x = 1\n" * 200


def test_the_offline_check_runs_make_test_gpus_tests():
    """run.sh runs `make test-gpu`'s pytest itself offline (the target's set-up goes to the package index)."""
    recipe = re.search(r"^test-gpu:\n(?:\t.*\n)+", (ROOT / "Makefile").read_text(), re.M).group(0)
    wanted = re.search(r"python -m pytest (.*) \$\(PYTEST_ARGS\)", recipe).group(1).split()
    script = (ROOT / "bench" / "gpu_check" / "run.sh").read_text().replace("\\\n", " ")
    offline = re.search(r'"\$PY" -m pytest (.*?) --basetemp', script).group(1).split()
    assert offline == wanted
