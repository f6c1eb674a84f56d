"""The new-campaign form's rubric builder: a row of fields per dimension, starting
templates, a copy of another campaign's rubric, and a live preview drawn with the review page's
own answer grid.

The rows and the text box (YAML or JSON, for power users) are two ways to write one definition:
either becomes a list of plain dicts, read by `tasks.campaigns.definition.rubric_validate` like any
definition file, and its "rubric[1].max: ..." errors come back to the row and field they
belong to. A row is kept as typed (its numbers as text), so nothing entered is lost on a
re-render, an error or a switch between the two editors.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping

import yaml
from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from evalsite.roles import ADMIN, role_required
from tasks import review_side
from tasks.blinding.campaign_texts import blinding_terms
from tasks.blinding.render import labels
from tasks.campaigns.rubric import DIMENSION_KEYS, LEVELS, MAX_SCALE_STEPS, rubric_validate
from tasks.campaigns.rubric_templates import DEFAULT_TEMPLATE, TEMPLATES
from tasks.campaigns.structured import structured_value
from tasks.models import Campaign, Contender, Mode

TEMPLATE = "tasks/_rubric_builder.html"
EDITOR = "rubric_editor"  # which editor the form's rubric comes from
BUILDER, TEXT = "builder", "text"
FIELDS = ("key", "label", "description", "min", "max", "level", "direction", "max_gap")
NUMBERS = ("min", "max", "max_gap")
DEFAULTS = {"level": "ordinal", "direction": "higher", "max_gap": 1, "allow_na": False}
FIELD_LABELS = {
    "key": "Key",
    "label": "Label",
    "description": "Description",
    "min": "Min",
    "max": "Max",
    "level": "Level",
    "direction": "Better",
    "max_gap": "Allowed gap",
    "allow_na": "N/A",
    "anchors": "Anchors",
}
DIRECTIONS = ("higher", "lower")
# Anchor inputs are listed open up to this many points; a longer scale folds them away.
OPEN_ANCHORS = 11
_NAME = re.compile(r"^rubric-(\d+)-(.+)$")
_ERROR = re.compile(r"^rubric\[(\d+)\](?:\.([a-z_]+))?(?:\.(\S+))?: (.*)$", re.S)
_TWICE = re.compile(r"^rubric: dimension '(.+)' appears twice$")


# --- rows <-> definition ------------------------------------------------------------------------


def blank_row(index: int | str = 0) -> dict:
    """A new row: the definition's defaults shown as values (1..5, ordinal, higher, gap 1)."""
    return _finish(
        {
            "index": index,
            "key": "",
            "label": "",
            "description": "",
            "min": "1",
            "max": "5",
            "level": "ordinal",
            "direction": "higher",
            "max_gap": "1",
            "allow_na": False,
            "anchors": {},
        }
    )


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def rows_from_rubric(rubric) -> list[dict]:
    """Rows for a rubric written as a definition (a template, a campaign's stored rubric, the
    text box): every value as the text a field shows, defaults filled in."""
    rows = []
    for i, dim in enumerate(rubric):
        row = blank_row(i)
        for name in FIELDS:
            if dim.get(name) is not None:
                row[name] = _text(dim[name])
        row["allow_na"] = bool(dim.get("allow_na"))
        row["anchors"] = {str(k): _text(v) for k, v in (dim.get("anchors") or {}).items()}
        rows.append(_finish(row))
    return rows


def rows_from_post(data: Mapping) -> list[dict]:
    """The builder's rows as posted (rubric-0-key, rubric-0-anchor-3, ...), in order, as typed.
    A row with nothing written in it (a fresh "Add row" left alone) is marked blank: shown
    again, but no dimension."""
    found: dict[int, dict] = {}
    for name in data:
        match = _NAME.match(name)
        if not match:
            continue
        index, field = int(match[1]), match[2]
        row = found.setdefault(index, {"anchors": {}})
        if field.startswith("anchor-"):
            row["anchors"][field.removeprefix("anchor-")] = data.get(name, "")
        elif field in FIELDS:
            row[field] = data.get(name, "")
        elif field == "allow_na":
            row["allow_na"] = True
    rows = []
    for index in sorted(found):
        row = {**blank_row(index), **{f: "" for f in NUMBERS}, "allow_na": False}
        row.update(found[index])
        row["index"] = index
        row["blank"] = not any(str(row[f]).strip() for f in ("key", "label", "description")) and (
            not any(str(t).strip() for t in row["anchors"].values())
        )
        rows.append(_finish(row))
    return rows


def filled(rows: list[dict]) -> list[dict]:
    """The rows that are dimensions (not blank)."""
    return [row for row in rows if not row.get("blank")]


def _number(text: str):
    """A typed number as the definition's JSON would hold it; other text as written (the
    reader then says what is wrong with it); empty: not given (the default)."""
    text = str(text).strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def row_definition(row: Mapping) -> dict:
    """One row as a definition's dimension."""
    dim: dict = {"key": str(row.get("key", "")).strip()}
    for name in ("label", "description"):
        if str(row.get(name, "")).strip():
            dim[name] = row[name]
    for name in NUMBERS:
        if (value := _number(row.get(name, ""))) is not None:
            dim[name] = value
    for name in ("level", "direction"):
        if row.get(name):
            dim[name] = row[name]
    if row.get("allow_na"):
        dim["allow_na"] = True
    anchors = {p: t for p, t in (row.get("anchors") or {}).items() if str(t).strip()}
    if anchors:
        dim["anchors"] = anchors
    return dim


def rubric_from_post(data: Mapping) -> list[dict]:
    """The builder's rubric, as a definition (what `CampaignForm` validates and stores)."""
    return [row_definition(row) for row in filled(rows_from_post(data))]


def rubric_text(rubric: list[dict]) -> str:
    """A rubric for the text box, in YAML (the definition files' usual form)."""
    if not rubric:
        return ""
    shown = []
    for dim in rubric:
        # The defaults are left out, as a definition file would leave them.
        dim = {k: v for k, v in dim.items() if DEFAULTS.get(k, object()) != v}
        if "anchors" in dim:  # {1: wrong} reads better than {'1': wrong}
            dim["anchors"] = {
                int(k) if re.fullmatch(r"-?\d+", str(k)) else k: v
                for k, v in dim["anchors"].items()
            }
        shown.append(dim)
    return yaml.safe_dump(shown, sort_keys=False, allow_unicode=True, width=90)


def _finish(row: dict) -> dict:
    """The anchor inputs a row shows: one per point of its scale, plus any anchor written for a
    point outside it (kept, and flagged by the reader)."""
    anchors = row["anchors"]
    lo, hi = _number(row["min"]), _number(row["max"])
    points: list[str] = []
    if isinstance(lo, int) and isinstance(hi, int) and 0 < hi - lo <= MAX_SCALE_STEPS:
        points = [str(p) for p in range(lo, hi + 1)]
    points += sorted(
        (p for p, t in anchors.items() if p not in points and str(t).strip()),
        key=lambda p: (_number(p) if isinstance(_number(p), int) else math.inf, p),
    )
    row["points"] = [{"value": p, "text": anchors.get(p, "")} for p in points]
    row["anchors_open"] = len(points) <= OPEN_ANCHORS
    row["prefix"] = f"rubric-{row['index']}"
    row.setdefault("errors", {})
    return row


# --- errors --------------------------------------------------------------------------------------


def _sentence(field: str, message: str) -> str:
    """ "max: must be greater than min" -> "Max must be greater than min"."""
    label = FIELD_LABELS.get(field, field)
    if re.match(r"required\b", message):
        return f"{label} is {message}"
    if re.match(r"(must|cannot|is|are)\b", message):
        return f"{label} {message}"
    return f"{label}: {message}"


def errors_place(errors: list[str], rows: list[dict]) -> list[str]:
    """Put the reader's rubric errors on the rows they are about (row["errors"][field]); what
    belongs to no row (none given, the mode needs one) is returned. `rows` are the rows the
    rubric was made of, in order (errors name a dimension by its position)."""
    general = []
    for error in errors:
        if not error.startswith("rubric"):
            continue
        match = _ERROR.match(error)
        twice = _TWICE.match(error)
        if match and int(match[1]) < len(rows):
            row, field, rest, message = rows[int(match[1])], match[2], match[3], match[4]
            if field == "anchors" and rest:
                text = f"Anchor {rest}: {message}"
            elif field in FIELD_LABELS:
                text = _sentence(field, message)
            else:
                where = f"{field}: " if field else ""
                general.append(f"Row {int(match[1]) + 1}: {where}{message}")
                continue
            row["errors"].setdefault(field, []).append(text)
        elif twice:
            for row in rows:
                if str(row["key"]).strip() == twice[1]:
                    row["errors"].setdefault("key", []).append(
                        f"Key {twice[1]!r} is used by more than one row: keys must differ"
                    )
        else:
            message = error.removeprefix("rubric: ").removeprefix("rubric")
            general.append(message[:1].upper() + message[1:])
    return general


def error_slots(rows: list[dict]) -> list[dict]:
    """Every row's every error slot (id and text), filled or empty: the live check replaces
    them all, so an error fixed since the last check goes away."""
    return [
        {"id": f"rubric-{row['index']}-{name}-error", "text": " ".join(row["errors"].get(name, []))}
        for row in rows
        for name in FIELD_LABELS
    ]


# --- the editor's state ---------------------------------------------------------------------------


def _read_text(text: str):
    return structured_value(text, "Rubric")


def _mode(data: Mapping) -> str:
    mode = data.get("mode") or Mode.RUBRIC
    return mode if mode in Mode.values else Mode.RUBRIC


def state_from_post(
    data: Mapping, *, definition_errors: list[str] | None = None, editor: str = ""
) -> dict:
    """The builder as posted (from `editor`, else the one the form says), with its rows'
    errors: a submitted form's definition errors when given, else the rubric's own check."""
    editor = editor or (data.get(EDITOR) if data.get(EDITOR) in (BUILDER, TEXT) else TEXT)
    state = {
        "editor": editor,
        "rows": [],
        "text": data.get("rubric", ""),
        "mode": _mode(data),
        "previous": data.get("rubric_previous", ""),
        "template": data.get("rubric_template", DEFAULT_TEMPLATE),
        "copy": data.get("rubric_copy", ""),
        "general_errors": [],
    }
    if editor == BUILDER:
        state["rows"] = rows_from_post(data)
        _check_rows(state, definition_errors)
    else:
        try:
            rubric = _read_text(state["text"]) or []
        except forms.ValidationError as exc:
            rubric, state["text_problem"] = [], exc.messages[0]
        if not isinstance(rubric, list):
            rubric, state["text_problem"] = [], "Rubric must be a list of dimensions"
        state["rubric"] = rubric
        # Said above the preview while typing (the submit says them under the text box).
        state["text_errors"] = rubric_validate(rubric)[1]
    return state


def _check_rows(state: dict, errors: list[str] | None = None) -> None:
    """The rows' rubric, and the reader's errors put on the rows (its own check unless a
    submit's errors are given)."""
    rows = filled(state["rows"])
    state["rubric"] = [row_definition(row) for row in rows]
    if errors is None:
        errors = rubric_validate(state["rubric"])[1] + _mode_errors(state)
    state["general_errors"] = errors_place(errors, rows)


def _mode_errors(state: dict) -> list[str]:
    if state["mode"] in (Mode.RUBRIC, Mode.BOTH) and not state["rubric"]:
        return [f"rubric: mode '{state['mode']}' needs at least one dimension"]
    return []


def state_initial(*, copy_from: str = "") -> dict:
    """A new form's builder: a copied campaign's rubric, or the default template."""
    source = None
    if copy_from:
        source = (
            Campaign.objects.filter(slug=copy_from, kind=Campaign.Kind.BLIND)
            .exclude(rubric=[])
            .first()
        )
    rubric = source.rubric if source else TEMPLATES[DEFAULT_TEMPLATE]["rubric"]
    return {
        "editor": BUILDER,
        "rows": rows_from_rubric(rubric),
        "text": "",
        "rubric": rubric,
        "mode": Mode.RUBRIC,
        "general_errors": [],
        "previous": "",
        "note": f"Rows copied from {source.name}." if source else "",
        "template": DEFAULT_TEMPLATE,
        "copy": source.slug if source else "",
    }


def _replace(state: dict, rubric: list, note: str) -> None:
    """Rows replaced by a template's or a campaign's: the old ones are kept for Undo."""
    kept = filled(state["rows"])
    state["previous"] = json.dumps([row_definition(row) for row in kept]) if kept else ""
    state["rows"] = rows_from_rubric(rubric)
    state["note"] = note
    _check_rows(state)


def _to_text(state: dict) -> None:
    state.update(editor=TEXT, text=rubric_text(state["rubric"]), rows=[], general_errors=[])


def _to_builder(state: dict) -> None:
    """Text -> rows, only when every dimension fits the rows' fields (else something typed in
    the text would be lost): otherwise the text stays, with what stops the switch."""
    problem = state.get("text_problem", "")
    raw = state["rubric"]
    for i, dim in enumerate(raw):
        if problem:
            break
        if unfit := _unfit(dim):
            problem = f"Dimension {i + 1}: {unfit}"
    if problem:
        state["switch_problem"] = f"{problem.rstrip('.')}. Fix the text to switch to the form."
        return
    state.update(editor=BUILDER, rows=rows_from_rubric(raw), text="")
    _check_rows(state)


def _unfit(dim) -> str:
    """Why a dimension written as text has no rows form ("" if it fits)."""
    if not isinstance(dim, dict):
        return "must be an object"
    if unknown := sorted(map(str, set(dim) - DIMENSION_KEYS)):
        return f"{', '.join(unknown)}: not a field of the form"
    if not isinstance(dim.get("anchors") or {}, dict):
        return "anchors must map a point to its text"
    if dim.get("allow_na") not in (None, True, False):
        return "allow_na must be true or false"
    for name, choices in (("level", LEVELS), ("direction", DIRECTIONS)):
        if dim.get(name) not in (None, *choices):
            return f"{name} must be one of {', '.join(choices)}"
    if any(isinstance(v, list | dict) for k, v in dim.items() if k != "anchors"):
        return "a field holds a list or an object"
    return ""


def state_after(data: Mapping) -> dict:
    """The builder after one of its actions: switch editor, use a template, copy a campaign's
    rubric, undo the last replacement."""
    action = data.get("rubric_action", "")
    if action == "switch":
        # The radio already names the editor wanted; the rubric is still in the other one.
        wanted = data.get(EDITOR)
        state = state_from_post(data, editor=TEXT if wanted == BUILDER else BUILDER)
        if wanted == TEXT and state["editor"] == BUILDER:
            _to_text(state)
        elif wanted == BUILDER:
            _to_builder(state)
        state["focus"] = "editor"
        return state
    state = state_from_post(data, editor=BUILDER)
    if action == "template" and data.get("rubric_template") in TEMPLATES:
        chosen = TEMPLATES[data["rubric_template"]]
        _replace(state, chosen["rubric"], f"Rows replaced by the {chosen['name']} template.")
    elif action == "copy":
        source = Campaign.objects.filter(
            slug=data.get("rubric_copy", ""), kind=Campaign.Kind.BLIND
        ).first()
        if source is None or not source.rubric:
            state["note"] = "Choose a campaign that has a rubric."
        else:
            _replace(state, source.rubric, f"Rows replaced by the rubric of {source.name}.")
    elif action == "undo" and state["previous"]:
        try:
            rubric = json.loads(state["previous"])
        except ValueError:
            rubric = None
        if isinstance(rubric, list):
            state.update(rows=rows_from_rubric(rubric), previous="", note="Rows restored.")
            _check_rows(state)
    state["focus"] = action
    return state


# --- the preview -------------------------------------------------------------------------------


def _posted_contenders(data: Mapping) -> list[str]:
    ids = data.getlist("contenders") if hasattr(data, "getlist") else []
    pks = [int(v) for v in ids if str(v).isdigit()]
    return list(Contender.objects.filter(pk__in=pks).values_list("name", flat=True))


def preview_html(state: dict, *, contenders: list[str], redact: list[str]) -> str:
    """The questions exactly as a reviewer gets them: the review page's own answer grid, for an
    item with one output per chosen contender (at least two), rubric text masked as theirs is.
    A dimension the reader refused is left out until it is fixed."""
    dims, seen = [], set()
    for item in state["rubric"]:
        checked, errors = rubric_validate([item])
        if checked and not errors and checked[0]["key"] not in seen:
            seen.add(checked[0]["key"])
            dims.append(checked[0])
    return review_side.answers_preview_html(
        campaign=Campaign(rubric=dims, mode=state["mode"]),
        terms=blinding_terms(redact=redact, contenders=[{"name": n} for n in contenders]),
        labels=labels(max(2, len(contenders))),
    )


def builder_context(state: dict, data: Mapping | None = None) -> dict:
    """What the builder's template needs: the state, its choices and the preview."""
    campaigns = (
        Campaign.objects.filter(kind=Campaign.Kind.BLIND)  # a monitor run's campaign is hidden
        .exclude(rubric=[])
        .order_by("-created_at")
        .values_list("slug", "name")[:100]
    )
    data = data or {}
    names = _posted_contenders(data)
    redact = [w.strip() for w in str(data.get("redact", "")).split(",") if w.strip()]
    return {
        **state,
        "preview": preview_html(state, contenders=names, redact=redact),
        "output_labels": labels(max(2, len(names))),
        "slots": error_slots(state["rows"]),
        "blank": blank_row("__i__"),
        "templates": [(key, t["name"], t["summary"]) for key, t in TEMPLATES.items()],
        "campaigns": list(campaigns),
        "levels": LEVELS,  # the usual one, ordinal, first
        "directions": DIRECTIONS,
        "max_points": MAX_SCALE_STEPS + 1,
        "open_anchors": OPEN_ANCHORS,
        "pairwise": state["mode"] == Mode.PAIRWISE,
    }


def form_builder(request: HttpRequest, form) -> dict:
    """The builder of the new-campaign page: as posted (with the submit's errors), else new."""
    if request.method == "POST":
        errors = getattr(form, "definition_errors", [])
        state = state_from_post(request.POST, definition_errors=errors)
        return builder_context(state, request.POST)
    return builder_context(state_initial(copy_from=request.GET.get("rubric_from", "")))


# --- views -------------------------------------------------------------------------------------


@require_POST
@role_required(ADMIN)
def rubric_builder_view(request: HttpRequest) -> HttpResponse:
    """An action of the builder (switch editor, template, copy, undo): the builder again."""
    state = state_after(request.POST)
    context = {"builder": builder_context(state, request.POST), "form": None}
    return render(request, f"{TEMPLATE}#rubric-builder", context)


@require_POST
@role_required(ADMIN)
def rubric_preview_view(request: HttpRequest) -> HttpResponse:
    """The live check while typing: the preview, and every row's errors swapped out of band."""
    state = state_from_post(request.POST)
    context = {"builder": builder_context(state, request.POST)}
    return render(request, f"{TEMPLATE}#rubric-live", context)
