"""A small client of `kgym serve` for Python RL trainers (verl, OpenRLHF, ...): standard
library plus pyzmq. Frames are the JSON mapping of EvalRequest / EvalResult
(messages/kgym.proto), so no generated protobuf code is needed.

    client = KgymClient("tcp://127.0.0.1:5555")
    result = client.evaluate("softmax_rows", open("answer.py").read())
    reward = result["result"].get("speedup", 0.0) if result["result"]["verdict"] == "OK" else 0.0

`evaluate_many` submits a batch and waits for every answer (they come back in any order).
A client has a routing id of its own, so a `kgym serve --state-dir` that restarts while it
waits answers it anyway once the connection is back (ZeroMQ reconnects by itself): nothing
needs to be sent again.
"""
import json
import uuid

import zmq


class KgymError(RuntimeError):
    """The server refused the request; the message says what to fix."""


class KgymClient:
    def __init__(self, endpoint: str = "tcp://127.0.0.1:5555", secret: str = "", timeout_s: float = 900.0):
        self.secret = secret
        self.timeout_ms = int(timeout_s * 1000)
        self.socket = zmq.Context.instance().socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        # The server's journal keeps where each answer goes: a fixed routing id lets a restarted
        # server reach this client again after ZeroMQ's reconnect.
        self.socket.setsockopt(zmq.ROUTING_ID, b"kgym-client-" + uuid.uuid4().hex.encode())
        self.socket.connect(endpoint)

    def submit(self, task_id: str, candidate_source: str, request_id: str = "", options: dict = None,
               task: dict = None) -> str:
        """Sends one request and returns its id; a retry with the same id is answered once."""
        request = {"request_id": request_id or uuid.uuid4().hex, "task_id": task_id,
                   "candidate_source": candidate_source, "options": options or {}}
        if task:
            request["task"] = task
        if self.secret:
            request["secret"] = self.secret
        self.socket.send(json.dumps(request).encode())
        return request["request_id"]

    def withdraw(self, request_id: str) -> None:
        """Withdraws a request sent before: its answer comes CANCELLED (queued work dropped,
        running work stopped); if it was answered already or is unknown, receive() raises
        KgymError for it instead."""
        request = {"request_id": request_id, "withdraw": True}
        if self.secret:
            request["secret"] = self.secret
        self.socket.send(json.dumps(request).encode())

    def receive(self) -> dict:
        """The next answer (an EvalResult as a dict); raises KgymError for a refusal."""
        if not self.socket.poll(self.timeout_ms):
            raise TimeoutError(f"no answer from kgym serve within {self.timeout_ms / 1000:.0f} s")
        answer = json.loads(self.socket.recv())
        if answer.get("error"):
            raise KgymError(f"request {answer.get('request_id', '?')}: {answer['error']}")
        return answer

    def evaluate(self, task_id: str, candidate_source: str, **kwargs) -> dict:
        request_id = self.submit(task_id, candidate_source, **kwargs)
        while True:
            answer = self.receive()
            if answer.get("request_id") == request_id:
                return answer

    def evaluate_many(self, requests: list) -> dict:
        """requests: [(task_id, candidate_source), ...] -> {request_id: EvalResult}."""
        pending = {self.submit(task_id, source) for task_id, source in requests}
        answers = {}
        while pending:
            answer = self.receive()
            if answer["request_id"] in pending:  # a second answer (after a restart) changes nothing
                pending.discard(answer["request_id"])
                answers[answer["request_id"]] = answer
        return answers


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Evaluate one candidate with a running kgym serve.")
    parser.add_argument("--endpoint", default="tcp://127.0.0.1:5555")
    parser.add_argument("--secret", default="")
    parser.add_argument("task_id", help="a task of the server's suite, e.g. softmax_rows")
    parser.add_argument("candidate", help="a Python file defining ModelNew")
    args = parser.parse_args()
    with open(args.candidate) as f:
        result = KgymClient(args.endpoint, args.secret).evaluate(args.task_id, f.read())
    r = result["result"]
    print(r["verdict"], r.get("message", ""), f"speedup {r.get('speedup', 0):.3f}",
          f"coverage {r.get('profile', {}).get('coverage', 0):.2f}")
