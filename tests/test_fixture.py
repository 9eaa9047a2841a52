"""Tests for helpers.fixture: determinism, committed data, and that the data is usable."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from helpers import fixture
from helpers.fixture import (
    CHECKSUMS_NAME,
    CLASSES,
    DATA_DIR,
    REGRESSION_COUNT,
    REGRESSION_SIZE,
    compare,
    draw_image,
    generate,
    load_digits,
    read_checksums,
    regression_params,
)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """One fresh generation shared by the read-only tests of this module."""
    out = tmp_path_factory.mktemp("fixture")
    return out, generate(out, progress=False)


@pytest.fixture(scope="module")
def fresh_manifest(generated: tuple[Path, dict]) -> dict[str, str]:
    return read_checksums(generated[0] / CHECKSUMS_NAME)


def _jpegs(root: Path) -> list[Path]:
    return sorted(root.rglob("*.jpg"))


# --------------------------------------------------------------------------- #
# Reproducibility
# --------------------------------------------------------------------------- #
def test_generation_is_deterministic(
    generated: tuple[Path, dict], fresh_manifest: dict[str, str], tmp_path: Path
) -> None:
    summary = generate(tmp_path, progress=False)
    again = read_checksums(tmp_path / CHECKSUMS_NAME)
    assert again == fresh_manifest
    assert summary == {**generated[1], "checksums": str(tmp_path / CHECKSUMS_NAME)}
    assert compare(tmp_path, fresh_manifest) == []


def test_manifest_lists_every_generated_file(generated: tuple[Path, dict]) -> None:
    out, summary = generated
    on_disk = {
        p.relative_to(out).as_posix()
        for sub in fixture.GENERATED_DIRS
        for p in (out / sub).rglob("*")
        if p.is_file()
    }
    lines = (out / CHECKSUMS_NAME).read_text(encoding="utf-8").splitlines()
    entries = [line for line in lines if not line.startswith("#")]
    assert all(re.fullmatch(r"[0-9a-f]{64}  \S+", line) for line in entries)  # sha256sum -c format
    assert set(read_checksums(out / CHECKSUMS_NAME)) == on_disk
    assert summary["files"] == len(on_disk)


def test_committed_data_matches_generator(fresh_manifest: dict[str, str]) -> None:
    """`python -m helpers.fixture --check` on the committed data/ (without a third generation)."""
    problems = compare(DATA_DIR, fresh_manifest)
    manifest = DATA_DIR / CHECKSUMS_NAME
    written_with = fixture._checksum_versions(manifest) if manifest.is_file() else "unknown"
    assert problems == [], (
        "data/ differs from what helpers.fixture generates "
        "(regenerate with `python -m helpers.fixture` if the generator changed):\n"
        + "\n".join(problems[:20])
        + f"\nmanifest written with: {written_with}\nthis environment: {fixture._versions()}"
    )


def test_compare_names_tampered_missing_and_stray_files(
    generated: tuple[Path, dict], fresh_manifest: dict[str, str], tmp_path: Path
) -> None:
    copy = tmp_path / "data"
    shutil.copytree(generated[0], copy)
    (copy / "images" / "circle" / "circle_0001.jpg").write_bytes(b"not a jpeg")
    (copy / "regression" / "metadata.csv").unlink()
    (copy / "images" / "circle" / "stray.jpg").write_bytes(b"x")
    (copy / "README.md").write_text("hand-written files outside the fixture dirs are fine")
    assert compare(copy, fresh_manifest) == [
        "differs: images/circle/circle_0001.jpg",
        "missing: regression/metadata.csv",
        "unexpected: images/circle/stray.jpg",
    ]
    (copy / CHECKSUMS_NAME).write_text("0" * 64 + "  images/circle/circle_0002.jpg\n")
    assert "stale manifest entry: images/circle/circle_0002.jpg" in compare(copy, fresh_manifest)


def test_cli_check_exit_codes(
    generated: tuple[Path, dict],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    copy = tmp_path / "data"
    shutil.copytree(generated[0], copy)
    fresh = read_checksums(generated[0] / CHECKSUMS_NAME)
    # Reuse the module's generation instead of regenerating for each --check.
    monkeypatch.setattr(fixture, "check", lambda data_dir, progress=False: compare(data_dir, fresh))
    assert fixture.main(["--check", "--output", str(copy), "--quiet"]) == 0
    (copy / "digits" / "digits.npz").write_bytes(b"")
    assert fixture.main(["--check", "--output", str(copy), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "differs: digits/digits.npz" in err and "FAILED" in err


def test_cli_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        fixture.main(["--help"])
    assert exc.value.code == 0
    assert "--check" in capsys.readouterr().out


def test_regenerating_removes_files_no_longer_generated(tmp_path: Path) -> None:
    stale = tmp_path / "images" / "circle" / "circle_9999.jpg"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    keeper = tmp_path / "images" / "notes.txt"
    keeper.write_text("not in the manifest: left alone")
    (tmp_path / CHECKSUMS_NAME).write_text(f"{'0' * 64}  images/circle/circle_9999.jpg\n")
    fixture._remove_stale(tmp_path, keep=set())
    assert not stale.exists() and keeper.exists()


# --------------------------------------------------------------------------- #
# Image classes
# --------------------------------------------------------------------------- #
def test_classes_and_counts(generated: tuple[Path, dict]) -> None:
    out, summary = generated
    assert len(CLASSES) >= 5 and len(set(CLASSES)) == len(CLASSES)
    assert sorted(p.name for p in (out / "images").iterdir()) == sorted(CLASSES)
    for name in CLASSES:
        files = _jpegs(out / "images" / name)
        assert len(files) >= 30, name
        assert summary["classes"][name] == len(files)
        assert all(re.fullmatch(rf"{name}_\d{{4}}\.jpg", f.name) for f in files)


def test_images_are_rgb_jpegs_of_varied_sizes(generated: tuple[Path, dict]) -> None:
    out, summary = generated
    sizes = []
    for path in _jpegs(out / "images"):
        with Image.open(path) as im:
            assert im.format == "JPEG" and im.mode == "RGB", path
            im.load()
            sizes.append(im.size)
    widths, heights = zip(*sizes, strict=True)
    assert 120 <= min(widths) and max(widths) <= 320
    assert 90 <= min(heights) and max(heights) <= 280
    assert len(set(sizes)) > len(sizes) // 2
    aspect = np.array(widths) / np.array(heights)
    assert aspect.min() < 0.8 and aspect.max() > 1.8
    assert summary["bytes"]["images"] <= 2_600_000


def test_draw_image_contract() -> None:
    a = draw_image("checker", np.random.default_rng(7), (150, 100))
    b = draw_image("checker", np.random.default_rng(7), (150, 100))
    assert a.size == (150, 100) and a.mode == "RGB"
    assert a.tobytes() == b.tobytes()
    assert np.asarray(a).std() > 20  # a visible pattern, not a flat field
    with pytest.raises(ValueError, match="hexagon"):
        draw_image("hexagon", np.random.default_rng(0), (100, 100))


def _orientation_features(path: Path, n: int = 48, bins: int = 12) -> np.ndarray:
    """Magnitude-weighted histogram of gradient orientations (a tiny HOG) + edge density."""
    with Image.open(path) as im:
        g = np.asarray(im.convert("L").resize((n, n), Image.Resampling.BILINEAR), np.float32) / 255
    gy, gx = np.gradient(g)
    mag = np.hypot(gx, gy)
    idx = np.minimum((np.mod(np.arctan2(gy, gx), np.pi) / np.pi * bins).astype(int), bins - 1)
    hist = np.bincount(idx.ravel(), weights=mag.ravel(), minlength=bins)
    return np.concatenate([hist / (hist.sum() + 1e-9), [mag.mean() * 10, (mag > 0.1).mean()]])


def test_image_classes_are_learnable(generated: tuple[Path, dict]) -> None:
    """A linear model on orientation histograms separates the classes on held-out images."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    out, _ = generated
    x, y, train = [], [], []
    for label, name in enumerate(CLASSES):
        for i, path in enumerate(_jpegs(out / "images" / name)):
            x.append(_orientation_features(path))
            y.append(label)
            train.append(i < 28)
    x_arr, y_arr, tr = np.array(x), np.array(y), np.array(train)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    model.fit(x_arr[tr], y_arr[tr])
    accuracy = model.score(x_arr[~tr], y_arr[~tr])
    assert accuracy > 0.8, f"held-out accuracy {accuracy:.2f} (chance {1 / len(CLASSES):.2f})"


# --------------------------------------------------------------------------- #
# Regression case
# --------------------------------------------------------------------------- #
def test_regression_csv_labels_match_drawn_discs(generated: tuple[Path, dict]) -> None:
    out, summary = generated
    reg = out / "regression"
    with (reg / "metadata.csv").open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        assert next(reader) == ["filename", "label"]
        rows = list(reader)
    assert len(rows) == REGRESSION_COUNT == summary["regression"]
    values = [float(label) for _, label in rows]
    assert [repr(v) for v in values] == [label for _, label in rows]  # full float repr
    labels = np.array(values)
    assert len(np.unique(labels)) == len(labels)

    estimated, radii = [], []
    for i, (name, label) in enumerate(rows):
        params = regression_params(i)
        assert float(label) == params["label"] and abs(params["label"] - params["radius"]) < 2.5
        with Image.open(reg / "images" / name) as im:
            assert im.size == REGRESSION_SIZE and im.mode == "RGB"
            g = np.asarray(im.convert("L"), np.float32)
        # Area of the pixels that look like the disc -> radius, with no use of the label.
        yy, xx = np.mgrid[: g.shape[0], : g.shape[1]]
        d = np.hypot(xx + 0.5 - params["cx"], yy + 0.5 - params["cy"])
        inside = g[d < 0.7 * params["radius"]].mean()
        ring = g[(d > params["radius"] + 2) & (d < params["radius"] + 8)].mean()
        assert abs(inside - ring) > 30, name
        disc = np.abs(g - inside) < np.abs(g - ring)
        estimated.append(np.sqrt(disc.sum() / np.pi))
        radii.append(params["radius"])
    estimated_arr = np.array(estimated)
    assert np.abs(estimated_arr - np.array(radii)).max() < 1.5
    assert np.corrcoef(estimated_arr, labels)[0, 1] > 0.99


# --------------------------------------------------------------------------- #
# Digits
# --------------------------------------------------------------------------- #
def test_digits_arrays(generated: tuple[Path, dict]) -> None:
    out, summary = generated
    with np.load(out / "digits" / "digits.npz", allow_pickle=False) as npz:
        images, labels, split = npz["images"], npz["labels"], npz["split"]
        assert (int(npz["height"]), int(npz["width"]), int(npz["depth"])) == (8, 8, 1)
    assert images.dtype == np.uint8 and images.ndim == 3 and images.shape[1:] == (8, 8)
    assert labels.dtype == np.int64 and labels.shape == (len(images),)
    assert images.min() == 0 and images.max() == 255
    assert set(labels.tolist()) == set(range(10))
    assert summary["digits"] == {
        "train": int((split == "train").sum()),
        "test": int((split == "test").sum()),
    }
    assert summary["digits"]["train"] > summary["digits"]["test"] > 0


def test_load_digits_splits(generated: tuple[Path, dict]) -> None:
    out, summary = generated
    images, labels = load_digits(out)
    train_x, train_y = load_digits(out, split="train")
    test_x, test_y = load_digits(out, split="test")
    assert len(train_x) == summary["digits"]["train"] and len(test_x) == summary["digits"]["test"]
    np.testing.assert_array_equal(np.concatenate([train_x, test_x]), images)
    np.testing.assert_array_equal(np.concatenate([train_y, test_y]), labels)
    with pytest.raises(ValueError, match="split"):
        load_digits(out, split="validation")


def test_data_dir_is_the_repo_data_folder() -> None:
    assert DATA_DIR == Path(fixture.__file__).resolve().parent.parent / "data"
