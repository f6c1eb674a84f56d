"""Admin forms for contenders and campaigns: parse input, then defer to the same validation as
the definition files (tasks.campaigns.definition), mapping its "field: message" errors onto the fields.
The definition speaks in its keys (`samples_per_task`), which file authors know; the campaign
form restates its errors in the form's own labels."""

from __future__ import annotations

import json
import re

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model

from evalsite.roles import ARBITER, REVIEWER
from tasks.campaigns import rubric_builder
from tasks.campaigns.definition import (
    INSTRUCTIONS_MAX_CHARS,
    MAX_WEIGHT,
    PROBE_EVERY_MAX,
    DefinitionError,
    campaign_definition_validate,
    contender_validate,
)
from tasks.campaigns.rosters import ALL, rosters_read
from tasks.campaigns.structured import structured_value
from tasks.models import Contender, Mode, Provider, TestSet

PROVIDER_CHOICES = Provider.choices


def _field_of(error: str, fields) -> str | None:
    head = re.split(r"[.\[:]", error, maxsplit=1)[0].strip()
    return head if head in fields else None


def _stock_messages(label: str, field: forms.Field) -> dict[str, str]:
    """Django's stock messages ("This field is required.", "Ensure this value is ...") in the
    wording of the definition's own errors as the forms restate them, so a page never shows
    "This field is required." under one field and "Model is required" under the next."""
    if isinstance(field, forms.FloatField | forms.DecimalField):  # both IntegerField subclasses
        invalid = f"{label} must be a number"
    elif isinstance(field, forms.IntegerField):
        invalid = f"{label} must be a whole number"
    elif isinstance(field, forms.SlugField):
        invalid = f"{label}: lowercase letters, digits, - and _"
    else:
        invalid = f"{label} is not valid"
    choice = f"{label}: choose one of the options listed"
    several = isinstance(field, forms.MultipleChoiceField | forms.ModelMultipleChoiceField)
    return {
        "required": f"{label}: choose at least one" if several else f"{label} is required",
        "invalid": invalid,
        "min_value": f"{label} must be at least %(limit_value)s",
        "max_value": f"{label} must be at most %(limit_value)s",
        "max_length": f"{label} is %(show_value)d characters long; the limit is %(limit_value)d",
        "max_digits": f"{label} must have at most %(max)s digits",
        "max_decimal_places": f"{label} must have at most %(max)s decimal places",
        "max_whole_digits": f"{label} must have at most %(max)s digits before the decimal point",
        "invalid_choice": choice,
        "invalid_pk_value": choice,
        "invalid_list": choice,
    }


class LabelledForm(forms.Form):
    """A form whose every message names its field by label, as a sentence where it reads as one
    ("Overlap must be at least 1", "Model is required") or as "Label: problem" otherwise: the
    form's own checks, Django's and the definition's (which speak in keys) alike."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            field.error_messages.update(_stock_messages(str(self[name].label), field))

    def add_definition_errors(
        self, errors: list[str], *, prefix: str = "", skip: frozenset | set = frozenset()
    ) -> None:
        """Definition errors on the form's fields; those of a field in `skip` (one that failed
        the form's own checks, passed on as None) would only repeat its error."""
        for error in errors:
            text = error.removeprefix(prefix)
            field = _field_of(text, self.fields)
            if field in skip:
                continue
            self.add_error(field, self._in_labels(text, field) if field else text)

    def _in_labels(self, error: str, field: str) -> str:
        """A definition error in the form's labels: `rubric[0].max: must be greater than min`
        -> "Rubric: accuracy: max must be greater than min"; `model: required` -> "Model is
        required"."""
        path, message = error.split(": ", 1) if ": " in error else (field, error)
        where = [str(self[field].label)]
        rest = path[len(field) :]
        index = re.match(r"\[(\d+)\]\.?", rest)
        if field == "rubric" and index:
            where.append(self._dimension_name(int(index[1])))
            rest = rest[index.end() :]
        if rest := rest.lstrip("."):
            where.append(rest)
        for name in self.fields:
            if "_" in name:  # one-word keys (mode, slug) read as English already
                message = re.sub(rf"\b{name}\b", str(self[name].label), message)
        if re.match(r"required\b", message):
            message = f"is {message}"
        # "X: must be ..." reads as the sentence "X must be ..."; other messages keep the colon.
        joiner = " " if re.match(r"(must|cannot|is|are)\b", message) else ": "
        return ": ".join(where) + joiner + message

    def _dimension_name(self, index: int) -> str:
        rubric = self.cleaned_data.get("rubric") or []
        dimension = rubric[index] if index < len(rubric) else None
        key = dimension.get("key") if isinstance(dimension, dict) else None
        return key.strip() if isinstance(key, str) and key.strip() else f"dimension {index + 1}"


class ContenderForm(LabelledForm):
    name = forms.CharField(max_length=100)
    provider = forms.ChoiceField(choices=PROVIDER_CHOICES)
    model = forms.CharField(
        max_length=200, required=False, help_text="model id sent to the endpoint"
    )
    base_url = forms.CharField(
        max_length=200,
        required=False,
        label="Base URL",
        help_text="e.g. http://127.0.0.1:8001/v1 (empty = the provider's default)",
    )
    api_key_env = forms.CharField(
        max_length=100,
        required=False,
        label="API key variable",
        help_text="the NAME of the environment variable holding the key, never the key",
    )
    params = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text='JSON, e.g. {"temperature": 0.7, "max_tokens": 512, "seed": 7}',
    )
    system_prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    price_in_per_mtok = forms.DecimalField(
        min_value=0, initial=0, max_digits=12, decimal_places=6, label="Price in / M tokens"
    )
    price_out_per_mtok = forms.DecimalField(
        min_value=0, initial=0, max_digits=12, decimal_places=6, label="Price out / M tokens"
    )
    version_label = forms.CharField(max_length=100, required=False)
    max_concurrency = forms.IntegerField(
        min_value=1, max_value=1000, initial=4, help_text="concurrent calls across all workers"
    )

    def __init__(self, *args, instance: Contender | None = None, **kwargs):
        self.instance = instance
        if instance is not None and "initial" not in kwargs:
            kwargs["initial"] = {
                f: getattr(instance, f)
                for f in (
                    "name",
                    "provider",
                    "model",
                    "base_url",
                    "api_key_env",
                    "system_prompt",
                    "price_in_per_mtok",
                    "price_out_per_mtok",
                    "version_label",
                    "max_concurrency",
                )
            } | {"params": json.dumps(instance.params) if instance.params else ""}
        super().__init__(*args, **kwargs)
        for price in ("price_in_per_mtok", "price_out_per_mtok"):
            # the bound field keeps its own copy (LabelledForm made it already)
            text = f"in {settings.EVALSITE_CURRENCY} per million tokens"
            self.fields[price].help_text = self[price].help_text = text

    def clean_params(self):
        value = structured_value(self.cleaned_data.get("params", ""), "Params")
        if value is not None and not isinstance(value, dict):
            raise forms.ValidationError("Params must be an object")
        return value or {}

    def clean(self):
        data = super().clean()
        # The contender's own checks run even when some fields failed, so one submit reports
        # every problem (a failed field goes in as None; its errors are not repeated).
        failed = set(self.errors)
        raw = {
            k: data.get(k)
            for k in (
                "name",
                "provider",
                "model",
                "base_url",
                "api_key_env",
                "params",
                "system_prompt",
                "version_label",
                "max_concurrency",
            )
        }
        for price in ("price_in_per_mtok", "price_out_per_mtok"):
            raw[price] = float(data[price]) if data.get(price) is not None else None
        errors: list[str] = []
        spec = contender_validate(raw, "contender", errors)
        self.add_definition_errors(errors, prefix="contender.", skip=failed)
        if "name" not in failed:
            existing = Contender.objects.filter(name=data["name"])
            if self.instance is not None:
                existing = existing.exclude(pk=self.instance.pk)
            if existing.exists():
                self.add_error("name", f"Name: a contender {data['name']!r} already exists")
        if spec and self.instance is not None and self.instance.pricing:
            # The form shows the two base prices only: left as they were, the contender keeps
            # its whole price table (tiers, cache and reasoning rates, the price data's source).
            same = all(
                data.get(price) == getattr(self.instance, price)
                for price in ("price_in_per_mtok", "price_out_per_mtok")
            )
            if same:
                spec["pricing"] = self.instance.pricing
        self.spec = spec
        return data


def _roster_all(role: str) -> forms.BooleanField:
    return forms.BooleanField(
        required=False,
        label=f"All {role}s",
        help_text=f"everyone with the {role} role, now and later; otherwise only the "
        f"{role}s ticked below",
    )


def _roster_people(role: str) -> forms.ModelMultipleChoiceField:
    work = "take its items" if role == REVIEWER else "arbitrate its disputes"
    return forms.ModelMultipleChoiceField(
        queryset=get_user_model()
        .objects.filter(is_active=True, groups__name=role)
        .order_by("username")
        .distinct(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=f"{role.capitalize()}s",
        help_text=f"only the people on the roster see this campaign and {work} (admins and "
        f"leads see every campaign); people get the {role} role on the users page",
    )


def roster_definition(data: dict) -> dict:
    """The form's roster fields as a definition's "reviewers" and "arbiters"."""
    return {
        f"{role}s": ALL
        if data.get(f"{role}s_all")
        else [u.get_username() for u in data.get(f"{role}s") or ()]
        for role in (REVIEWER, ARBITER)
    }


class RosterForm(LabelledForm):
    """The rosters of a running campaign (the campaign page)."""

    reviewers_all = _roster_all(REVIEWER)
    reviewers = _roster_people(REVIEWER)
    arbiters_all = _roster_all(ARBITER)
    arbiters = _roster_people(ARBITER)

    @classmethod
    def of(cls, campaign) -> RosterForm:
        return cls(
            initial={
                "reviewers_all": campaign.reviewers_all,
                "reviewers": list(campaign.reviewers.all()),
                "arbiters_all": campaign.arbiters_all,
                "arbiters": list(campaign.arbiters.all()),
            }
        )

    def clean(self):
        data = super().clean()
        errors: list[str] = []
        self.warnings: list[str] = []
        self.rosters = rosters_read(roster_definition(data), errors, self.warnings)
        self.add_definition_errors(errors, skip=set(self.errors))
        return data


MAX_FORM_WEIGHT = MAX_WEIGHT  # as a definition file's weights


class CampaignForm(LabelledForm):
    slug = forms.SlugField(max_length=100, help_text="short id used in URLs and commands")
    name = forms.CharField(
        max_length=200, required=False, help_text="shown on pages; empty = the slug"
    )
    testset = forms.ModelChoiceField(
        queryset=TestSet.objects.order_by("name", "-version"),
        label="Test set",
        empty_label="Choose a test set…",
    )
    contenders = forms.ModelMultipleChoiceField(
        queryset=Contender.objects.order_by("name"), widget=forms.CheckboxSelectMultiple
    )
    mode = forms.ChoiceField(
        choices=Mode.choices,
        initial=Mode.RUBRIC,
        help_text="rubric: score each output on the rubric; pairwise: pick the better output "
        "(no rubric); both: scores and a pick",
    )
    samples_per_task = forms.IntegerField(
        min_value=1,
        max_value=100,
        initial=1,
        help_text="answers generated per task and contender; 2 or more measure stability",
    )
    reviewed_samples = forms.IntegerField(
        min_value=1, initial=1, help_text="how many of those samples people review"
    )
    overlap = forms.IntegerField(
        min_value=1, max_value=20, initial=2, label="Overlap (reviewers per item)"
    )
    rubric = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        required=False,
        help_text='YAML or JSON list: [{"key": "accuracy", "min": 1, "max": 5, "anchors": {"1": "wrong", '
        '"5": "fully correct"}}]',
    )
    # score_turns (tasks/campaigns/score_turns.py), as three fields; the definition's errors about it
    # ("score_turns.max: ...") land on the first.
    score_turns = forms.CharField(
        max_length=63,
        required=False,
        label="Score each turn",
        help_text="conversation tasks: a name (e.g. turn_quality) to have reviewers also score "
        "the reply to every user turn, on the scale below; empty = only the final reply is "
        "scored, with the rubric",
    )
    score_turns_min = forms.IntegerField(required=False, initial=1, label="Turn scale from")
    score_turns_max = forms.IntegerField(required=False, initial=5, label="Turn scale to")
    # The decision weights and gates as fields (a definition file's `weights` and
    # `pass_threshold`); definition() puts them back together.
    weight_quality = forms.FloatField(
        required=False,
        min_value=0,
        max_value=MAX_FORM_WEIGHT,
        initial=0.7,
        label="Weight of quality",
        help_text="in the decision score, against stability (empty = 0.7)",
    )
    weight_stability = forms.FloatField(
        required=False,
        min_value=0,
        max_value=MAX_FORM_WEIGHT,
        initial=0.3,
        label="Weight of stability",
        help_text="how much answering the same way every time counts (empty = 0.3)",
    )
    category_weights = forms.CharField(
        required=False,
        label="Category weights",
        help_text="optional: category=weight, comma-separated (billing=2, refunds=0.5); a "
        "category left out weighs 1",
    )
    min_quality = forms.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        label="Quality floor",
        help_text="gate: a contender below this quality (0-1) is not recommended, whatever its "
        "score; empty = the pass threshold",
    )
    redact = forms.CharField(
        required=False, help_text="comma-separated self-identifying words to mask"
    )
    instructions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5}),
        required=False,
        max_length=INSTRUCTIONS_MAX_CHARS,
        help_text="optional Markdown shown to reviewers and arbiters: what to look for, how to "
        "read the scale; editable later on the campaign page",
    )
    lease_minutes = forms.IntegerField(
        min_value=1,
        max_value=1440,
        initial=20,
        help_text="how long a reviewer holds an item before it goes back to the pool "
        "(an open page extends it)",
    )
    pass_threshold = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=0.6,
        help_text="quality (0-1) a reviewed sample needs to pass, for pass@1 and pass@k",
    )
    pass_threshold_base = forms.FloatField(
        required=False, min_value=0, max_value=1, label="Pass threshold, base tier"
    )
    pass_threshold_advanced = forms.FloatField(
        required=False, min_value=0, max_value=1, label="Pass threshold, advanced tier"
    )
    pass_threshold_boundary = forms.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        label="Pass threshold, boundary tier",
        help_text="optional per tier; a tier left empty uses the pass threshold above",
    )
    show_reference = forms.BooleanField(
        required=False, help_text="show each task's reference answer to reviewers"
    )
    flags_dispute = forms.BooleanField(
        required=False,
        help_text="a flag raised by some of an item's reviewers and not others disputes the "
        "item (otherwise it is only recorded)",
    )
    hold_identity_leaks = forms.BooleanField(
        required=False,
        initial=True,
        label="Hold self-identifying outputs",
        help_text="an output that names a model or vendor keeps its items from reviewers until "
        "an admin approves its masked view (otherwise it is offered masked at once)",
    )
    probe_every = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=PROBE_EVERY_MAX,
        label="Blinding probe: ask after every N items",
        help_text="after every N items a reviewer is asked which contender wrote one answer "
        "of that item, to measure whether reviewers can tell (empty: never asked)",
    )
    # Rosters (tasks/campaigns/rosters.py): a new campaign starts with nobody on them.
    reviewers_all = _roster_all(REVIEWER)
    reviewers = _roster_people(REVIEWER)
    arbiters_all = _roster_all(ARBITER)
    arbiters = _roster_people(ARBITER)

    def clean_rubric(self):
        if self.data.get(rubric_builder.EDITOR) == rubric_builder.BUILDER:
            # The builder's rows (tasks/campaigns/rubric_builder.py); pairwise scores no rubric, so the
            # rows stay on the page and nothing is stored.
            if self.cleaned_data.get("mode") == Mode.PAIRWISE:
                return []
            return rubric_builder.rubric_from_post(self.data)
        value = structured_value(self.cleaned_data.get("rubric", ""), "Rubric")
        if value is not None and not isinstance(value, list):
            raise forms.ValidationError("Rubric must be a list of dimensions")
        return value or []

    def clean_category_weights(self) -> dict[str, float]:
        weights, problems = {}, []
        for part in (self.cleaned_data.get("category_weights") or "").split(","):
            if not part.strip():
                continue
            category, sep, number = part.partition("=")
            category = category.strip()
            try:
                value = float(number) if sep else None
            except ValueError:
                value = None
            if not category or value is None or not 0 <= value <= MAX_FORM_WEIGHT:
                problems.append(
                    f"“{part.strip()}”: write category=weight, a number from 0 to "
                    f"{MAX_FORM_WEIGHT:,}"
                )
            else:
                weights[category] = value
        if problems:
            raise forms.ValidationError(problems)
        return weights

    def clean(self):
        data = super().clean()
        # The definition's checks run even when some fields failed, so one submit reports
        # every problem. A failed field is passed as None, which the definition skips (and
        # cross-checks need both values), and its definition errors would only repeat it.
        # The checked definition is kept for campaign_create, which need not check it again.
        self.valid = None
        self.definition_errors: list[str] = []  # as the definition says them (the builder's rows)
        try:
            self.valid = campaign_definition_validate(self.definition())
        except DefinitionError as exc:
            self.definition_errors = exc.errors
            self.add_definition_errors(exc.errors, skip=set(self.errors))
        return data

    def definition(self) -> dict:
        d = self.cleaned_data
        testset, contenders = d.get("testset"), d.get("contenders")
        return {
            "slug": d.get("slug"),
            "name": d.get("name") or d.get("slug"),
            "testset": {"name": testset.name, "version": testset.version} if testset else None,
            "contenders": [c.name for c in contenders] if contenders else None,
            "mode": d.get("mode"),
            "samples_per_task": d.get("samples_per_task"),
            "reviewed_samples": d.get("reviewed_samples"),
            "overlap": d.get("overlap"),
            "rubric": d.get("rubric"),
            "weights": _weights_definition(d),
            "redact": [w.strip() for w in d.get("redact", "").split(",") if w.strip()],
            "lease_minutes": d.get("lease_minutes"),
            "pass_threshold": _pass_threshold_definition(d),
            "show_reference": d.get("show_reference", False),
            "flags_dispute": d.get("flags_dispute", False),
            "hold_identity_leaks": d.get("hold_identity_leaks", False),
            "instructions": d.get("instructions"),
            **roster_definition(d),
            "score_turns": _score_turns_definition(d),
            "blinding_probe": {"every": d["probe_every"]} if d.get("probe_every") else None,
        }


def _weights_definition(d: dict) -> dict:
    """The weights and the quality floor fields as a definition's `weights` (a field that
    failed its own check is left out, so its error is not told twice)."""
    weights: dict = {}
    for key, field in (("quality", "weight_quality"), ("stability", "weight_stability")):
        if d.get(field) is not None:
            weights[key] = d[field]
    if d.get("category_weights"):
        weights["categories"] = d["category_weights"]
    if d.get("min_quality") is not None:
        weights["min_quality"] = d["min_quality"]
    return weights


def _pass_threshold_definition(d: dict):
    """One threshold, or one per tier when any tier's is given (the others the general one)."""
    general = d.get("pass_threshold")
    tiers = {t: d.get(f"pass_threshold_{t}") for t in ("base", "advanced", "boundary")}
    if all(v is None for v in tiers.values()):
        return general
    fallback = general if general is not None else 0.6
    return {t: v if v is not None else fallback for t, v in tiers.items()}


def _score_turns_definition(d: dict) -> dict | None:
    """The form's per-turn fields as a definition's score_turns (None: off); a bound that
    failed its own check is left out, so its error is not told twice."""
    name = (d.get("score_turns") or "").strip()
    if not name:
        return None
    bounds = {"min": d.get("score_turns_min"), "max": d.get("score_turns_max")}
    return {"dimension": name, **{k: v for k, v in bounds.items() if v is not None}}


class InstructionsForm(forms.Form):
    instructions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}),
        required=False,
        max_length=INSTRUCTIONS_MAX_CHARS,
        label="Text",
        help_text="Markdown. Model and vendor names are masked for reviewers. Leave empty for none.",
    )


class OutputsUploadForm(forms.Form):
    contender = forms.ChoiceField(choices=())
    file = forms.FileField(
        help_text='JSONL: {"task_id": "T-1", "sample": 0, "output": "..."} per line'
    )

    def __init__(self, *args, contenders=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["contender"].choices = [(c, c) for c in contenders]
