"""The Python client (deploy/client/kgym_client.py) against a real `kgym serve` on loopback:
one evaluation, a batch, and a refusal raised as KgymError."""
import os
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

    def test_a_refusal_is_an_error_that_says_why(self):
        with self.assertRaisesRegex(KgymError, "unknown task 'no_such_task'"):
            self.client.evaluate("no_such_task", "class ModelNew: pass")


if __name__ == "__main__":
    unittest.main()
