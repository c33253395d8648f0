"""Neo4j credentials, and keeping them out of every message graphlabel prints or raises.

Where the password comes from (the first that is set wins):

1. ``password=`` given to ``Neo4jStore.from_uri`` / ``open_store``;
2. the ``NEO4J_PASSWORD`` environment variable;
3. ``GRAPHLABEL_NEO4J_PASSWORD_BLOCK=<name>``: the Prefect ``Secret`` block of that name
   (``prefect.blocks.system.Secret``), loaded from the Prefect server the process talks to.

Setting both 2 and 3 is refused: which one wins would be a guess, and a stale development
password silently winning over the production block is the mistake to prevent. The user
is ``password``'s companion ``user=``, else ``NEO4J_USER``, else ``neo4j``.

Credentials anywhere in the store URI are refused: in its userinfo
(``neo4j://user:pw@host``) or in its query string (``neo4j://host?password=pw``, any
parameter whose name holds one of ``CREDENTIAL_WORDS``). A URI travels through shell
history, process listings, and Prefect, which stores every flow run's parameters (the
store URI is one) on its server. The neo4j driver refuses userinfo too, with an error
quoting the whole URI, password included. The refusal names the URI redacted.

Every error graphlabel raises on connecting is built from ``redact``ed text: the URI's
userinfo password, its whole query string and fragment (a routing context is harmless,
but a secret there would be printed as typed) and the password itself, wherever it
appears, become ``***``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

USER_ENV = "NEO4J_USER"
PASSWORD_ENV = "NEO4J_PASSWORD"
PASSWORD_BLOCK_ENV = "GRAPHLABEL_NEO4J_PASSWORD_BLOCK"
REDACTED = "***"

# scheme://userinfo@ — userinfo runs to the *last* '@' of the token: a password may hold
# '/', '?' or '#' unencoded, and redacting too much is the safe way to be wrong.
_URI_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>\S*)@")
# scheme://authority/path, then ?query and #fragment up to the next blank: both redacted whole
_URI_QUERY = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s?#]*)(?P<query>\?[^\s#]*)?(?P<fragment>#\S*)?")
#: A query parameter whose name holds one of these (any case) carries a credential.
CREDENTIAL_WORDS = ("pass", "pwd", "secret", "token", "auth", "credential", "key", "cert")


class StoreConnectionError(ConnectionError):
    """The store could not be opened; the message is redacted (see ``redact``)."""


def _redact_userinfo(match: re.Match) -> str:
    user, sep, _ = match.group("userinfo").partition(":")
    # "user:password" keeps the user; a userinfo without ':' may itself be a token
    return f"{match.group('scheme')}{user}:{REDACTED}@" if sep and "/" not in user else \
        f"{match.group('scheme')}{REDACTED}@"


def _redact_query(match: re.Match) -> str:
    return (match.group("head") + ("?" + REDACTED if match.group("query") else "")
            + ("#" + REDACTED if match.group("fragment") else ""))


def redact_uri(uri: str) -> str:
    """``uri`` with the password of its userinfo, its query string and its fragment
    replaced by ``***``.

    ``neo4j://alice:pw@db:7687?policy=eu`` → ``neo4j://alice:***@db:7687?***``; a
    userinfo without a password (which may be a token) is replaced whole. Any text works:
    every URI in it is redacted, so this also cleans messages that quote a URI.
    """
    return _URI_QUERY.sub(_redact_query, _URI_USERINFO.sub(_redact_userinfo, str(uri)))


def redact(text: object, *secrets: str | None) -> str:
    """``text`` with URI credentials (``redact_uri``) and each given secret replaced by ``***``."""
    text = redact_uri(str(text))
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def has_credentials(uri: str) -> bool:
    """Whether a ``scheme://...`` URI carries a userinfo (``user[:password]@``), or a query
    parameter whose name holds one of ``CREDENTIAL_WORDS`` (``?password=...``)."""
    _, sep, rest = str(uri).partition("://")
    if not sep:
        return False
    if "@" in rest:
        return True
    query = rest.partition("#")[0].partition("?")[2]
    names = [unquote(item.partition("=")[0]).lower() for item in re.split(r"[&;]", query) if item]
    return any(word in name for name in names for word in CREDENTIAL_WORDS)


def check_store_uri(uri: str) -> str:
    """``uri`` if it carries no credentials, else a ``ValueError`` quoting it redacted."""
    if has_credentials(uri):
        raise ValueError(
            f"the store URI {redact_uri(uri)} holds credentials, which graphlabel refuses (a URI"
            f" ends up in shell history and in Prefect's flow-run parameters): give the user and"
            f" password as {USER_ENV} and {PASSWORD_ENV}, or name a Prefect Secret block in"
            f" {PASSWORD_BLOCK_ENV}"
        )
    return uri


def load_secret_block(name: str) -> str:
    """The string held by the Prefect ``Secret`` block ``name``."""
    from prefect.blocks.system import (
        Secret,  # Prefect is loaded only when a block is named
    )

    failure = None
    try:
        block: Any = Secret.load(name)  # a Secret (the sync API: no coroutine outside async code)
    except Exception as exc:  # noqa: BLE001 - any failure is reported the same way, redacted
        failure = ValueError(f"{PASSWORD_BLOCK_ENV}={name!r}: could not load that Prefect Secret block"
                             f" ({type(exc).__name__}: {redact(exc)})")
    if failure is not None:
        raise failure  # raised outside the except block, so no chained original (see module doc)
    # Secret.get() would json.loads the text: a password "null", "true" or "1e3" would
    # come back as None, True or 1000.0. The raw secret value is the password as stored.
    value = block.value.get_secret_value()
    if not isinstance(value, str) or not value:
        raise ValueError(f"the Prefect Secret block {name!r} ({PASSWORD_BLOCK_ENV}) must hold a non-empty"
                         f" string, got a {type(value).__name__}")
    return value


def neo4j_credentials(user: str | None = None, password: str | None = None,
                      environ: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """The Neo4j user and password (None: no authentication), by the rules of the module
    docstring."""
    environ = os.environ if environ is None else environ
    user = user or environ.get(USER_ENV) or "neo4j"
    if password is not None:
        return user, password
    env_password = environ.get(PASSWORD_ENV)
    block = (environ.get(PASSWORD_BLOCK_ENV) or "").strip()
    if env_password is not None and block:
        raise ValueError(f"both {PASSWORD_ENV} and {PASSWORD_BLOCK_ENV} are set: unset one of them so"
                         " that it is clear which password is meant")
    if block:
        return user, load_secret_block(block)
    return user, env_password


def auth_hint(user: str, password: str | None) -> str:
    """What to check when the server refused the credentials (a newcomer without
    ``NEO4J_PASSWORD`` was told only "Unsupported authentication token, missing key
    `scheme`")."""
    if password is None:
        return (f"no password was given: set {PASSWORD_ENV} (and {USER_ENV} if the user is not neo4j),"
                f" or name a Prefect Secret block in {PASSWORD_BLOCK_ENV}")
    return (f"the server refused user {user!r} with the password given: check {USER_ENV} and {PASSWORD_ENV}"
            f" (or the Prefect Secret block {PASSWORD_BLOCK_ENV} names)")
