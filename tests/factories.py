import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

PASSWORD = "correct-horse-battery"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def roles(self, create, extracted, **kwargs):
        for role in extracted or []:
            self.groups.add(Group.objects.get_or_create(name=role)[0])


def personas() -> dict:
    """The house personas: admin, lead, reviewer_a, reviewer_b, arbiter, outsider."""
    return {
        "admin": UserFactory(username="admin", roles=["admin"]),
        "lead": UserFactory(username="lead", roles=["lead"]),
        "reviewer_a": UserFactory(username="reviewer_a", roles=["reviewer"]),
        "reviewer_b": UserFactory(username="reviewer_b", roles=["reviewer"]),
        "arbiter": UserFactory(username="arbiter", roles=["arbiter"]),
        "outsider": UserFactory(username="outsider", roles=[]),
    }
