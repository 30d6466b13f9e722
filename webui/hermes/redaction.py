"""Secret redaction for exports (``redact=1``, Hermes's ``sessions export --redact``), as one
table of rules: what each catches, a cheap test that must pass before its pattern is tried,
the pattern, and how a match is masked.

The credential shapes and the masks are facts about Hermes 0.19.0's export redaction (the
oracle tier compares redacted files byte for byte): a token of 18 characters or more keeps its
first 6 and last 4 characters around ``...``, a shorter one becomes ``***``; key names and
separators stay so a reader can tell what was there. The rules run in table order, each over
the text the previous one left.

Where Logbook masks more than Hermes (``STRONGER`` lists it): the ``Authorization`` header is
found in any letter case (Hermes's cheap test only looks for two spellings), and the session's
own text columns (title, system prompt) are redacted as well as its messages. Text is redacted
as stored: a line inside a JSON-encoded tool output is not at the start of a line, as in
Hermes (decoding it first would mask more, but the files would then differ from Hermes's).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

STRONGER = (
    "Authorization headers in any letter case",
    "the session's title and system prompt, not only its messages",
)

SHORT = 18  # tokens shorter than this are masked whole
HEAD, TAIL = 6, 4


def mask(token: str) -> str:
    if len(token) < SHORT:
        return "***"
    return f"{token[:HEAD]}...{token[-TAIL:]}"


# Vendor key prefixes: (the literal every such key starts with, the pattern of the whole key).
# The literal is also the rule's cheap test.
KEY_SHAPES: tuple[tuple[str, str], ...] = (
    ("sk-", r"sk-[A-Za-z0-9_-]{10,}"),  # OpenAI, OpenRouter, Anthropic
    ("ghp_", r"ghp_[A-Za-z0-9]{10,}"),  # GitHub classic PAT
    ("github_pat_", r"github_pat_[A-Za-z0-9_]{10,}"),
    ("gho_", r"gho_[A-Za-z0-9]{10,}"),
    ("ghu_", r"ghu_[A-Za-z0-9]{10,}"),
    ("ghs_", r"ghs_[A-Za-z0-9]{10,}"),
    ("ghr_", r"ghr_[A-Za-z0-9]{10,}"),
    ("xapp-", r"xapp-\d+-[A-Za-z0-9-]{10,}"),  # Slack app token
    ("xox", r"xox[baprs]-[A-Za-z0-9-]{10,}"),  # Slack bot/user tokens
    ("AIza", r"AIza[A-Za-z0-9_-]{30,}"),  # Google
    ("pplx-", r"pplx-[A-Za-z0-9]{10,}"),
    ("fal_", r"fal_[A-Za-z0-9_-]{10,}"),
    ("fc-", r"fc-[A-Za-z0-9]{10,}"),
    ("bb_live_", r"bb_live_[A-Za-z0-9_-]{10,}"),
    ("gAAAA", r"gAAAA[A-Za-z0-9_=-]{20,}"),  # Fernet-style encrypted tokens
    ("AKIA", r"AKIA[A-Z0-9]{16}"),  # AWS access key id
    ("sk_live_", r"sk_live_[A-Za-z0-9]{10,}"),
    ("sk_test_", r"sk_test_[A-Za-z0-9]{10,}"),
    ("rk_live_", r"rk_live_[A-Za-z0-9]{10,}"),
    ("SG", r"SG\.[A-Za-z0-9_-]{10,}"),  # SendGrid
    ("hf_", r"hf_[A-Za-z0-9]{10,}"),
    ("r8_", r"r8_[A-Za-z0-9]{10,}"),
    ("npm_", r"npm_[A-Za-z0-9]{10,}"),
    ("pypi-", r"pypi-[A-Za-z0-9_-]{10,}"),
    ("dop_v1_", r"dop_v1_[A-Za-z0-9]{10,}"),
    ("doo_v1_", r"doo_v1_[A-Za-z0-9]{10,}"),
    ("am_", r"am_[A-Za-z0-9_-]{10,}"),
    ("sk_", r"sk_[A-Za-z0-9_]{10,}"),
    ("tvly-", r"tvly-[A-Za-z0-9]{10,}"),
    ("exa_", r"exa_[A-Za-z0-9]{10,}"),
    ("gsk_", r"gsk_[A-Za-z0-9]{10,}"),
    ("syt_", r"syt_[A-Za-z0-9]{10,}"),
    ("retaindb_", r"retaindb_[A-Za-z0-9]{10,}"),
    ("hsk-", r"hsk-[A-Za-z0-9]{10,}"),
    ("mem0_", r"mem0_[A-Za-z0-9]{10,}"),
    ("brv_", r"brv_[A-Za-z0-9]{10,}"),
    ("xai-", r"xai-[A-Za-z0-9]{30,}"),
    ("ntn_", r"ntn_[A-Za-z0-9]{10,}"),
    ("fw-", r"fw-[A-Za-z0-9]{30,}"),
    ("fw_", r"fw_[A-Za-z0-9]{30,}"),
    ("fpk_", r"fpk_[A-Za-z0-9]{30,}"),
)

# Key names that mark an assignment, a JSON field, a header or a query parameter as secret.
_ENV_WORDS = r"(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)"
_CONFIG_WORDS = r"(?:api[ _.\-]?key|token|secret|passwd|password|credential|auth)"
_YAML_WORDS = r"(?:api[ _.\-]?key|token|secret|passwd|password|credential)"
_JSON_WORDS = (
    r"(?:api_?[Kk]ey|token|secret|password|access_token|refresh_token|auth_token|bearer|"
    r"secret_value|raw_secret|secret_input|key_material)"
)
_HEADER_WORDS = (
    r"(?:x-api-key|x-goog-api-key|api-key|apikey|x-api-token|x-auth-token|x-access-token)"
)
FORM_KEYS = frozenset(
    "access_token refresh_token id_token token api_key apikey client_secret password auth jwt "  # noqa: SIM905
    "session secret key code signature x-amz-signature".split()
)
_CONFIG_VALUE = r"(['\"]?)([^\s&]+?)\2(?=[\s&]|$)"

# A value that names where a secret comes from (code reading the environment) is not one.
_LOOKUP = re.compile(r"^(?:os\.(?:getenv|environ)|process\.env|\$ENV\{)")


def _unless_lookup(build: Callable[[re.Match], str], value_group: int):
    def masker(m: re.Match) -> str:
        return m.group(0) if _LOOKUP.match(m.group(value_group)) else build(m)

    return masker


def _assignment(m: re.Match) -> str:
    name, quote, value = m.group(1), m.group(2), m.group(3)
    return f"{name}={quote}{mask(value)}{quote}"


def _phone(m: re.Match) -> str:
    number = m.group(1)
    keep = 2 if len(number) <= 8 else 4
    return f"{number[:keep]}****{number[-keep:]}"


def _form_body(text: str) -> str:
    """A whole text that is nothing but ``k=v&k=v`` has its secret-named values masked (and
    is trimmed, as Hermes does)."""
    if "\n" in text or "&" not in text or not _FORM.match(text.strip()):
        return text
    pairs = []
    for pair in text.strip().split("&"):
        key, eq, _value = pair.partition("=")
        pairs.append(f"{key}=***" if eq and key.lower() in FORM_KEYS else pair)
    return "&".join(pairs)


_FORM = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*=[^&\s]*(?:&[A-Za-z_][A-Za-z0-9_.-]*=[^&\s]*)+$")


def _has(*needles: str) -> Callable[[str], bool]:
    return lambda text: any(n in text for n in needles)


def _all(*needles: str) -> Callable[[str], bool]:
    return lambda text: all(n in text for n in needles)


def _no_url(*needles: str) -> Callable[[str], bool]:
    return lambda text: "://" not in text and all(n in text for n in needles)


@dataclass(frozen=True)
class Rule:
    name: str
    gate: Callable[[str], bool]  # False: the pattern cannot match, skip it
    pattern: re.Pattern | None  # None: ``whole`` decides on the entire text
    masked: Callable[[re.Match], str] | None = None
    whole: Callable[[str], str] | None = None


def _key_shapes() -> re.Pattern:
    body = "|".join(shape for _, shape in KEY_SHAPES)
    return re.compile(rf"(?<![A-Za-z0-9_-])({body})(?![A-Za-z0-9_-])")


def _keep(*kept: int, secret: int, then: tuple[int, ...] = (), fixed: str | None = None):
    """Groups ``kept`` as they were, group ``secret`` masked (or replaced by ``fixed``), then
    groups ``then``; a group that did not take part counts as empty."""

    def masker(m: re.Match) -> str:
        head = "".join(m.group(i) or "" for i in kept)
        tail = "".join(m.group(i) or "" for i in then)
        return head + (fixed if fixed is not None else mask(m.group(secret))) + tail

    return masker


RULES: tuple[Rule, ...] = (
    Rule(
        "vendor key prefix",
        _has(*(literal for literal, _ in KEY_SHAPES)),
        _key_shapes(),
        lambda m: mask(m.group(1)),
    ),
    Rule(
        "environment assignment (NAME_TOKEN=value)",
        _has("="),
        re.compile(rf"([A-Z0-9_]{{0,50}}{_ENV_WORDS}[A-Z0-9_]{{0,50}})\s*=\s*(['\"]?)(\S+)\2"),
        _unless_lookup(_assignment, 3),
    ),
    Rule(
        "dotted config key (app.db.password=value)",
        _no_url("="),
        re.compile(
            rf"((?:[A-Za-z0-9_\-]+\.)+[A-Za-z0-9_.\-]*{_CONFIG_WORDS}[A-Za-z0-9_.\-]*"
            rf"|[A-Za-z0-9_.\-]*{_CONFIG_WORDS}[A-Za-z0-9_.\-]*\.[A-Za-z0-9_.\-]+)={_CONFIG_VALUE}",
            re.IGNORECASE,
        ),
        _unless_lookup(_assignment, 3),
    ),
    Rule(
        "config line (password=value at the start of a line)",
        _no_url("="),
        re.compile(
            rf"(^[ \t]*(?:export[ \t]+)?[A-Za-z0-9_\-]*{_CONFIG_WORDS}[A-Za-z0-9_\-]*)={_CONFIG_VALUE}",
            re.IGNORECASE | re.MULTILINE,
        ),
        _unless_lookup(_assignment, 3),
    ),
    Rule(
        'JSON field ("api_key": "value")',
        _all(":", '"'),
        re.compile(rf'("{_JSON_WORDS}")\s*:\s*"([^"]+)"', re.IGNORECASE),
        _unless_lookup(lambda m: f'{m.group(1)}: "{mask(m.group(2))}"', 2),
    ),
    Rule(
        "YAML key (password: value)",
        _no_url(":"),
        re.compile(
            rf"(^[ \t]*[A-Za-z0-9_.\-]*{_YAML_WORDS}[A-Za-z0-9_.\-]*)(:[ \t]*)(?!['\"])([^\s&]+)",
            re.IGNORECASE | re.MULTILINE,
        ),
        _unless_lookup(_keep(1, 2, secret=3), 3),
    ),
    Rule(
        "Authorization header",
        lambda text: "uthorization" in text.lower(),
        re.compile(r"((?:Proxy-)?Authorization:\s*)([A-Za-z][\w.+-]*\s+)?([^\s\"']+)", re.I),
        _keep(1, 2, secret=3),
    ),
    Rule(
        "API key header (x-api-key: value)",
        _has(":"),
        re.compile(rf"({_HEADER_WORDS}\s*:\s*)(\S+)", re.IGNORECASE),
        _keep(1, secret=2),
    ),
    Rule(
        "Telegram bot token",
        _has(":"),
        re.compile(r"(bot)?(\d{8,}):([-A-Za-z0-9_]{30,})"),
        _keep(1, 2, secret=3, fixed=":***"),
    ),
    Rule(
        "private key block",
        _all("BEGIN", "-----"),
        re.compile(r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*PRIVATE KEY-----"),
        lambda m: "[REDACTED PRIVATE KEY]",
    ),
    Rule(
        "database URL password",
        _has("://"),
        re.compile(
            r"((?:postgres(?:ql)?|mysql|mongodb(?:\+srv)?|redis|amqp)://[^:\s]+:)([^@\s]+)(@)",
            re.IGNORECASE,
        ),
        _keep(1, secret=2, then=(3,), fixed="***"),
    ),
    Rule(
        "token as a URL's user (https://TOKEN@host)",
        _has("://"),
        re.compile(
            r"((?:https?|wss?|git|ssh|ftp|ftps|sftp)://)([^\s:@/]{8,})(@[^\s]+)", re.IGNORECASE
        ),
        _keep(1, secret=2, then=(3,)),
    ),
    Rule(
        "JWT",
        _has("eyJ"),
        re.compile(r"eyJ[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_=-]{4,}){0,2}"),
        lambda m: mask(m.group(0)),
    ),
    Rule("form body (k=v&k=v)", _all("&", "="), None, whole=_form_body),
    Rule(
        "phone number (E.164)",
        _has("+"),
        re.compile(r"(\+[1-9]\d{6,14})(?![A-Za-z0-9])"),
        _phone,
    ),
)


def redact_text(text: str, rules: tuple[Rule, ...] = RULES) -> str:
    for rule in rules:
        if not text:
            return text
        if not rule.gate(text):
            continue
        if rule.pattern is None:
            text = rule.whole(text)
        else:
            text = rule.pattern.sub(rule.masked, text)
    return text


def which_rules(text: str, rules: tuple[Rule, ...] = RULES) -> list[str]:
    """The names of the rules that changed something in ``text`` (for the corpus test and
    for a reader who wonders why a line was masked)."""
    caught = []
    for rule in rules:
        after = redact_text(text, (rule,))
        if after != text:
            caught.append(rule.name)
        text = after
    return caught


def redact_value(value: Any) -> Any:
    """Strings anywhere inside lists and dicts redacted; keys and other values as they are."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    return value


REDACTED_KEYS = ("messages", "segments", "title", "system_prompt")


def redact_record(record: dict[str, Any]) -> dict[str, Any]:
    """An export record with its messages (and a logical export's segments) redacted, and
    its title and system prompt."""
    out = dict(record)
    for key in REDACTED_KEYS:
        if out.get(key) is not None:
            out[key] = redact_value(out[key])
    return out
