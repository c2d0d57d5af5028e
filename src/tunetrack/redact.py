"""Secrets kept out of run folders: which keys name a secret, and a command line or URL made safe to
store. A run folder is meant to be shared, and training configs and command lines often carry tokens.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

REDACTED = "***REDACTED***"

# Matched against the key's lowercased words joined without separators ("wandb_api_key" -> "wandbapikey").
# "auth" matches "use_auth_token" and "Authorization" but not "author", "authored" or "authority".
_SECRET = re.compile(r"passw(or)?d|secret|apikey|accesskey|privatekey|credential|auth(?!or(?!i[sz]))")
# A last word ending in "token" names a secret ("hub_token", "HF_TOKEN", "hfToken", "token") unless the word
# before it names a special token of a tokenizer or a count ("pad_token", "eos_token", "n_token").
_PUBLIC_TOKEN = re.compile(
    r"bos|eos|pad|unk|sep|cls|mask|eot|boi|eoi|image|video|audio|start|end|n|num|max|min"
)


def is_secret_key(key: str) -> bool:
    """Whether values under ``key`` must be redacted.

    LLM configs are full of keys that contain "token" and are not secrets (``max_tokens``,
    ``tokenizer_name``, ``pad_token_id``, ``eos_token``, ``tokens_per_second``), so "token" only counts
    as the key's last word; plural counts, ids and tokenizer names never match.
    """
    words = re.findall(r"[a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower())
    if _SECRET.search("".join(words)):
        return True
    return (
        bool(words)
        and words[-1].endswith("token")
        and (len(words) == 1 or not _PUBLIC_TOKEN.fullmatch(words[-2]))
    )


def strip_credentials(url: str) -> str:
    """``https://user:token@host/x.git`` -> ``https://host/x.git``; scp-like ``git@host:x`` is kept."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    netloc, slash, path = rest.partition("/")
    return f"{scheme}://{netloc.rpartition('@')[2]}{slash}{path}"


def redact_argv(argv: Sequence[str]) -> list[str]:
    """The command line fit to store in a shareable run folder: values of secret options and of
    ``NAME=value`` assignments redacted (``--hub_token hf_x``, ``--hub-token=hf_x``, ``HF_TOKEN=hf_x``),
    credentials stripped from URLs."""
    out: list[str] = []
    secret_next = False
    for arg in map(str, argv):
        name, eq, value = arg.partition("=")
        if secret_next:
            out.append(REDACTED)
            secret_next = False
        elif eq and value and is_secret_key(name.lstrip("-")):
            out.append(f"{name}={REDACTED}")
        else:
            # an option without its value ("--hub_token hf_x"): the next argument is the secret
            secret_next = arg.startswith("-") and not eq and is_secret_key(arg.lstrip("-"))
            out.append(strip_credentials(arg))
    return out


#: (literals, a pattern): tokens recognisable by their shape wherever they are printed (Hugging Face,
#: OpenAI and Anthropic, GitHub, Slack, AWS access key ids, Google API keys), a ``Bearer`` token, and
#: credentials in a URL; each pattern is looked for only in text that holds one of its literals, so
#: that a console's megabytes of ordinary lines cost a few substring searches
_SHAPES: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    (literals, re.compile(pattern))
    for literals, pattern in (
        (("://",), r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/@:]+:[^\s/@]*@"),
        (("earer",), r"(?P<bearer>\b[Bb]earer\s+)[A-Za-z0-9._~+/=-]{8,}"),
        (("hf_",), r"\bhf_[A-Za-z0-9]{30,}"),
        (("sk-",), r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"),
        (("gh", "github_pat_"), r"\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{22,}"),
        (("xox",), r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
        (("AKIA",), r"\bAKIA[0-9A-Z]{16}\b"),
        (("AIza",), r"\bAIza[0-9A-Za-z_-]{35}"),
    )
]
#: the words a secret's name holds (``is_secret_key``), lowercase: where none is, nothing more is looked at
_SUSPECT = (
    "passw",
    "secret",
    "apikey",
    "api_key",
    "api-key",
    "accesskey",
    "access_key",
    "privatekey",
    "private_key",
    "credential",
    "auth",
    "token",
)
#: a name's characters (either side of a suspect word in it: matched forward, and on the reversed text
#: before the word)
_NAME = re.compile(r"[A-Za-z0-9_.-]*")
#: what follows a name whose value is masked: ``=value``, ``: value``, ``": "value``, or (an option's)
#: `` value``
_VALUE = re.compile(r"(?P<sep>[\"']?\s*[:=]\s*[\"']?|[ \t]+)(?P<value>[^\s\"',;}]+)")


def _shape(m: re.Match[str]) -> str:
    groups = m.groupdict()
    if groups.get("scheme"):
        return f"{groups['scheme']}{REDACTED}@"
    if groups.get("bearer"):
        return f"{groups['bearer']}{REDACTED}"
    return REDACTED


def _name_length(text: str, at: int) -> int:
    matched = _NAME.match(text, at)  # always matches (maybe nothing)
    return matched.end() - at if matched else 0


@functools.lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    return is_secret_key(name.lstrip("-"))


def _secret_values(text: str) -> list[tuple[int, int]]:
    """Where the values of ``name=value``, ``name: value`` and ``--name value`` are in ``text`` whose
    name is a secret's: found from each suspect word, not by matching every word of the text."""
    low, found, seen = text.lower(), [], set()
    for word in _SUSPECT:
        at = low.find(word)
        while at >= 0:
            start = at - _name_length(text[max(at - 128, 0) : at][::-1], 0)
            end = at + _name_length(text, at)
            name = text[start:end]
            if start not in seen and _secret_name(name):
                seen.add(start)
                value = _VALUE.match(text, end)
                if (
                    value
                    and value["value"] != REDACTED
                    and (not value["sep"].isspace() or name.startswith("-"))
                ):
                    found.append(
                        value.span("value")
                    )  # a bare word before a space is a name only as an option
            at = low.find(word, end)
    return sorted(found)


def redact_text(text: str) -> str:
    """Printed text (a console's lines) made fit to store: credentials in URLs, bearer tokens, tokens
    of well-known shapes, and values of ``name=value``, ``name: value`` and ``--name value`` whose
    name is a secret's (``is_secret_key``) masked. Masking twice changes nothing."""
    for literals, pattern in _SHAPES:
        if any(literal in text for literal in literals):
            text = pattern.sub(_shape, text)
    parts, done = [], 0
    for start, end in _secret_values(text):
        if start >= done:
            parts += [text[done:start], REDACTED]
            done = end
    return "".join([*parts, text[done:]]) if parts else text
