"""Reports that an answer reveals its model (docs/blinding.md, "Reports").

A reviewer or an arbiter reports an item; it leaves every queue at once (the item's `ready` is
cleared, which both claims read, and its open leases and arbitration are handed back), its
reviews so far are kept and listed on the report; an admin approves it (back into the queues,
optionally with spans masked by hand) or drops it (state `dropped`: out of the campaign and
its figures, with the reason).

services.py writes, selectors.py reads for the admin page and the API (and, with the blinding
probe's figures, whether blinding held: the campaign page's lines and the report's `blinding`
key), api.py and views.py are the thin JSON and page views (the reviewer's "reveals the model"
on the review page included).

May import: reviews.models, reviews.review (leases, the review page's next item),
reviews.blinding_probe, tasks.models, tasks.blinding, tasks.campaigns (held outputs),
evalsite. Imported by reviews.arbitration (the arbiter's report) and reviews.report.
"""
