"""Lesson 04 exercises: an Example for a typical converter script's schema, size-based shard
boundaries, and counting the records of a shard per class.

Cases hold only inputs (strings, numbers, file paths); expected answers are
recomputed here, in the checker's process, from those inputs -- the shard of
``04.count_per_class`` is regenerated from the seed in its name (the file itself
is never trusted), and a shard plan is judged by the rule's properties, so no
reference answer is shipped as a callable.
"""

from __future__ import annotations

import os
import re
import string
from pathlib import Path
from typing import Any

import numpy as np

from helpers.exercises import CheckFailed, Exercise, register
from helpers.features import Example, image_example, serialize_example
from helpers.records import write_records


def _guarded(func: Any, *args: Any, **kwargs: Any) -> Any:
    """Call ``func``; an exception it raises on purpose becomes ``{"raised": ...}``."""
    try:
        return func(*args, **kwargs)
    except NotImplementedError:
        raise
    except (ValueError, TypeError, IndexError, KeyError) as err:
        return {"raised": f"{type(err).__name__}: {err}"}
    except Exception as err:  # noqa: BLE001 - e.g. tf.errors.InvalidArgumentError
        if type(err).__module__.startswith("tensorflow"):
            return {"raised": f"{type(err).__name__}: {err}"}
        raise


def _name(rng: np.random.Generator) -> str:
    pool = list(string.ascii_lowercase + string.digits + "_-éü猫 ")
    stem = "".join(rng.choice(pool, size=int(rng.integers(3, 12)))).strip() or "img"
    return f"n{int(rng.integers(10**7, 10**8))}/{stem}_{int(rng.integers(0, 10**5)):05d}.JPEG"


# ---------------------------------------------------------------------------
# 04.make_example
# ---------------------------------------------------------------------------


def _example_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i in range(6):
        num_classes = int(rng.integers(2, 1001))
        if i == 3:
            category = num_classes  # one past the end: tf.one_hot would give all zeros
        elif i == 4:
            category = -1
        elif i == 0:
            category = 0
        elif i == 1:
            category = num_classes - 1
        else:
            category = int(rng.integers(0, num_classes))
        data = rng.integers(0, 256, size=int(rng.integers(0, 400)), dtype=np.uint8)
        if i == 2 and data.size:
            data[: min(3, data.size)] = [0xFF, 0xD8, 0xFF][: min(3, data.size)]
        cases.append(
            {
                "name": _name(rng),
                "category": category,
                "data_hex": data.tobytes().hex(),
                "num_classes": num_classes,
            }
        )
    return cases


def _example_call(func: Any, case: dict[str, Any]) -> Any:
    return _guarded(
        func,
        case["name"],
        case["category"],
        bytes.fromhex(case["data_hex"]),
        case["num_classes"],
    )


_SCHEMA = {"name": "bytes_list", "category": "int64_list", "data": "bytes_list"}


def _example_verify(case: dict[str, Any], result: Any) -> None:
    name, category, n = case["name"], case["category"], case["num_classes"]
    data = bytes.fromhex(case["data_hex"])
    call = f"make_example({name!r}, {category}, <{len(data)} bytes>, num_classes={n})"
    in_range = 0 <= category < n
    if not in_range:
        if isinstance(result, dict) and "raised" in result:
            if not result["raised"].startswith("ValueError"):
                raise CheckFailed(
                    f"{call} raised {result['raised']}; raise a ValueError for a category "
                    f"outside [0, {n})"
                )
            return
        raise CheckFailed(
            f"{call} returned a record for category {category}, which is outside [0, {n}): "
            f"tf.one_hot({category}, depth={n}) would silently be all zeros",
            "check 0 <= category < num_classes and raise ValueError otherwise",
        )
    if isinstance(result, dict) and "raised" in result:
        raise CheckFailed(f"{call} raised {result['raised']}, but category {category} is valid")
    if isinstance(result, bytes):
        raise CheckFailed(
            f"{call} returned bytes; return the tf.train.Example itself (the converter "
            "serializes it when writing)"
        )
    if not isinstance(result, Example):
        raise CheckFailed(
            f"{call} returned a {type(result).__name__}, not a tf.train.Example",
            "return tf.train.Example(features=tf.train.Features(feature={...}))",
        )
    features = result.features.feature
    keys = sorted(features)
    if keys != sorted(_SCHEMA):
        raise CheckFailed(
            f"{call} has features {keys}; the schema has exactly {sorted(_SCHEMA)}",
            "name (bytes), category (int64), data (bytes): a typical converter script's names",
        )
    for key, kind in _SCHEMA.items():
        got = features[key].WhichOneof("kind")
        if got != kind:
            raise CheckFailed(f"{call}: feature {key!r} is a {got}, the schema says {kind}")
    names = list(features["name"].bytes_list.value)
    if names != [name.encode("utf-8")]:
        raise CheckFailed(
            f"{call}: feature 'name' holds {names!r}, expected [{name.encode('utf-8')!r}]",
            "store the file name as UTF-8 bytes: name.encode('utf-8')",
        )
    categories = list(features["category"].int64_list.value)
    if categories != [category]:
        raise CheckFailed(f"{call}: feature 'category' holds {categories}, expected [{category}]")
    stored = list(features["data"].bytes_list.value)
    if stored != [data]:
        what = f"{len(stored)} value(s)" if len(stored) != 1 else f"{len(stored[0])} bytes"
        raise CheckFailed(
            f"{call}: feature 'data' holds {what}, expected the {len(data)} bytes given, unchanged",
            "store the encoded image bytes as they are (no decoding, no str())",
        )


register(
    Exercise(
        key="04.make_example",
        target="make_example",
        title="an Example for a typical converter script's schema, refusing bad categories",
        make_cases=_example_cases,
        verify=_example_verify,
        hint="features name (UTF-8 bytes), category (int64), data (bytes as given); "
        "raise ValueError unless 0 <= category < num_classes",
        call=_example_call,
    )
)


# ---------------------------------------------------------------------------
# 04.shard_boundaries
# ---------------------------------------------------------------------------


def _boundary_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    limit = int(rng.integers(400_000, 2_000_000))
    sizes = [int(s) for s in rng.integers(20_000, 200_000, size=int(rng.integers(40, 90)))]
    cases.append({"sizes": sizes, "size_per_record": limit})
    # exact fits: a shard that reaches the limit exactly must not take the next image
    per = int(rng.integers(10_000, 50_000))
    k = int(rng.integers(2, 6))
    cases.append({"sizes": [per] * (k * 3), "size_per_record": per * k})
    # one image bigger than the limit, first, in the middle and last
    big = int(rng.integers(3_000_000, 9_000_000))
    small = [int(s) for s in rng.integers(50_000, 400_000, size=12)]
    cases.append({"sizes": [big, *small[:6], big, *small[6:], big], "size_per_record": 1_000_000})
    # a single file, and everything fits in one shard
    cases.append({"sizes": [int(rng.integers(1, 10**6))], "size_per_record": 50 * 1024 * 1024})
    cases.append(
        {
            "sizes": [int(s) for s in rng.integers(1000, 5000, size=30)],
            "size_per_record": 50 * 1024 * 1024,
        }
    )
    cases.append({"sizes": [], "size_per_record": 1024})
    return cases


def _seed_rule(sizes: list[int], size_per_record: int) -> list[list[int]]:
    bounds, start, total = [], 0, 0
    for i, size in enumerate(sizes):
        total += size
        if total >= size_per_record:
            bounds.append([start, i + 1])
            start, total = i + 1, 0
    if start < len(sizes):
        bounds.append([start, len(sizes)])
    return bounds


def _as_pairs(result: Any) -> list[list[int]] | None:
    if not isinstance(result, list):
        return None
    pairs = []
    for item in result:
        if not isinstance(item, list) or len(item) != 2:
            return None
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in item):
            return None
        pairs.append([int(item[0]), int(item[1])])
    return pairs


def _boundary_verify(case: dict[str, Any], result: Any) -> None:
    """Judge the plan by the rule's properties; no reference plan is computed or shipped.

    Shards that cover the files once, in order, where no shard of two or more
    images passes the limit and none was closed while the next image still fit,
    are exactly the converter's greedy plan.
    """
    sizes, limit = case["sizes"], case["size_per_record"]
    call = f"shard_boundaries(<{len(sizes)} sizes>, size_per_record={limit})"
    pairs = _as_pairs(result)
    if pairs is None:
        raise CheckFailed(
            f"{call} returned {str(result)[:120]}; expected a list of (start, end) pairs of ints",
            "return e.g. [(0, 17), (17, 40)]: end is exclusive, like range(start, end)",
        )
    if not sizes:
        if pairs:
            raise CheckFailed(f"{call} returned {pairs}: no files means no shards, i.e. []")
        return
    if any(end <= start for start, end in pairs):
        raise CheckFailed(f"{call} contains an empty shard: {pairs[:8]}")
    covered = [i for start, end in pairs for i in range(start, end)]
    if covered != list(range(len(sizes))):
        missing = sorted(set(range(len(sizes))) - set(covered))
        if (
            missing
            and missing == list(range(missing[0], len(sizes)))
            and covered == list(range(missing[0]))
        ):
            raise CheckFailed(
                f"{call}: files {missing[0]}..{len(sizes) - 1} are in no shard -- the last, "
                "partly filled shard was dropped",
                "after the loop, close the shard that is still open",
            )
        raise CheckFailed(
            f"{call}: the shards do not cover files 0..{len(sizes) - 1} exactly once, in order "
            f"(got {pairs[:6]}{' ...' if len(pairs) > 6 else ''})"
        )
    if pairs == _seed_rule(sizes, limit) and any(
        sum(sizes[s:e]) > limit and e - s > 1 for s, e in pairs
    ):
        raise CheckFailed(
            f"{call} closes a shard only after it has passed the limit (a typical converter "
            f"script's rule), so shards overshoot size_per_record; got {pairs[:4]}",
            "close the current shard *before* adding an image that would push it past the limit",
        )
    for start, end in pairs:
        total = sum(sizes[start:end])
        if total > limit and end - start > 1:
            raise CheckFailed(
                f"{call}: shard [{start}, {end}) holds {total} bytes > {limit} with "
                f"{end - start} images; only a single image may exceed the limit"
            )
    for s0, e0 in pairs[:-1]:
        if sum(sizes[s0:e0]) + sizes[e0] <= limit:
            raise CheckFailed(
                f"{call}: shard [{s0}, {e0}) was closed early: image {e0} ({sizes[e0]} bytes) "
                f"still fits ({sum(sizes[s0:e0])} + {sizes[e0]} <= {limit})",
                "a shard may reach size_per_record exactly; close it only when the next "
                "image would go over",
            )


register(
    Exercise(
        key="04.shard_boundaries",
        target="shard_boundaries",
        title="plan size-based shards like helpers.convert",
        make_cases=_boundary_cases,
        verify=_boundary_verify,
        hint="walk the sizes keeping a running total; start a new shard when the shard is "
        "not empty and total + size > size_per_record; close the last shard after the loop",
    )
)


# ---------------------------------------------------------------------------
# 04.count_per_class
# ---------------------------------------------------------------------------

_CLASS_POOL = (
    "tench",
    "goldfish",
    "great_white_shark",
    "tiger_shark",
    "hammerhead",
    "electric_ray",
    "stingray",
    "cock",
    "hen",
    "ostrich",
    "brambling",
    "goldfinch",
)


_SHARD_NAME = re.compile(r"shard(\d+)_(\d+)_(\d+)\.tfrecord$")


def _shard_contents(seed: int, n: int) -> tuple[list[str], list[int], list[bytes]]:
    """The classes, labels and serialized records of a checker-made shard, from its name.

    The verifier recomputes the expected counts from here: it never reads the file,
    which sits where the student's code (and, in grading, the kernel) can change it.
    """
    rng = np.random.default_rng(seed)
    classes = sorted(
        str(c) for c in rng.choice(_CLASS_POOL, size=int(rng.integers(2, 7)), replace=False)
    )
    labels = [
        int(v) for v in rng.choice(len(classes), size=n, p=rng.dirichlet(np.ones(len(classes))))
    ]
    records = []
    for j, label in enumerate(labels):
        payload = rng.integers(0, 256, size=int(rng.integers(20, 120)), dtype=np.uint8)
        example = image_example(
            payload.tobytes(),
            label,
            classes[label],
            f"{classes[label]}/{j:05d}.jpg",
            int(rng.integers(50, 500)),
            int(rng.integers(50, 500)),
        )
        records.append(serialize_example(example))
    return classes, labels, records


def _count_cases(rng: np.random.Generator, workdir: Path) -> list[dict[str, Any]]:
    cases = []
    for i in range(3):
        seed, n = int(rng.integers(0, 2**31 - 1)), int(rng.integers(30, 140)) if i else 1
        path = workdir / f"shard{i}_{seed}_{n}.tfrecord"
        write_records(path, _shard_contents(seed, n)[2])
        cases.append({"path": os.fspath(path)})
    return cases


def _count_call(func: Any, case: dict[str, Any]) -> Any:
    result = func(case["path"])
    if isinstance(result, dict):  # tolerate bytes keys / numpy counts; the verifier judges
        out = {}
        for key, value in result.items():
            text = key.decode("utf-8") if isinstance(key, bytes) else str(key)
            out[text] = int(value) if isinstance(value, (int, np.integer)) else value
        return out
    return result


def _expected_counts(path: str) -> tuple[dict[str, int], dict[str, int], int]:
    match = _SHARD_NAME.search(os.path.basename(path))
    if match is None:
        raise ValueError(f"not a checker-made shard: {path}")
    classes, labels, _ = _shard_contents(int(match.group(2)), int(match.group(3)))
    by_text: dict[str, int] = {}
    by_label: dict[str, int] = {}
    for label in labels:
        by_text[classes[label]] = by_text.get(classes[label], 0) + 1
        by_label[str(label)] = by_label.get(str(label), 0) + 1
    return by_text, by_label, len(labels)


def _count_verify(case: dict[str, Any], result: Any) -> None:
    path = case["path"]
    expected, by_label, total = _expected_counts(path)
    call = f"count_per_class({Path(path).name!r})"
    if not isinstance(result, dict):
        raise CheckFailed(
            f"{call} returned a {type(result).__name__}; expected a dict class name -> count",
            "e.g. {'goldfish': 12, 'tench': 30}",
        )
    got = {k: v for k, v in result.items() if v != 0}
    if got == expected:
        return
    if got == by_label:
        raise CheckFailed(
            f"{call} is keyed by integer label {sorted(got)}; key it by class name "
            "(the 'image/class/text' feature), e.g. " + repr(sorted(expected)[:2]),
        )
    counted = sum(v for v in got.values() if isinstance(v, int))
    if set(got) != set(expected):
        if any(k.startswith(("b'", 'b"', "tf.Tensor(")) for k in got):
            raise CheckFailed(
                f"{call} has classes {sorted(got)[:4]}; the shard holds {sorted(expected)}",
                "decode 'image/class/text' bytes with .decode('utf-8')",
            )
        if set(got) < set(expected) and counted < total:
            raise CheckFailed(
                f"{call} counted {counted} of the shard's {total} records (no record of "
                f"{sorted(set(expected) - set(got))}): every record must be counted exactly "
                "once (no take(), no skipped first record)"
            )
        raise CheckFailed(f"{call} has classes {sorted(got)}; the shard holds {sorted(expected)}")
    if counted != total:
        raise CheckFailed(
            f"{call} counted {counted} records in all, the shard holds {total}: every "
            "record must be counted exactly once (no take(), no skipped first record)"
        )
    raise CheckFailed(f"{call} returned {got}, expected {expected}")


register(
    Exercise(
        key="04.count_per_class",
        target="count_per_class",
        title="read a shard and count its records per class",
        make_cases=_count_cases,
        verify=_count_verify,
        hint="tf.data.TFRecordDataset(path), parse 'image/class/text' with "
        "tf.io.parse_single_example, and count with a dict or collections.Counter",
        call=_count_call,
    )
)
