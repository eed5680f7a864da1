"""The production stack: compose.yaml, Dockerfile, .dockerignore and deploy/ configs.

No Docker engine is needed. compose.yaml is validated against the vendored Compose
Specification schema (tests/data/compose-spec.json, provenance in tests/data/README.md),
then checked for what a schema cannot see: references between services, the settings the
project image reads, the folders its services share, the secrets without a default, GPU
reservations, and the files and modules the commands name.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shlex
import sys
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml

from varagity.backup.bundle import exports_dir
from varagity.config import Settings

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "compose.yaml"
SCHEMA_FILE = ROOT / "tests" / "data" / "compose-spec.json"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
WORKSPACE_FILE = ROOT / "deploy" / "workspace.compose.yaml"
PROMETHEUS_FILE = ROOT / "deploy" / "prometheus" / "prometheus.yml"
ALERTS_FILE = ROOT / "deploy" / "prometheus" / "alerts.yml"
GRAFANA_DIR = ROOT / "deploy" / "grafana"
README = ROOT / "README.md"

PROJECT_SERVICES = (
    "dagster-code",
    "dagster-webserver",
    "dagster-ui",
    "dagster-daemon",
    "dagster-worker",
    "api",
    "app",
)
# Services that run one command and exit (`docker compose run --rm app varagity ...`), not
# servers: nothing waits for them, so they have no healthcheck, and `up` leaves them out.
ONE_OFF_SERVICES = {"app": "cli"}
GPU_DEVICE_IDS = {"llm": ["0"], "embeddings": ["1"]}
DAGSTER_YAML = ROOT / "dagster_home" / "dagster.yaml"
# Environment names a project-image service may set that are not varagity settings:
# Dagster reads DAGSTER_HOME, and dagster_home/dagster.yaml reads VARAGITY_DAGSTER_*.
NON_SETTINGS_ENV = frozenset(
    {"DAGSTER_HOME", "VARAGITY_DAGSTER_PG_URL", "VARAGITY_DAGSTER_LOG_DIR"}
)
# Host folders the operator provides (the corpora, model weights): not part of the repository.
HOST_DATA_BINDS = frozenset({"./corpus", "./graph-docs", "./models"})
# What the image build reads from the context; .dockerignore must keep it.
BUILD_INPUTS = (
    "pyproject.toml",
    "varagity/config.py",
    "varagity_assets/definitions.py",
    "varagity_api/main.py",
    "dagster_home/dagster.yaml",
    "deploy/workspace.compose.yaml",
)


# --- loading ----------------------------------------------------------------------------


def _load_compose() -> dict[str, Any]:
    with COMPOSE_FILE.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)  # resolves the x- anchors and `<<` merge keys
    assert isinstance(data, dict), "compose.yaml must be a mapping"
    return data


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return _load_compose()


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    cls.check_schema(schema)
    return cls(schema)


# --- Compose variable interpolation (${VAR}, ${VAR:-default}, ${VAR:?error}, $$) ---------

_VARIABLE = re.compile(
    r"\$(?:(?P<escaped>\$)"
    r"|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Apply Compose interpolation to every string value, as `docker compose` would."""
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name = match["name"] or match["bare"]
        op, arg = match["op"], match["arg"] or ""
        current = env.get(name)
        unset = current is None or (op is not None and op.startswith(":") and current == "")
        if op in (":-", "-"):
            return arg if unset else str(current)
        if op in (":?", "?"):
            if unset:
                raise KeyError(f"required variable {name} is not set: {arg}")
            return str(current)
        if op in (":+", "+"):
            return "" if unset else arg
        return current or ""

    return _VARIABLE.sub(substitute, value)


# The variables `docker compose` refuses to start without (`${NAME:?message}`): secrets,
# which a default published in this repository would give away.
REQUIRED_SECRETS = ("API_KEY", "GRAFANA_ADMIN_PASSWORD", "POSTGRES_PASSWORD")
SECRET_VALUES = {name: hashlib.sha256(name.encode()).hexdigest() for name in REQUIRED_SECRETS}


@pytest.fixture(scope="module")
def resolved(compose: dict[str, Any]) -> dict[str, Any]:
    """compose.yaml as deployed with a .env holding only the required secrets."""
    return interpolate(compose, env=dict(SECRET_VALUES))


# --- helpers ----------------------------------------------------------------------------


def _env(service: dict[str, Any]) -> dict[str, str]:
    environment = service.get("environment") or {}
    if isinstance(environment, list):
        pairs = (item.split("=", 1) if "=" in item else (item, "") for item in environment)
        return {key: value for key, value in pairs}
    return {key: "" if value is None else str(value) for key, value in environment.items()}


def _command(service: dict[str, Any]) -> list[str]:
    command = service.get("command") or []
    return shlex.split(command) if isinstance(command, str) else [str(arg) for arg in command]


def _depends_on(service: dict[str, Any]) -> dict[str, dict[str, Any]]:
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return {name: {"condition": "service_started"} for name in deps}
    return deps


def _has_healthcheck(service: dict[str, Any]) -> bool:
    check = service.get("healthcheck") or {}
    return bool(check) and not check.get("disable", False) and check.get("test") != ["NONE"]


def _option(args: list[str], *flags: str) -> str | None:
    for index, arg in enumerate(args[:-1]):
        if arg in flags:
            return args[index + 1]
    return None


def _mounts(service: dict[str, Any]) -> list[dict[str, Any]]:
    mounts = []
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            mounts.append(volume)
            continue
        source, _, rest = volume.partition(":")
        target = rest.split(":", 1)[0]
        kind = "bind" if source.startswith((".", "/", "~")) else "volume"
        mounts.append({"type": kind, "source": source, "target": target})
    return mounts


def _dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with line continuations joined and comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, args = (pending + line).partition(" ")
        instructions.append((keyword.upper(), args.strip()))
        pending = ""
    return instructions


def _dockerignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    patterns = []
    for raw in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        glob = line[1:] if negated else line
        glob = glob.strip().strip("/")
        regex, index = "", 0
        while index < len(glob):
            if glob.startswith("**/", index):
                regex, index = regex + "(?:.*/)?", index + 3
            elif glob.startswith("**", index):
                regex, index = regex + ".*", index + 2
            elif glob[index] == "*":
                regex, index = regex + "[^/]*", index + 1
            elif glob[index] == "?":
                regex, index = regex + "[^/]", index + 1
            elif glob[index] == "[" and "]" in glob[index:]:
                end = glob.index("]", index)
                regex, index = regex + glob[index : end + 1], end + 1
            else:
                regex, index = regex + re.escape(glob[index]), index + 1
        patterns.append((negated, re.compile(regex)))
    return patterns


def _dockerignored(path: str) -> bool:
    """Whether `docker build` leaves `path` out of the context (last matching rule wins)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for negated, regex in _dockerignore_patterns():
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            excluded = not negated
    return excluded


def _referenced_modules() -> Iterator[tuple[str, str]]:
    """(where, python module) for every module a project-image command runs."""
    services = _load_compose()["services"]
    commands = {f"compose service {name}": _command(services[name]) for name in PROJECT_SERVICES}
    for keyword, text in _dockerfile_instructions():
        if keyword in ("CMD", "ENTRYPOINT") and text.startswith("["):
            commands[f"Dockerfile {keyword}"] = json.loads(text)
    for where, args in commands.items():
        module = _option(args, "-m", "--module-name")
        if module:
            yield where, module
        if args and Path(args[0]).name == "uvicorn":
            app = next(arg for arg in args[1:] if not arg.startswith("-"))
            yield where, app.split(":", 1)[0]


def _module_file(module: str) -> Path:
    base = ROOT.joinpath(*module.split("."))
    package = base / "__init__.py"
    return package if package.exists() else base.with_suffix(".py")


# --- schema validation ------------------------------------------------------------------


def test_vendored_schema_is_the_compose_specification(schema: dict[str, Any]) -> None:
    assert schema["title"] == "Compose Specification"
    assert schema.get("$id") == "compose_spec.json"
    assert {"services", "volumes", "configs", "networks"} <= set(schema["properties"])
    text = json.dumps(schema)
    for keyword in ("device_ids", "capabilities", "service_healthy", "start_period"):
        assert f'"{keyword}"' in text, f"schema too old: it does not know {keyword}"


def test_compose_file_is_valid(compose: dict[str, Any], validator: Any) -> None:
    errors = sorted(validator.iter_errors(compose), key=lambda e: list(e.absolute_path))
    report = "\n".join(
        f"  {'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors
    )
    assert not errors, f"compose.yaml does not match the Compose Specification:\n{report}"


def test_resolved_compose_file_is_valid(resolved: dict[str, Any], validator: Any) -> None:
    assert not list(validator.iter_errors(resolved))


BROKEN = {
    "ports is not a list": ("services.api.ports", 5),
    "unknown service key": ("services.api.imagee", "varagity:latest"),
    "unknown depends_on condition": (
        "services.api.depends_on.postgres.condition",
        "service_ready",
    ),
    "healthcheck retries is not a number": ("services.postgres.healthcheck.retries", [3]),
    "unknown top-level key": ("servics", {}),
    "device capabilities not a list": (
        "services.llm.deploy.resources.reservations.devices.0.capabilities",
        "gpu",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_copy_fails_validation(compose: dict[str, Any], validator: Any, case: str) -> None:
    dotted, value = BROKEN[case]
    broken = copy.deepcopy(compose)
    *parents, leaf = dotted.split(".")
    node: Any = broken
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(leaf)] = value
    else:
        node[leaf] = value
    assert list(validator.iter_errors(broken)), f"validator accepted a broken file: {case}"


def test_no_obsolete_version_key(compose: dict[str, Any]) -> None:
    assert "version" not in compose


def test_interpolates_with_only_the_secrets_set(compose: dict[str, Any]) -> None:
    """A fresh checkout needs only the secrets in .env: every other variable has a default."""
    interpolate(compose, env=dict(SECRET_VALUES))  # raises on ${VAR:?...} without a value


@pytest.mark.parametrize("name", REQUIRED_SECRETS)
def test_refuses_to_start_without_each_secret(compose: dict[str, Any], name: str) -> None:
    """`docker compose up` stops before anything starts, naming the variable and .env."""
    env = {key: value for key, value in SECRET_VALUES.items() if key != name}
    with pytest.raises(KeyError, match=rf"{name} is not set: .*\.env"):
        interpolate(compose, env=env)
    with pytest.raises(KeyError, match=name):
        interpolate(compose, env={**SECRET_VALUES, name: ""})  # `:?` refuses empty too


def _variables(node: Any) -> Iterator[re.Match[str]]:
    """Every ${...} reference in the string values of a compose document."""
    if isinstance(node, dict):
        for value in node.values():
            yield from _variables(value)
    elif isinstance(node, list):
        for value in node:
            yield from _variables(value)
    elif isinstance(node, str):
        yield from (m for m in _VARIABLE.finditer(node) if not m["escaped"])


def test_only_the_secrets_are_required_and_never_have_a_default(compose: dict[str, Any]) -> None:
    required = {m["name"] for m in _variables(compose) if m["op"] == ":?"}
    assert required == set(REQUIRED_SECRETS)
    for match in _variables(compose):
        name = match["name"] or match["bare"]
        if name in REQUIRED_SECRETS:
            assert match["op"] == ":?", f"{match[0]}: a secret must be required, not defaulted"


_SECRET_SETTING = re.compile(r"PASSWORD|SECRET|(?:^|_)(?:API_KEY|TOKEN)$")
_URL_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^:/@]+:(?P<password>.+)@[^@]+$")
_REQUIRED_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*):\?[^}]+\}")


def test_every_secret_a_service_gets_comes_from_a_required_variable(
    compose: dict[str, Any], resolved: dict[str, Any]
) -> None:
    """Passwords and keys (also inside URLs) are `${NAME:?...}` and nothing else: no literal,
    no default that a reader of this repository would know."""
    checked = set()
    for name, service in compose["services"].items():
        for key, raw in _env(service).items():
            url = _URL_PASSWORD.match(raw)
            secret = url["password"] if url else raw if _SECRET_SETTING.search(key) else None
            if secret is None:
                continue
            required = _REQUIRED_VARIABLE.fullmatch(secret)
            assert required, f"{name}: {key} holds a secret that is not a required variable"
            assert required["name"] in REQUIRED_SECRETS, f"{name}: {key}"
            value = _env(resolved["services"][name])[key]
            assert SECRET_VALUES[required["name"]] in value, f"{name}: {key}"
            checked.add(required["name"])
    assert checked == set(REQUIRED_SECRETS), "a required secret that no service reads"


def test_expected_services(compose: dict[str, Any]) -> None:
    expected = {"postgres", "elasticsearch", "llm", "embeddings", "prometheus", "grafana"}
    assert expected | set(PROJECT_SERVICES) <= set(compose["services"])


# --- references between services ---------------------------------------------------------


def test_depends_on_targets_are_defined_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        for target in _depends_on(service):
            assert target in services, f"{name} depends on undefined service {target!r}"
            assert target != name, f"{name} depends on itself"


def test_depends_on_waits_for_health_where_a_healthcheck_exists(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    for name, service in services.items():
        for target, spec in _depends_on(service).items():
            healthy = spec.get("condition") == "service_healthy"
            if _has_healthcheck(services[target]):
                assert healthy, f"{name} -> {target}: use condition service_healthy"
            else:
                assert not healthy, f"{name} -> {target}: {target} has no healthcheck"


def test_every_service_has_a_healthcheck(compose: dict[str, Any]) -> None:
    missing = [
        name
        for name, svc in compose["services"].items()
        if not _has_healthcheck(svc) and name not in ONE_OFF_SERVICES
    ]
    assert not missing


def test_named_volumes_and_configs_are_declared(compose: dict[str, Any]) -> None:
    volumes = set(compose.get("volumes") or {})
    configs = set(compose.get("configs") or {})
    for name, service in compose["services"].items():
        for mount in _mounts(service):
            if mount.get("type") == "volume":
                assert mount["source"] in volumes, f"{name}: undeclared volume {mount['source']}"
        for config in service.get("configs") or []:
            source = config["source"] if isinstance(config, dict) else config
            assert source in configs, f"{name}: undeclared config {source}"


def test_repository_bind_mounts_exist(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for mount in _mounts(service):
            if mount.get("type") == "bind" and mount["source"] not in HOST_DATA_BINDS:
                assert (ROOT / mount["source"]).exists(), f"{name}: {mount['source']} missing"


def test_published_ports_bind_loopback_by_default(resolved: dict[str, Any]) -> None:
    for name, service in resolved["services"].items():
        for port in service.get("ports") or []:
            published = port if isinstance(port, str) else port.get("host_ip", "")
            assert str(published).startswith("127.0.0.1"), f"{name} publishes {port!r} widely"


# --- the project image ----------------------------------------------------------------------


def test_project_services_share_the_built_image(compose: dict[str, Any]) -> None:
    built = {name for name, svc in compose["services"].items() if "build" in svc}
    assert built == set(PROJECT_SERVICES)
    images = {compose["services"][name]["image"] for name in PROJECT_SERVICES}
    assert len(images) == 1, f"one image for all project services, got {images}"
    for name in PROJECT_SERVICES:
        build = compose["services"][name]["build"]
        context = ROOT / (build if isinstance(build, str) else build.get("context", "."))
        dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile")
        assert (context / (dockerfile or "Dockerfile")).resolve() == DOCKERFILE


@pytest.mark.parametrize("name", PROJECT_SERVICES)
def test_project_service_database_urls(resolved: dict[str, Any], name: str) -> None:
    env = _env(resolved["services"][name])
    assert env.get("DATABASE_URL", "").startswith("postgresql://"), "DATABASE_URL"
    # dagster-postgres on SQLAlchemy 2.x needs the psycopg2 driver spelled out.
    assert env.get("VARAGITY_DAGSTER_PG_URL", "").startswith("postgresql+psycopg2://")
    app_db, dagster_db = urlsplit(env["DATABASE_URL"]), urlsplit(env["VARAGITY_DAGSTER_PG_URL"])
    assert app_db.hostname == dagster_db.hostname == "postgres"
    assert app_db.path != dagster_db.path, "Dagster instance storage gets its own database"


@pytest.mark.parametrize("name", PROJECT_SERVICES)
def test_project_service_urls_name_defined_services(resolved: dict[str, Any], name: str) -> None:
    services = resolved["services"]
    for key, value in _env(services[name]).items():
        if "://" in value:
            host = urlsplit(value).hostname
            assert host in services, f"{name}: {key} points at {host!r}, not a compose service"


@pytest.mark.parametrize("name", PROJECT_SERVICES)
def test_project_service_env_names_are_settings(compose: dict[str, Any], name: str) -> None:
    """compose.yaml cannot drift from varagity.config.Settings: no unknown setting names."""
    unknown = set(_env(compose["services"][name])) - set(Settings.model_fields) - NON_SETTINGS_ENV
    assert not unknown, f"{name} sets {sorted(unknown)}, which are not Settings fields"


def test_api_env_is_a_valid_configuration(resolved: dict[str, Any]) -> None:
    env = _env(resolved["services"]["api"])
    fields: dict[str, Any] = {
        key: value for key, value in env.items() if key in Settings.model_fields
    }
    settings = Settings(_env_file=None, **fields)  # type: ignore[call-arg]
    assert settings.DATABASE_URL and settings.ELASTICSEARCH_URL
    assert settings.LLM_BASE_URL == "http://llm:8080/v1"
    assert settings.EMBEDDING_BASE_URL == "http://embeddings:7997/v1"
    assert str(settings.DOCS_PATH) == "/app/docs"


@pytest.mark.parametrize("name", PROJECT_SERVICES)
def test_project_services_share_docs_and_home(resolved: dict[str, Any], name: str) -> None:
    service = resolved["services"][name]
    env = _env(service)
    mounts = {mount["target"]: mount for mount in _mounts(service)}
    docs = mounts.get(env["DOCS_PATH"])
    assert docs and docs["type"] == "bind" and docs["source"] == "./corpus"
    home = mounts.get(env["VARAGITY_HOME"])
    assert home and home["type"] == "volume" and home["source"] == "varagity-home"
    assert env["DAGSTER_HOME"]


# --- folders the project services share ----------------------------------------------------


def _image_env_and_workdir() -> tuple[dict[str, str], PurePosixPath]:
    """The ENV and WORKDIR the Dockerfile's final stage gives every project container."""
    instructions = _dockerfile_instructions()
    last_from = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    env: dict[str, str] = {}
    workdir = PurePosixPath("/")
    for keyword, args in instructions[last_from:]:
        if keyword == "ENV":
            for pair in shlex.split(args):
                key, _, value = pair.partition("=")
                env[key] = value
        elif keyword == "WORKDIR":
            workdir = workdir / args
    return env, workdir


def _container_env(service: dict[str, Any]) -> dict[str, str]:
    """What a process of a project service sees: the image's ENV under compose's."""
    return {**_image_env_and_workdir()[0], **_env(service)}


PATH_SETTINGS = sorted(
    name
    for name, field in Settings.model_fields.items()
    if field.annotation is Path or Path in typing.get_args(field.annotation)
)


def _container_settings(service: dict[str, Any]) -> Settings:
    """The settings a project service's processes load, with relative folders taken from the
    image's WORKDIR (where they run) rather than from this test's working directory."""
    env = _container_env(service)
    workdir = PurePosixPath(service.get("working_dir") or _image_env_and_workdir()[1])
    fields: dict[str, Any] = {
        key: value for key, value in env.items() if key in Settings.model_fields
    }
    for name in PATH_SETTINGS:
        value = fields.get(name, Settings.model_fields[name].default)
        if value is not None and not str(value).startswith("~"):
            value = str(workdir / str(value))  # an absolute value replaces the workdir
        fields[name] = value
    return Settings(_env_file=None, **fields)  # type: ignore[call-arg]


@dataclass(frozen=True)
class SharedPlace:
    """A folder one project service writes and another reads, found the way the code finds
    it: from the settings (or the Dagster instance variables) the services get."""

    decided_by: tuple[str, ...]
    where: Callable[[Settings, dict[str, str]], Path | None]  # None: unused with these settings
    writers: frozenset[str]
    readers: frozenset[str]


SHARED_PLACES = {
    # the API's uploads and deletes write the corpus; the folder sensor and ingest runs read
    # it (and the API's folder watcher, page previews and reingest; the command line's
    # `backup list` and `doctor`)
    "DOCS_PATH": SharedPlace(
        ("DOCS_PATH",),
        lambda s, _: s.docs_path,
        frozenset({"api"}),
        frozenset({"api", "dagster-code", "app"}),
    ),
    # export runs write the documents' bundles (and `varagity backup export` run in the
    # command line's container when Dagster is down); the API lists, verifies and
    # restores them
    "DOCS_PATH/varagity-exports": SharedPlace(
        ("DOCS_PATH",),
        lambda s, _: exports_dir(s, "rag"),
        frozenset({"dagster-code", "app"}),
        frozenset({"api", "dagster-code", "app"}),
    ),
    # archive uploads and deletes (API); the graph sensor and build runs read them, and
    # the command line's `graph build` (which archives to build)
    "GRAPH_DOCS_PATH": SharedPlace(
        ("GRAPH_DOCS_PATH",),
        lambda s, _: s.graph_docs_path,
        frozenset({"api"}),
        frozenset({"api", "dagster-code", "app"}),
    ),
    "GRAPH_DOCS_PATH/varagity-exports": SharedPlace(
        ("GRAPH_DOCS_PATH",),
        lambda s, _: exports_dir(s, "graph"),
        frozenset({"dagster-code", "app"}),
        frozenset({"api", "dagster-code", "app"}),
    ),
    # graph build and restore runs write the engine's working directory and the restore
    # lock; the API's graph turns and its corpus_restoring check read them, and the
    # command line's (`ask --corpus graph`, `graph status`)
    "GRAPH_STORAGE_PATH": SharedPlace(
        ("GRAPH_STORAGE_PATH", "VARAGITY_HOME"),
        lambda s, _: s.graph_storage_path,
        frozenset({"dagster-code"}),
        frozenset({"api", "app"}),
    ),
    # the runs' state (artifacts, the graph); the API reports the folder's free disk
    "VARAGITY_HOME": SharedPlace(
        ("VARAGITY_HOME",),
        lambda s, _: s.home,
        frozenset({"dagster-code"}),
        frozenset({"api", "app"}),
    ),
    # the embedded BM25 index (only without ELASTICSEARCH_URL): ingest runs write, the API
    # and the command line search it
    "BM25_INDEX_PATH": SharedPlace(
        ("BM25_INDEX_PATH", "VARAGITY_HOME"),
        lambda s, _: None if s.ELASTICSEARCH_URL else s.bm25_path,
        frozenset({"dagster-code"}),
        frozenset({"api", "app"}),
    ),
    # the runs' step output (dagster_home/dagster.yaml compute_logs): the runs execute in the
    # code server's container, the webserver shows it
    "VARAGITY_DAGSTER_LOG_DIR": SharedPlace(
        ("VARAGITY_DAGSTER_LOG_DIR",),
        lambda _, env: Path(env["VARAGITY_DAGSTER_LOG_DIR"]),
        frozenset({"dagster-code"}),
        frozenset({"dagster-webserver"}),
    ),
}

# Folder settings no two services of this stack share, and why.
UNSHARED_PATH_SETTINGS = {
    "MODEL_CACHE_PATH": "the embedded stack's model servers only: compose's services call the "
    "llm and embeddings services (LLM_BASE_URL, EMBEDDING_BASE_URL)",
    "DOCLING_ARTIFACTS_PATH": "layout weights a process only reads; unset here",
}


def test_every_folder_setting_is_shared_or_said_why_not() -> None:
    covered = {name for place in SHARED_PLACES.values() for name in place.decided_by}
    assert set(PATH_SETTINGS) <= covered | set(UNSHARED_PATH_SETTINGS), (
        "a new folder setting: add it to SHARED_PLACES (and mount it) or UNSHARED_PATH_SETTINGS"
    )
    assert not covered & set(UNSHARED_PATH_SETTINGS)
    for place in SHARED_PLACES.values():
        assert len(place.writers | place.readers) > 1, "one service alone shares nothing"


def _mount_holding(service: dict[str, Any], path: PurePosixPath) -> tuple[dict[str, Any], str]:
    """The mount `path` lies on in the service's container (the deepest one) and the path
    below it; ({}, path) when it lies in the container's own writable layer."""
    best: tuple[dict[str, Any], str] = ({}, str(path))
    depth = -1
    for mount in _mounts(service):
        target = PurePosixPath(mount["target"])
        if (path == target or target in path.parents) and len(target.parts) > depth:
            best, depth = (mount, str(path.relative_to(target))), len(target.parts)
    return best


@pytest.mark.parametrize("place", sorted(SHARED_PLACES))
def test_a_folder_one_service_writes_and_another_reads_is_on_a_shared_volume(
    resolved: dict[str, Any], place: str
) -> None:
    """The folder, where each service's settings put it, lies on a volume or host folder
    mounted into every service that writes or reads it, the same one with the same path
    below it, writable where it is written: not in one container's own layer, where the
    others never see it and it dies with the container."""
    spec = SHARED_PLACES[place]
    services = resolved["services"]
    seen: dict[str, tuple[str, str, str] | None] = {}
    for name in sorted(spec.writers | spec.readers):
        assert name in services, f"{place}: no service {name}"
        service = services[name]
        where = spec.where(_container_settings(service), _container_env(service))
        if where is None:
            seen[name] = None
            continue
        path = PurePosixPath(where)
        mount, below = _mount_holding(service, path)
        others = ", ".join(sorted((spec.writers | spec.readers) - {name}))
        assert mount, (
            f"{name} keeps {place} at {path} in its own container layer, out of sight of "
            f"{others} and gone with the container"
        )
        assert mount["type"] in ("volume", "bind"), f"{name}: {place} on a {mount['type']}"
        if name in spec.writers:
            assert not mount.get("read_only"), f"{name} writes {place}, mounted read-only"
        source = str(mount["source"])
        if mount["type"] == "bind":
            source = str((ROOT / source).resolve())
        seen[name] = (mount["type"], source, below)
    assert len(set(seen.values())) == 1, f"{place} is not one folder for all its users: {seen}"


# --- GPU model servers ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(GPU_DEVICE_IDS))
def test_gpu_services_reserve_nvidia_devices(compose: dict[str, Any], name: str) -> None:
    service = compose["services"][name]
    devices = service["deploy"]["resources"]["reservations"]["devices"]
    nvidia = [d for d in devices if d.get("driver") == "nvidia" and "gpu" in d["capabilities"]]
    assert nvidia, f"{name} reserves no nvidia GPU"
    assert [str(i) for d in nvidia for i in d.get("device_ids", [])] == GPU_DEVICE_IDS[name]


def test_only_model_servers_reserve_gpus(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if name not in GPU_DEVICE_IDS:
            assert "devices" not in json.dumps(service.get("deploy") or {}), name


def test_embeddings_serves_embeddings_and_rerank_under_v1(resolved: dict[str, Any]) -> None:
    args = _command(resolved["services"]["embeddings"])
    models = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--model-id"]
    assert len(models) == 2, "an embedding model and a cross-encoder reranker"
    assert _option(args, "--url-prefix") == "/v1"
    api_env = _env(resolved["services"]["api"])
    assert api_env["EMBEDDING_MODEL"] == models[0]
    assert api_env["EMBEDDING_BASE_URL"].endswith(f":{_option(args, '--port')}/v1")
    # the reranked method calls the cross-encoder the same server holds
    for name in ("api", "dagster-code"):
        env = _env(resolved["services"][name])
        assert urlsplit(env["RERANK_BASE_URL"]).hostname == "embeddings", name
        assert env["RERANK_BASE_URL"].endswith(f":{_option(args, '--port')}/v1"), name
        assert env["RERANK_MODEL"] == models[1], name


def test_llm_serves_the_configured_model_name(resolved: dict[str, Any]) -> None:
    args = _command(resolved["services"]["llm"])
    api_env = _env(resolved["services"]["api"])
    assert _option(args, "--alias") == api_env["LLM_MODEL"]
    assert (_option(args, "--model", "-m") or "").startswith("/models/")
    assert api_env["LLM_BASE_URL"].endswith(f":{_option(args, '--port')}/v1")


# --- Dagster ----------------------------------------------------------------------------


def test_code_server_serves_the_definitions_module(compose: dict[str, Any]) -> None:
    args = _command(compose["services"]["dagster-code"])
    assert args[:3] == ["dagster", "code-server", "start"]
    assert _option(args, "-m", "--module-name") == "varagity_assets.definitions"
    assert _option(args, "-h", "--host") == "0.0.0.0"
    assert _option(args, "-p", "--port") == "4000"


def test_workspace_points_at_the_code_server(compose: dict[str, Any]) -> None:
    workspace = yaml.safe_load(WORKSPACE_FILE.read_text(encoding="utf-8"))
    (entry,) = workspace["load_from"]
    grpc = entry["grpc_server"]
    code_args = _command(compose["services"][grpc["host"]])
    assert "code-server" in code_args
    assert str(grpc["port"]) == _option(code_args, "-p", "--port")


@pytest.mark.parametrize("name", ["dagster-webserver", "dagster-daemon"])
def test_dagster_processes_use_the_compose_workspace(compose: dict[str, Any], name: str) -> None:
    workspace = _option(_command(compose["services"][name]), "-w", "--workspace")
    assert workspace == "/app/deploy/workspace.compose.yaml"
    assert WORKSPACE_FILE.relative_to(ROOT).as_posix() in DOCKERFILE.read_text(encoding="utf-8")


def _instance_env_vars(node: Any) -> Iterator[str]:
    """Names of the environment variables a Dagster config reads (`{env: NAME}` values)."""
    if isinstance(node, dict):
        if set(node) == {"env"} and isinstance(node["env"], str):
            yield node["env"]
        for value in node.values():
            yield from _instance_env_vars(value)
    elif isinstance(node, list):
        for value in node:
            yield from _instance_env_vars(value)


@pytest.mark.parametrize("name", ["dagster-code", "dagster-webserver", "dagster-daemon"])
def test_dagster_instance_env_vars_are_set(resolved: dict[str, Any], name: str) -> None:
    """Dagster refuses to start when dagster.yaml reads an unset variable."""
    instance = yaml.safe_load(DAGSTER_YAML.read_text(encoding="utf-8"))
    env = _env(resolved["services"][name])
    missing = sorted(var for var in _instance_env_vars(instance) if not env.get(var))
    assert not missing, f"{name} does not set {missing}, which dagster_home/dagster.yaml reads"
    assert env.get("DAGSTER_HOME")


@pytest.mark.parametrize("name", PROJECT_SERVICES)
def test_command_executables_are_installed(compose: dict[str, Any], name: str) -> None:
    """The console scripts the commands run come with the project's dependencies."""
    executable = _command(compose["services"][name])[0]
    assert (Path(sys.executable).parent / executable).exists(), executable


@pytest.mark.parametrize(("where", "module"), sorted(set(_referenced_modules())))
def test_referenced_modules_exist(where: str, module: str) -> None:
    path = _module_file(module)
    assert path.is_file(), f"{where} runs {module}, but {path.relative_to(ROOT)} does not exist"


# --- Dockerfile and .dockerignore -----------------------------------------------------------


def test_dockerfile_builds_a_cpu_python_311_image_as_non_root() -> None:
    instructions = _dockerfile_instructions()
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert "python:3.11-slim" in text
    assert "torch==2.13.0" in text
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text
    users = [args for keyword, args in instructions if keyword == "USER"]
    assert users and users[-1] not in ("root", "0"), "the image must run as a non-root user"
    (cmd,) = [args for keyword, args in instructions if keyword == "CMD"]
    assert json.loads(cmd)[0] == "uvicorn"


@pytest.mark.parametrize("path", BUILD_INPUTS)
def test_dockerignore_keeps_build_inputs(path: str) -> None:
    assert not _dockerignored(path), f".dockerignore leaves {path} out of the build context"


@pytest.mark.parametrize(
    "path",
    [
        ".venv",
        ".git",
        "corpus/a.pdf",
        "graph-docs/chat.db",
        "docs/models.md",
        "models/x.gguf",
        ".env",
    ],
)
def test_dockerignore_drops_local_state(path: str) -> None:
    assert _dockerignored(path)


def test_dockerfile_copies_only_existing_repository_files() -> None:
    for path in ("dagster_home/dagster.yaml", "deploy/workspace.compose.yaml"):
        assert path in DOCKERFILE.read_text(encoding="utf-8")
        assert (ROOT / path).is_file(), f"the image build copies {path}, which does not exist"


# --- Prometheus -----------------------------------------------------------------------------


def test_prometheus_scrapes_api_metrics(compose: dict[str, Any]) -> None:
    services = compose["services"]
    mounts = {m["target"]: m for m in _mounts(services["prometheus"])}
    config_mount = mounts["/etc/prometheus/prometheus.yml"]
    assert (ROOT / config_mount["source"]).resolve() == PROMETHEUS_FILE

    config = yaml.safe_load(PROMETHEUS_FILE.read_text(encoding="utf-8"))
    api_port = _option(_command(services["api"]), "--port")
    scraped = set()
    for job in config["scrape_configs"]:
        path = job.get("metrics_path", "/metrics")
        for static in job.get("static_configs", []):
            for target in static["targets"]:
                host, _, port = target.partition(":")
                assert host in services or host == "localhost", f"unknown target {target}"
                scraped.add((host, port, path))
    assert ("api", api_port, "/metrics") in scraped


def test_prometheus_loads_the_alert_rules(compose: dict[str, Any]) -> None:
    mounts = {m["target"]: m for m in _mounts(compose["services"]["prometheus"])}
    config = yaml.safe_load(PROMETHEUS_FILE.read_text(encoding="utf-8"))
    for rule_file in config["rule_files"]:
        assert (ROOT / mounts[rule_file]["source"]).resolve() == ALERTS_FILE
        assert mounts[rule_file].get("read_only")


# --- Grafana --------------------------------------------------------------------------------


def test_grafana_provisions_the_datasource_and_the_dashboards(resolved: dict[str, Any]) -> None:
    grafana = resolved["services"]["grafana"]
    mounts = {m["target"]: m for m in _mounts(grafana)}
    provisioning = ROOT / mounts["/etc/grafana/provisioning"]["source"]
    assert provisioning.resolve() == (GRAFANA_DIR / "provisioning").resolve()
    (datasource,) = yaml.safe_load(
        (provisioning / "datasources" / "prometheus.yaml").read_text(encoding="utf-8")
    )["datasources"]
    url = urlsplit(datasource["url"])
    prometheus_port = _option(_command(resolved["services"]["prometheus"]), "--web.listen-address")
    assert url.hostname == "prometheus" and str(url.port) == (prometheus_port or ":9090")[-4:]
    (provider,) = yaml.safe_load(
        (provisioning / "dashboards" / "varagity.yaml").read_text(encoding="utf-8")
    )["providers"]
    dashboards = mounts[provider["options"]["path"]]
    assert (ROOT / dashboards["source"]).resolve() == (GRAFANA_DIR / "dashboards").resolve()
    files = sorted(p.name for p in (GRAFANA_DIR / "dashboards").glob("*.json"))
    assert files == ["infra.json", "ingestion.json", "query.json"]
    for name in files:
        for panel in json.loads((GRAFANA_DIR / "dashboards" / name).read_text())["panels"]:
            for target in panel.get("targets", []):
                assert target["datasource"]["uid"] == datasource["uid"], (name, panel["title"])
    home = _env(grafana)["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home.startswith(provider["options"]["path"] + "/")


# --- the command line in the stack ---------------------------------------------------------


def test_the_app_service_runs_the_command_line_with_the_stack_s_settings(
    compose: dict[str, Any], resolved: dict[str, Any]
) -> None:
    """`docker compose run --rm app varagity ...`: the project image, the `varagity`
    console script, every setting and folder the API has (so a command sees the same
    stores, model servers, Dagster and corpora), the services it calls started first,
    and never started by `docker compose up` nor restarted."""
    app, api = compose["services"]["app"], compose["services"]["api"]
    assert app["profiles"] == [ONE_OFF_SERVICES["app"]]
    assert _command(app)[0] == "varagity"
    assert app["restart"] == "no" and app.get("init") is True
    assert app["image"] == api["image"] and not app.get("ports")
    assert _env(app) == _env(api), "the command line must run with the API's settings"
    assert _mounts(app) == _mounts(api), "the command line must see the API's folders"
    env = _env(resolved["services"]["app"])
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, **{k: v for k, v in env.items() if k in Settings.model_fields}
    )
    assert settings.DATABASE_URL and urlsplit(settings.DATABASE_URL).hostname == "postgres"
    assert urlsplit(settings.dagster_url).hostname == "dagster-ui" and settings.API_KEY
    called = {urlsplit(value).hostname for value in env.values() if "://" in value} - {None}
    deps = _depends_on(app)
    assert called <= set(deps), f"the command line calls {sorted(called - set(deps))} unstarted"
    assert all(spec["condition"] == "service_healthy" for spec in deps.values())


def _readme_app_commands() -> list[list[str]]:
    """The `docker compose run --rm app varagity ...` commands README.md shows."""
    text = README.read_text(encoding="utf-8")
    prefix = "docker compose run --rm app varagity "
    return [
        shlex.split(line.strip()[len(prefix) :])
        for line in text.splitlines()
        if line.strip().startswith(prefix)
    ]


def test_the_readme_shows_the_most_used_commands_and_each_parses() -> None:
    from varagity_cli.main import build_parser

    commands = _readme_app_commands()
    assert {args[0] for args in commands} >= {"ask", "eval", "backup"}, commands
    parser = build_parser()
    for args in commands:
        parsed = parser.parse_args(args)  # exits (SystemExit) on an unknown command or option
        assert callable(parsed.func), args
    scaling = README.read_text(encoding="utf-8").split("## Scaling out", 1)[1].split("\n## ")[0]
    assert "docker compose run --rm app varagity" in scaling


# --- every service the README names is used ------------------------------------------------

# what README.md's compose paragraph calls each service
README_NAMES = {
    "Postgres + pgvector": "postgres",
    "Elasticsearch": "elasticsearch",
    "llama.cpp server": "llm",
    "infinity embedding/rerank server": "embeddings",
    "Dagster gRPC code server": "dagster-code",
    "webserver": "dagster-webserver",
    "daemon": "dagster-daemon",
    "Dagster UI's guarded front": "dagster-ui",
    "the API": "api",
    "Prometheus": "prometheus",
    "Grafana": "grafana",
}


def _readme_compose_paragraph() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("`compose.yaml` is the production stack")
    return " ".join(text[start : text.index("\n\n", start)].split())


def _users(resolved: dict[str, Any]) -> dict[str, set[str]]:
    """Service -> what uses it: other services' settings that point at it, Prometheus's
    scrape targets, Grafana's datasource, the Dagster workspace, a published port."""
    services = resolved["services"]
    users: dict[str, set[str]] = {name: set() for name in services}
    for name, service in services.items():
        for key, value in _env(service).items():
            host = urlsplit(value).hostname if "://" in value else None
            if host in users and host != name:
                users[host].add(f"{name} {key}")
        if service.get("ports"):
            users[name].add("a published port")
        for arg in _command(service):
            host = urlsplit(arg).hostname if "://" in arg else None
            if host in users and host != name:
                users[host].add(f"{name} command")
    for job in yaml.safe_load(PROMETHEUS_FILE.read_text(encoding="utf-8"))["scrape_configs"]:
        for static in job.get("static_configs", []):
            for target in static["targets"]:
                host = target.partition(":")[0]
                if host in users:
                    users[host].add(f"prometheus job {job['job_name']}")
    datasources = GRAFANA_DIR / "provisioning" / "datasources" / "prometheus.yaml"
    for source in yaml.safe_load(datasources.read_text(encoding="utf-8"))["datasources"]:
        users[urlsplit(source["url"]).hostname or ""].add("grafana datasource")
    for entry in yaml.safe_load(WORKSPACE_FILE.read_text(encoding="utf-8"))["load_from"]:
        users[entry["grpc_server"]["host"]].add("the dagster workspace")
    return users


def test_every_service_the_readme_names_is_wired_to_what_uses_it(
    resolved: dict[str, Any],
) -> None:
    paragraph = _readme_compose_paragraph()
    users = _users(resolved)
    for readme_name, service in README_NAMES.items():
        assert readme_name in paragraph, f"README no longer names {readme_name}"
        assert service in resolved["services"], service
        if service == "dagster-daemon":
            # nothing calls the daemon: it is the worker that ticks the workspace's
            # sensors and dequeues its runs, so it must load that workspace
            args = _command(resolved["services"][service])
            assert _option(args, "-w", "--workspace") == "/app/deploy/workspace.compose.yaml"
            continue
        assert users[service], f"{service} ({readme_name}) is started but nothing uses it"
    # the embeddings server holds the reranker too: both clients point at it
    assert {"api EMBEDDING_BASE_URL", "api RERANK_BASE_URL"} <= users["embeddings"]
    assert {"dagster-code EMBEDDING_BASE_URL", "dagster-code RERANK_BASE_URL"} <= users[
        "embeddings"
    ]
    assert "grafana datasource" in users["prometheus"]
    assert "prometheus job varagity-api" in users["api"]


def test_the_dagster_ui_is_published_only_through_its_guarded_front(
    resolved: dict[str, Any],
) -> None:
    services = resolved["services"]
    assert not services["dagster-webserver"].get("ports"), "the webserver has no guard"
    front = services["dagster-ui"]
    args = _command(front)
    assert args[:3] == ["python", "-m", "varagity_stack.dagster_front"]
    assert _option(args, "--upstream") == "http://dagster-webserver:3000"
    assert _option(args, "--port") == "3000" and front["ports"]
    for name in PROJECT_SERVICES:
        env = _env(services[name])
        assert urlsplit(env["DAGSTER_URL"]).hostname == "dagster-ui", name
        assert "dagster-ui" in env["ALLOWED_HOSTS"].split(","), name
    assert "dagster-ui" in _depends_on(services["api"])
