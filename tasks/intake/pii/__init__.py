"""Personal data in a test set on intake: find it, list it, mask it consistently.

Owns the detection (`detect.py`: Presidio's pattern recognizers and pyap, no patterns of our
own) and the scan of a parsed test set (`scan.py`: every text of every task, by line and
field, and the masked copy). Imports nothing from the rest of the app but `tasks.intake.parse`'s
parsed shape; `tasks.intake.services` decides what an import does with a finding.
"""

from tasks.intake.pii.detect import KIND_LABELS, Found, pii_find
from tasks.intake.pii.scan import PII_CHOICES, PiiFinding, PiiScan, testset_pii_scan

__all__ = [
    "KIND_LABELS",
    "PII_CHOICES",
    "Found",
    "PiiFinding",
    "PiiScan",
    "pii_find",
    "testset_pii_scan",
]
