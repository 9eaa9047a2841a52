"""helpers.protobuf_demo.annotate: the annotated hex dump."""

from __future__ import annotations

from helpers import protobuf_demo as pbd
from helpers.features import Example, example_from_dict


def test_annotate_names_fields_and_decodes_values():
    ImageRecord, _ = pbd.image_record_classes()
    r = ImageRecord(id=150, filename="cat.jpg", score=0.5, bbox=[10, 300], verified=True)
    text = pbd.annotate(r.SerializeToString(), ImageRecord.DESCRIPTOR)
    lines = text.splitlines()
    assert lines[0].startswith("0000  08 96 01") and "(id)" in lines[0] and lines[0].endswith("150")
    assert "'cat.jpg' (7 bytes)" in text
    assert "packed [10, 300]" in text
    assert "0.5" in text and "true" in text
    plain = pbd.annotate(r.SerializeToString())
    assert "(id)" not in plain and "VARINT 150" in plain


def test_annotate_recurses_into_tf_example():
    ex = example_from_dict({"depth": 1, "n": [-1]})
    text = pbd.annotate(ex.SerializeToString(deterministic=True), Example.DESCRIPTOR)
    assert "Features message" in text and "FeatureEntry message" in text
    assert "'depth' (5 bytes)" in text
    assert "packed [-1]" in text
