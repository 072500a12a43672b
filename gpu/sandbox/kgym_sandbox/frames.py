"""The sandbox's frames, built and read through the schema (messages/kgym.proto, generated as
kgym_pb2 by the build): what the zygote, the judge and the builder tell the executor is a
SandboxEvent, what they are told a SandboxCommand, both in proto3's JSON mapping, one a line.
A field or an enum name the schema lacks fails here, in kgym's own process, as kgym's error,
instead of reaching the executor as a malformed frame (which it must rule HACKED)."""
import json
import os
import sys

from google.protobuf import json_format

from . import protocol

# Where the build put kgym_pb2: the executor says (KGYM_SCHEMA_PYTHON); scripts run from a
# checkout find it in its build/.
_SCHEMA_DIR = os.environ.get("KGYM_SCHEMA_PYTHON") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "build", "python")
if _SCHEMA_DIR not in sys.path:
    sys.path.append(_SCHEMA_DIR)
import kgym_pb2  # noqa: E402


class MalformedFrame(ValueError):
    """A frame the schema refuses."""


def phase_value(name: str) -> str:
    """The EvalPhase a judge's phase name stands for ("load" -> "PHASE_LOAD", kgym.proto)."""
    return "PHASE_" + name.upper()


def mode_value(mode: str) -> str:
    """The ForwardMode a module's mode stands for ("train" -> "MODE_TRAIN", kgym.proto)."""
    return "MODE_" + mode.upper()


def event(**what) -> dict:
    """One SandboxEvent (`ready=...`, `phase=...`, `result=...`, ...) as its JSON mapping,
    checked against the schema (field names exact, enums by their schema names)."""
    try:
        message = json_format.ParseDict(what, kgym_pb2.SandboxEvent())
    except json_format.ParseError as exc:
        raise MalformedFrame(f"the schema refuses a SandboxEvent: {exc}") from None
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def write_event(fd: int, **what) -> None:
    protocol.write_frame(fd, event(**what))


def phase_event(name: str) -> dict:
    return event(phase={"name": phase_value(name)})


def result_event(result: dict) -> dict:
    """The judge's one result; a result the schema refuses becomes kgym's INTERNAL_ERROR (it is
    the judge's own doing: the candidate cannot reach what the judge writes)."""
    try:
        return event(result=result)
    except MalformedFrame as exc:
        kept = {k: result[k] for k in ("request_id", "task_id", "candidate_id") if k in result}
        return event(result={**kept, "verdict": "INTERNAL_ERROR", "failed_phase": phase_value("harness"),
                             "message": f"the judge built a result {exc}"[:2000]})


def command(line: bytes) -> dict:
    """A SandboxCommand line from the executor, checked against the schema, as its JSON mapping."""
    found = json.loads(line)  # the text parsed once; the schema checks the result
    try:
        json_format.ParseDict(found, kgym_pb2.SandboxCommand())
    except json_format.ParseError as exc:
        raise MalformedFrame(f"the schema refuses a SandboxCommand: {exc}") from None
    return found
