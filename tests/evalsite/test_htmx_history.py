"""Back and Forward on pages whose filters push a URL: htmx restores the page with an htmx
request (the history cache is off). Each such view must answer it with the whole page, or the
body is replaced by a table fragment."""

import pytest

from tests.factories import campaign_ready, personas

HISTORY_RESTORE = {"HX-Request": "true", "HX-History-Restore-Request": "true"}


@pytest.mark.django_db
def test_every_page_that_pushes_a_url_answers_a_history_restore_with_the_whole_page(client):
    client.force_login(personas()["admin"])
    campaign = campaign_ready(items=2)
    testset = campaign.testset
    pages = {
        "/users/?role=reviewer": "users",
        f"/campaigns/{campaign.slug}/disputes/?state=open": "disputes",
        f"/campaigns/{campaign.slug}/dashboard/head-to-head/": "comparison",
        f"/testsets/{testset.name}/v{testset.version}/?page=1": "tasks",
    }
    for path, region in pages.items():
        swap = client.get(path, headers={"HX-Request": "true"})
        assert swap.status_code == 200, path
        assert "<html" not in swap.text, f"{path}: a filter's swap should get the {region} part"
        restore = client.get(path, headers=HISTORY_RESTORE)
        assert restore.status_code == 200, path
        assert "<html" in restore.text and 'id="main"' in restore.text, path
