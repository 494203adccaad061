"""The boundary: every message from the untrusted worker, parsed once into typed records.

A worker shares its process with hostile code, so a reply is data of unknown
shape until it has been read here. Each ``parse_*`` function of
:mod:`judge.replies.parsers` (the record of a call: :mod:`judge.replies.trace`;
the field checks both are built of: :mod:`judge.replies.fields`) takes the JSON
object and the raw tensor frames the wire layer delivered (judge.shared.wire already bounded the frame sizes and the
declared tensor bytes) and returns a frozen record of :mod:`judge.replies.records`,
or raises ``MalformedReply`` with a one-line reason. Past this point the judge
reads attributes of known types and sizes, never the raw dict: no code
downstream can be surprised by a list where a dict was expected, a string of a
megabyte, a count of -1 or a value nested a thousand deep.

What the records hold is *evidence* as the worker saw it; what it means is
decided by judge.rules.
"""
