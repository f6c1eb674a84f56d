"""Personal data on test-set intake: found by kind, listed by line and field, refused by
default, masked consistently or kept with the choice recorded (service, command, API)."""

import json
import tempfile
from io import StringIO
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import SimpleTestCase, TestCase

from evalsite.models import ApiToken
from tasks.intake import services
from tasks.intake.pii import pii_find
from tasks.intake.services import PiiChoice, TestSetPiiFound
from tasks.models import Task, TestSet
from tests.factories import personas


def kinds(text: str) -> list[tuple[str, str]]:
    return [(f.kind, f.text) for f in pii_find(text)]


def jsonl(*rows: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def task(i: int, **fields) -> dict:
    return {
        "external_id": f"T-{i}",
        "category": "c",
        "tier": "base",
        "case_type": "typical",
        **fields,
    }


# Three tasks: one email twice (another case, another task), a second email, a phone number in
# a conversation, a card number in the reference, an IBAN and an SSN in metadata.
PII_FILE = jsonl(
    task(1, prompt="Please change my email from Jane.Doe@example.com to jd@example.org."),
    task(
        2,
        messages=[
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": "Call me on +44 20 7946 0958, or mail jane.doe@example.com",
            },
        ],
        reference="Refund to card 4111 1111 1111 1111.",
    ),
    task(
        3,
        prompt="Wire it back.",
        metadata={"iban": "DE89 3704 0044 0532 0130 00", "ssn": "536-22-1234"},
    ),
)


class DetectionTests(SimpleTestCase):
    def test_it_finds_each_kind_of_personal_data(self):
        text = (
            "Mail jane.doe@example.com or call +1 (415) 555-2671; card 4111 1111 1111 1111, "
            "IBAN GB82 WEST 1234 5698 7654 32, SSN 536-22-1234, NI AB123456C. "
            "Ship to 123 Main St, Springfield, IL 62704."
        )
        assert kinds(text) == [
            ("email", "jane.doe@example.com"),
            ("phone", "+1 (415) 555-2671"),
            ("card", "4111 1111 1111 1111"),
            ("iban", "GB82 WEST 1234 5698 7654 32"),
            ("national_id", "536-22-1234"),
            ("national_id", "AB123456C"),
            ("address", "123 Main St, Springfield, IL 62704"),
        ]

    def test_it_finds_a_uk_address_across_a_line_break(self):
        assert kinds("Send it to 221B Baker Street,\nLondon NW1 6XE please") == [
            ("address", "221B Baker Street,\nLondon NW1 6XE")
        ]

    def test_it_rejects_numbers_that_fail_their_check_digits(self):
        # One digit off: the Luhn check of the card and the IBAN's mod-97 both fail.
        assert kinds("card 4111 1111 1111 1112, IBAN DE89 3704 0044 0532 0130 01") == []

    def test_it_leaves_ordinary_support_text_alone(self):
        text = (
            "Order 60331 was charged twice on 2024-03-01 for 129.99 EUR (ticket ZD-88121). "
            "Version 3.14.159 scored 87.5% on 1200 items; port 8080; returns within 30 days."
        )
        assert kinds(text) == []


class ImportServiceTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = personas()

    def test_it_refuses_by_default_and_lists_each_place_by_line_and_field(self):
        with self.assertRaises(TestSetPiiFound) as caught:
            services.testset_import(name="support", data=PII_FILE, filename="support.jsonl")
        assert not TestSet.objects.exists()
        places = [(f.line, f.field, f.kind) for f in caught.exception.scan.findings]
        assert places == [
            (1, "prompt", "email"),
            (1, "prompt", "email"),
            (2, "messages[1].content", "phone"),
            (2, "messages[1].content", "email"),
            (2, "reference", "card"),
            (3, "metadata.iban", "iban"),
            (3, "metadata.ssn", "national_id"),
        ]
        assert caught.exception.errors[0] == (
            "line 1, field prompt: personal data: email address 'Ja…om' (mask it or keep it)"
        )
        assert "personal data found in 7 places" in str(caught.exception)

    def test_it_masks_the_same_value_with_the_same_placeholder_across_the_set(self):
        result = services.testset_import(
            name="support",
            data=PII_FILE,
            filename="support.jsonl",
            user=self.people["admin"],
            pii=PiiChoice(action="mask", via="test"),
        )
        tasks = {t.external_id: t for t in Task.objects.filter(testset=result.testset)}
        assert tasks["T-1"].prompt == "Please change my email from <EMAIL_1> to <EMAIL_2>."
        # The same address in another case is the same placeholder.
        assert tasks["T-2"].messages[1]["content"] == "Call me on <PHONE_1>, or mail <EMAIL_1>"
        assert tasks["T-2"].messages[0]["content"] == "Be brief."
        assert tasks["T-2"].reference == "Refund to card <CARD_1>."
        assert tasks["T-3"].metadata == {"iban": "<IBAN_1>", "ssn": "<NATIONAL_ID_1>"}
        ts = result.testset
        assert (ts.pii_action, ts.pii_count, ts.pii_decided_by) == ("mask", 7, self.people["admin"])
        assert "7 pieces of personal data masked" in result.message

    def test_it_keeps_the_texts_when_told_and_records_who_chose(self):
        result = services.testset_import(
            name="support",
            data=PII_FILE,
            filename="support.jsonl",
            user=self.people["admin"],
            pii=PiiChoice(action="keep", via="upload page"),
        )
        t1 = Task.objects.get(testset=result.testset, external_id="T-1")
        assert "Jane.Doe@example.com" in t1.prompt
        ts = result.testset
        assert (ts.pii_action, ts.pii_decided_by, ts.pii_decided_via) == (
            "keep",
            self.people["admin"],
            "upload page",
        )

    def test_a_clean_file_records_no_choice(self):
        result = services.testset_import(name="clean", data=jsonl(task(1, prompt="Hi")), user=None)
        assert (result.testset.pii_action, result.testset.pii_count) == ("", 0)


class CommandTests(TestCase):
    def run_cli(self, *argv: str) -> tuple[int, str, str]:
        out, err = StringIO(), StringIO()
        try:
            call_command(*argv, stdout=out, stderr=err)
        except CommandError as exc:
            err.write(f"CommandError: {exc}\n")
            return exc.returncode, out.getvalue(), err.getvalue()
        return 0, out.getvalue(), err.getvalue()

    def file(self) -> str:
        path = Path(tempfile.mkdtemp()) / "support.jsonl"
        path.write_bytes(PII_FILE)
        return str(path)

    def test_it_refuses_by_default_with_the_list(self):
        code, out, err = self.run_cli("import_testset", self.file(), "--name", "support")
        assert code == 1
        assert "line 3, field metadata.iban: personal data: IBAN 'DE…00'" in err
        assert "personal data in 7 places; nothing was imported" in err
        assert "--pii mask" in err
        assert not TestSet.objects.exists()

    def test_it_masks_with_pii_mask_and_records_the_os_user(self):
        code, out, _ = self.run_cli(
            "import_testset", self.file(), "--name", "support", "--pii", "mask"
        )
        assert code == 0
        assert "personal data: 7 pieces masked" in out
        ts = TestSet.objects.get(name="support")
        assert ts.pii_action == "mask"
        assert ts.pii_decided_via.startswith("import_testset --pii mask (user ")
        assert not Task.objects.filter(prompt__contains="@").exists()


class ApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = personas()
        cls.token = ApiToken.issue(cls.people["admin"], "t")

    def post(self, **extra):
        body = {"name": "support", "format": "jsonl", "content": PII_FILE.decode(), **extra}
        return self.client.post(
            "/api/v1/testsets",
            json.dumps(body),
            content_type="application/json",
            headers={"Authorization": f"Bearer {self.token}"},
        )

    def test_it_answers_400_with_each_place(self):
        response = self.post()
        assert response.status_code == 400
        assert response.json()["personal_data"][4] == {
            "line": 2,
            "field": "reference",
            "kind": "card",
            "hint": "41…11",
        }
        assert not TestSet.objects.exists()

    def test_it_masks_when_asked_and_says_so_in_the_detail(self):
        response = self.post(pii="mask")
        assert response.status_code == 201
        assert response.json()["testset"]["personal_data"] == {
            "found": 7,
            "action": "mask",
            "decided_by": "admin",
            "via": "API",
        }

    def test_it_rejects_an_unknown_choice(self):
        assert self.post(pii="ignore").json()["error"] == "'pii' must be one of refuse, mask, keep"
