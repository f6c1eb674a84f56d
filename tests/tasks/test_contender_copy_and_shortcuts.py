"""Day-one shortcuts: duplicate a contender (the way to change a locked one),
"new campaign from this set" on a test set's page, the address after an upload, and items
nobody took not labelled "in review"."""

import json

import pytest
from django.test import TestCase

from reviews import review as services
from tasks.campaigns.contenders import NAME_MAX
from tasks.models import Contender
from tests.conftest import browser_login, wait_until
from tests.factories import (
    PASSWORD,
    ContenderFactory,
    GenerationFactory,
    campaign_ready,
    personas,
)
from tests.tasks.test_campaigns import make_testset


class ContenderCopyTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.original = ContenderFactory(
            name="alpha",
            model="alpha-large",
            params={"temperature": 0.2},
            system_prompt="Be brief.",
            api_key_env="ALPHA_KEY",
            price_in_per_mtok="0.5",
            price_out_per_mtok="1.5",
            version_label="v1",
            max_concurrency=7,
        )

    def test_a_copy_keeps_the_configuration_under_a_new_name_and_opens_its_form(self):
        self.client.force_login(self.users["admin"])
        response = self.client.post(f"/contenders/{self.original.pk}/duplicate")
        copy = Contender.objects.get(name="alpha (copy)")
        self.original.refresh_from_db()
        assert response.status_code == 302
        assert response["Location"] == f"/contenders/{copy.pk}/edit/"
        fields = ("provider", "base_url", "model", "params", "system_prompt", "api_key_env")
        fields += ("price_in_per_mtok", "price_out_per_mtok", "version_label", "max_concurrency")
        for field in fields:
            assert getattr(copy, field) == getattr(self.original, field), field
        page = self.client.get(response["Location"]).content.decode()
        assert "Copied as alpha (copy)" in page and ">Save</button>" in page
        self.client.post(f"/contenders/{self.original.pk}/duplicate")
        assert Contender.objects.filter(name="alpha (copy 2)").exists()

    def test_a_locked_contender_is_copied_into_an_editable_one(self):
        GenerationFactory(contender=self.original)  # done: its configuration is fixed
        self.client.force_login(self.users["admin"])
        locked = self.client.get(f"/contenders/{self.original.pk}/edit/").content.decode()
        assert "duplicate it and change the copy" in locked and ">Duplicate</button>" in locked
        response = self.client.post(
            f"/contenders/{self.original.pk}/duplicate", headers={"HX-Request": "true"}
        )
        copy = Contender.objects.get(name="alpha (copy)")
        assert response["HX-Redirect"] == f"/contenders/{copy.pk}/edit/"
        data = {
            "name": "alpha-v2",
            "provider": "openai",
            "model": "alpha-xl",
            "price_in_per_mtok": "0.5",
            "price_out_per_mtok": "1.5",
            "max_concurrency": "7",
        }
        self.client.post(f"/contenders/{copy.pk}/edit/", data)
        copy.refresh_from_db()
        assert (copy.name, copy.model) == ("alpha-v2", "alpha-xl")

    def test_a_long_name_is_cut_to_fit_and_only_admins_copy(self):
        long = ContenderFactory(name="x" * NAME_MAX)
        self.client.force_login(self.users["admin"])
        self.client.post(f"/contenders/{long.pk}/duplicate")
        assert Contender.objects.filter(name="x" * (NAME_MAX - 7) + " (copy)").exists()
        self.client.force_login(self.users["lead"])
        assert self.client.post(f"/contenders/{long.pk}/duplicate").status_code == 403
        assert self.client.get(f"/contenders/{long.pk}/duplicate").status_code in (403, 405)


class ShortcutTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.testset = make_testset(name="shortcut-set")

    def test_the_test_set_page_starts_a_campaign_on_it(self):
        url = "/testsets/shortcut-set/v1/"
        self.client.force_login(self.users["admin"])
        page = self.client.get(url).content.decode()
        link = f'href="/campaigns/new/?testset={self.testset.pk}">New campaign from this set</a>'
        assert link in page
        form = self.client.get(f"/campaigns/new/?testset={self.testset.pk}").context["form"]
        assert form["testset"].value() == self.testset.pk
        self.client.force_login(self.users["lead"])  # leads cannot create campaigns
        assert "New campaign from this set" not in self.client.get(url).content.decode()

    def test_items_nobody_took_are_not_labelled_in_review(self):
        campaign = campaign_ready(items=2, overlap=2)
        services.assignment_claim_next(campaign=campaign, reviewer=self.users["reviewer_a"])
        self.client.force_login(self.users["lead"])
        page = self.client.get(f"/campaigns/{campaign.slug}/assignments/").content.decode()
        assert page.count('<span class="badge">not started</span>') == 1
        assert page.count('<span class="badge">in review</span>') == 1
        assert ">open: not started or in review</option>" in page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_upload_then_start_a_campaign_and_copy_a_locked_contender(browser_page, tmp_path):
    personas()
    page = browser_page
    browser_login(page, "admin", PASSWORD)
    # After an upload the address is the new test set's page, which starts a campaign on it.
    upload = tmp_path / "shortcuts.jsonl"
    upload.write_text(
        "\n".join(
            json.dumps(
                {
                    "external_id": f"T-{i}",
                    "category": "billing",
                    "tier": "base",
                    "case_type": "typical",
                    "prompt": f"Q {i}",
                }
            )
            for i in range(3)
        )
        + "\n"
    )
    page.goto("/testsets/upload/")
    page.fill("input[name=name]", "shortcuts")
    page.set_input_files("input[name=file]", str(upload))
    page.get_by_role("button", name="Validate").click()
    page.get_by_role("button", name="Import as shortcuts v1").click()
    page.wait_for_url("**/testsets/shortcuts/v1/")
    page.get_by_role("link", name="New campaign from this set").click()
    page.wait_for_url("**/campaigns/new/?testset=*")
    chosen = page.locator("select[name=testset] option:checked").inner_text()
    assert chosen == "shortcuts v1"

    # A locked contender: its fields look disabled; Duplicate opens an editable copy.
    generation = GenerationFactory()
    locked = generation.contender
    page.goto("/contenders/")
    page.get_by_role("button", name=f"Duplicate {locked.name}").wait_for()
    page.goto(f"/contenders/{locked.pk}/edit/")
    model = page.locator("input[name=model]")
    assert model.is_disabled()
    looks = model.evaluate(
        "el => [getComputedStyle(el).cursor, getComputedStyle(el).borderStyle,"
        " getComputedStyle(el).backgroundColor]"
    )
    assert looks[0] == "not-allowed" and looks[1] == "dashed", looks
    page.get_by_role("button", name="Duplicate").click()
    copy_name = f"{locked.name} (copy)"
    assert wait_until(page, lambda: "/edit/" in page.url and f"/{locked.pk}/" not in page.url)
    assert page.locator("input[name=name]").input_value() == copy_name
    editable = page.locator("input[name=model]")
    assert not editable.is_disabled()
    assert editable.evaluate("el => getComputedStyle(el).cursor") != "not-allowed"
    assert editable.evaluate("el => getComputedStyle(el).backgroundColor") != looks[2]
    assert page.js_errors == []
