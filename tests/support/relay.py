"""A TCP relay to a real server that is "down" at first: the port drops every connection
until a few seconds after the first one was dropped, then relays to the server (a model
server the supervisor is restarting, as a client sees it)."""

from __future__ import annotations

import socket
import struct
import threading
from contextlib import suppress


class RestartingRelay:
    """Listens on ``port``; resets each connection until ``down_s`` seconds after the
    first reset, then relays connections to ``upstream`` (host, port) byte for byte."""

    def __init__(self, port: int, upstream: tuple[str, int], down_s: float) -> None:
        self.port = port
        self.upstream = upstream
        self.down_s = down_s
        self.resets = 0
        self._up = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", port))
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        """Stop accepting (relayed connections end with their peers)."""
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self._up.is_set():
                self.resets += 1
                if self.resets == 1:
                    threading.Timer(self.down_s, self._up.set).start()
                # SO_LINGER 0: close with a reset, as a port nobody listens on would
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()
                continue
            server = socket.create_connection(self.upstream)
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
