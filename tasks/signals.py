"""What the generation side announces, for the review side to act on (docs/decisions/0007).

`tasks` never imports `reviews`: where a change of generation rows matters to review items,
tasks sends one of these signals and the receivers `reviews` connects in its AppConfig.ready()
do the review side's part. Django runs receivers synchronously, in the sender's thread and
transaction, and `send` lets a receiver's exception through, so a signal behaves exactly as
the direct call it replaces. A sender that needs an answer (a count) asks
`tasks.review_side` instead.
"""

from __future__ import annotations

from django.dispatch import Signal

# A campaign's generation rows were created or queued, outputs were stored, or the reconciler
# ran: make the missing review items and open those whose outputs are all done.
# Sent with campaign=<Campaign>.
outputs_changed = Signal()

# One generation row was stored as done (its items may now open). Sent with generation_id=<int>.
generation_finished = Signal()
