"""The pages' logins: server-side sessions that expire, kept in the grading store.

Logging in with a token opens a session: a random id (32 bytes) goes into the ``judge_session`` cookie
(HttpOnly; SameSite=Lax, so a link from the course's site lands logged in, while a form posted from another
site is refused by the pages' origin check; Secure with ``--secure-cookies``). The store keeps only the id's
SHA-256, the person's name and their token's SHA-256, and when the session ends. A session is good until it
expires (``--session-hours``), its person logs out, or their token is revoked or replaced (the token file
changed): the session is checked against the tokens in force at every request. The cookie never holds the
token. Sessions outlive a restart of the service (they are in the store).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from judge.grading.store import Store

COOKIE = "judge_session"


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Sessions:
    def __init__(self, store: Store, lifetime: float):
        self.store = store
        self.lifetime = lifetime  # seconds

    def open(self, who) -> str:
        """A new session for WHO (an Identity from a token); returns its id, for the cookie."""
        session_id = secrets.token_urlsafe(32)
        expires = (_now() + dt.timedelta(seconds=self.lifetime)).isoformat(timespec="seconds")
        with self.store.lock:
            self.store.db.execute("DELETE FROM sessions WHERE expires < ?", (_now().isoformat(timespec="seconds"),))
            self.store.db.execute(
                "INSERT INTO sessions(digest, name, token, expires) VALUES (?, ?, ?, ?)",
                (_digest(session_id), who.name, who.token, expires),
            )
        return session_id

    def identify(self, session_id: str | None, auth):
        """The Identity of the session SESSION_ID, or None (no such session, expired, or its token revoked)."""
        if not session_id or len(session_id) > 128:
            return None
        with self.store.lock:
            row = self.store.db.execute(
                "SELECT name, token, expires FROM sessions WHERE digest = ?", (_digest(session_id),)
            ).fetchone()
        if row is None:
            return None
        name, token, expires = row
        if dt.datetime.fromisoformat(expires) <= _now():
            self.close(session_id)
            return None
        who = auth.by_digest(token)
        return who if who is not None and who.name == name else None

    def close(self, session_id: str | None) -> None:
        if session_id:
            with self.store.lock:
                self.store.db.execute("DELETE FROM sessions WHERE digest = ?", (_digest(session_id),))
