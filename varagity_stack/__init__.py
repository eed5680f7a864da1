"""Running the embedded stack: child-process supervision (``varagity up``), the local
model servers it starts, and the FastAPI app of the packaged embedding server.

Kept out of the domain library ``varagity`` because it starts processes and serves HTTP
(FastAPI, uvicorn); it imports ``varagity`` and nothing above it.
"""
