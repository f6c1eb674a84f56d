"""Demo step for the tasks app: the support-demo test set (idempotent).

`manage.py demo` calls load(context, stdout); the returned dict is merged into `context`
for the next steps (reviews.demo). Add further steps below the test-set import.
"""

from pathlib import Path

from tasks.demo import campaign as campaign_demo
from tasks.intake.services import PiiChoice, testset_import
from tasks.monitors import demo as monitor_demo

DEMO_TESTSET = Path(__file__).resolve().parent / "demo_data" / "support-demo.jsonl"
DEMO_TESTSET_NAME = "support-demo"


def load(context: dict, stdout) -> dict:
    # Identical content is recognised by checksum, so a second run writes nothing.
    result = testset_import(
        name=DEMO_TESTSET_NAME,
        data=DEMO_TESTSET.read_bytes(),
        filename=DEMO_TESTSET.name,
        user=context.get("users", {}).get("admin"),
        # Its two addresses are at example.com, a domain reserved for examples: kept so the
        # demo reads as written (and the test set's page shows the choice as any other).
        pii=PiiChoice(action="keep", via="demo data (example.com addresses)"),
    )
    testset = result.testset
    stdout.write(
        f"Test set {testset.name} v{testset.version}: {testset.task_count} tasks"
        f"{'' if result.created else ' (already loaded)'}"
    )
    context = {**context, "testset": testset}
    # The support-demo campaign (three imported contenders, outputs from a shipped file).
    campaign = campaign_demo.load(context, stdout)
    # The support-golden monitor: four past runs, one regression, one served-model change.
    return {"testset": testset, **campaign, **monitor_demo.load(context, stdout)}
