"""``python -m helpers.legacy table`` / ``train``."""

from __future__ import annotations

import argparse
from pathlib import Path

from helpers.legacy.digits import write_digit_records
from helpers.legacy.softmax import evaluate_softmax, train_softmax_dataset, train_softmax_queue
from helpers.legacy.table import QUEUE_TO_DATA


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.legacy",
        description="TF1 queue pipelines (tf.compat.v1) and their tf.data replacements.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("table", help="print the queue API -> tf.data table")
    train = sub.add_parser("train", help="softmax regression on the fixture digits, both ways")
    train.add_argument("--epochs", type=int, default=5)
    train.add_argument("--batch-size", type=int, default=32)
    train.add_argument("--work-dir", type=Path, default=Path("build/legacy"))
    args = parser.parse_args(argv)

    if args.command == "table":
        for api, replacement, note in QUEUE_TO_DATA:
            print(f"{api}\n    -> {replacement}\n       ({note})")
        return 0

    from helpers.fixture import load_digits

    args.work_dir.mkdir(parents=True, exist_ok=True)
    x_train, y_train = load_digits(split="train")
    x_test, y_test = load_digits(split="test")
    path = args.work_dir / "digits_train.tfrecord"
    write_digit_records(path, x_train, y_train)
    for trainer in (train_softmax_queue, train_softmax_dataset):
        result = trainer([path], num_epochs=args.epochs, batch_size=args.batch_size)
        accuracy = evaluate_softmax(result, x_test, y_test)
        print(
            f"{result.how}: {result.steps} steps in {result.seconds:.2f} s, "
            f"test accuracy {accuracy:.3f}"
        )
    return 0
