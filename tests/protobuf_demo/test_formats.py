"""helpers.protobuf_demo.formats, compare and cli: the same records as protobuf, JSON and XML."""

from __future__ import annotations

import numpy as np
from google.protobuf import json_format

from helpers import protobuf_demo as pbd


def test_make_image_records_is_deterministic_and_fits_the_schema():
    a, b = pbd.make_image_records(20, seed=3), pbd.make_image_records(20, seed=3)
    assert a == b and a != pbd.make_image_records(20, seed=4)
    ImageRecord, ImageRecords = pbd.image_record_classes()
    msg = pbd.records_to_message(a, ImageRecords)
    assert [pbd.message_to_record(m) for m in msg.records] == a


def test_json_and_xml_round_trip():
    records = pbd.make_image_records(30, seed=1)
    ImageRecord, _ = pbd.image_record_classes()
    assert pbd.from_json(pbd.to_json(records)) == records
    xml = pbd.to_xml(records)
    assert xml.startswith(b"<records><record><id>")
    assert pbd.from_xml(xml, ImageRecord.DESCRIPTOR) == records


def test_compare_formats_sizes_and_ratios():
    results = pbd.compare_formats(pbd.make_image_records(200), repeat=1)
    by_name = {r.name.split(" ")[0] + (" msg" if "message" in r.name else ""): r for r in results}
    assert by_name["protobuf"].size == by_name["protobuf msg"].size
    assert by_name["protobuf"].size < by_name["JSON"].size < by_name["XML"].size
    assert all(r.encode_s > 0 and r.decode_s > 0 for r in results)
    table = pbd.format_table(results)
    assert "XML (ElementTree)" in table and "1.0×" in table


def test_best_time_is_positive_and_small():
    calls = []
    seconds = pbd.best_time(lambda: calls.append(sum(range(100))), repeat=2)
    assert 0 < seconds < 0.01
    assert len(calls) * seconds >= 0.2  # timeit's autorange: rounds of at least 0.2 s


def test_json_format_matches_the_lesson_claims():
    ImageRecord, _ = pbd.image_record_classes()
    r = ImageRecord(id=5, taken_at_ms=2**60, label=0)
    text = json_format.MessageToJson(r, indent=None)
    assert '"takenAtMs": "1152921504606846976"' in text and "label" not in text
    assert json_format.Parse(text, ImageRecord()) == r


def test_cli_annotate_and_compare(tmp_path, capsys):
    proto = tmp_path / "r.proto"
    proto.write_text(pbd.IMAGE_RECORD_PROTO)
    assert pbd.main(["annotate", "089601", "--proto", str(proto), "--message", "ImageRecord"]) == 0
    assert "(id)" in capsys.readouterr().out
    assert pbd.main(["annotate", "0896"]) == 1
    assert pbd.main(["annotate", "08", "--proto", str(proto), "--message", "Nope"]) == 2
    assert pbd.main(["compare", "--records", "50", "--repeat", "1"]) == 0
    assert "protobuf" in capsys.readouterr().out


def test_numpy_ints_work_in_records():
    ImageRecord, _ = pbd.image_record_classes()
    r = ImageRecord(id=np.int64(3), label=np.int32(2))
    assert pbd.message_to_record(r)["id"] == 3
