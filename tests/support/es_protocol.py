"""A recorder of the Elasticsearch wire protocol: a tiny ``http.server`` in a thread that
records the official client's requests and answers with Elasticsearch-shaped JSON (see
:class:`ESProtocolRecorder`; not an Elasticsearch)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class RecordedRequest:
    """One HTTP request as the client sent it."""

    method: str
    path: str
    params: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def ndjson(self) -> list[Any]:
        return [json.loads(line) for line in self.body.decode().splitlines() if line.strip()]


@dataclass
class ESProtocolRecorder:
    """Records the official client's HTTP requests and answers with canned ES-shaped JSON.

    NOT an Elasticsearch: documents are kept in a dict so the answers are plausible, but
    ``_search`` returns every stored document with made-up scores, and ``delete_by_query``
    understands only the ``terms`` (on ``doc_id``), ``ids`` and ``bool`` (those two,
    filter and must_not) queries the store sends.
    Knobs let tests inject failures.
    """

    requests: list[RecordedRequest] = field(default_factory=list)
    indices: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    health_status: str = "green"
    create_race: bool = False  # PUT index answers resource_already_exists_exception
    reject_bulk_items: bool = False
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ESProtocolRecorder:
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _dispatch(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                request = RecordedRequest(
                    method=self.command,
                    path=parts.path,
                    params=parse_qs(parts.query),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                recorder.requests.append(request)
                status, payload = recorder.answer(request)
                data = b"" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("X-Elastic-Product", "Elasticsearch")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _dispatch

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def calls(self, method: str | None = None, suffix: str | None = None) -> list[RecordedRequest]:
        return [
            r
            for r in self.requests
            if (method is None or r.method == method)
            and (suffix is None or r.path.endswith(suffix))
        ]

    # -- canned answers ------------------------------------------------------------------

    def answer(self, req: RecordedRequest) -> tuple[int, Any]:
        segments = [s for s in req.path.split("/") if s]
        if segments == ["_cluster", "health"]:
            return 200, {"cluster_name": "protocol-recorder", "status": self.health_status}
        if segments and segments[-1] == "_bulk":
            return self._bulk(req)
        if len(segments) == 1:
            name = segments[0]
            if req.method == "HEAD":
                return (200 if name in self.indices else 404), None
            if req.method == "PUT":
                if self.create_race or name in self.indices:
                    self.indices.setdefault(name, {})
                    return 400, {
                        "error": {
                            "type": "resource_already_exists_exception",
                            "reason": f"index [{name}] already exists",
                        },
                        "status": 400,
                    }
                self.indices[name] = {}
                return 200, {"acknowledged": True, "shards_acknowledged": True, "index": name}
            if req.method == "DELETE":
                self.indices.pop(name, None)
                return 200, {"acknowledged": True}
        if len(segments) == 2:
            name, action = segments
            docs = self.indices.get(name)
            if docs is None:
                return 404, {"error": {"type": "index_not_found_exception"}, "status": 404}
            if action == "_count":
                return 200, {"count": len(docs)}
            if action == "_search":
                size = req.json().get("size", 10) if req.body else 10
                size = int(req.params.get("size", [size])[0])
                hits = [
                    {"_index": name, "_id": _id, "_score": 10.0 - i, "_source": source}
                    for i, (_id, source) in enumerate(list(docs.items())[:size])
                ]
                return 200, {
                    "took": 1,
                    "timed_out": False,
                    "hits": {"total": {"value": len(hits), "relation": "eq"}, "hits": hits},
                }
            if action == "_delete_by_query":
                query = req.json()["query"]
                if "ids" in query:
                    doomed = [i for i in query["ids"]["values"] if i in docs]
                elif "bool" in query:  # doc_id in the terms, _id not in the kept ids
                    (terms,) = query["bool"]["filter"]
                    (kept,) = query["bool"]["must_not"]
                    wanted = set(terms["terms"]["doc_id"])
                    keep = set(kept["ids"]["values"])
                    doomed = [
                        i for i, s in docs.items() if s.get("doc_id") in wanted and i not in keep
                    ]
                else:
                    wanted = set(query["terms"]["doc_id"])
                    doomed = [i for i, s in docs.items() if s.get("doc_id") in wanted]
                for _id in doomed:
                    del docs[_id]
                return 200, {"deleted": len(doomed), "failures": [], "timed_out": False}
        return 404, {"error": {"type": "unhandled_by_recorder", "reason": req.path}}

    def _bulk(self, req: RecordedRequest) -> tuple[int, Any]:
        lines = req.ndjson()
        items = []
        errors = False
        for action, source in zip(lines[::2], lines[1::2], strict=True):
            meta = action["index"]
            if self.reject_bulk_items:
                errors = True
                items.append(
                    {
                        "index": {
                            "_index": meta["_index"],
                            "_id": meta["_id"],
                            "status": 400,
                            "error": {"type": "document_parsing_exception", "reason": "nope"},
                        }
                    }
                )
                continue
            self.indices.setdefault(meta["_index"], {})[meta["_id"]] = source
            items.append({"index": {"_index": meta["_index"], "_id": meta["_id"], "status": 201}})
        return 200, {"took": 1, "errors": errors, "items": items}
