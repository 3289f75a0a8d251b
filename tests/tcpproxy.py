"""A TCP proxy on loopback in front of a server (the shared MariaDB), which a test cuts and restores: an outage
of that server as its clients see it, without stopping the server others use."""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    """Forwards connections to ``127.0.0.1:port`` to ``target``. ``cut()`` closes every connection and stops
    listening (a client's next attempt is refused, as by a server that is down); ``restore()`` listens again
    on the same port. ``stall()`` keeps every connection open but passes nothing more either way, nor answers
    new ones (a hung server, or a network that drops its packets); ``cut()`` ends a stall."""

    def __init__(self, target: tuple[str, int], host: str = "127.0.0.1"):
        self.target = target
        self.host = host
        self.port = 0
        self._listener: socket.socket | None = None
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()
        self._flowing = threading.Event()
        self._flowing.set()

    def __enter__(self) -> TcpProxy:
        self.restore()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cut()

    def restore(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stall(self) -> None:
        self._flowing.clear()

    def cut(self) -> None:
        self._flowing.set()   # a stalled pipe wakes, finds its sockets closed and ends
        with self._lock:
            listener, self._listener = self._listener, None
            connections, self._connections = self._connections, []
        if listener is not None:
            listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            connection.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # cut
                return
            self._flowing.wait()
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    client.close()
                    server.close()
                    return
                self._connections += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                self._flowing.wait()
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        source.close()  # the other direction's thread closes ``sink``, its source
