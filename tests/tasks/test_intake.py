"""Test-set intake: every bad input names its line and field, and writes nothing."""

import json

import pytest
from django.test import TestCase, override_settings

from tasks.intake import parse as intake
from tasks.intake import services
from tasks.intake.parse import MAX_ERRORS, MAX_TEXT_CHARS, parse_testset
from tasks.intake.services import TestSetImportError
from tasks.models import Task, TestSet

GOOD = {
    "external_id": "T-1",
    "category": "billing",
    "tier": "base",
    "case_type": "typical",
    "prompt": "Why was I charged twice?",
}
HEADER = "external_id,category,tier,case_type,prompt\n"


def row(**overrides) -> dict:
    data = {**GOOD, **overrides}
    return {k: v for k, v in data.items() if v is not None}


def jsonl(*rows: dict) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


class BadInputTests(TestCase):
    """Each case goes through the import service: the error text and an empty database."""

    def assert_rejected(
        self, data: bytes, expected: str, *, filename: str = "set.jsonl"
    ) -> list[str]:
        with pytest.raises(TestSetImportError) as caught:
            services.testset_import(name="support", data=data, filename=filename)
        errors = caught.value.errors
        assert any(expected in e for e in errors), errors
        assert TestSet.objects.count() == 0 and Task.objects.count() == 0
        return errors

    def test_it_rejects_invalid_utf8_with_its_byte_offset(self):
        data = jsonl(row()) + b'{"external_id": "T-2", "prompt": "caf\xe9"}\n'
        offset = data.index(b"\xe9")
        self.assert_rejected(
            data, f"line 2, field (encoding): invalid UTF-8 (byte 0xe9 at byte offset {offset})"
        )

    def test_it_rejects_a_csv_unterminated_quote(self):
        data = (
            HEADER
            + 'T-1,billing,base,typical,"fine"\nT-2,billing,base,typical,"never closed\nT-3,billing,base,typical,x\n'
        ).encode()
        self.assert_rejected(
            data, "line 3, field (row): unterminated quoted field", filename="set.csv"
        )

    def test_it_rejects_a_ragged_csv_row(self):
        data = (
            HEADER + "T-1,billing,base,typical,hello\nT-2,billing,base,typical,hello,extra\n"
        ).encode()
        self.assert_rejected(
            data, "line 3, field (row): has 6 cells; the header has 5", filename="set.csv"
        )

    def test_it_rejects_a_duplicate_csv_header(self):
        data = (
            b"external_id,category,tier,case_type,prompt,tier\nT-1,billing,base,typical,hi,base\n"
        )
        self.assert_rejected(
            data, "line 1, field tier: duplicate column in the header", filename="set.csv"
        )

    def test_it_rejects_a_missing_csv_header(self):
        data = b"external_id,category,case_type,prompt\nT-1,billing,typical,hi\n"
        self.assert_rejected(
            data, "line 1, field tier: missing column in the header", filename="set.csv"
        )

    def test_it_says_so_once_when_a_csv_file_is_separated_by_semicolons_or_tabs(self):
        for separator, word in ((";", "semicolons"), ("\t", "tabs")):
            header = separator.join(["external_id", "category", "tier", "case_type", "prompt"])
            data = (
                f"{header}\nT-1{separator}billing{separator}base{separator}typical{separator}hi\n"
            )
            result = parse_testset(data.encode(), filename="set.csv")
            assert result.errors == [
                f"line 1, field (header): the columns are separated by {word}; save the file "
                "as comma-separated CSV (in a spreadsheet: CSV, comma delimited)"
            ]

    def test_it_rejects_a_csv_file_without_a_prompt_column(self):
        data = b"external_id,category,tier,case_type\nT-1,billing,base,typical\n"
        self.assert_rejected(data, "line 1, field prompt: missing column", filename="set.csv")

    def test_it_rejects_a_jsonl_line_that_is_not_an_object(self):
        self.assert_rejected(
            jsonl(row()) + b'["T-2", "billing"]\n',
            "line 2, field (json): each line must be a JSON object, not an array",
        )

    def test_it_rejects_trailing_garbage_after_the_object(self):
        data = jsonl(row()) + json.dumps(row(external_id="T-2")).encode() + b" trailing\n"
        self.assert_rejected(data, "line 2, field (json): unexpected text after the JSON value")

    def test_it_rejects_nan_and_infinity(self):
        data = (
            jsonl(row())
            + b'{"external_id": "T-2", "metadata": {"score": NaN}}\n{"metadata": {"x": -Infinity}}\n'
        )
        errors = self.assert_rejected(data, "line 2, field (json): NaN is not valid JSON")
        assert any(
            e.startswith("line 3, field (json): -Infinity is not valid JSON") for e in errors
        ), errors

    def test_it_rejects_numbers_that_overflow_to_infinity(self):
        data = jsonl(row()) + b'{"external_id": "T-2", "metadata": {"big": 1e999}}\n'
        self.assert_rejected(data, "line 2, field (json): the number 1e999 is out of range")

    def test_it_rejects_a_duplicate_key(self):
        data = (
            jsonl(row())
            + b'{"external_id": "T-2", "category": "a", "tier": "base", "tier": "advanced"}\n'
        )
        self.assert_rejected(data, "line 2, field tier: duplicate key")

    def test_a_duplicate_key_inside_an_object_is_named_by_its_path(self):
        data = (
            jsonl(row())
            + b'{"external_id": "T-2", "prompt": "p", "metadata": {"src": "a", "src": "b"}}\n'
            + b'{"external_id": "T-3", "turns": [{"role": "user", "content": "x", "role": "a"}]}\n'
        )
        self.assert_rejected(
            data, "line 2, field metadata.src: duplicate key (each key may appear once)"
        )
        self.assert_rejected(data, "line 3, field turns[0].role: duplicate key")

    def test_it_rejects_huge_integers_and_deep_nesting_per_line(self):
        data = (
            jsonl(row())
            + b'{"metadata": {"n": '
            + b"9" * 5000
            + b"}}\n"
            + b'{"metadata": '
            + b"[" * 50_000
            + b"\n"
        )
        errors = self.assert_rejected(data, "line 2, field (json): a number has too many digits")
        assert "line 3, field (json): JSON is nested too deeply" in errors

    def test_it_rejects_text_no_database_can_store_instead_of_crashing(self):
        # PostgreSQL refuses NUL in text; a lone surrogate cannot even be encoded as UTF-8.
        data = (
            jsonl(row())
            + b'{"external_id": "T-2", "prompt": "a\\u0000b"}\n'
            + b'{"external_id": "T-3", "metadata": {"k": ["\\ud800"]}}\n'
            + b'{"external_id": "T-4", "prompt": "\\ud83d\\ude00 and a \\\\u0000 in text"}\n'
        )
        errors = self.assert_rejected(
            data, "line 2, field (json): a string contains \\u0000 (a NUL character)"
        )
        assert any(
            e.startswith("line 3, field (json): a string contains an unpaired surrogate (\\ud800)")
            for e in errors
        ), errors
        assert not any(e.startswith("line 4, field (json)") for e in errors), errors
        csv_data = (HEADER + "T-1,billing,base,typical,a\x00b\n").encode()
        self.assert_rejected(
            csv_data,
            "line 2, field (encoding): a NUL byte (0x00 at byte offset 69)",
            filename="s.csv",
        )

    def test_it_words_a_raw_control_character_in_a_string_once(self):
        data = jsonl(row()) + b'{"external_id": "T-2", "prompt": "a\rb"}\n'
        self.assert_rejected(
            data, "line 2, field (json): not valid JSON: Invalid control character at column 36"
        )

    def test_it_names_utf16_instead_of_reporting_a_bad_utf8_byte(self):
        data = jsonl(row()).decode().encode("utf-16")
        self.assert_rejected(data, "line 1, field (encoding): the file is UTF-16; save it as UTF-8")

    def test_it_rejects_a_missing_prompt(self):
        self.assert_rejected(
            jsonl(row(), row(external_id="T-2", prompt=None)),
            "line 2, field prompt: is required (or give a messages array, or turns)",
        )

    def test_it_rejects_an_unknown_tier_and_case_type(self):
        errors = self.assert_rejected(
            jsonl(row(tier="expert", case_type="weird")),
            "line 1, field tier: unknown value 'expert'; use one of base, advanced, boundary",
        )
        assert (
            "line 1, field case_type: unknown value 'weird'; use one of typical, edge, failure"
            in errors
        )

    def test_it_rejects_a_duplicate_external_id(self):
        self.assert_rejected(
            jsonl(row(), row(external_id="T-2"), row()),
            "line 3, field external_id: duplicate 'T-1' (first used on line 1)",
        )

    def test_it_rejects_a_field_longer_than_the_limit(self):
        self.assert_rejected(
            jsonl(row(reference="x" * (MAX_TEXT_CHARS + 1))),
            f"line 1, field reference: is {MAX_TEXT_CHARS + 1:,} characters long; the limit is {MAX_TEXT_CHARS:,}",
        )

    def test_it_rejects_an_over_long_csv_cell(self):
        data = (HEADER + "T-1,billing,base,typical," + "x" * 140_000 + "\n").encode()
        self.assert_rejected(
            data,
            "line 2, field (row): a cell is longer than 131,072 characters",
            filename="set.csv",
        )

    @override_settings(TESTSET_MAX_BYTES=1000)
    def test_it_rejects_a_file_over_the_size_limit(self):
        data = jsonl(*[row(external_id=f"T-{i}") for i in range(20)])
        assert len(data) > 1000
        self.assert_rejected(
            data, f"line 1, field (file): the file is {len(data):,} bytes; the limit is 1,000 bytes"
        )

    def test_it_rejects_an_empty_file(self):
        self.assert_rejected(b"", "line 1, field (file): the file contains no tasks")
        self.assert_rejected(
            b"\xef\xbb\xbf\n\n", "line 1, field (file): the file contains no tasks"
        )
        self.assert_rejected(
            HEADER.encode(), "line 1, field (file): the file contains no tasks", filename="set.csv"
        )

    def test_it_rejects_unknown_fields_and_bad_checks(self):
        data = jsonl(
            row(priority="high"),
            row(external_id="T-2", checks={"regex": "(unclosed"}),
            row(external_id="T-3", checks={"json_schema": ["not", "an", "object"]}),
            row(external_id="T-4", checks={"max_chars": -5, "spellcheck": True}),
        )
        errors = self.assert_rejected(
            data, "line 1, field priority: unknown field; free-form data belongs under metadata"
        )
        assert any(e.startswith("line 2, field checks.regex: does not compile") for e in errors)
        assert (
            "line 3, field checks.json_schema: must be a JSON Schema object, not an array" in errors
        )
        assert any(
            e.startswith("line 4, field checks: unknown check(s) spellcheck") for e in errors
        )

    def test_it_compiles_patterns_with_the_engine_the_checks_run_them_on(self):
        schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "(x"}}}
        data = jsonl(
            row(checks={"regex": "(?:(?:a{100}){100}){100}"}),
            row(external_id="T-2", checks={"json_schema": schema}),
            row(external_id="T-3", checks={"json_schema": {"anyOf": [{"pattern": 5}]}}),
        )
        errors = self.assert_rejected(
            data,
            "line 1, field checks.regex: does not compile: its counted repeats expand to over "
            "10,000 items",
        )
        assert any(
            e.startswith("line 2, field checks.json_schema: pattern '(x' does not compile")
            for e in errors
        ), errors
        assert (
            "line 3, field checks.json_schema: not a valid JSON Schema: at $.anyOf[0].pattern: "
            "5 is not of type 'string'" in errors
        )
        # what the engine accepts beyond Python's re is accepted, as the checks run it
        checks = {"regex": r"^\p{Lu}", "json_schema": {"pattern": r"(?<=\w+)!"}}
        result = services.testset_import(
            name="p", data=jsonl(row(checks=checks)), filename="a.jsonl"
        )
        assert result.testset.tasks.get().checks == checks

    def test_it_rejects_a_schema_its_metaschema_refuses(self):
        # these used to be imported, then crashed the output import (a 500) or retried a paid
        # generation to its attempt cap
        data = jsonl(
            row(checks={"json_schema": {"type": "object"}}),
            row(external_id="T-2", checks={"json_schema": {"properties": [1]}}),
            row(external_id="T-3", checks={"json_schema": {"items": {"minLength": "5"}}}),
        )
        errors = self.assert_rejected(
            data,
            "line 2, field checks.json_schema: not a valid JSON Schema: at $.properties: "
            "[1] is not of type 'object'",
        )
        assert (
            "line 3, field checks.json_schema: not a valid JSON Schema: at $.items.minLength: "
            "'5' is not of type 'integer'" in errors
        )
        # a declared draft is checked against its own metaschema (draft 4's boolean
        # exclusiveMinimum is valid there, not in 2020-12)
        draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 1}
        bad = row(checks={"json_schema": {"minimum": 1, "exclusiveMinimum": True}})
        self.assert_rejected(jsonl(bad), "True is not of type 'number'")
        ok = row(checks={"json_schema": {**draft4, "exclusiveMinimum": True}})
        services.testset_import(name="d4", data=jsonl(ok), filename="a.jsonl")

    def test_it_rejects_a_dangling_ref_and_an_unknown_draft_with_their_line(self):
        # a $ref was ignored, so a schema whose reference pointed nowhere validated nothing
        # under it; nothing is fetched, so a remote $ref is refused as well
        defs = {"$defs": {"Order": {"type": "object"}}, "type": "object"}
        data = jsonl(
            row(checks={"json_schema": {**defs, "properties": {"o": {"$ref": "#/$defs/Order"}}}}),
            row(external_id="T-2", checks={"json_schema": {**defs, "$ref": "#/$defs/Ordr"}}),
            row(external_id="T-3", checks={"json_schema": {"$ref": "https://x.test/s.json"}}),
            row(external_id="T-4", checks={"json_schema": {"$schema": "https://x.test/draft"}}),
        )
        errors = self.assert_rejected(
            data,
            "line 2, field checks.json_schema: $ref '#/$defs/Ordr' does not resolve: it must "
            "point into the schema itself (such as #/$defs/Name); nothing is fetched",
        )
        assert any(e.startswith("line 3, field checks.json_schema: $ref 'https://") for e in errors)
        assert (
            "line 4, field checks.json_schema: unknown $schema 'https://x.test/draft': use a "
            "JSON Schema draft's URI" in errors
        )
        assert not any(e.startswith("line 1,") for e in errors)
        # a pattern under $defs is compiled too
        bad = {"$defs": {"Id": {"type": "string", "pattern": "(x"}}, "$ref": "#/$defs/Id"}
        self.assert_rejected(
            jsonl(row(checks={"json_schema": bad})),
            "line 1, field checks.json_schema: pattern '(x'",
        )

    def test_ids_that_look_the_same_are_duplicates(self):
        # composed and decomposed é, a leading byte-order mark, a trailing zero-width space
        data = jsonl(
            row(external_id="caf\u00e9"),
            row(external_id="T-2"),
            row(external_id="cafe\u0301"),
            row(external_id="\ufeffT-2"),
            row(external_id="T-2\u200b"),
        )
        errors = self.assert_rejected(
            data, "line 3, field external_id: duplicate 'caf\u00e9' (first used on line 1)"
        )
        assert "line 4, field external_id: duplicate 'T-2' (first used on line 2)" in errors
        assert "line 5, field external_id: duplicate 'T-2' (first used on line 2)" in errors
        assert self.assert_rejected(
            jsonl(row(external_id="\u200b\ufeff ")), "line 1, field external_id: is required"
        )

    def test_it_stores_the_cleaned_id(self):
        data = jsonl(row(external_id="\ufeffcafe\u0301\u200b"))
        result = services.testset_import(name="ids", data=data, filename="a.jsonl")
        assert result.testset.tasks.get().external_id == "caf\u00e9"

    def test_it_rejects_bad_messages(self):
        data = jsonl(
            row(
                prompt=None,
                messages=[{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}],
            ),
            row(external_id="T-2", prompt="and", messages=[{"role": "user", "content": "both"}]),
            row(
                external_id="T-3",
                prompt=None,
                messages=[{"role": "assistant", "content": "only me"}],
            ),
        )
        errors = self.assert_rejected(
            data,
            "line 1, field messages[1].role: must be one of system, user, assistant, tool, not 'robot'",
        )
        assert "line 2, field prompt: give either prompt or messages, not both" in errors
        assert "line 3, field messages: has no user message" in errors

    def test_it_lists_every_problem_of_every_row_not_just_the_first(self):
        data = jsonl(
            row(tier="x", case_type="y", category=""),
            row(external_id="T-2"),
            row(external_id="", prompt=None),
        )
        errors = self.assert_rejected(data, "line 1, field tier: unknown value 'x'")
        assert errors == [
            "line 1, field category: is required",
            "line 1, field tier: unknown value 'x'; use one of base, advanced, boundary",
            "line 1, field case_type: unknown value 'y'; use one of typical, edge, failure",
            "line 3, field external_id: is required",
            "line 3, field prompt: is required (or give a messages array, or turns)",
        ]

    def test_it_caps_the_report_and_says_how_many_more(self):
        data = jsonl(*[row(external_id=f"T-{i}", tier="nope") for i in range(MAX_ERRORS + 25)])
        errors = self.assert_rejected(data, "line 1, field tier: unknown value 'nope'")
        assert len(errors) == MAX_ERRORS + 1
        assert errors[-1] == "... and 25 more problems"

    def test_it_rejects_bad_json_in_a_csv_json_column(self):
        data = (
            HEADER.strip()
            + ",metadata\n"
            + 'T-1,billing,base,typical,hi,"{""a"": 1, ""a"": 2}"\n'
            + 'T-2,billing,base,typical,hi,"[1, 2]"\n'
        ).encode()
        errors = self.assert_rejected(
            data, "line 2, field metadata: JSON column: duplicate key 'a'", filename="set.csv"
        )
        assert "line 3, field metadata: must be an object, not an array" in errors

    def test_it_lists_every_bad_json_cell_of_a_csv_row(self):
        data = (
            HEADER.strip()
            + ",checks,metadata\n"
            + 'T-1,billing,base,typical,hi,"{""max_chars"": NaN}","{""a"": 1, ""a"": 2}"\n'
        ).encode()
        errors = self.assert_rejected(data, "line 2, field checks: JSON column", filename="set.csv")
        assert "line 2, field metadata: JSON column: duplicate key 'a'" in errors


class GoodInputTests(TestCase):
    def test_it_accepts_a_utf8_bom_in_jsonl_and_csv(self):
        result = services.testset_import(
            name="bom-jsonl", data=b"\xef\xbb\xbf" + jsonl(row()), filename="a.jsonl"
        )
        assert result.created and result.testset.tasks.get().external_id == "T-1"
        result = services.testset_import(
            name="bom-csv",
            data=b"\xef\xbb\xbf" + (HEADER + "T-1,billing,base,typical,hi\n").encode(),
            filename="a.csv",
        )
        assert result.testset.tasks.get().external_id == "T-1"

    def test_it_keeps_u2028_inside_a_string_intact(self):
        prompt = "first part\u2028second part\u2029third\x85fourth"
        result = services.testset_import(
            name="seps", data=jsonl(row(prompt=prompt), row(external_id="T-2")), filename="a.jsonl"
        )
        tasks = list(result.testset.tasks.order_by("position"))
        assert [t.external_id for t in tasks] == ["T-1", "T-2"]
        assert tasks[0].prompt == prompt

    def test_it_reads_every_field_of_jsonl_including_multi_turn_messages(self):
        full = row(
            prompt=None,
            reference="Say sorry.",
            metadata={"source": "ticket", "n": 3},
            messages=[
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello"},
                {"role": "user", "content": "Refund?"},
            ],
            checks={
                "json_schema": {"type": "object"},
                "regex": "(?i)refund",
                "max_chars": 500,
                "must_include": ["sorry"],
            },
        )
        result = services.testset_import(
            name="full",
            data=jsonl(full, row(external_id="T-2", tier="boundary", case_type="failure")),
            filename="a.jsonl",
        )
        task = result.testset.tasks.get(external_id="T-1")
        assert task.prompt == "" and task.messages[-1] == {"role": "user", "content": "Refund?"}
        assert task.checks == full["checks"] and task.metadata == {"source": "ticket", "n": 3}
        assert task.reference == "Say sorry." and task.conversation()[0]["role"] == "system"
        other = result.testset.tasks.get(external_id="T-2")
        assert (other.tier, other.case_type, other.messages, other.checks) == (
            "boundary",
            "failure",
            None,
            {},
        )

    def test_it_reads_csv_with_json_columns_quoted_newlines_and_crlf(self):
        data = (
            b"external_id,category,tier,case_type,prompt,messages,checks,metadata\r\n"
            b'T-1,billing,advanced,edge,"line one\r\nline two",,"{""max_chars"": 10}",\r\n'
            b'T-2,billing,base,typical,,"[{""role"": ""user"", ""content"": ""hi""}]",,"{""k"": ""v""}"\r\n'
            b"\r\n"
            b"T-3,billing,base,typical,bad tier here,,,\r\n"
        )
        parsed = parse_testset(data, filename="x.csv")
        assert parsed.ok, parsed.errors
        assert parsed.tasks[0]["prompt"] == "line one\r\nline two" and parsed.tasks[0][
            "checks"
        ] == {"max_chars": 10}
        assert parsed.tasks[1]["messages"] == [{"role": "user", "content": "hi"}]
        assert parsed.tasks[1]["metadata"] == {"k": "v"}
        # The record after a two-line record is reported on its real line.
        bad = parse_testset(
            data.replace(b"T-3,billing,base", b"T-3,billing,nope"), filename="x.csv"
        )
        assert bad.errors == [
            "line 6, field tier: unknown value 'nope'; use one of base, advanced, boundary"
        ]

    def test_it_checksums_content_not_formatting(self):
        a = parse_testset(jsonl(row(metadata={"a": 1, "b": 2})), filename="a.jsonl")
        b = parse_testset(
            b'{"metadata":{"b":2,"a":1},"prompt":"Why was I charged twice?","case_type":"typical",'
            b'"tier":"base","category":" billing ","external_id":"T-1"}\r\n\n',
            filename="b.jsonl",
        )
        csv_data = (
            HEADER.strip()
            + ",metadata\n"
            + 'T-1,billing,base,typical,Why was I charged twice?,"{""b"": 2, ""a"": 1}"\n'
        ).encode()
        c = parse_testset(csv_data, filename="c.csv")
        assert a.checksum == b.checksum == c.checksum == intake.testset_checksum(a.tasks)
        assert (
            parse_testset(jsonl(row(metadata={"a": 2, "b": 2})), filename="a.jsonl").checksum
            != a.checksum
        )
