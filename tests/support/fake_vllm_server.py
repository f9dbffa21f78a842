"""A stand-in for ``trl vllm-serve`` in tests: an HTTP server that answers ``GET /health``.

Options make it misbehave the ways a real server does: come up late, never come up, crash
after a while, and spawn a worker child (vLLM's engine core) that teardown must also reach.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the http.server API)
        if self.path.rstrip("/") == "/health":
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"{}")
        else:
            self.send_response(404)
            self.end_headers()

    def log_message(self, *args) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--startup-delay", type=float, default=0.0)
    parser.add_argument("--crash-after", type=float, default=None, help="exit 3 after this many seconds up")
    parser.add_argument(
        "--fail-at-start", action="store_true", help="print an error and exit 1 before serving"
    )
    parser.add_argument("--child-pid-file", default=None, help="spawn a child process and write its pid here")
    args = parser.parse_args()
    print("fake vllm-serve starting", flush=True)
    if args.fail_at_start:
        print("ValueError: CUDA out of memory while loading the model", flush=True)
        sys.exit(1)
    if args.child_pid_file:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(args.child_pid_file, "w") as handle:
            handle.write(str(child.pid))
    time.sleep(args.startup_delay)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Health)
    if args.crash_after is not None:

        def crash() -> None:
            time.sleep(args.crash_after)
            print("engine core died unexpectedly", flush=True)
            import os

            os._exit(3)

        threading.Thread(target=crash, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
