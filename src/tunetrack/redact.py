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
