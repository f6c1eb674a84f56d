"""Admin forms for contenders and campaigns: parse input, then defer to the same validation as
the definition files (tasks.campaigns), mapping its "field: message" errors onto the fields."""

from __future__ import annotations

import json
import re

import yaml
from django import forms

from evalsite.uploads import strict_yaml, yaml_problem

from .campaigns import INSTRUCTIONS_MAX_CHARS, contender_validate
from .models import Contender, Mode, Provider, TestSet

PROVIDER_CHOICES = Provider.choices


def _field_of(error: str, fields) -> str | None:
    head = re.split(r"[.\[:]", error, maxsplit=1)[0].strip()
    return head if head in fields else None


def add_definition_errors(form: forms.Form, errors: list[str], *, prefix: str = "") -> None:
    for error in errors:
        text = error[len(prefix) :] if prefix and error.startswith(prefix) else error
        field = _field_of(text, form.fields)
        form.add_error(field, text.split(": ", 1)[-1] if field else text)


def _structured(text: str, what: str):
    text = (text or "").strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return strict_yaml(text)
    except yaml.YAMLError as exc:
        raise forms.ValidationError(
            f"{what} is neither valid JSON nor valid YAML ({yaml_problem(exc)})"
        ) from None


class ContenderForm(forms.Form):
    name = forms.CharField(max_length=100)
    provider = forms.ChoiceField(choices=PROVIDER_CHOICES)
    model = forms.CharField(
        max_length=200, required=False, help_text="model id sent to the endpoint"
    )
    base_url = forms.CharField(
        max_length=200,
        required=False,
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

    def clean_params(self):
        value = _structured(self.cleaned_data.get("params", ""), "params")
        if value is not None and not isinstance(value, dict):
            raise forms.ValidationError("params must be an object")
        return value or {}

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        raw = {
            k: data[k]
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
        raw["price_in_per_mtok"] = float(data["price_in_per_mtok"])
        raw["price_out_per_mtok"] = float(data["price_out_per_mtok"])
        errors: list[str] = []
        spec = contender_validate(raw, "contender", errors)
        add_definition_errors(self, errors, prefix="contender.")
        existing = Contender.objects.filter(name=data["name"])
        if self.instance is not None:
            existing = existing.exclude(pk=self.instance.pk)
        if existing.exists():
            self.add_error("name", "a contender with this name exists")
        self.spec = spec
        return data


class CampaignForm(forms.Form):
    slug = forms.SlugField(max_length=100, help_text="short id used in URLs and commands")
    name = forms.CharField(max_length=200, required=False)
    testset = forms.ModelChoiceField(
        queryset=TestSet.objects.order_by("name", "-version"),
        label="Test set",
        empty_label="Choose a test set…",
    )
    contenders = forms.ModelMultipleChoiceField(
        queryset=Contender.objects.order_by("name"), widget=forms.CheckboxSelectMultiple
    )
    mode = forms.ChoiceField(choices=Mode.choices, initial=Mode.RUBRIC)
    samples_per_task = forms.IntegerField(min_value=1, max_value=100, initial=1)
    reviewed_samples = forms.IntegerField(min_value=1, initial=1)
    overlap = forms.IntegerField(
        min_value=1, max_value=20, initial=2, label="Overlap (reviewers per item)"
    )
    rubric = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        required=False,
        help_text='YAML or JSON list: [{"key": "accuracy", "min": 1, "max": 5, "anchors": {"1": "wrong", '
        '"5": "fully correct"}}]',
    )
    weights = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        help_text='optional: {"categories": {"billing": 2}, "quality": 0.7, "stability": 0.3}',
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
    lease_minutes = forms.IntegerField(min_value=1, max_value=1440, initial=20)
    pass_threshold = forms.FloatField(min_value=0, max_value=1, initial=0.6)
    show_reference = forms.BooleanField(
        required=False, help_text="show each task's reference answer to reviewers"
    )
    flags_dispute = forms.BooleanField(
        required=False,
        help_text="a flag raised by some of an item's reviewers and not others disputes the "
        "item (otherwise it is only recorded)",
    )

    def clean_rubric(self):
        value = _structured(self.cleaned_data.get("rubric", ""), "rubric")
        if value is not None and not isinstance(value, list):
            raise forms.ValidationError("the rubric must be a list of dimensions")
        return value or []

    def clean_weights(self):
        value = _structured(self.cleaned_data.get("weights", ""), "weights")
        if value is not None and not isinstance(value, dict):
            raise forms.ValidationError("weights must be an object")
        return value or {}

    def definition(self) -> dict:
        d = self.cleaned_data
        return {
            "slug": d["slug"],
            "name": d["name"] or d["slug"],
            "testset": {"name": d["testset"].name, "version": d["testset"].version},
            "contenders": [c.name for c in d["contenders"]],
            "mode": d["mode"],
            "samples_per_task": d["samples_per_task"],
            "reviewed_samples": d["reviewed_samples"],
            "overlap": d["overlap"],
            "rubric": d["rubric"],
            "weights": d["weights"],
            "redact": [w.strip() for w in d["redact"].split(",") if w.strip()],
            "lease_minutes": d["lease_minutes"],
            "pass_threshold": d["pass_threshold"],
            "show_reference": d["show_reference"],
            "flags_dispute": d["flags_dispute"],
            "instructions": d["instructions"],
        }


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
