"""Campaign rosters: who may see a campaign and take its items (reviewers) or its disputes
(arbiters), docs/campaigns.md "Rosters".

A roster is "all" (everyone holding the role) or a list of usernames. The definition (file,
API, form) gives it as `"reviewers": ["alice", "bob"] | "all"`, `"arbiters": ...`; left out, it
is "all". Who may see what is asked of `Campaign.objects.visible_to` and `campaign.on_roster`;
this module reads rosters and changes them, returning the work of whoever leaves one.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction

from evalsite.roles import ARBITER, REVIEWER, roles_of
from tasks import review_side
from tasks.models import Campaign

ALL = "all"
ROSTER_KEYS = {"reviewers": REVIEWER, "arbiters": ARBITER}
ROSTER_SCHEMA = {
    "oneOf": [
        {"type": "string", "enum": [ALL]},
        {"type": "array", "items": {"type": "string", "minLength": 1}},
    ],
    "default": ALL,
}


@dataclass(frozen=True)
class Roster:
    """Everyone holding the role, or exactly `users`."""

    everyone: bool = True
    users: tuple = ()

    def as_json(self) -> str | list[str]:
        return ALL if self.everyone else sorted(u.get_username() for u in self.users)


def roster_read(data: dict, key: str, errors: list[str], warnings: list[str]) -> Roster:
    """The roster `data[key]` names ("all" when left out); a problem is added to `errors`
    ("reviewers: no user named 'zed'"), an empty list to `warnings`."""
    role = ROSTER_KEYS[key]
    if key not in data or data[key] == ALL:
        return Roster()
    value = data[key]
    if not isinstance(value, list) or not all(isinstance(n, str) and n.strip() for n in value):
        errors.append(f'{key}: "{ALL}" or a list of usernames of people with the {role} role')
        return Roster()
    names = list(dict.fromkeys(n.strip() for n in value))
    found = {
        u.get_username(): u
        for u in get_user_model().objects.filter(username__in=names).prefetch_related("groups")
    }
    users = []
    for name in names:
        user = found.get(name)
        if user is None:
            errors.append(f"{key}: no user named {name!r}")
        elif not user.is_active:
            errors.append(f"{key}: {name!r} is deactivated")
        elif role not in roles_of(user):
            errors.append(
                f"{key}: {name!r} is not {'an' if role == ARBITER else 'a'} {role} "
                f"(give them the {role} role on the users page first)"
            )
        else:
            users.append(user)
    if not names:
        warnings.append(
            f"{key}: nobody is on the roster, so no {role} can take "
            f"{'its items' if role == REVIEWER else 'its disputes'} until you add people "
            f'(or choose "{ALL}")'
        )
    return Roster(everyone=False, users=tuple(users))


def rosters_read(data: dict, errors: list[str], warnings: list[str]) -> dict[str, Roster]:
    return {key: roster_read(data, key, errors, warnings) for key in ROSTER_KEYS}


def rosters_json(campaign: Campaign) -> dict[str, str | list[str]]:
    """{"reviewers": "all" | [usernames], "arbiters": ...}, as a definition gives them."""
    out = {}
    for key in ROSTER_KEYS:
        if getattr(campaign, f"{key}_all"):
            out[key] = ALL
        else:
            out[key] = sorted(getattr(campaign, key).values_list("username", flat=True))
    return out


def roster_users_store(*, campaign: Campaign, rosters: dict[str, Roster]) -> None:
    """Write the rosters as given (a new campaign: nobody's work to return)."""
    for key, roster in rosters.items():
        setattr(campaign, f"{key}_all", roster.everyone)
        getattr(campaign, key).set([] if roster.everyone else list(roster.users))
    Campaign.objects.filter(pk=campaign.pk).update(
        **{f"{key}_all": roster.everyone for key, roster in rosters.items()}
    )


@transaction.atomic
def campaign_rosters_set(*, campaign: Campaign, rosters: dict[str, Roster], by=None) -> dict:
    """Change a campaign's rosters (any time, also while it runs). Whoever leaves one gets the
    campaign's "remove reviewer": their open items go back to the pool and they are marked
    removed on the assignments page; an arbiter's claimed disputes go back to the queue. Someone
    named again is let back in. Returns {"leases": n, "disputes": n} returned to the queues."""
    Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
    returned = {"leases": 0, "disputes": 0}
    for key, roster in rosters.items():
        role = ROSTER_KEYS[key]
        before = None if getattr(campaign, f"{key}_all") else set(getattr(campaign, key).all())
        roster_users_store(campaign=campaign, rosters={key: roster})
        if roster.everyone:
            continue
        named = set(roster.users)
        again = named - before if role == REVIEWER and before is not None else set()
        returned["leases" if role == REVIEWER else "disputes"] += review_side.roster_changed(
            campaign=campaign, role=role, named=named, again=again, by=by
        )
    return returned


def roster_include(*, campaign: Campaign, user, role: str) -> None:
    """Put `user` on a named roster (nothing to do on "all"): the assignments page's "Let back
    in" for a campaign with a reviewer list."""
    if not getattr(campaign, f"{role}s_all"):
        getattr(campaign, f"{role}s").add(user)


def roster_exclude(*, campaign: Campaign, user, role: str) -> None:
    if not getattr(campaign, f"{role}s_all"):
        getattr(campaign, f"{role}s").remove(user)


def roster_holders(*, campaign: Campaign, role: str):
    """The active users holding `role` who are on the campaign's roster for it."""
    users = get_user_model().objects.filter(is_active=True, groups__name=role)
    if not getattr(campaign, f"{role}s_all"):
        users = users.filter(pk__in=getattr(campaign, f"{role}s").values("pk"))
    return users.distinct()


def roster_summary(campaign: Campaign) -> list[dict]:
    """For the campaign page: per role, "all" or the names on the roster."""
    named = rosters_json(campaign)
    return [
        {
            "key": key,
            "title": key.capitalize(),
            "role": role,
            "all": named[key] == ALL,
            "names": [] if named[key] == ALL else named[key],
        }
        for key, role in ROSTER_KEYS.items()
    ]
