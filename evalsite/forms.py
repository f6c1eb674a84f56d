from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import PasswordChangeForm

from evalsite.roles import ROLES
from evalsite.services import PasswordChecksLocked, user_password_check, user_problems
from tasks.campaigns.forms import LabelledForm

ROLE_CHOICES = [
    ("admin", "admin: users, test sets, contenders, campaigns"),
    ("lead", "lead: dashboards, leaderboards and exports, models named"),
    ("reviewer", "reviewer: scores blind outputs"),
    ("arbiter", "arbiter: settles disputed items"),
]
assert [code for code, _ in ROLE_CHOICES] == list(ROLES)


class UserForm(LabelledForm):
    """A new user (with `username`) or an existing one's roles, email and access. Errors name
    their field ("Username is required"), as on the contender and campaign forms."""

    username = forms.CharField(max_length=150, strip=True)
    email = forms.EmailField(required=False, max_length=254)
    roles = forms.MultipleChoiceField(
        choices=ROLE_CHOICES,
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    password = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="Leave empty to have one generated and shown to you once, after saving.",
    )
    is_active = forms.BooleanField(
        required=False,
        initial=True,
        label="May log in",
        help_text="Off: no login, no API access; open leases and disputes return to the queues.",
    )

    def __init__(self, *args, user=None, **kwargs):
        self.user = user
        if user is not None:
            roles = user.groups.filter(name__in=ROLES).values_list("name", flat=True)
            kwargs.setdefault(
                "initial",
                {"email": user.email, "roles": sorted(roles), "is_active": user.is_active},
            )
        super().__init__(*args, **kwargs)
        if user is None:
            del self.fields["is_active"]
        else:
            del self.fields["username"], self.fields["password"]

    def clean(self):
        data = super().clean()
        if self.user is None and "username" in data:
            username = data["username"]  # add_error drops it from cleaned_data
            # The command's and the API's rules, worded for this form.
            problems = user_problems(
                username=username,
                roles=data.get("roles", []),
                password=data.get("password") or None,
            )
            if any(problem.startswith("roles: required") for problem in problems):
                self.add_error("roles", self.fields["roles"].error_messages["required"])
            self.add_definition_errors(
                [p for p in problems if not p.startswith("roles: required")],
                skip=set(self.errors),  # a field that failed its own checks, said once
            )
            # Checked again, atomically, when the account is made (services.user_create).
            users = get_user_model().objects.filter(username__iexact=username)
            if existing := users.values_list("username", flat=True).first():
                self.add_error("username", user_exists_message(existing, username))
        return data


def user_exists_message(existing: str, asked: str) -> str:
    same = "" if existing == asked else " (names that differ only in case are the same name)"
    return f"{existing} already exists{same}: edit them instead."


class NewPasswordForm(PasswordChangeForm):
    """Django's password change, refusing the current password as the new one (it would end
    nothing: a password that may have leaked stays in use), and checking the current one under
    the login's limit on wrong guesses (services.user_password_check)."""

    def clean_old_password(self):
        old_password = self.cleaned_data["old_password"]
        try:
            right = user_password_check(user=self.user, password=old_password)
        except PasswordChecksLocked as locked:
            minutes = locked.minutes_left()
            raise forms.ValidationError(
                "Too many wrong passwords: your password cannot be changed for "
                f"{minutes} more minute{'s' if minutes != 1 else ''}. Try again then.",
                code="locked",
            ) from None
        if not right:
            raise forms.ValidationError(
                self.error_messages["password_incorrect"], code="password_incorrect"
            )
        return old_password

    def clean(self):
        data = super().clean()
        old, new = data.get("old_password"), data.get("new_password2")
        if old and new and old == new:
            self.add_error("new_password1", "Choose a password different from the current one.")
        return data
