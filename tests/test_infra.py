"""The Bicep in infra/: it parses, passes Checkov's Bicep checks (each skip with a reason), and provides every
setting and connection the code reads."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pycep import BicepParser

ROOT = Path(__file__).resolve().parent.parent
INFRA = ROOT / "infra"
BICEP_FILES = sorted(INFRA.rglob("*.bicep"))
CHECKOV = ROOT / ".venv-infra" / "bin" / "checkov"


def test_infra_has_main_and_modules() -> None:
    names = {p.relative_to(INFRA).as_posix() for p in BICEP_FILES}
    assert "main.bicep" in names
    assert {
        "modules/storage.bicep",
        "modules/eventhubs.bicep",
        "modules/functionapp.bicep",
        "modules/roles.bicep",
        "modules/keyvault.bicep",
        "modules/monitoring.bicep",
        "modules/identity.bicep",
    } <= names


@pytest.mark.parametrize("path", BICEP_FILES, ids=lambda p: p.relative_to(INFRA).as_posix())
def test_bicep_parses(path: Path) -> None:
    tree = BicepParser().parse(file_path=path)
    assert tree  # a parse error raises


def test_parameters_file_names_only_declared_parameters() -> None:
    params = json.loads((INFRA / "main.parameters.json").read_text())["parameters"]
    declared = set(re.findall(r"^param (\w+)", (INFRA / "main.bicep").read_text(), re.M))
    assert set(params) <= declared
    required = set(re.findall(r"^param (\w+) \w+\s*$", (INFRA / "main.bicep").read_text(), re.M))
    assert required <= set(params), (
        f"parameters without a default missing from main.parameters.json: {required - set(params)}"
    )


def test_checkov_bicep_checks_pass() -> None:
    assert CHECKOV.exists(), "run 'make setup' to install checkov into .venv-infra"
    proc = subprocess.run(
        [str(CHECKOV), "-d", str(INFRA), "--framework", "bicep", "-o", "json", "--quiet", "--skip-download"],
        capture_output=True,
        text=True,
        timeout=600,
        env={"BC_SKIP_MAPPING": "TRUE", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    report = json.loads(proc.stdout)
    report = report[0] if isinstance(report, list) else report
    summary = report["summary"]
    failed = [f"{c['check_id']} {c['resource']} ({c['file_path']})" for c in report["results"]["failed_checks"]]
    assert summary["parsing_errors"] == 0, "checkov could not parse a .bicep file (its pycep is older: no lambdas)"
    assert failed == []
    assert summary["passed"] > 20


def test_every_checkov_skip_names_a_reason() -> None:
    for path in BICEP_FILES:
        for line in path.read_text().splitlines():
            if "checkov:skip=" in line:
                m = re.search(r"checkov:skip=(CKV2?_AZURE_\d+):\s*(\S.{10,})", line)
                assert m, f"{path.name}: a checkov skip without a one-line reason: {line.strip()}"


# -- settings and connections ----------------------------------------------------------------------------------------


def bicep_app_setting_names() -> set[str]:
    """Every app setting name main.bicep gives a Function App (keys of its settings objects)."""
    text = (INFRA / "main.bicep").read_text()
    names: set[str] = set()
    for block in re.findall(r"^var \w+ = \{\n(.*?)^\}", text, re.M | re.S):
        names |= set(re.findall(r"^\s+'?([A-Za-z][\w.]*)'?:", block, re.M))
    for block in re.findall(r"union\([^{]*\{\n(.*?)\}\)", text, re.S):
        names |= set(re.findall(r"^\s+'?([A-Za-z][\w.]*)'?:", block, re.M))
    return names


def import_function_app() -> Any:
    """function_app builds its app from os.environ at import, as the Functions host expects."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EXTRACTOR_TOKENS", "test-token")
        import function_app
    return function_app


def code_setting_names() -> set[str]:
    """Every setting the code reads: the settings modules' names (each module is the one place a name is spelled)."""
    import extract_fn.settings as extractor_settings
    import shared.loom.settings as loom_settings
    import shared.orchestration.settings as orchestration_settings

    names = {v for k, v in vars(extractor_settings).items() if k.startswith("ENV_")}
    names |= set(loom_settings.SETTING_NAMES)
    names |= {
        v
        for k, v in vars(orchestration_settings).items()
        if k.isupper() and isinstance(v, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", v)
    }
    names.add(import_function_app().ROLES_SETTING)
    return names


def documented_settings() -> set[str]:
    docs = (ROOT / "README.md").read_text() + "".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    names: set[str] = set()
    for first_cell in re.findall(r"^\|([^|\n]*)\|", docs, re.M):  # a settings table names them in its first column
        names |= set(re.findall(r"`([A-Za-z][\w.]*)`", first_cell))
    return names


def test_bicep_settings_are_found() -> None:
    names = bicep_app_setting_names()
    assert {"EXTRACTOR_TOKENS", "AzureWebJobsStorage__credential", "DataStorage__queueServiceUri"} <= names


def test_every_setting_the_code_reads_is_deployed_or_documented() -> None:
    deployed, documented = bicep_app_setting_names(), documented_settings()
    # Identity-based connections are deployed as their __ parts; the plain name is the local connection string.
    deployed |= {n.split("__", 1)[0] for n in deployed if "__" in n}
    missing = sorted(n for n in code_setting_names() if n not in deployed and n not in documented)
    assert missing == [], f"settings neither set by infra/main.bicep nor documented in the README: {missing}"


def test_every_code_setting_is_documented() -> None:
    undocumented = sorted(code_setting_names() - documented_settings())
    assert undocumented == [], f"settings missing from the README's settings tables: {undocumented}"


def test_every_binding_names_a_connection_and_setting_the_bicep_provides() -> None:
    function_app = import_function_app()
    app = function_app.build_app({"EXTRACTOR_TOKENS": "t"})
    deployed = bicep_app_setting_names()
    seen_connections = set()
    for fn in app.get_functions():
        for binding in fn.get_bindings():
            data = binding.get_dict_repr()
            conn = data.get("connection")
            if conn:
                seen_connections.add(conn)
                parts = {n for n in deployed if n.startswith(conn + "__")}
                assert conn in deployed or parts, f"{fn.get_function_name()}: connection {conn} is not deployed"
                if binding.type == "eventHubTrigger":
                    assert f"{conn}__fullyQualifiedNamespace" in deployed
                if binding.type == "queueTrigger":
                    assert f"{conn}__queueServiceUri" in deployed
            for value in data.values():
                for expr in re.findall(r"%(\w+)%", str(value)):
                    assert expr in deployed, f"{fn.get_function_name()}: binding expression %{expr}% is not deployed"
    assert {"EventHubConnection", "DataStorage"} <= seen_connections


def binding_expressions() -> set[str]:
    """Every NAME of a ``%NAME%`` binding expression in the app's functions."""
    app = import_function_app().build_app({"EXTRACTOR_TOKENS": "t"})
    names: set[str] = set()
    for fn in app.get_functions():
        for binding in fn.get_bindings():
            for value in binding.get_dict_repr().values():
                names |= set(re.findall(r"%(\w+)%", str(value)))
    return names


def bicep_app_setting_values() -> dict[str, str]:
    """App setting name -> its value in main.bicep where that is a literal, or a var or param with a literal default."""
    text = (INFRA / "main.bicep").read_text()
    literals: dict[str, str] = {}
    for var, param, value in re.findall(r"^(?:var (\w+)|param (\w+) \w+) = '([^']*)'$", text, re.M):
        literals[var or param] = value
    values: dict[str, str] = {}
    for name, raw in re.findall(r"^\s+'?([A-Za-z][\w.]*)'?: (\S.*)$", text, re.M):
        expr = raw.strip()
        if expr.startswith("'") and expr.endswith("'"):
            values[name] = expr[1:-1]
        elif expr in literals:
            values[name] = literals[expr]
    return values


def test_every_binding_expression_is_declared_deployed_and_local() -> None:
    from devhost.config import local_environment
    from shared.orchestration.settings import BINDING_SETTINGS

    declared = {decl.name: decl.default for decl in BINDING_SETTINGS}
    used = binding_expressions()
    assert {"POLL_QUEUE", "CANCEL_QUEUE", "SWEEPER_SCHEDULE", "ACCEPTED_FILES_HUB"} <= used
    assert used == set(declared), "binding expressions and the binding=True declarations differ"
    deployed = bicep_app_setting_values()
    local = json.loads((ROOT / "local.settings.example.json").read_text())["Values"]
    devhost = local_environment()
    for name, default in declared.items():
        assert deployed.get(name) == default, f"infra/main.bicep: {name} is not the declared default {default!r}"
        assert name in local, f"local.settings.example.json has no {name}"
        assert devhost.get(name) == default, f"the devhost's environment has no {name}"


def test_the_poll_and_cancel_triggers_listen_where_the_handlers_enqueue() -> None:
    """The trigger names the setting the orchestration enqueues to, so a changed name moves both."""
    from shared.orchestration.settings import CANCEL_QUEUE, POLL_QUEUE, OrchestrationSettings

    app = import_function_app().build_app({"EXTRACTOR_TOKENS": "t"})
    queues = {
        fn.get_function_name(): fn.get_trigger().get_dict_repr().get("queueName")
        for fn in app.get_functions()
        if fn.get_trigger().get_dict_repr()["type"] == "queueTrigger"
    }
    assert queues == {"poll_job": f"%{POLL_QUEUE}%", "cancel_job_queue": f"%{CANCEL_QUEUE}%"}
    s = OrchestrationSettings.from_env({"DataStorage": "UseDevelopmentStorage=true", POLL_QUEUE: "poll-elsewhere"})
    assert s.poll_queue == "poll-elsewhere"


def test_split_mode_disables_exactly_the_other_roles_functions() -> None:
    function_app = import_function_app()
    text = (INFRA / "main.bicep").read_text()
    disabled = set(re.findall(r"'AzureWebJobs\.(\w+)\.Disabled'", text))
    app = function_app.build_app({"EXTRACTOR_TOKENS": "t"})
    assert disabled == {fn.get_function_name() for fn in app.get_functions()}
    orchestration = function_app.build_app({"APP_ROLES": "orchestration"})
    assert "http_app_func" not in {fn.get_function_name() for fn in orchestration.get_functions()}
