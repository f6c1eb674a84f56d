"""Images in test cases: content parts of a user message in `messages`, or of a scripted
user's turn in `turns`.

`decode.py` checks an image by decoding it with Pillow (never by its extension or declared
type) and re-encodes it without its metadata under a neutral name; `bundle.py` reads a test set
uploaded as a zip of JSONL + images, refusing paths outside its root and zip bombs;
`parts.py` validates a message's content parts while a test set is parsed; `store.py` writes
the checked images through Django's storage API and reads them back for providers and pages.

May import: evalsite only (its row errors come from evalsite.uploads). Imported by intake,
generation and the task pages.
"""
