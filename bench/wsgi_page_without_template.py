"""The site as evalsite.wsgi serves it, but the review page leaves out its template rendering.

An experiment, never a deployment: `bench/review_load.py --app bench.wsgi_page_without_template`
measures a review whose page still authenticates, reads its row, masks and renders the outputs
(selectors.review_screen) but answers a fixed 20 kB body instead of rendering review.html.
The difference from a default run is what the page's template costs; what is left is the
floor the rest of the review loop sets (docs/benchmarks-history.md, "Twelfth session").
"""

from django.http import HttpResponse

from evalsite.wsgi import application  # noqa: F401  (sets Django up; gunicorn serves this)
from reviews.review import views

BODY = "<form id=review-form></form>" + " " * 20_000


def _fixed_page(request, template, context, status=200):
    return HttpResponse(BODY, status=status)


views.render = _fixed_page
