"""`azd up`: azure.yaml is valid against azd's published schema (vendored in tests/schemas/), infra/ is wired the way
azd reads it (main.parameters.json's ${VAR} substitutions, the azd-service-name tag, the outputs azure.yaml names),
and the package azd publishes (the folder less .funcignore) is a Function App that imports and lists its functions."""

from __future__ import annotations

import fnmatch
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT201909

from tests.repo_files import repo_files
from tests.security.outbound_guard import Guard, guard_fixture  # noqa: F401 (the guard fixture)

ROOT = Path(__file__).resolve().parent.parent
INFRA = ROOT / "infra"
SCHEMA = ROOT / "tests" / "schemas" / "azd-azure.yaml.v1.0.json"
MAIN = (INFRA / "main.bicep").read_text()
PARAMETERS_TEXT = (INFRA / "main.parameters.json").read_text()
AZD_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:=([^}]*))?\}")


def azure_yaml() -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "azure.yaml").read_text())
    assert isinstance(doc, dict)
    return doc


def schema_errors(doc: Any, reached: list[str] | None = None) -> list[str]:
    """The schema's errors for ``doc``. Its few ``$ref``s to other published schemas (the AI hosts' extensions,
    not vendored) are never fetched: each one reached is recorded in ``reached`` and read as accepting anything."""
    reached = [] if reached is None else reached

    def retrieve(uri: str) -> Resource[Any]:
        reached.append(uri)
        return Resource.from_contents({}, default_specification=DRAFT201909)

    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft201909Validator(schema, registry=Registry(retrieve=retrieve))
    return sorted(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc))


# -- azure.yaml against azd's schema ---------------------------------------------------------------------------------


def test_the_vendored_schema_is_the_published_file_named_in_its_readme() -> None:
    note = (SCHEMA.parent / "README.md").read_text()
    recorded = re.search(r"sha256: ([0-9a-f]{64})", note)
    assert recorded, "tests/schemas/README.md records no sha256"
    assert hashlib.sha256(SCHEMA.read_bytes()).hexdigest() == recorded.group(1)
    assert re.search(r"commit: [0-9a-f]{40}", note)
    assert "github.com/Azure/azure-dev" in note
    assert "schemas/v1.0/azure.yaml.json" in note
    assert json.loads(SCHEMA.read_text())["$id"].endswith("/schemas/v1.0/azure.yaml.json")


def test_azure_yaml_is_valid_against_azds_schema(guard: Guard) -> None:
    reached: list[str] = []
    assert schema_errors(azure_yaml(), reached) == []
    assert reached == []  # no part of the schema that is not vendored decided anything
    assert guard.refused == []  # nothing was fetched


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda d: d.update(name="Doc_Extract"), "name"),
        (lambda d: d.update(services={}), "services"),
        (lambda d: d["services"]["api"].pop("host"), "services/api"),
        (lambda d: d["services"]["api"].update(remoteBuild="yes"), "services/api/remoteBuild"),
        (lambda d: d["infra"].update(provider="Bicep!"), "infra/provider"),
    ],
    ids=["bad-name", "no-services", "service-without-host", "remote-build-not-boolean", "bad-provider"],
)
def test_the_schema_check_refuses_a_broken_azure_yaml(change: Any, where: str, guard: Guard) -> None:
    doc = azure_yaml()
    change(doc)
    errors = schema_errors(doc)
    assert any(e.startswith(f"{where}:") for e in errors), errors
    assert guard.refused == []


def test_azure_yaml_deploys_the_api_as_a_python_function_app_from_infra_main() -> None:
    doc = azure_yaml()
    assert doc["infra"] == {"provider": "bicep", "path": "infra", "module": "main"}
    assert (ROOT / doc["infra"]["path"] / f"{doc['infra']['module']}.bicep").is_file()
    assert (ROOT / doc["infra"]["path"] / f"{doc['infra']['module']}.parameters.json").is_file()
    api = doc["services"]["api"]
    assert {k: v for k, v in api.items() if k != "hooks"} == {"project": ".", "language": "python", "host": "function"}
    assert set(api["hooks"]) == {"prepackage"}  # the package's bytecode (see the test below)
    orchestration = doc["services"]["orchestration"]
    assert orchestration["host"] == "function"
    assert orchestration["language"] == "python"
    assert orchestration["project"] == "."
    # The orchestration service names its app through an output main.bicep writes into the azd environment.
    named = AZD_VARIABLE.fullmatch(orchestration["resourceName"])
    assert named, orchestration["resourceName"]
    assert named.group(1) in bicep_outputs()


# -- infra/ as azd reads it ------------------------------------------------------------------------------------------


def bicep_outputs() -> set[str]:
    return set(re.findall(r"^output (\w+) ", MAIN, re.M))


def bicep_params() -> dict[str, str]:
    return dict(re.findall(r"^param (\w+) (\w+)", MAIN, re.M))


def allowed_values(param: str) -> list[str]:
    m = re.search(r"@allowed\(\[([^\]]*)\]\)\nparam " + param + r" ", MAIN)
    assert m, f"{param} has no @allowed list"
    return re.findall(r"'([^']*)'", m.group(1))


def substitute(text: str, env: dict[str, str]) -> str:
    """azd's substitution in a parameters file: ${VAR} is VAR's value or empty, ${VAR=default} the default if unset."""
    return AZD_VARIABLE.sub(lambda m: env.get(m.group(1), m.group(2) or ""), text)


AZD_ENV = {"AZURE_ENV_NAME": "docxdev", "AZURE_LOCATION": "westeurope", "AZURE_PRINCIPAL_ID": "0000-user-object-id"}
AZD_SETS = {*AZD_ENV, "AZURE_PRINCIPAL_TYPE", "AZURE_RESOURCE_GROUP"}  # variables azd itself keeps in the environment


def test_main_parameters_read_the_azd_environment() -> None:
    raw = json.loads(PARAMETERS_TEXT)["parameters"]
    assert raw["environmentName"]["value"] == "${AZURE_ENV_NAME}"
    assert raw["location"]["value"] == "${AZURE_LOCATION}"
    assert raw["principalId"]["value"] == "${AZURE_PRINCIPAL_ID}"
    params = json.loads(substitute(PARAMETERS_TEXT, AZD_ENV))["parameters"]
    assert params["environmentName"]["value"] == "docxdev"
    assert params["location"]["value"] == "westeurope"
    assert params["principalId"]["value"] == "0000-user-object-id"
    assert params["principalType"]["value"] in allowed_values("principalType")
    declared = bicep_params()
    for name, entry in params.items():  # every value has its parameter's type once substituted
        kind = {"string": str, "int": int, "bool": bool, "object": dict, "array": list}[declared[name]]
        assert isinstance(entry["value"], kind), name


@pytest.mark.parametrize("mode", ["single", "split"])
def test_both_deployment_modes_come_from_the_azd_environment(mode: str) -> None:
    env = {**AZD_ENV, "DEPLOYMENT_MODE": mode} if mode != "single" else AZD_ENV  # single is the default
    params = json.loads(substitute(PARAMETERS_TEXT, env))["parameters"]
    assert params["deploymentMode"]["value"] == mode
    assert mode in allowed_values("deploymentMode")


def test_the_name_prefix_defaults_to_the_azd_environment_name() -> None:
    assert re.search(r"^param namePrefix string = take\(toLower\(environmentName\), 12\)$", MAIN, re.M)
    assert "namePrefix" not in json.loads(PARAMETERS_TEXT)["parameters"]  # az deployment users pass their own


def _module_block(name: str) -> str:
    m = re.search(r"^module " + name + r" .*?^\}", MAIN, re.M | re.S)
    assert m, f"main.bicep has no module {name}"
    return m.group(0)


def test_exactly_one_app_per_mode_carries_the_api_service_tag() -> None:
    assert re.search(r"^var apiTags = union\(allTags, \{ 'azd-service-name': 'api' \}\)$", MAIN, re.M)
    assert re.search(r"^var allTags = union\(tags, empty\(environmentName\) \? \{\} : \{ 'azd-env-name'", MAIN, re.M)
    assert "if (deploymentMode == 'single')" in _module_block("singleApp")
    assert "tags: apiTags" in _module_block("singleApp")
    assert "if (deploymentMode == 'split')" in _module_block("extractorApp")
    assert "tags: apiTags" in _module_block("extractorApp")
    assert "tags: allTags" in _module_block("orchestrationApp")
    assert MAIN.count("tags: apiTags") == 2


def test_the_outputs_are_named_as_azd_and_the_readme_read_them() -> None:
    outputs = bicep_outputs()
    assert {
        "AZURE_LOCATION",
        "AZURE_TENANT_ID",
        "AZURE_RESOURCE_GROUP",
        "AZURE_KEY_VAULT_NAME",
        "AZURE_STORAGE_ACCOUNT_NAME",
        "AZURE_FUNCTION_APP_NAME",
        "AZURE_ORCHESTRATION_APP_NAME",
        "EXTRACTOR_URL",
    } <= outputs
    assert all(re.fullmatch(r"[A-Z][A-Z0-9_]*", o) for o in outputs), outputs
    assert "AZURE_CLIENT_ID" not in outputs  # a local credential would take the app identity's id as its own
    readme = (ROOT / "README.md").read_text()
    for used in set(re.findall(r"\$\{?(AZURE_[A-Z_]+|EXTRACTOR_URL)\b", readme)) - AZD_SETS:
        assert used in outputs, f"README uses {used}, which main.bicep does not output"


def test_the_readme_names_every_azd_variable_and_output() -> None:
    readme = (ROOT / "README.md").read_text()
    named = set(re.findall(r"`\$\{?([A-Z][A-Z0-9_]*)", readme)) | set(re.findall(r"`([A-Z][A-Z0-9_]*)`", readme))
    variables = {m.group(1) for m in AZD_VARIABLE.finditer(PARAMETERS_TEXT)}
    assert variables - named == set(), "main.parameters.json reads variables the README does not name"
    assert bicep_outputs() - named == set(), "main.bicep has outputs the README does not name"


def test_the_deploying_user_gets_data_plane_roles_only_when_named() -> None:
    block = _module_block("userRoles")
    assert "if (!empty(principalId))" in block
    assert "principalId: principalId" in block
    roles = (INFRA / "modules" / "user-roles.bicep").read_text()
    assert "b86a8fe4-44ce-4948-aee5-eccb2c155cd7" in roles  # Key Vault Secrets Officer: the secrets step
    assert "ba92f5b4-2d11-453d-a403-e96b0029c9fe" in roles  # Storage Blob Data Contributor: files in, results out
    assert roles.count("principalType: principalType") == roles.count("Microsoft.Authorization/roleAssignments@")


# -- the package azd publishes --------------------------------------------------------------------------------------


def funcignored(relative: Path, patterns: list[str]) -> bool:
    """.funcignore's patterns as used here (no negations, no slashes): a pattern matches any path component."""
    return any(fnmatch.fnmatch(part, p) for part in relative.parts for p in patterns)


def funcignore_patterns() -> list[str]:
    lines = (ROOT / ".funcignore").read_text().splitlines()
    patterns = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]
    assert all("/" not in p and not p.startswith("!") for p in patterns), "funcignored() handles only plain patterns"
    return patterns


def tracked_files() -> list[Path]:
    return [Path(p) for p in repo_files()]


PACKAGE_CODE = ("function_app.py", "extract_fn", "shared", "submit_fn", "poll_fn")  # what the app imports


def published_package(tmp_path: Path) -> tuple[Path, list[Path]]:
    """The tracked files .funcignore leaves, copied as azd packages them; the folder and the files kept."""
    patterns = funcignore_patterns()
    package = tmp_path / "package"
    kept = [p for p in tracked_files() if not funcignored(p, patterns)]
    for rel in kept:
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, package / rel)
    return package, kept


def test_the_published_package_is_the_app_and_nothing_else(tmp_path: Path) -> None:
    package, kept = published_package(tmp_path)
    tops = {p.parts[0] for p in kept}
    assert tops == {"host.json", "requirements.txt", "pyproject.toml", *PACKAGE_CODE}
    probe = (
        "import function_app, orjson\n"
        "from shared.version import package_version\n"
        "app = function_app.build_app({'EXTRACTOR_TOKENS': 't'})\n"
        "print(orjson.dumps({'functions': sorted(f.get_function_name() for f in app.get_functions()),"
        " 'version': package_version()}).decode())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"EXTRACTOR_TOKENS": "t"}
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=package, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EXTRACTOR_TOKENS", "t")
        import function_app

        expected = sorted(
            f.get_function_name() for f in function_app.build_app({"EXTRACTOR_TOKENS": "t"}).get_functions()
        )
    assert got["functions"] == expected
    assert "http_app_func" in got["functions"]
    from shared.version import package_version

    assert got["version"] == package_version()


def test_the_package_carries_hash_checked_bytecode_the_app_imports_from(tmp_path: Path) -> None:
    """Both services' prepackage hook (one anchor) compiles exactly the package's code; what it writes is
    hash-checked bytecode for every module, kept by .funcignore, and the app imports from it without compiling."""
    services = azure_yaml()["services"]
    hooks = [services[name]["hooks"]["prepackage"] for name in ("api", "orchestration")]
    assert hooks[0] == hooks[1]
    posix, windows = hooks[0]["posix"], hooks[0]["windows"]
    assert (posix["shell"], windows["shell"]) == ("sh", "pwsh")
    command = posix["run"].split()
    assert command[:2] == ["python3", "-m"]
    assert windows["run"].split()[1:] == command[1:]
    assert command[2:7] == ["compileall", "-q", "-f", "--invalidation-mode", "checked-hash"]
    assert tuple(command[7:]) == PACKAGE_CODE
    package, _ = published_package(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # python3: the suite's
    subprocess.run(["sh", "-c", posix["run"]], cwd=package, env=env, check=True, timeout=300)
    patterns = funcignore_patterns()
    sources = [p for p in package.rglob("*.py") if p.relative_to(package).parts[0] in PACKAGE_CODE]
    assert len(sources) > 50
    for source in sources:
        compiled = Path(importlib.util.cache_from_source(str(source)))
        assert compiled.is_file(), source
        assert not funcignored(compiled.relative_to(package), patterns)
        flags = int.from_bytes(compiled.read_bytes()[4:8], "little")
        assert flags == 0b11, (source, flags)  # hash-based, checked against the source
    probe = "import function_app; function_app.build_app({'EXTRACTOR_TOKENS': 't'})"
    run_env = env | {"EXTRACTOR_TOKENS": "t", "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, "-v", "-c", probe],
        cwd=package,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    from_source = [ln for ln in proc.stderr.splitlines() if ln.startswith(f"# code object from {package}")]
    from_bytecode = [ln for ln in proc.stderr.splitlines() if ln.startswith(f"# {package}") and " matches " in ln]
    assert from_source == []
    assert len(from_bytecode) > 30
