import os
import stat
from pathlib import Path

from django.conf import settings

from tasks.intake import pending


def test_it_keeps_bytes_for_the_owning_session_only_and_discards_them():
    session, other = {}, {}
    token = pending.pending_upload_save(session=session, data=b"abc", name="s", filename="a.jsonl")
    path = Path(settings.DATA_DIR) / "uploads" / token
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    loaded = pending.pending_upload_load(session=session, token=token)
    assert (loaded.data, loaded.name, loaded.filename) == (b"abc", "s", "a.jsonl")
    assert pending.pending_upload_load(session=other, token=token) is None
    pending.pending_upload_discard(session=session, token=token)
    assert not path.exists() and pending.pending_upload_load(session=session, token=token) is None


def test_it_expires_tampered_and_surplus_uploads():
    session = {}
    token = pending.pending_upload_save(session=session, data=b"abc", name="s", filename="a.jsonl")
    session[pending.SESSION_KEY][token]["at"] -= pending.TTL_SECONDS + 1
    assert pending.pending_upload_load(session=session, token=token) is None
    token = pending.pending_upload_save(session=session, data=b"abc", name="s", filename="a.jsonl")
    (Path(settings.DATA_DIR) / "uploads" / token).write_bytes(b"changed on disk")
    assert pending.pending_upload_load(session=session, token=token) is None
    tokens = [
        pending.pending_upload_save(session=session, data=b"x", name="s", filename="a")
        for _ in range(5)
    ]
    assert set(session[pending.SESSION_KEY]) == set(tokens[-pending.KEEP_PER_SESSION :])
    assert not (Path(settings.DATA_DIR) / "uploads" / tokens[0]).exists()
    assert pending.pending_upload_load(session=session, token="../../etc/passwd") is None
