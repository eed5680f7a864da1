"""A TCP relay to a real server that is "down" at first, then relays to it byte for byte
(a model server the supervisor is restarting, or one still loading its model, as a
client sees it). While down it either resets every connection, as a port nobody
listens on would, or answers every HTTP request ``503 Service Unavailable``, as a
server that is up but cannot serve yet (or a proxy in front of a dead one) would."""

from __future__ import annotations

import json
import socket
import struct
import threading
from contextlib import suppress
from http import HTTPStatus


class RestartingRelay:
    """Listens on ``port``; until ``down_s`` seconds after the first connection it met
    while down, resets each connection (``answer=None``) or answers its request with
    HTTP ``answer`` (503, say); then relays connections to ``upstream`` (host, port)."""

    def __init__(
        self, port: int, upstream: tuple[str, int], down_s: float, answer: int | None = None
    ) -> None:
        self.port = port
        self.upstream = upstream
        self.down_s = down_s
        self.answer = answer
        self.resets = 0  # connections turned away while down
        self.relayed = 0  # connections relayed once up
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
                if self.answer is None:
                    # SO_LINGER 0: close with a reset, as a port nobody listens on would
                    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    client.close()
                else:
                    threading.Thread(target=self._refuse, args=(client,), daemon=True).start()
                continue
            self.relayed += 1
            server = socket.create_connection(self.upstream)
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _refuse(self, client: socket.socket) -> None:
        """Read one HTTP request and answer it with ``self.answer``, closing after it."""
        with suppress(OSError), client:
            data = b""
            while b"\r\n\r\n" not in data:
                more = client.recv(65536)
                if not more:
                    return
                data += more
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(body) < length:
                more = client.recv(65536)
                if not more:
                    break
                body += more
            payload = json.dumps(
                {"error": {"message": "model is loading", "type": "unavailable", "code": None}}
            ).encode()
            client.sendall(
                f"HTTP/1.1 {self.answer} {HTTPStatus(self.answer).phrase}\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + payload
            )

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
