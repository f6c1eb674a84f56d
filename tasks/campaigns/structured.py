"""A form field's text read as JSON, else as YAML (the campaign form's params and rubric, the
rubric builder's text editor), with the reading error worded for the person who typed it."""

from __future__ import annotations

import json

import yaml
from django import forms

from evalsite.uploads import strict_yaml, yaml_problem


def structured_value(text: str, label: str):
    """The value `text` holds (None when blank); ValidationError naming `label` when it is
    neither JSON nor YAML."""
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
            f"{label} is neither valid JSON nor valid YAML ({yaml_problem(exc)})"
        ) from None
