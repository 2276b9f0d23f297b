"""The operator commands of `kraft`, all through a node's HTTP admin API.

    kraft topics list|describe NAME|create NAME [--partitions N] [--replication-factor R]
                 [--config K=V ...]|delete NAME|alter NAME [--set K=V ...] [--delete K ...]
                 [--partitions N]
    kraft brokers [remove ID] | kraft quorum | kraft partitions describe TOPIC [PARTITION]
    kraft elect preferred|unclean TOPIC:PARTITION ...
    kraft recover TOPIC:PARTITION [--leader BROKER]
    kraft reassign list|start TOPIC:PARTITION=B1,B2,... [...] [--throttle BYTES]
                   |cancel TOPIC:PARTITION
    kraft rebalance [--execute] [--throttle BYTES] | kraft events
    kraft acls list|add|delete [--resource-type T] [--resource-name N] [--pattern-type P]
               [--principal User:NAME] [--host H] [--operation OP] [--permission ALLOW|DENY]
    kraft users list|add NAME [--mechanism M] [--password P] [--iterations N]
                |delete NAME [--mechanism M]

`rebalance` is a dry run unless `--execute`, which starts the moves and waits until no
reassignment remains and the preferred leaders lead; `brokers remove` drains the broker, waits
until it holds no replica and unregisters it (its node, if running, then stops). Both show their
progress on stderr and give up after `--timeout` seconds (exit 1; the moves go on).

Every command takes `--admin URL` / `--admin-url URL` (http:// or https://; default
http://127.0.0.1:9292, or `KRAFT_ADMIN_URL`), `--cafile PEM` (or `KRAFT_ADMIN_CAFILE`) for an
https listener signed by a private CA, credentials: `--token` (or `KRAFT_ADMIN_TOKEN`, the
node's `admin.token`) or `--user NAME` (or `KRAFT_ADMIN_USER`) with the password from
`KRAFT_ADMIN_PASSWORD`, `--password` / `--admin-password`, or a prompt (HTTP Basic, https
only: a password is never sent to an http:// URL), and `--json` for the API's JSON as it is.
Exit status: 0 done; 1 the API refused or failed (its error on stderr, with what to do about a
401 or 403); 2 a bad command line; 3 the admin API could not be reached (TLS failures included).
"""

from __future__ import annotations

import argparse
import base64
import getpass
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_ADMIN_URL = "http://127.0.0.1:9292"
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3


class AdminError(Exception):
    """The admin API answered with an error, or could not be reached (`status` 0), or a wait
    gave up (`status` -1)."""

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(f"{error}: {message}" if status <= 0 else f"{status} {error}: {message}")
        self.status = status


@dataclass(frozen=True, slots=True)
class AdminApi:
    """A thin JSON client of one node's admin API: with `token` it sends `Bearer`, with `user`
    and `password` HTTP Basic (https only); `cafile` is the CA that signed an https admin
    listener's certificate (default: the system's)."""

    url: str
    token: str | None = None
    timeout_s: float = 30.0
    user: str | None = None
    password: str | None = None
    cafile: str | None = None

    def __post_init__(self) -> None:
        if self.user is not None and not self.url.lower().startswith("https://"):
            raise ValueError(
                f"refusing to send {self.user}'s password to {self.url} in clear: --user needs "
                "an https:// admin URL (or use --token)"
            )

    def _authorization(self) -> str | None:
        if self.token:
            return f"Bearer {self.token}"
        if self.user is not None:
            pair = f"{self.user}:{self.password or ''}".encode()
            return "Basic " + base64.b64encode(pair).decode()
        return None

    def call(self, method: str, path: str, body: object | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url.rstrip('/')}{path}", data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        authorization = self._authorization()
        if authorization is not None:
            request.add_header("Authorization", authorization)
        context = (
            ssl.create_default_context(cafile=self.cafile)
            if self.url.lower().startswith("https://")
            else None
        )
        try:
            with urllib.request.urlopen(
                request, timeout=self.timeout_s, context=context
            ) as response:
                payload = response.read()
        except urllib.error.HTTPError as error:
            try:
                answer = json.loads(error.read())
                message = answer["message"] + _HINTS.get(error.code, "")
                raise AdminError(error.code, answer["error"], message) from None
            except (ValueError, KeyError, TypeError):
                raise AdminError(error.code, "http_error", str(error.reason)) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, ssl.SSLError):
                raise AdminError(
                    0,
                    "tls_failed",
                    f"{self.url}: {reason}; pass --cafile with the CA that signed the admin "
                    "listener's certificate",
                ) from None
            raise AdminError(0, "unreachable", f"{self.url}: {reason}") from None
        return json.loads(payload) if payload else None


# What to do about an authentication (401) or authorization (403) refusal.
_HINTS = {
    401: " (authenticate: --user NAME with KRAFT_ADMIN_PASSWORD or --password, over https; "
    "or --token)",
    403: " (an operator grants it with `kraft acls add`)",
}


# -- rendering --------------------------------------------------------------------------------


def table(rows: Sequence[Sequence[object]], headings: Sequence[str]) -> str:
    """Columns padded to their widest cell; lists shown comma-separated."""

    def cell(value: object) -> str:
        if isinstance(value, list):
            return ",".join(str(item) for item in value)
        return "-" if value is None else str(value)

    cells = [list(headings), *[[cell(value) for value in row] for row in rows]]
    widths = [max(len(row[column]) for row in cells) for column in range(len(headings))]
    return "\n".join(
        "  ".join(value.ljust(width) for value, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


def _partition_rows(topic: str, partitions: Sequence[dict[str, Any]]) -> list[list[object]]:
    return [
        [
            topic,
            p["partition"],
            p["leader"],
            p["leader_epoch"],
            p["replicas"],
            p["isr"],
            p.get("elr", []),
            p.get("last_known_elr", []),
        ]
        for p in partitions
    ]


_PARTITION_HEADINGS = ("TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "ELR", "LKELR")


def render_topics(topics: Sequence[dict[str, Any]]) -> str:
    rows = [[t["name"], t["topic_id"], len(t["partitions"])] for t in topics]
    return table(rows, ("NAME", "TOPIC ID", "PARTITIONS"))


def render_topic(topic: dict[str, Any]) -> str:
    configs = ", ".join(f"{k}={v}" for k, v in sorted(topic.get("configs", {}).items()))
    header = f"{topic['name']}  id {topic['topic_id']}  configs: {configs or '(defaults)'}"
    return (
        header
        + "\n"
        + table(_partition_rows(topic["name"], topic["partitions"]), _PARTITION_HEADINGS)
    )


def render_brokers(brokers: Sequence[dict[str, Any]]) -> str:
    rows = [
        [
            b["id"],
            b["epoch"],
            b["fenced"],
            b["in_controlled_shutdown"],
            b.get("rack"),
            b["listeners"],
        ]
        for b in brokers
    ]
    return table(rows, ("ID", "EPOCH", "FENCED", "SHUTTING DOWN", "RACK", "LISTENERS"))


def render_quorum(quorum: dict[str, Any]) -> str:
    head = (
        f"leader {quorum['leader_id']}  epoch {quorum['leader_epoch']}  "
        f"high watermark {quorum['high_watermark']}"
    )
    rows = [
        [role, r["id"], r["log_end_offset"], quorum["high_watermark"] - r["log_end_offset"]]
        for role, replicas in (("voter", quorum["voters"]), ("observer", quorum["observers"]))
        for r in replicas
    ]
    return head + "\n" + table(rows, ("ROLE", "ID", "LOG END OFFSET", "LAG"))


def render_partition(partition: dict[str, Any]) -> str:
    rows = _partition_rows(partition["topic"], [partition])
    base = table(rows, _PARTITION_HEADINGS)
    ends = partition.get("log_end_offsets", {})
    return (
        base
        + f"\nhigh watermark {partition.get('high_watermark')}  "
        + f"log start {partition.get('log_start_offset')}  log end offsets "
        + (", ".join(f"{broker}:{offset}" for broker, offset in sorted(ends.items())) or "-")
    )


def render_recovery(recovery: dict[str, Any]) -> str:
    """What an unclean recovery of the partition sees: each replica's log, and the choice."""
    rows = [
        [
            replica["broker"],
            "fenced" if replica["fenced"] else "unfenced",
            "yes" if replica["asked"] else "no",
            replica["last_written_leader_epoch"] if replica["answered"] else "no answer",
            replica["log_end_offset"],
        ]
        for replica in recovery["replicas"]
    ]
    state = (
        f"{recovery['topic']}:{recovery['partition']}  strategy {recovery['strategy']}  "
        f"leader {recovery['leader']}  isr {recovery['isr']}  elr {recovery['elr']}  "
        f"last_known_elr {recovery['last_known_elr']}"
    )
    if recovery["needs_recovery"]:
        choice = (
            f"needs unclean recovery; the best log is replica {recovery['best']}"
            if recovery["best"] is not None
            else "needs unclean recovery; no replica answered"
        )
    else:
        choice = "needs no unclean recovery now"
    headings = ["BROKER", "STATE", "ASKED", "LAST EPOCH", "LOG END"]
    return "\n".join([state, table(rows, headings), choice])


def _behind(progress: dict[str, Any]) -> str:
    behind = progress.get("bytes_behind", {})
    return (
        ",".join(f"{broker}:{'?' if value is None else value}" for broker, value in behind.items())
        or "-"
    )


def render_reassignments(reassignments: Sequence[dict[str, Any]]) -> str:
    """Each reassignment in progress: replicas now, target, and how far behind each replica
    being added is, in bytes ('?': the leader's log view could not be read)."""
    if not reassignments:
        return "no reassignment in progress"
    rows = [
        [
            r["topic"],
            r["partition"],
            r["replicas"],
            r["target"],
            r["adding"],
            r["removing"],
            r["leader"],
            r["isr"],
            _behind(r),
        ]
        for r in reassignments
    ]
    headings = (
        "TOPIC",
        "PARTITION",
        "REPLICAS",
        "TARGET",
        "ADDING",
        "REMOVING",
        "LEADER",
        "ISR",
        "BYTES BEHIND",
    )
    return table(rows, headings)


def render_started(answer: dict[str, Any]) -> str:
    lines = [f"started {m['topic']}:{m['partition']} -> {m['replicas']}" for m in answer["started"]]
    lines += [
        f"refused {r['topic']}:{r['partition']}: {r['error']} {r['message'] or ''}".rstrip()
        for r in answer["refused"]
    ]
    throttle = answer.get("throttle_bytes_per_sec")
    if throttle is not None:
        lines.append(f"replication throttle {'removed' if throttle == 0 else f'{throttle} B/s'}")
    return "\n".join(lines)


def render_plan(plan: dict[str, Any]) -> str:
    """The moves of a rebalance or drain plan and each broker's counts before and after."""
    moves = table(
        [[m["topic"], m["partition"], m["from"], m["to"]] for m in plan["moves"]],
        ("TOPIC", "PARTITION", "FROM", "TO"),
    )
    brokers = table(
        [
            [
                b["broker"],
                b["replicas_before"],
                b["replicas_after"],
                b["leaders_before"],
                b["leaders_after"],
            ]
            for b in plan["brokers"]
        ],
        ("BROKER", "REPLICAS", "AFTER", "PREFERRED LEADERS", "AFTER"),
    )
    summary = f"{len(plan['moves'])} partitions change, {plan['replicas_moved']} replicas move" + (
        "" if plan["balanced"] else " (counts cannot all be evened: rack spread)"
    )
    return "\n".join([moves, "", brokers, "", summary, plan["detail"]])


# The columns of `kraft events`; the other fields of an event are its details.
_EVENT_COLUMNS = ("time", "type", "topic", "partition")


def _event_details(event: dict[str, Any]) -> str:
    """The fields this event has: the API answers every event with every type's fields, null
    (or false, empty) where they do not apply."""
    return ", ".join(
        f"{key}={value}"
        for key, value in sorted(event.items())
        if key not in _EVENT_COLUMNS and value is not None and value is not False and value != []
    )


def render_events(events: Sequence[dict[str, Any]]) -> str:
    rows = [
        [e.get("time"), e.get("type"), e.get("topic"), e.get("partition"), _event_details(e)]
        for e in events
    ]
    return table(rows, ("TIME", "TYPE", "TOPIC", "PARTITION", "DETAILS"))


# -- the commands -----------------------------------------------------------------------------


def _key_values(items: Sequence[str], flag: str) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, separator, value = item.partition("=")
        if not separator or not key:
            raise ValueError(f"{flag} expects KEY=VALUE, got {item!r}")
        pairs[key.strip()] = value.strip()
    return pairs


def _topic_partition(text: str) -> dict[str, object]:
    topic, separator, partition = text.rpartition(":")
    if not separator or not topic or not partition.isdigit():
        raise ValueError(f"expected TOPIC:PARTITION, got {text!r}")
    return {"topic": topic, "partition": int(partition)}


Handler = Callable[[AdminApi, argparse.Namespace], tuple[object, Callable[[Any], str]]]


def _topics(api: AdminApi, args: argparse.Namespace) -> tuple[object, Callable[[Any], str]]:
    action = args.topics_action
    if action == "list":
        return api.call("GET", "/v1/topics"), render_topics
    if action == "describe":
        return api.call("GET", f"/v1/topics/{args.name}"), render_topic
    if action == "create":
        body = {
            "name": args.name,
            "partitions": args.partitions,
            "replication_factor": args.replication_factor,
            "configs": _key_values(args.config, "--config"),
        }
        return api.call("POST", "/v1/topics", body), render_topic
    if action == "delete":
        api.call("DELETE", f"/v1/topics/{args.name}")
        return {"deleted": args.name}, lambda answer: f"deleted {answer['deleted']}"
    changes = _key_values(args.set, "--set")
    if not changes and not args.delete and args.partitions is None:
        raise ValueError("topics alter needs --set, --delete or --partitions")
    if changes or args.delete:
        api.call(
            "PATCH", f"/v1/topics/{args.name}/configs", {"set": changes, "delete": args.delete}
        )
    if args.partitions is not None:
        api.call("POST", f"/v1/topics/{args.name}/partitions", {"count": args.partitions})
    return api.call("GET", f"/v1/topics/{args.name}"), render_topic


def _partitions(api: AdminApi, args: argparse.Namespace) -> tuple[object, Callable[[Any], str]]:
    if args.partition is not None:
        answer = api.call("GET", f"/v1/topics/{args.topic}/partitions/{args.partition}")
        return answer, render_partition
    topic = api.call("GET", f"/v1/topics/{args.topic}")
    return topic["partitions"], lambda partitions: table(
        _partition_rows(args.topic, partitions), _PARTITION_HEADINGS
    )


def _elect(api: AdminApi, args: argparse.Namespace) -> tuple[object, Callable[[Any], str]]:
    body = {"type": args.type, "partitions": [_topic_partition(p) for p in args.partitions]}
    return api.call("POST", "/v1/elections", body), lambda answer: json.dumps(answer, indent=2)


def _recover(api: AdminApi, args: argparse.Namespace) -> tuple[object, Callable[[Any], str]]:
    target = _topic_partition(args.partition)
    if args.leader is None:
        path = f"/v1/topics/{target['topic']}/partitions/{target['partition']}/recovery"
        return api.call("GET", path), render_recovery
    return api.call("POST", "/v1/recoveries", {**target, "leader": args.leader}), render_topic


def _assignment(text: str) -> dict[str, object]:
    target, separator, brokers = text.partition("=")
    if not separator or not brokers:
        raise ValueError(f"expected TOPIC:PARTITION=B1,B2,..., got {text!r}")
    try:
        replicas = [int(broker) for broker in brokers.split(",")]
    except ValueError:
        raise ValueError(f"broker ids are integers: {text!r}") from None
    return {**_topic_partition(target), "replicas": replicas}


def _reassign(api: AdminApi, args: argparse.Namespace) -> tuple[object, Callable[[Any], str]]:
    if args.reassign_action == "list":
        return api.call("GET", "/v1/reassignments"), render_reassignments
    if args.reassign_action == "cancel":
        target = _topic_partition(args.partition)
        answer = api.call("DELETE", f"/v1/reassignments/{target['topic']}/{target['partition']}")
        return (
            answer,
            lambda p: f"cancelled: {target['topic']}:{target['partition']} back on {p['replicas']}",
        )
    body: dict[str, object] = {"partitions": [_assignment(a) for a in args.assignments]}
    if args.throttle is not None:
        body["throttle_bytes_per_sec"] = args.throttle
    return api.call("POST", "/v1/reassignments", body), render_started


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _wait_for_reassignments(api: AdminApi, deadline: float, poll_s: float) -> None:
    """Shows the reassignments in progress until none remains; AdminError after `deadline`."""
    while True:
        moving = api.call("GET", "/v1/reassignments")
        if not moving:
            return
        _progress(render_reassignments(moving))
        if time.monotonic() >= deadline:
            raise AdminError(-1, "timed_out", f"{len(moving)} reassignments still in progress")
        time.sleep(poll_s)


def _unpreferred(api: AdminApi) -> list[str]:
    return [
        f"{topic['name']}:{p['partition']}"
        for topic in api.call("GET", "/v1/topics")
        for p in topic["partitions"]
        if p["leader"] != p["replicas"][0] and p["replicas"][0] in p["isr"]
    ]


def _rebalance(api: AdminApi, args: argparse.Namespace) -> tuple[object, Callable[[Any], str]]:
    body: dict[str, object] = {"dry_run": not args.execute}
    if args.throttle is not None:
        body["throttle_bytes_per_sec"] = args.throttle
    plan = api.call("POST", "/v1/rebalance", body)
    if not plan["started"]:
        return plan, render_plan
    _progress(render_plan(plan))
    deadline = time.monotonic() + args.timeout
    _wait_for_reassignments(api, deadline, args.poll)
    # The node that answered elects the preferred leaders once the moves complete.
    while unpreferred := _unpreferred(api):
        if time.monotonic() >= deadline:
            raise AdminError(-1, "timed_out", f"not led by their preferred replica: {unpreferred}")
        _progress(f"waiting for the preferred leaders of {', '.join(unpreferred)}")
        time.sleep(args.poll)
    return (
        plan,
        lambda plan: (
            f"done: {plan['replicas_moved']} replicas moved, no reassignment remains and the "
            "preferred leaders lead"
        ),
    )


def render_acls(acls: Sequence[dict[str, Any]]) -> str:
    rows = [
        [
            a["permission"],
            a["principal"],
            a["host"],
            a["operation"],
            a["resource_type"],
            a["resource_name"],
            a["pattern_type"],
        ]
        for a in acls
    ]
    headings = ("PERMISSION", "PRINCIPAL", "HOST", "OPERATION", "RESOURCE", "NAME", "PATTERN")
    return table(rows, headings)


_ACL_FIELDS = (
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission",
)


def _acls(api: AdminApi, args: argparse.Namespace) -> tuple[object, Callable[[Any], str]]:
    given = {
        name: value for name in _ACL_FIELDS if (value := getattr(args, name, None)) is not None
    }
    if args.acls_action == "list":
        return api.call("GET", "/v1/acls"), render_acls
    if args.acls_action == "add":
        missing = [
            f"--{name.replace('_', '-')}"
            for name in ("resource_type", "resource_name", "principal", "operation")
            if name not in given
        ]
        if missing:
            raise ValueError(f"acls add needs {', '.join(missing)}")
        return api.call("POST", "/v1/acls", given), lambda acl: render_acls([acl])
    return api.call("DELETE", "/v1/acls", given), render_acls


def _brokers(api: AdminApi, args: argparse.Namespace) -> tuple[object, Callable[[Any], str]]:
    if args.brokers_action != "remove":
        return api.call("GET", "/v1/brokers"), render_brokers
    broker = args.id
    plan = api.call("POST", f"/v1/brokers/{broker}/drain")
    _progress(render_plan(plan))
    deadline = time.monotonic() + args.timeout
    while hosted := [
        f"{topic['name']}:{p['partition']}"
        for topic in api.call("GET", "/v1/topics")
        for p in topic["partitions"]
        if broker in p["replicas"]
    ]:
        if time.monotonic() >= deadline:
            raise AdminError(-1, "timed_out", f"broker {broker} still hosts {hosted}")
        moving = api.call("GET", "/v1/reassignments")
        _progress(render_reassignments(moving) if moving else f"broker {broker} hosts {hosted}")
        time.sleep(args.poll)
    api.call("DELETE", f"/v1/brokers/{broker}")
    return {"removed": broker}, lambda answer: f"broker {answer['removed']} drained and removed"


def render_users(users: Sequence[dict[str, Any]]) -> str:
    return table(
        [
            [user["name"], credential["mechanism"], credential["iterations"]]
            for user in users
            for credential in user["credentials"]
        ],
        ("USER", "MECHANISM", "ITERATIONS"),
    )


def _users(api: AdminApi, args: argparse.Namespace) -> tuple[object, Callable[[Any], str]]:
    action = args.users_action
    if action == "list":
        return api.call("GET", "/v1/users"), render_users
    if action == "add":
        # Prompted when not given, so that it stays out of the shell's history.
        password = args.password or getpass.getpass(f"password of {args.name}: ")
        body = {
            "name": args.name,
            "mechanism": args.mechanism,
            "password": password,
            "iterations": args.iterations,
        }
        return api.call("POST", "/v1/users", body), lambda user: render_users([user])
    path = f"/v1/users/{urllib.parse.quote(args.name, safe='')}"
    if args.mechanism:
        path += f"?mechanism={args.mechanism}"
    api.call("DELETE", path)
    return {"deleted": args.name}, lambda answer: f"deleted {answer['deleted']}"


COMMANDS: dict[str, Handler] = {
    "topics": _topics,
    "users": _users,
    "brokers": _brokers,
    "quorum": lambda api, _: (api.call("GET", "/v1/quorum"), render_quorum),
    "partitions": _partitions,
    "elect": _elect,
    "recover": _recover,
    "reassign": _reassign,
    "rebalance": _rebalance,
    "events": lambda api, _: (api.call("GET", "/v1/events"), render_events),
    "acls": _acls,
}


def _common_options(*, with_defaults: bool, password_flag: bool = True) -> argparse.ArgumentParser:
    """The options every operator command takes. A subcommand of a command that has them
    takes them `with_defaults` False: argparse lets a subparser's defaults overwrite what the
    command's own options parsed. Without `password_flag` the admin password is only
    `--admin-password` (`users add` has its own `--password`, the new user's)."""

    def default(value: object) -> object:
        return value if with_defaults else argparse.SUPPRESS

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--admin",
        "--admin-url",
        dest="admin",
        default=default(os.environ.get("KRAFT_ADMIN_URL", DEFAULT_ADMIN_URL)),
        help="a node's admin API, http:// or https:// (default %(default)s, or KRAFT_ADMIN_URL)",
    )
    common.add_argument(
        "--token",
        default=default(os.environ.get("KRAFT_ADMIN_TOKEN")),
        help="the node's admin.token, sent as a bearer token (or KRAFT_ADMIN_TOKEN)",
    )
    common.add_argument(
        "--user",
        "--admin-user",
        dest="admin_user",
        default=default(os.environ.get("KRAFT_ADMIN_USER")),
        help="a SASL user to authenticate as, with HTTP Basic over https (or KRAFT_ADMIN_USER)",
    )
    password_flags = ("--admin-password", "--password") if password_flag else ("--admin-password",)
    common.add_argument(
        *password_flags,
        dest="admin_password",
        default=default(os.environ.get("KRAFT_ADMIN_PASSWORD")),
        help="the user's password (better: KRAFT_ADMIN_PASSWORD; prompted for on a terminal)",
    )
    common.add_argument(
        "--cafile",
        default=default(os.environ.get("KRAFT_ADMIN_CAFILE")),
        help="PEM file of the CA that signed an https admin listener (or KRAFT_ADMIN_CAFILE)",
    )
    common.add_argument(
        "--json", action="store_true", default=default(False), help="print the API's JSON"
    )
    return common


def add_admin_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the operator commands on `kraft`'s subcommand parser."""
    common = _common_options(with_defaults=True)

    topics = commands.add_parser("topics", help="list, describe, create, alter, delete topics")
    actions = topics.add_subparsers(dest="topics_action", required=True)
    actions.add_parser("list", parents=[common])
    for name in ("describe", "delete"):
        actions.add_parser(name, parents=[common]).add_argument("name")
    create = actions.add_parser("create", parents=[common])
    create.add_argument("name")
    create.add_argument("--partitions", type=int, default=-1, help="default: num.partitions")
    create.add_argument(
        "--replication-factor", type=int, default=-1, help="default: default.replication.factor"
    )
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    alter = actions.add_parser("alter", parents=[common])
    alter.add_argument("name")
    alter.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    alter.add_argument("--delete", action="append", default=[], metavar="KEY")
    alter.add_argument("--partitions", type=int, help="grow the topic to this many partitions")

    users = commands.add_parser("users", help="list, add, delete SASL users (SCRAM)")
    users_actions = users.add_subparsers(dest="users_action", required=True)
    users_actions.add_parser("list", parents=[common])
    add = users_actions.add_parser(
        "add", parents=[_common_options(with_defaults=True, password_flag=False)]
    )
    add.add_argument("name")
    add.add_argument(
        "--mechanism", choices=("SCRAM-SHA-256", "SCRAM-SHA-512"), default="SCRAM-SHA-512"
    )
    add.add_argument("--password", help="prompted for when not given")
    add.add_argument("--iterations", type=int, default=4096, help="4096..16384")
    delete = users_actions.add_parser("delete", parents=[common])
    delete.add_argument("name")
    delete.add_argument(
        "--mechanism",
        choices=("SCRAM-SHA-256", "SCRAM-SHA-512"),
        help="delete only this credential (default: every one)",
    )

    waiting = argparse.ArgumentParser(add_help=False)
    waiting.add_argument(
        "--timeout", type=float, default=3600.0, help="give up waiting after this many seconds"
    )
    waiting.add_argument("--poll", type=float, default=2.0, help="seconds between looks")
    brokers = commands.add_parser(
        "brokers", parents=[common], help="the registered brokers; remove one"
    )
    brokers_actions = brokers.add_subparsers(dest="brokers_action")
    remove = brokers_actions.add_parser(
        "remove",
        # Without defaults of its own, so options given before `remove` (to `brokers`) stay.
        parents=[_common_options(with_defaults=False), waiting],
        help="drain a broker, wait until it hosts no replica, then unregister it",
    )
    remove.add_argument("id", type=int)
    commands.add_parser("quorum", parents=[common], help="the controller quorum")
    partitions = commands.add_parser("partitions", help="partition replication state")
    describe = partitions.add_subparsers(dest="partitions_action", required=True).add_parser(
        "describe", parents=[common]
    )
    describe.add_argument("topic")
    describe.add_argument("partition", type=int, nargs="?")
    elect = commands.add_parser("elect", parents=[common], help="elect leaders")
    elect.add_argument("type", choices=("preferred", "unclean"))
    elect.add_argument("partitions", nargs="+", metavar="TOPIC:PARTITION")
    recover = commands.add_parser(
        "recover",
        parents=[common],
        help="show a partition's unclean recovery (each replica's log), or elect --leader",
    )
    recover.add_argument("partition", metavar="TOPIC:PARTITION")
    recover.add_argument(
        "--leader",
        type=int,
        metavar="BROKER",
        help="elect this replica as the unclean leader (a potential data-loss event)",
    )
    reassign = commands.add_parser("reassign", help="partition reassignments")
    reassign_actions = reassign.add_subparsers(dest="reassign_action", required=True)
    reassign_actions.add_parser("list", parents=[common])
    start = reassign_actions.add_parser("start", parents=[common])
    start.add_argument("assignments", nargs="+", metavar="TOPIC:PARTITION=B1,B2,...")
    start.add_argument(
        "--throttle",
        type=int,
        metavar="BYTES",
        help="set the cluster-wide replication throttle, bytes/s (0 removes it)",
    )
    cancel = reassign_actions.add_parser("cancel", parents=[common])
    cancel.add_argument("partition", metavar="TOPIC:PARTITION")
    rebalance = commands.add_parser(
        "rebalance",
        parents=[common, waiting],
        help="plan (or with --execute, run) the moves that even replicas and leaders",
    )
    rebalance.add_argument(
        "--execute", action="store_true", help="start the moves and wait for them"
    )
    rebalance.add_argument(
        "--throttle",
        type=int,
        metavar="BYTES",
        help="replication throttle while moving, bytes/s (removed once they complete)",
    )
    commands.add_parser("events", parents=[common], help="state changes and data-loss events")
    acls = commands.add_parser("acls", help="list, add and delete ACLs")
    acl_fields = argparse.ArgumentParser(add_help=False)
    acl_fields.add_argument(
        "--resource-type", type=str.upper, help="TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID"
    )
    acl_fields.add_argument("--resource-name", help="the CLUSTER is kafka-cluster; * is every one")
    acl_fields.add_argument(
        "--pattern-type", type=str.upper, help="LITERAL (default) or PREFIXED; MATCH to delete"
    )
    acl_fields.add_argument("--principal", help="User:NAME, or User:* for everyone")
    acl_fields.add_argument("--host", help="the client's address, or * (default)")
    acl_fields.add_argument("--operation", type=str.upper, help="READ, WRITE, DESCRIBE, ALL, ...")
    acl_fields.add_argument("--permission", type=str.upper, help="ALLOW (default) or DENY")
    acls_actions = acls.add_subparsers(dest="acls_action", required=True)
    acls_actions.add_parser("list", parents=[common])
    acls_actions.add_parser("add", parents=[common, acl_fields])
    acls_actions.add_parser(
        "delete", parents=[common, acl_fields], help="delete every ACL the fields given match"
    )


def _admin_api(args: argparse.Namespace) -> AdminApi:
    """The client the options describe; the password prompted for when a user is given
    without one on a terminal."""
    password = args.admin_password
    if args.admin_user and password is None and sys.stdin.isatty():
        password = getpass.getpass(f"admin password of {args.admin_user}: ")
    return AdminApi(
        args.admin, args.token, user=args.admin_user, password=password, cafile=args.cafile
    )


def run_admin_command(args: argparse.Namespace) -> int:
    """Run one operator command; its exit status."""
    try:
        api = _admin_api(args)
        answer, render = COMMANDS[args.command](api, args)
    except ValueError as error:
        print(f"kraft {args.command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except AdminError as error:
        print(f"kraft {args.command}: {error}", file=sys.stderr)
        return EXIT_UNREACHABLE if error.status == 0 else EXIT_REFUSED
    print(json.dumps(answer, indent=2) if args.json else render(answer))
    return 0
