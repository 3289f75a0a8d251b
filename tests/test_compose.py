"""docker-compose.yml and the Dockerfile, checked without a Docker engine: `docker compose config` resolves the file."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess

import pytest
import yaml

from conftest import PROJECT

#: Packages scripts/setup.sh installs for development only: the image needs the rest.
DEVELOPMENT_ONLY = {"mariadb-server", "redis-server", "docker-compose"}


def compose_command() -> list[str]:
    """Docker's compose plugin when the docker client has it, else Debian's docker-compose (scripts/setup.sh)."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    found = shutil.which("docker-compose")
    assert found, "neither `docker compose` nor `docker-compose` is installed: run scripts/setup.sh"
    return [found]


def resolved(**variables: str) -> dict:
    """The compose file as compose resolves it, with these variables in the environment."""
    env = {key: value for key, value in os.environ.items() if key not in ("JOB", "HARVESTERS", "MARIADB_DATABASE")}
    result = subprocess.run(
        [*compose_command(), "-f", str(PROJECT / "docker-compose.yml"), "config"],
        cwd=PROJECT, capture_output=True, text=True, timeout=60, env={**env, **variables},
    )
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
def config() -> dict:
    return resolved()


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
        assert service["environment"]["REDIS_URL"] == "redis://redis:6379/0"
        assert service["environment"]["MYSQL_URL"] == "mysql://root@mariadb:3306/combine"
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


def test_the_job_the_number_of_harvesters_and_the_database_are_variables():
    config = resolved(JOB="demo", HARVESTERS="5", MARIADB_DATABASE="crawls")
    harvester = config["services"]["harvester"]
    assert harvester["deploy"]["replicas"] == 5
    assert "-a job=demo " in harvester["command"][2]
    assert harvester["environment"]["MYSQL_URL"] == "mysql://root@mariadb:3306/crawls"
    assert config["services"]["mariadb"]["environment"]["MARIADB_DATABASE"] == "crawls"


def test_the_image_has_every_system_package_the_crawler_uses():
    setup = (PROJECT / "scripts" / "setup.sh").read_text()
    block = re.search(r"SYSTEM_PACKAGES=\((.*?)\n\)", setup, re.S).group(1)
    wanted = {word for line in block.splitlines() for word in line.split("#")[0].split()} - DEVELOPMENT_ONLY
    dockerfile = (PROJECT / "Dockerfile").read_text()
    in_image = set(re.search(r'ARG SYSTEM_PACKAGES="([^"]*)"', dockerfile).group(1).split())
    assert wanted <= in_image, f"add to the Dockerfile's SYSTEM_PACKAGES: {sorted(wanted - in_image)}"
    assert "COPY requirements.txt" in dockerfile and "pip install --no-cache-dir -r requirements.txt" in dockerfile
