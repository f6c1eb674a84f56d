from django import forms

from tasks.intake.parse import MAX_NAME_CHARS, testset_name_problem
from tasks.models import CaseType, Tier


class TestSetUploadForm(forms.Form):
    __test__ = False

    name = forms.CharField(
        max_length=MAX_NAME_CHARS, help_text="e.g. support-v3; an existing name gets a new version"
    )
    file = forms.FileField(help_text="JSONL or CSV, UTF-8")

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        problem = testset_name_problem(name)
        if problem:
            raise forms.ValidationError(problem)
        return name


class TaskFilterForm(forms.Form):
    category = forms.ChoiceField(required=False)
    tier = forms.ChoiceField(required=False, choices=[("", "any tier"), *Tier.choices])
    case_type = forms.ChoiceField(
        required=False, choices=[("", "any case type"), *CaseType.choices]
    )
    q = forms.CharField(required=False, max_length=200, label="Search")

    def __init__(self, *args, categories: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["category"].choices = [("", "any category"), *((c, c) for c in categories)]

    def filters(self) -> dict:
        """The valid filters; an invalid value (a stale link) is ignored, not an error page."""
        if self.is_valid():
            return self.cleaned_data
        return {k: v for k, v in self.cleaned_data.items() if k not in self.errors}
