"""`kgym serve` on a picked loopback port, for the benchmarks that send it requests through
the Python client: started, waited for, and stopped when the `with` block ends."""
import contextlib
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "deploy", "client"))

from kgym_client import KgymClient  # noqa: E402


@contextlib.contextmanager
def local_serve(kgym: str, args: list, workdir: str, env: dict = None):
    """Yields a KgymClient of `kgym serve ARGS` (its log: WORKDIR/serve.log); exits with the
    log's path if the server stops before it answers."""
    endpoint_file = os.path.join(workdir, "endpoint")
    log = os.path.join(workdir, "serve.log")
    server = subprocess.Popen([kgym, "serve", "--api", "tcp://127.0.0.1:*", "--endpoint-file", endpoint_file] + args,
                              env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    try:
        while not (os.path.exists(endpoint_file) and open(endpoint_file).read().strip()):
            if server.poll() is not None:
                sys.exit(f"kgym serve exited ({server.returncode}): see {log}")
            time.sleep(0.2)
        yield KgymClient(open(endpoint_file).read().strip(), timeout_s=1800)
    finally:
        server.terminate()
        server.wait(timeout=120)
