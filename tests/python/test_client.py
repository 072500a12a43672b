"""The Python client (deploy/client/kgym_client.py) against a real `kgym serve` on loopback:
one evaluation, a batch, a refusal raised as KgymError, withdrawn requests answered CANCELLED,
and answers that reach the client across a restart of the server without a re-send."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "deploy", "client"))

from kgym_client import KgymClient, KgymError  # noqa: E402

KGYM = os.environ.get("KGYM_BINARY", os.path.join(ROOT, "build", "kgym"))


def candidate(task: str, name: str) -> str:
    with open(os.path.join(ROOT, "tasks", task, "candidates", name + ".py")) as f:
        return f.read()


class ClientAgainstServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.endpoint_file = tempfile.mktemp(prefix="kgym-client-endpoint-")
        cls.server = subprocess.Popen([KGYM, "serve", "--api", "tcp://127.0.0.1:*", "--endpoint-file",
                                       cls.endpoint_file, "--executors", "2"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(300):
            if os.path.exists(cls.endpoint_file) and open(cls.endpoint_file).read().strip():
                break
            time.sleep(0.1)
        cls.client = KgymClient(open(cls.endpoint_file).read().strip(), timeout_s=240)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait(timeout=60)
        os.remove(cls.endpoint_file)

    def test_one_evaluation(self):
        result = self.client.evaluate("gelu_scale_residual", candidate("gelu_scale_residual", "fused"),
                                      options={"correctness_trials": 2})
        self.assertEqual(result["result"]["verdict"], "OK")
        self.assertAlmostEqual(result["result"]["profile"]["coverage"], 1.0)

    def test_a_batch(self):
        answers = self.client.evaluate_many([("softmax_rows", candidate("softmax_rows", name))
                                             for name in ("fused", "wrong", "cheat")])
        verdicts = sorted(a["result"]["verdict"] for a in answers.values())
        self.assertEqual(verdicts, ["HACKED", "INCORRECT", "OK"])

    def test_a_withdrawn_request_is_answered_cancelled(self):
        endless = candidate("gelu_scale_residual", "fused") + "\n" + open(
            os.path.join(ROOT, "tests", "hostile", "infinite_loop.py")).read()
        ids = [self.client.submit("gelu_scale_residual", endless + f"\n# {n}") for n in range(3)]
        time.sleep(3)  # two of them in their loops (two executors), the third queued
        started = time.time()
        for request_id in ids:
            self.client.withdraw(request_id)
        verdicts = {}
        while len(verdicts) < len(ids):
            answer = self.client.receive()
            verdicts[answer["request_id"]] = answer["result"]["verdict"]
        self.assertEqual(verdicts, {i: "CANCELLED" for i in ids})
        self.assertLess(time.time() - started, 5.0)
        with self.assertRaisesRegex(KgymError, "nothing to withdraw"):
            self.client.withdraw("never-sent")
            self.client.receive()
        self.test_one_evaluation()  # the executors went on

    def test_a_refusal_is_an_error_that_says_why(self):
        with self.assertRaisesRegex(KgymError, "unknown task 'no_such_task'"):
            self.client.evaluate("no_such_task", "class ModelNew: pass")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(endpoint: str, state_dir: str, executors: int) -> subprocess.Popen:
    endpoint_file = os.path.join(state_dir + "-endpoint")
    if os.path.exists(endpoint_file):
        os.remove(endpoint_file)
    server = subprocess.Popen([KGYM, "serve", "--api", endpoint, "--endpoint-file", endpoint_file, "--executors",
                               str(executors), "--state-dir", state_dir],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        if os.path.exists(endpoint_file) and open(endpoint_file).read().strip():
            break
        time.sleep(0.1)
    os.remove(endpoint_file)
    return server


class AnswersAcrossARestart(unittest.TestCase):
    def test_a_restarted_server_answers_a_waiting_client_unasked(self):
        """Requests accepted by a server with no executors, which is then SIGKILLed; a new one
        on the same endpoint and state directory evaluates them and the client, which sends
        nothing more, gets every answer (its routing id is its own, ZeroMQ reconnects)."""
        state_dir = tempfile.mkdtemp(prefix="kgym-client-state-")
        endpoint = f"tcp://127.0.0.1:{free_port()}"
        first = start_server(endpoint, state_dir, executors=0)
        client = KgymClient(endpoint, timeout_s=120)
        expected = {client.submit("softmax_rows", candidate("softmax_rows", name), options={"correctness_trials": 2}):
                    verdict for name, verdict in (("fused", "OK"), ("wrong", "INCORRECT"), ("cheat", "HACKED"))}
        deadline = time.monotonic() + 30  # until the first server journaled all three
        while time.monotonic() < deadline:
            out = subprocess.run(["python3", "-c", "import sqlite3, sys; print(sqlite3.connect(sys.argv[1])"
                                  ".execute('select count(*) from requests').fetchone()[0])",
                                  os.path.join(state_dir, "journal.sqlite")], capture_output=True, text=True)
            if out.stdout.strip() == "3":
                break
            time.sleep(0.2)
        self.assertEqual(out.stdout.strip(), "3", out.stderr)
        first.send_signal(signal.SIGKILL)
        first.wait()
        second = start_server(endpoint, state_dir, executors=2)
        try:
            answers = {}
            while len(answers) < len(expected):
                answer = client.receive()
                answers[answer["request_id"]] = answer["result"]["verdict"]
            self.assertEqual(answers, expected)
        finally:
            second.terminate()
            second.wait(timeout=60)
            shutil.rmtree(state_dir)


if __name__ == "__main__":
    unittest.main()
