#!/usr/bin/env python3
"""Feed an oxypipe run from Python, with the standard library only.

This is the producer side of docs/wire-contract.md, written out in full so a
team in another language can follow it step by step. It speaks the NATS
client protocol over a plain socket (no client library), and:

  1. creates the run's record in the key-value bucket oxy_runs (a create:
     it fails when the key exists), or, when the run exists with the same
     announcement, continues it: running the producer again with the same
     --run is a retry, and every payload it sends again bills once;
  2. publishes the announcement on oxy.run.<token>;
  3. waits until a statusworker marked the run ready (it wrote the empty run
     log) or failed (nothing was submitted);
  4. publishes each input line as payload doc "<line number - 1>" on
     oxy.payload.<token>, with the message id "<run>/<doc>/payload/0", waits
     for JetStream's acknowledgement, then publishes the doc's "fed" status
     event (success at data type payload, carrying the payload);
  5. unless --no-wait, waits for the run's completion and prints it as one
     JSON line on stdout; the exit code is 0 when every payload is done.

With --feed instead of --run it feeds a standing feed: no total, no run to
announce. It opens the feed (when --destination is given: runs of at most
--max-payloads payloads or --max-age seconds), publishes each line on
oxy.feed.<feed> with the id "sha256:<hex of the line's compact JSON>" (or the
value of --id-key), so publishing the same payload again, today or next week,
bills once; with --close it closes the feed, and unless --no-wait waits until
every run of the feed completed and prints each completion.

Usage:
  producer.py --nats nats://127.0.0.1:4222 --run my-run-1 \
      --destination results --run-log logs payloads.jsonl
  producer.py --nats nats://127.0.0.1:4222 --feed crawler --max-payloads 1000 \
      --destination results --run-log logs --close payloads.jsonl

A local --destination or --run-log is a folder of the workers (the writers'
and the statusworker's filesystem), not of this machine.
"""

import argparse
import base64
import datetime
import hashlib
import json
import os
import re
import socket
import sys
import time

VERSION = 1  # the envelope version this producer writes
RUNS_BUCKET = "oxy_runs"
# The broker's default message limit is 1 MiB; an envelope adds its fields
# around the payload. A larger line is refused here, before it is sent.
MAX_PAYLOAD_BYTES = 1024 * 1024 - 8 * 1024
# The forms of run ids and feed names (docs/schemas/defs.json).
RUN_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.-]{0,63}$")
FEED_NAME = re.compile(r"^[0-9A-Za-z][0-9A-Za-z-]{0,47}$")
# JetStream's error code for a create whose key exists already.
ERR_WRONG_LAST_SEQUENCE = 10071


class NATSError(Exception):
    pass


class NATS:
    """The few parts of the NATS protocol a producer needs: publish with
    headers and wait for the reply (JetStream acknowledgements and API
    calls)."""

    def __init__(self, url, timeout=10.0):
        host, port = parse_url(url)
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""
        self.inbox = "_INBOX.py%s" % os.urandom(8).hex()
        self.seq = 0
        line = self._line()
        if not line.startswith(b"INFO "):
            raise NATSError("not a NATS server: %r" % line[:80])
        info = json.loads(line[5:])
        if not info.get("headers", False):
            raise NATSError("the server does not support headers")
        connect = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True,
                   "protocol": 1, "lang": "python", "version": "1", "name": "oxypipe-producer.py"}
        self._send(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        while True:
            line = self._line()
            if line == b"PONG":
                break
            if line.startswith(b"-ERR"):
                raise NATSError(line.decode(errors="replace"))
        self._send(("SUB %s.* 1\r\n" % self.inbox).encode())

    def close(self):
        self.sock.close()

    def request(self, subject, data, headers=None):
        """Publishes data on subject and returns the reply (headers, data)."""
        self.seq += 1
        reply = "%s.%d" % (self.inbox, self.seq)
        hdr = "NATS/1.0\r\n"
        for k, v in (headers or {}).items():
            hdr += "%s: %s\r\n" % (k, v)
        hdr = (hdr + "\r\n").encode()
        self._send(("HPUB %s %s %d %d\r\n" % (subject, reply, len(hdr), len(hdr) + len(data))).encode()
                   + hdr + data + b"\r\n")
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            msg = self._next()
            if msg is None:
                continue
            subj, rhdr, rdata = msg
            if subj != reply:
                continue  # a late answer to an earlier request that timed out
            if rhdr.startswith("NATS/1.0 503"):
                raise NATSError("no responders on %s: is JetStream running and the topology ensured?" % subject)
            return rhdr, rdata
        raise NATSError("no reply on %s within %.0fs" % (subject, self.timeout))

    def _next(self):
        line = self._line()
        if line == b"PING":
            self._send(b"PONG\r\n")
            return None
        if line in (b"PONG", b"+OK"):
            return None
        if line.startswith(b"-ERR"):
            raise NATSError(line.decode(errors="replace"))
        parts = line.decode().split(" ")
        if parts[0] == "MSG":  # MSG subject sid [reply] size
            return parts[1], "", self._exact(int(parts[-1]))
        if parts[0] == "HMSG":  # HMSG subject sid [reply] hdr_size total_size
            hlen, total = int(parts[-2]), int(parts[-1])
            body = self._exact(total)
            return parts[1], body[:hlen].decode(errors="replace"), body[hlen:]
        return None

    def _exact(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise NATSError("the server closed the connection")
        self.buf += chunk

    def _send(self, data):
        self.sock.sendall(data)


def parse_url(url):
    rest = url.split("://", 1)[-1].split(",")[0]
    host, _, port = rest.rpartition(":")
    if not host:
        return rest, 4222
    return host, int(port)


def token(run):
    """The run's form in subjects and keys: every '.' becomes '_'."""
    return run.replace(".", "_")


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def js_publish(nc, subject, data, headers=None):
    """Publishes to a stream and returns JetStream's acknowledgement (a dict
    with stream, seq and, for a copy the stream dropped, duplicate)."""
    _, reply = nc.request(subject, data, headers)
    ack = json.loads(reply)
    if "error" in ack:
        err = ack["error"]
        raise NATSError("%s: %s (code %s)" % (subject, err.get("description"), err.get("err_code")), err.get("err_code"))
    return ack


def read_record(nc, run):
    """Returns the run's record in the runs bucket, or None."""
    return read_kv(nc, RUNS_BUCKET, token(run))


def announce(nc, run, total, destination, run_log, origin):
    """Creates the run's record and publishes the announcement. A run that
    exists with the same announcement is continued (a retry); one that
    exists with another is an error."""
    announced = {"v": VERSION, "run": run, "total": total, "final_data_type": "written",
                 "destination": destination, "run_log": run_log, "started_at": now()}
    record = {"v": VERSION, "announced": announced, "state": "announced", "updated_at": announced["started_at"]}
    try:
        js_publish(nc, "$KV.%s.%s" % (RUNS_BUCKET, token(run)), compact(record),
                   {"Nats-Expected-Last-Subject-Sequence": "0"})
    except NATSError as e:
        if len(e.args) < 2 or e.args[1] != ERR_WRONG_LAST_SEQUENCE:
            raise
        existing = read_record(nc, run)
        if existing is None:
            raise
        old = existing["announced"]
        for key in ("total", "destination", "run_log"):
            if old.get(key) != announced[key]:
                raise NATSError("run %s exists with %s %r, not %r: choose another --run"
                                % (run, key, old.get(key), announced[key]))
        print("run %s exists with the same announcement: continuing it" % run, file=sys.stderr)
        announced = old
    js_publish(nc, "oxy.run.%s" % token(run), compact(announced),
               {"Nats-Msg-Id": "%s/announced" % run, "Oxy-Origin": origin})


def wait_state(nc, run, done, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        rec = read_record(nc, run)
        if rec is not None and done(rec["state"]):
            return rec
        if time.monotonic() > deadline:
            raise NATSError("run %s: %s within %.0fs (state %s)" % (run, what, timeout, rec and rec["state"]))
        time.sleep(0.2)


def feed(nc, run, lines, origin):
    """Publishes every payload and, once it is stored, its fed event."""
    actor = origin.split("/", 1)
    actor = {"type": actor[0], "name": actor[1] if len(actor) > 1 else ""}
    duplicates = 0
    for doc, payload in enumerate(lines):
        msg = {"v": VERSION, "run": run, "doc": str(doc), "payload": payload}
        ack = js_publish(nc, "oxy.payload.%s" % token(run), compact(msg),
                         {"Nats-Msg-Id": "%s/%d/payload/0" % (run, doc), "Oxy-Origin": origin})
        duplicates += 1 if ack.get("duplicate") else 0
        event = {"v": VERSION, "run": run, "doc": str(doc), "data_type": "payload", "outcome": "success",
                 "origin": actor, "payload": payload, "time": now()}
        js_publish(nc, "oxy.status.%s" % token(run), compact(event), {"Oxy-Origin": origin})
    return duplicates


FEEDS_BUCKET = "oxy_feeds"


def read_kv(nc, bucket, key):
    """Returns the JSON value of key in a key-value bucket, or None."""
    req = compact({"last_by_subj": "$KV.%s.%s" % (bucket, key)})
    _, reply = nc.request("$JS.API.STREAM.MSG.GET.KV_%s" % bucket, req)
    answer = json.loads(reply)
    if "error" in answer:
        if answer["error"].get("code") == 404:
            return None
        raise NATSError("read %s %s: %s" % (bucket, key, answer["error"].get("description")))
    return json.loads(base64.b64decode(answer["message"]["data"]))


def feed_control(nc, feed, op, origin, **fields):
    msg = {"v": VERSION, "feed": feed, "op": op}
    msg.update({k: v for k, v in fields.items() if v})
    js_publish(nc, "oxy.feedctl.%s" % feed, compact(msg), {"Oxy-Origin": origin})


def feed_payloads(nc, feed, lines, origin, id_key):
    """Publishes every payload on the feed with its id; returns how many the
    broker dropped as copies (the statusworker drops later retries)."""
    duplicates = 0
    for n, payload in enumerate(lines, 1):
        if id_key:
            if not isinstance(payload.get(id_key), str) or not payload[id_key]:
                raise NATSError("input payload %d has no string %r to use as its id" % (n, id_key))
            pid = payload[id_key]
        else:
            pid = "sha256:" + hashlib.sha256(compact(payload)).hexdigest()
        msg = {"v": VERSION, "feed": feed, "id": pid, "payload": payload}
        ack = js_publish(nc, "oxy.feed.%s" % feed, compact(msg),
                         {"Nats-Msg-Id": "%s/%s" % (feed, pid), "Oxy-Origin": origin})
        duplicates += 1 if ack.get("duplicate") else 0
    return duplicates


def wait_feed(nc, feed, timeout):
    """Waits until the feed is closed and each of its runs completed, and
    returns the completions in run order."""
    deadline = time.monotonic() + timeout
    while True:
        rec = read_kv(nc, FEEDS_BUCKET, feed)
        if rec is not None and rec["state"] == "closed":
            done = []
            for r in rec.get("runs", []):
                run = read_record(nc, r["run"])
                if run is None or run["state"] != "completed":
                    break
                done.append(run["completed"])
            else:
                return done
        if time.monotonic() > deadline:
            raise NATSError("feed %s: not closed and completed within %.0fs (state %s)" % (feed, timeout, rec and rec["state"]))
        time.sleep(0.2)


def main_feed(a, lines, nc):
    if a.destination:
        cut = {}
        if a.max_payloads:
            cut["max_payloads"] = a.max_payloads
        if a.max_age:
            cut["max_age"] = int(a.max_age * 1e9)
        if not cut:
            print("producer: opening a feed needs --max-payloads or --max-age", file=sys.stderr)
            return 2
        feed_control(nc, a.feed, "open", a.origin, cut=cut, destination=a.destination, run_log=a.run_log)
    duplicates = feed_payloads(nc, a.feed, lines, a.origin, a.id_key)
    print("published %d payloads on feed %s (%d dropped as copies)" % (len(lines), a.feed, duplicates), file=sys.stderr)
    if a.close:
        feed_control(nc, a.feed, "close", a.origin)
    if a.no_wait or not a.close:
        return 0
    ok = True
    for c in wait_feed(nc, a.feed, a.wait_timeout):
        print(json.dumps(c))
        ok = ok and c["done"] == c["total"]
    return 0 if ok else 1


def read_input(path):
    """The input's payloads, one JSON object per non-empty line. A line that
    is not an object is an error naming the line, before anything is sent."""
    payloads = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            if len(line.encode()) > MAX_PAYLOAD_BYTES:
                raise ValueError("%s line %d: the payload is larger than %d bytes" % (path, n, MAX_PAYLOAD_BYTES))
            try:
                payload = json.loads(line)
            except ValueError as e:
                raise ValueError("%s line %d: not JSON (%s)" % (path, n, e.msg))
            if not isinstance(payload, dict):
                raise ValueError("%s line %d: a payload must be a JSON object" % (path, n))
            payloads.append(payload)
    return payloads


def main():
    p = argparse.ArgumentParser(description="Feed an oxypipe run over NATS (standard library only).")
    p.add_argument("input", help="JSONL file: one WSA payload (a JSON object) per line")
    p.add_argument("--nats", default=os.environ.get("NATS_URL", "nats://127.0.0.1:4222"))
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--run", help="run id: 1-64 letters, digits, '.' or '-'; the same id again continues the run")
    target.add_argument("--feed", help="standing feed name: 1-48 letters, digits or '-'")
    p.add_argument("--destination", help="where the writers put the results (required with --run; with --feed it opens the feed)")
    p.add_argument("--max-payloads", type=int, default=0, help="feed: cut a run at this many payloads")
    p.add_argument("--max-age", type=float, default=0, help="feed: cut a run this many seconds after it opened")
    p.add_argument("--id-key", default="", help="feed: the payload field that is its id (default: the payload's SHA-256)")
    p.add_argument("--close", action="store_true", help="feed: close the feed after publishing")
    p.add_argument("--run-log", default="", help="where the statusworker writes the run log")
    p.add_argument("--origin", default="producer/%s" % socket.gethostname(), help="who publishes, as type/name")
    p.add_argument("--ready-timeout", type=float, default=30, help="seconds to wait for a statusworker")
    p.add_argument("--wait-timeout", type=float, default=600, help="seconds to wait for the run's completion")
    p.add_argument("--no-wait", action="store_true", help="return once everything is published")
    a = p.parse_args()
    try:
        lines = read_input(a.input)
    except (OSError, ValueError) as e:
        print("producer: %s" % e, file=sys.stderr)
        return 2
    if a.run and (not RUN_ID.match(a.run) or a.run == "unknown"):
        print("producer: --run %r: want 1-64 letters, digits, '.' or '-', starting with a letter or digit" % a.run, file=sys.stderr)
        return 2
    if a.feed and not FEED_NAME.match(a.feed):
        print("producer: --feed %r: want 1-48 letters, digits or '-', starting with a letter or digit" % a.feed, file=sys.stderr)
        return 2
    if a.run and not a.destination:
        print("producer: --run needs --destination", file=sys.stderr)
        return 2
    nc = NATS(a.nats)
    try:
        if a.feed:
            return main_feed(a, lines, nc)
        announce(nc, a.run, len(lines), a.destination, a.run_log, a.origin)
        rec = wait_state(nc, a.run, lambda s: s != "announced", a.ready_timeout, "no statusworker marked it ready")
        if rec["state"] == "failed":
            print("producer: run %s failed before it started: %s" % (a.run, rec.get("reason")), file=sys.stderr)
            return 1
        duplicates = feed(nc, a.run, lines, a.origin)
        print("published %d payloads of run %s (%d already stored)" % (len(lines), a.run, duplicates), file=sys.stderr)
        if a.no_wait:
            return 0
        rec = wait_state(nc, a.run, lambda s: s == "completed", a.wait_timeout, "not completed")
        completed = rec["completed"]
        print(json.dumps(completed))
        return 0 if completed["done"] == completed["total"] else 1
    except NATSError as e:
        print("producer: %s" % e.args[0], file=sys.stderr)
        return 1
    finally:
        nc.close()


if __name__ == "__main__":
    sys.exit(main())
