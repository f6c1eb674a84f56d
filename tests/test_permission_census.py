"""Permission census: every URL pattern x every persona -> the expected status.

The expected outcome is derived from each view's declared roles (`role_required` /
`api_endpoint`), so a new page is covered the day it is added. Objects that belong to one
person (an assignment token, an arbitration token) are expected to be 404 for everybody else.
"""

from django.test import TestCase
from django.urls import URLPattern, URLResolver, get_resolver

from evalsite.roles import has_role
from reviews.arbitration.services import arbitration_claim_next
from reviews.disputes.rules import item_settle
from reviews.review import assignment_claim_next
from tests.factories import campaign_ready, personas, review_create

PUBLIC = {"login", "logout", "healthz", "api_schema", "api_not_found", "home"}
# Any logged-in user's own account (tests/evalsite/test_users.py covers them).
PUBLIC |= {"account", "password_change", "password_change_done"}
# URL names whose token belongs to one persona: (owner persona, kind of token).
OWNED = {
    "review_page": "reviewer_a",
    "review_submit": "reviewer_a",
    "review_skip": "reviewer_a",
    "review_heartbeat": "reviewer_a",
    "review_correct": "reviewer_a",
    "api_assignment_submit": "reviewer_a",
    "arbitration_page": "arbiter",
    "arbitration_item": "arbiter",
    "arbitration_resolve": "arbiter",
    "arbitration_release": "arbiter",
    "arbitration_heartbeat": "arbiter",
    "api_arbitration_resolve": "arbiter",
    "arbitration_comment": "arbiter",
    "review_report_identity": "reviewer_a",
    "arbitration_report_identity": "arbiter",
    "review_probe": "reviewer_a",
}


def walk(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from walk(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p


class PermissionCensusTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = campaign_ready(items=3, overlap=2)
        cls.assignment = assignment_claim_next(
            campaign=cls.campaign, reviewer=cls.users["reviewer_a"]
        ).assignment
        # A disputed item, settled the way the k-th submit settles it, claimed by the arbiter.
        disputed = cls.campaign.items.exclude(pk=cls.assignment.item_id).first()
        first, second = disputed.outputs.order_by("pk")
        review_create(
            disputed,
            cls.users["reviewer_b"],
            scores={
                first: {"accuracy": 1, "completeness": 1},
                second: {"accuracy": 5, "completeness": 5},
            },
        )
        from tests.factories import UserFactory

        other = UserFactory(username="reviewer_c", roles=["reviewer"])
        review_create(
            disputed,
            other,
            scores={
                first: {"accuracy": 5, "completeness": 5},
                second: {"accuracy": 1, "completeness": 1},
            },
        )
        disputed.submitted_count = disputed.live_count = 2
        disputed.save()
        item_settle(disputed)
        cls.arbitration = arbitration_claim_next(
            campaign=cls.campaign, arbiter=cls.users["arbiter"]
        )
        assert cls.arbitration is not None
        cls.contender = cls.campaign.contenders.first()
        # A self-identifying output, for the pages that compare it with its masked view.
        cls.flagged = cls.campaign.generations.order_by("pk").first()
        cls.flagged.identity_leak = True
        cls.flagged.save(update_fields=["identity_leak"])
        # A monitor (named like the campaign, so <slug> fits both) with one run.
        from tasks.models import Monitor
        from tasks.monitors.runs import monitor_run_start

        monitor = Monitor.objects.create(
            slug=cls.campaign.slug, name="census", testset=cls.campaign.testset
        )
        monitor.contenders.set(cls.campaign.contenders.all())
        monitor_run_start(monitor=monitor)
        cls.task_id = cls.campaign.testset.tasks.first().external_id
        # A judge (named like the test set, so <name> fits both).
        from tasks.models import Judge

        Judge.objects.create(name=cls.campaign.testset.name, provider="openai", model="m")
        # A stored task image, for the page that serves them.
        import io

        from PIL import Image

        from tasks.images.decode import image_checked
        from tasks.images.store import images_store

        raw = io.BytesIO()
        Image.new("RGB", (4, 4)).save(raw, format="PNG")
        checked = image_checked(raw.getvalue())
        images_store({checked.name: checked})
        cls.image = checked.name
        # A blinding-probe question waiting for reviewer_a (the campaign asks one per item).
        from reviews.models import BlindingGuess

        cls.campaign.blinding_probe = {"every": 1}
        cls.campaign.save(update_fields=["blinding_probe"])
        output = cls.assignment.item.outputs.select_related("generation").first()
        cls.probe = BlindingGuess.objects.create(
            campaign=cls.campaign,
            reviewer=cls.users["reviewer_a"],
            item=cls.assignment.item,
            output=output,
            contender=output.generation.contender,
        )

    def kwargs_for(self, name: str, route: str) -> dict:
        token = (
            self.arbitration.token
            if name in OWNED and OWNED[name] == "arbiter"
            else self.probe.token
            if name == "review_probe"
            else self.assignment.token
        )
        values = {
            "slug": self.campaign.slug,
            "name": self.campaign.testset.name,
            "version": self.campaign.testset.version,
            "fmt": "jsonl",
            "pk": self.contender.pk,
            "output_id": self.flagged.pk,
            "user_id": self.users["reviewer_a"].pk,
            "username": self.users["reviewer_a"].username,
            "token": token,
            "page": "leaderboard",
            "table": "leaderboard",
            "number": 1,
            "task_id": self.task_id,
            "alert_id": 1,
            "item_id": self.assignment.item_id,
            "image": self.image,
            "report_id": 1,
        }
        return {key: values[key] for key in values if f"<{key}>" in route or f":{key}>" in route}

    def census(self):
        for route, pattern in walk(get_resolver().url_patterns):
            if pattern.name in PUBLIC:
                continue
            view = pattern.callback
            roles = getattr(view, "allowed_roles", None) or view.api_doc["roles"]
            kwargs = self.kwargs_for(pattern.name, route)
            path = "/" + route
            for key, value in kwargs.items():
                path = path.replace(f"<{key}>", str(value))
                for conv in ("int", "str", "slug", "path"):
                    path = path.replace(f"<{conv}:{key}>", str(value))
            yield pattern.name, path, roles, hasattr(view, "api_doc")

    def request(self, method: str, path: str, persona: str | None, is_api: bool):
        from evalsite.models import ApiToken

        self.client.logout()
        headers = {}
        if persona and is_api:
            headers["Authorization"] = f"Bearer {ApiToken.issue(self.users[persona])}"
        elif persona:
            self.client.force_login(self.users[persona])
        return getattr(self.client, method)(path, headers=headers)

    def test_it_gives_every_persona_the_expected_status_on_every_url(self):
        problems = []
        checked = 0
        for name, path, roles, is_api in self.census():
            for persona in [None, *self.users]:
                allowed = persona is not None and has_role(self.users[persona], *roles)
                owner = OWNED.get(name)
                for method in ("get", "post"):
                    if allowed and method == "post":
                        continue  # allowed POSTs change state; their own tests cover them
                    status = self.request(method, path, persona, is_api).status_code
                    checked += 1
                    if status == 405:
                        ok = True  # wrong method for this view: refused before anything runs
                    elif persona is None:
                        ok = status == (401 if is_api else 302)
                    elif not allowed:
                        ok = status == 403
                    elif owner and persona != owner:
                        ok = status == 404
                    else:
                        ok = status < 500 and status not in (401, 403, 404)
                    if not ok:
                        problems.append(
                            f"{method.upper()} {path} as {persona or 'anonymous'}: {status}"
                        )
        assert checked > 200
        assert problems == [], "\n".join(problems)

    def test_it_keeps_owned_objects_private_between_people_of_the_same_role(self):
        response = self.request(
            "get", f"/review/{self.campaign.slug}/{self.assignment.token}/", "reviewer_b", False
        )
        assert response.status_code == 404
