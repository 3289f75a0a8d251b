"""A real Redis Cluster of three masters on loopback, for the tests of the sharded frontier.

Three ``redis-server --cluster-enabled yes`` processes in a temporary
directory, joined by ``redis-cli --cluster create`` (both from the system's
redis-server and redis-tools packages, which scripts/setup.sh installs).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis
from redis.cluster import RedisCluster

MASTERS = 3


def _free_cluster_port() -> int:
    """A loopback port that is free, and whose cluster bus port (port + 10000) is free too."""
    while True:
        with socket.socket() as client:
            client.bind(("127.0.0.1", 0))
            port = client.getsockname()[1]
        if port + 10000 > 65535:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


def _text(reply) -> str:
    """CLUSTER INFO's reply as text, whichever way the client parsed it."""
    if isinstance(reply, dict):
        return "\n".join(f"{key}:{value}" for key, value in reply.items())
    return reply.decode() if isinstance(reply, bytes) else str(reply)


class LocalCluster:
    """Start with ``with LocalCluster(directory) as cluster:``; ``cluster.url`` is a startup node."""

    def __init__(self, directory: Path, masters: int = MASTERS):
        self.directory = Path(directory)
        self.ports: list[int] = []
        self.processes: list[subprocess.Popen] = []
        self.masters = masters

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}"

    def client(self) -> RedisCluster:
        return RedisCluster.from_url(self.url)

    def __enter__(self) -> LocalCluster:
        for missing in ("redis-server", "redis-cli"):
            if shutil.which(missing) is None:
                raise RuntimeError(f"{missing} not found: install redis-server and redis-tools (scripts/setup.sh)")
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        for _ in range(self.masters):
            port = _free_cluster_port()
            node = self.directory / str(port)
            node.mkdir(parents=True)
            self.ports.append(port)
            self.processes.append(subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                 "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000", "--save", "",
                 "--appendonly", "no", "--dir", str(node)],
                stdout=(node / "redis.log").open("w"), stderr=subprocess.STDOUT,
            ))
        for port in self.ports:
            self._wait(lambda port=port: redis.Redis(port=port).ping(), f"redis-server on port {port}")
        subprocess.run(
            ["redis-cli", "--cluster", "create", *(f"127.0.0.1:{port}" for port in self.ports), "--cluster-yes"],
            check=True, capture_output=True, timeout=30,
        )
        for port in self.ports:
            self._wait(lambda port=port: "cluster_state:ok" in _text(redis.Redis(port=port).execute_command("CLUSTER", "INFO")),
                       f"cluster_state:ok on port {port}")

    @staticmethod
    def _wait(condition, what: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except redis.ConnectionError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"timed out after {timeout} s waiting for {what}")

    def node_keys(self) -> dict[int, int]:
        """How many keys each master holds, by port."""
        return {port: redis.Redis(port=port).dbsize() for port in self.ports}

    def __exit__(self, *exc) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


if __name__ == "__main__":
    # A cluster for benchmarks (bench.contention --cluster): started in a temporary directory, stopped by Ctrl-C.
    import signal
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as directory, LocalCluster(Path(directory)) as started:
        print(started.url, flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
