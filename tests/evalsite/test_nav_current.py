"""The top bar marks the page the user is on."""

from django.test import TestCase

from tests.factories import personas


class NavCurrentTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def test_it_marks_the_current_section_only(self):
        self.client.force_login(self.users["admin"])
        body = self.client.get("/campaigns/").content.decode()
        assert body.count('aria-current="page"') == 1
        assert 'href="/campaigns/" aria-current="page"' in body
        body = self.client.get("/contenders/").content.decode()
        assert 'href="/contenders/" aria-current="page"' in body
        assert 'href="/campaigns/" aria-current' not in body
