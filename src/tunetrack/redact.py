"""Secrets kept out of run folders: which keys name a secret, and a command line or URL made safe to
store. A run folder is meant to be shared, and training configs and command lines often carry tokens.
"""

from __future__ import annotations

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


#: tokens recognisable by their shape wherever they are printed: Hugging Face, OpenAI and Anthropic,
#: GitHub, Slack, AWS access key ids, Google API keys
_TOKEN_SHAPES = (
    r"\bhf_[A-Za-z0-9]{30,}"
    r"|\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{22,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\bAIza[0-9A-Za-z_-]{35}"
)
#: ``scheme://user:password@``, ``Bearer <token>``, and one of the shapes above
_ALWAYS = re.compile(
    rf"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/@:]+:[^\s/@]*@|(?P<bearer>\b[Bb]earer\s+)[A-Za-z0-9._~+/=-]{{8,}}|{_TOKEN_SHAPES}"
)
#: a cheap first look: text without any of these words has no ``name=value`` secret to mask
_SUSPECT = re.compile(r"(?i)passw|secret|api_?key|access_?key|private_?key|credential|auth|token")
#: ``name=value``, ``name: value``, ``"name": "value"``, ``--name value``: a value that ``is_secret_key``
#: says its name makes secret is masked
_ASSIGNED = re.compile(
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)(?P<sep>[\"']?\s*[:=]\s*[\"']?|\s+)(?P<value>[^\s\"',;}]+)"
)


def _always(m: re.Match[str]) -> str:
    if m["scheme"]:
        return f"{m['scheme']}{REDACTED}@"
    if m["bearer"]:
        return f"{m['bearer']}{REDACTED}"
    return REDACTED


def _assigned(m: re.Match[str]) -> str:
    name, sep, value = m["name"], m["sep"], m["value"]
    if (
        value == REDACTED
        or not is_secret_key(name)
        or (sep.isspace() and not m.string[: m.start()].endswith("-"))
    ):
        return m[0]  # a bare word before a space is a name only as an option (``--hub_token hf_x``)
    return f"{name}{sep}{REDACTED}"


def redact_text(text: str) -> str:
    """Printed text (a console's lines) made fit to store: credentials in URLs, bearer tokens, tokens
    of well-known shapes, and values of ``name=value``, ``name: value`` and ``--name value`` whose
    name is a secret's (``is_secret_key``) masked. Masking twice changes nothing."""
    text = _ALWAYS.sub(_always, text)
    return _ASSIGNED.sub(_assigned, text) if _SUSPECT.search(text) else text
