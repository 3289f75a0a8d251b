"""docker-compose.yml and the Dockerfile, checked without a Docker engine: `docker compose config` resolves the file."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess

import pytest
import yaml
from conftest import PROJECT

#: Packages scripts/setup.sh installs for development only: the image needs the rest.
DEVELOPMENT_ONLY = {"mariadb-server", "redis-server", "redis-tools", "docker-compose", "chromium", "chromium-driver"}
#: The secrets scripts/compose-secrets.sh writes to .env, as the tests give them.
SECRETS = {
    "MARIADB_ROOT_PASSWORD": "root-secret",
    "MARIADB_CRAWLER_PASSWORD": "crawler-secret",
    "REDIS_PASSWORD": "redis-secret",
    "SCRAPYD_PASSWORD": "scrapyd-secret",
}
#: What .env and the environment may set; the tests start from none of them (a developer's .env is not read).
VARIABLES = {"JOB", "HARVESTERS", "MARIADB_DATABASE", "MARIADB_CRAWLER_USER", "SCRAPYD_USERNAME", *SECRETS}


def compose_command() -> list[str]:
    """Docker's compose plugin when the docker client has it, else Debian's docker-compose (scripts/setup.sh)."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    found = shutil.which("docker-compose")
    assert found, "neither `docker compose` nor `docker-compose` is installed: run scripts/setup.sh"
    return [found]


def compose_config(tmp_path_factory, **variables: str) -> subprocess.CompletedProcess:
    """``compose config`` with only these variables set (an empty --env-file stands in for .env)."""
    env_file = tmp_path_factory.mktemp("compose") / "empty.env"
    env_file.write_text("")
    env = {key: value for key, value in os.environ.items() if key not in VARIABLES}
    return subprocess.run(
        [*compose_command(), "--env-file", str(env_file), "-f", str(PROJECT / "docker-compose.yml"), "config"],
        cwd=PROJECT, capture_output=True, text=True, timeout=60, env={**env, **variables},
    )


def resolved(tmp_path_factory, **variables: str) -> dict:
    """The compose file as compose resolves it, with the secrets and these variables in the environment."""
    result = compose_config(tmp_path_factory, **SECRETS, **variables)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def short(entry) -> str:
    """A volume or port in the short syntax, whichever syntax this compose prints (v1 short, v2 long)."""
    if isinstance(entry, str):
        return entry
    if "target" in entry and "source" in entry:
        return f"{entry['source']}:{entry['target']}"
    return f"{entry.get('host_ip', '')}:{entry['published']}:{entry['target']}"


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> dict:
    return resolved(tmp_path_factory)


def test_compose_runs_the_servers_harvesters_and_scrapyd_with_health_checks(config):
    services = config["services"]
    assert set(services) == {"redis", "mariadb", "harvester", "scrapyd"}
    for name, service in services.items():
        assert service["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL"), name
    assert set(config["volumes"]) == {"redis-data", "mariadb-data", "harvest-data", "scrapyd-data"}
    for name in ("harvester", "scrapyd"):
        service = services[name]
        assert service["build"]["context"] == str(PROJECT)
        assert {dependency: d["condition"] for dependency, d in service["depends_on"].items()} == {
            "redis": "service_healthy", "mariadb": "service_healthy",
        }
        assert service["environment"]["REDIS_URL"] == "redis://:redis-secret@redis:6379/0"
        assert service["environment"]["MYSQL_URL"] == "mysql://crawler:crawler-secret@mariadb:3306/combine"
        assert any(short(volume).startswith("harvest-data:/data") for volume in service["volumes"])
    assert short(services["scrapyd"]["ports"][0]).startswith("127.0.0.1:6800:6800")


def test_harvesters_crawl_the_job_with_the_shared_backends(config):
    harvester = config["services"]["harvester"]
    assert harvester["deploy"]["replicas"] == 2
    shell, flag, script = harvester["command"]
    words = shlex.split(script.replace("$$", "$"))
    assert (shell, flag, words[:4]) == ("sh", "-c", ["exec", "scrapy", "crawl", "focused"])
    settings = {words[i + 1] for i, word in enumerate(words) if word == "-s"}
    assert settings == {"REDIS_URL=$REDIS_URL", "MYSQL_URL=$MYSQL_URL", "COMBINE_DATA_DIR=/data"}
    assert "job=glass" in words and harvester["stop_signal"] == "SIGTERM"


def test_the_job_the_number_of_harvesters_and_the_database_are_variables(tmp_path_factory):
    config = resolved(tmp_path_factory, JOB="demo", HARVESTERS="5", MARIADB_DATABASE="crawls")
    harvester = config["services"]["harvester"]
    assert harvester["deploy"]["replicas"] == 5
    assert "-a job=demo " in harvester["command"][2]
    assert harvester["environment"]["MYSQL_URL"] == "mysql://crawler:crawler-secret@mariadb:3306/crawls"
    assert config["services"]["mariadb"]["environment"]["MARIADB_DATABASE"] == "crawls"


def test_compose_refuses_to_start_without_a_secret_or_with_an_empty_one(tmp_path_factory):
    text = (PROJECT / "docker-compose.yml").read_text()
    for name in SECRETS:  # every use of a secret is ${NAME:?...}: compose stops when it is unset or empty
        uses = re.findall(rf"\$\{{{name}(\W.)?", text)
        assert uses and all(use == ":?" for use in uses), name
    result = compose_config(tmp_path_factory, **{**SECRETS, "REDIS_PASSWORD": ""})
    assert result.returncode != 0
    assert "run scripts/compose-secrets.sh" in result.stderr


def test_every_server_asks_for_a_password_and_none_is_empty(config):
    services = config["services"]
    mariadb = services["mariadb"]["environment"]
    assert mariadb["MARIADB_ROOT_PASSWORD"] == "root-secret"
    assert not any(name.startswith("MARIADB_ALLOW_EMPTY") or name == "MARIADB_RANDOM_ROOT_PASSWORD" for name in mariadb)
    assert (mariadb["MARIADB_CRAWLER_USER"], mariadb["MARIADB_CRAWLER_PASSWORD"]) == ("crawler", "crawler-secret")
    redis = services["redis"]
    assert redis["command"][-2:] == ["--requirepass", "redis-secret"]
    assert redis["environment"]["REDISCLI_AUTH"] == "redis-secret"  # the health check authenticates
    scrapyd = services["scrapyd"]["environment"]
    assert (scrapyd["SCRAPYD_USERNAME"], scrapyd["SCRAPYD_PASSWORD"]) == ("combine", "scrapyd-secret")
    assert "SCRAPYD_PASSWORD" in " ".join(services["scrapyd"]["healthcheck"]["test"])
    for name, service in services.items():
        for key, value in service.get("environment", {}).items():
            assert value not in ("", None), f"{name}: {key} is empty"
            assert ":@" not in str(value) and "root@" not in str(value), f"{name}: {key} = {value}"
        for port in service.get("ports", []):
            assert short(port).startswith("127.0.0.1:"), f"{name} is published beyond loopback: {port}"


def test_the_crawler_database_user_has_rights_on_the_crawl_database_only():
    script = (PROJECT / "docker" / "mariadb-init" / "crawler-user.sh").read_text()
    grant = re.search(r"GRANT (.*) ON (\S+) TO", script)
    privileges = {word.strip() for word in grant.group(1).split(",")}
    assert privileges == {"SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "ALTER", "INDEX", "REFERENCES"}
    assert grant.group(2) == "\\`${MARIADB_DATABASE}\\`.*"
    assert "ALL" not in privileges and "GRANT OPTION" not in script


def test_the_secrets_script_writes_a_private_env_file_with_every_variable(tmp_path):
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    script = project / "scripts" / "compose-secrets.sh"
    script.write_bytes((PROJECT / "scripts" / "compose-secrets.sh").read_bytes())
    subprocess.run(["bash", str(script)], check=True, capture_output=True, timeout=30)
    env_file = project / ".env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    values = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if line and not line.startswith("#"))
    example = (PROJECT / ".env.example").read_text()
    assert set(values) == {line.split("=", 1)[0] for line in example.splitlines() if "=" in line and not line.startswith("#")}
    for name in SECRETS:
        assert re.fullmatch(r"[0-9a-f]{32}", values[name]), name
    assert len({values[name] for name in SECRETS}) == len(SECRETS)
    first = env_file.read_text()
    subprocess.run(["bash", str(script)], check=True, capture_output=True, timeout=30)
    assert env_file.read_text() == first  # an existing .env is kept: the volumes already use its secrets
    assert ".env" in (PROJECT / ".gitignore").read_text().splitlines()


def test_the_image_has_every_system_package_the_crawler_uses():
    setup = (PROJECT / "scripts" / "setup.sh").read_text()
    block = re.search(r"SYSTEM_PACKAGES=\((.*?)\n\)", setup, re.S).group(1)
    wanted = {word for line in block.splitlines() for word in line.split("#")[0].split()} - DEVELOPMENT_ONLY
    dockerfile = (PROJECT / "Dockerfile").read_text()
    in_image = set(re.search(r'ARG SYSTEM_PACKAGES="([^"]*)"', dockerfile).group(1).split())
    assert wanted <= in_image, f"add to the Dockerfile's SYSTEM_PACKAGES: {sorted(wanted - in_image)}"
    assert "COPY requirements.txt" in dockerfile and "pip install --no-cache-dir -r requirements.txt" in dockerfile


def test_the_image_installs_the_crawl_packages_and_not_the_test_tools():
    dockerfile = (PROJECT / "Dockerfile").read_text()
    installs = re.findall(r"pip install [^\n]*", dockerfile)
    assert installs == ["pip install --no-cache-dir -r requirements.txt"]
    test_lines = (PROJECT / "requirements-test.txt").read_text().splitlines()
    runtime = {line.split("==")[0] for line in (PROJECT / "requirements.txt").read_text().splitlines() if "==" in line}
    test_only = {line.split("==")[0] for line in test_lines if "==" in line}
    assert "-r requirements.txt" in test_lines
    assert {"pytest", "selenium", "sickle"} <= test_only and not test_only & runtime
