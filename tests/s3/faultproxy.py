#!/usr/bin/env python3
"""faultproxy.py - an HTTP proxy in front of the test radosgw that breaks
answers on purpose, for tests/s3/t1480-s3-hostile-server.sh.

usage: faultproxy.py PORTFILE UPSTREAM_PORT MODEFILE
Listens on a free port of 127.0.0.1 (written to PORTFILE) and forwards
every request to 127.0.0.1:UPSTREAM_PORT unchanged (the Host header too,
so SigV4 signatures still match).  MODEFILE holds the fault, read on every
request:
  pass          forward as is
  garble-get    GET of a chunk object: the body with one byte flipped
  garble-first  the same, but only the first GET of each object
  nosuchbucket  GET of a chunk object: 404 NoSuchBucket (not retried)
  html404       GET of a chunk object: a plain HTML 404 (no S3 error code)
  list-loop     ListObjectsV2: always truncated, always the same token
  list-cycle    ListObjectsV2: the real listing cut in two pages whose
                continuation tokens cycle: first page -> A (second page)
                -> B (the first page again) -> A ...
  meta-500-big  GET of meta/catalog.db: HTTP 500 with a 100 MB body, the
                first 3 times in this mode, then forwarded
  meta-cut-first  GET of meta/catalog.db: the first in this mode answered
                200 with half its body, then the connection closed
  list-500      ListObjectsV2: HTTP 500 (retried until the budget is spent)
  no-conditional  a PUT with If-None-Match: HTTP 501 NotImplemented (a
                server without conditional writes)
  cond-412-conflict  a PUT with If-None-Match: HTTP 412 whose code is
                ConditionalRequestConflict (retried, and yet "taken": a
                broken server's answer that is never a result)
  list-error-200  ListObjectsV2: HTTP 200 with an S3 error document
                (<Error>) for a body, not the answer asked for
  delete-error-200  the same for DeleteObjects (both with the code
                AccessDenied: not a transient failure, so not retried)
  error-200-first  the first ListObjectsV2 in this mode answered 200 with
                an <Error> InternalError, the first DeleteObjects 200 with
                an <Error> SlowDown (transient: a retry gets the answer);
                each adds an "error-200-sent" line to MODEFILE.hits
  list-error-200-always  every ListObjectsV2: 200 with an <Error>
                ServiceUnavailable
  list-empty-cycle  ListObjectsV2: empty pages (no key), always truncated,
                whose continuation tokens cycle: first page -> A -> B -> A ...
  list-empty-first  ListObjectsV2: 5 empty truncated pages (tokens E1 ..
                E5, each new) before the real listing (a sane server may
                send empty pages)
  list-size:VALUE  ListObjectsV2: the real listing with the first entry's
                <Size> replaced by VALUE (negative, not a number, too big)
  late-503-head  every HEAD forwarded 0.1 s late; the first one seen in
                this mode and the first one that comes 3 s or more after it
                answered 503 (late-503's clock, for HEADs)
  forbid-get-head  every GET that is not a listing, and every HEAD: HTTP
                403 AccessDenied (a credential without read rights)
  forbid-chunks  every GET and HEAD of a chunk object: HTTP 403
                AccessDenied (meta objects and listings are forwarded)
  forbid-put    every PUT, and every POST (DeleteObjects): HTTP 403
                AccessDenied (a credential with read rights only)
  claim-503     GET of meta/store-id (the prefix's claim): HTTP 503
                SlowDown, every time
  missing-403-head-503  missing-403, and every HEAD of a chunk object
                answered 503 (the check after a 403 cannot be made)
  forbid-after-404  GET of a chunk object: forwarded until one is answered
                404, then every one, and every HEAD of one, HTTP 403
                AccessDenied (a credential that stops working part way;
                S3 asks the same right, s3:GetObject, for a HEAD)
  list-bomb     ListObjectsV2: a short answer whose DTD makes one key 100 MB
                once its entities are expanded ("billion laughs")
  late-503      PUT of a chunk object: forwarded 0.1 s late (a slow link);
                the first one seen in this mode and the first one that
                comes 3 s or more after it are answered 503 SlowDown
  delete-key-slowdown-first  the first DeleteObjects in this mode is
                forwarded, and its answer gets a per-key <Error> SlowDown
                for the first key asked (as if that key had not gone);
                adds "delete-key-error KEY" to MODEFILE.hits.  Every later
                DeleteObjects adds "delete-asked KEY..." (the keys it asks)
  delete-key-slowdown-always  the same for every DeleteObjects
  delete-key-slowdown-dup-first  as delete-key-slowdown-first, the
                <Error> for that key given twice in the answer
  delete-key-slowdown-but-last  every DeleteObjects asking for more than
                one key is forwarded, and its answer gets a per-key
                SlowDown for every key but the last (each try deletes one
                more); adds "delete-round N" (N keys asked) to
                MODEFILE.hits
  missing-403   GET or HEAD of a chunk object the radosgw answers 404: HTTP
                403 AccessDenied instead, as AWS answers a credential
                without the ListBucket right for a missing key (a HEAD
                too: it asks the same s3:GetObject right)
Each request answered with a fault adds a line to MODEFILE.hits.
"""
import http.client
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORTFILE, UPSTREAM, MODEFILE = sys.argv[1], int(sys.argv[2]), sys.argv[3]
garbled = set()  # paths garble-first has garbled once
late = {"first": None, "done": False}  # late-503's clock and its late 503
late_lock = threading.Lock()
meta_cut = [1]  # meta-cut-first: the cut still to make
meta_500 = [1, 1, 1]  # meta-500-big: the 500s still to answer
cycle = {}  # list-cycle: the real listing's answer, fetched once
error_200_done = set()  # error-200-first: the kinds of request answered so
seen_404 = []  # forbid-after-404: a chunk GET was answered 404
delete_key_done = []  # delete-key-slowdown-first: the key already failed


def list_bomb():
    """A listing of one object whose key is &e6;: 10 ** 8 bytes."""
    ents = ['<!ENTITY e0 "%s">' % ("a" * 100)]
    for i in range(1, 7):
        ents.append('<!ENTITY e%d "%s">' % (i, ("&e%d;" % (i - 1)) * 10))
    return ('<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE ListBucketResult [%s]>'
            '<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>&e6;</Key>'
            '<LastModified>2026-01-01T00:00:00.000Z</LastModified><Size>1</Size></Contents>'
            '</ListBucketResult>' % "".join(ents)).encode()


def late_503_due():
    """late-503: whether this chunk PUT is the one to answer 503."""
    with late_lock:
        now = time.monotonic()
        if late["first"] is None:
            late["first"] = now
            return True
        if late["done"] or now - late["first"] < 3:
            return False
        late["done"] = True
        return True


def fault():
    try:
        with open(MODEFILE) as f:
            return f.read().strip()
    except OSError:
        return "pass"


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def forward(self):
        mode = fault()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        chunk_get = self.command == "GET" and "/chunks/" in self.path and "?" not in self.path
        listing = self.command == "GET" and "list-type=2" in self.path
        put_cond = self.command == "PUT" and self.headers.get("If-None-Match") is not None
        chunk_put = self.command == "PUT" and "/chunks/" in self.path
        if chunk_put and mode == "late-503":
            time.sleep(0.1)
            if late_503_due():
                with open(MODEFILE + ".hits", "a") as f:
                    f.write("%s %s %s\n" % (mode, self.command, self.path))
                return self.answer(503, b"<Error><Code>SlowDown</Code></Error>",
                                   [("Content-Type", "application/xml")])
        if self.command == "HEAD" and mode == "late-503-head":
            time.sleep(0.1)
            if late_503_due():
                with open(MODEFILE + ".hits", "a") as f:
                    f.write("%s %s %s\n" % (mode, self.command, self.path))
                return self.answer(503, b"")
        if mode == "garble-first" and chunk_get:
            if self.path in garbled:
                mode = "pass"
            garbled.add(self.path)
        if mode != "pass" and (chunk_get or listing or put_cond):
            with open(MODEFILE + ".hits", "a") as f:
                f.write("%s %s %s\n" % (mode, self.command, self.path))
        if put_cond and mode == "no-conditional":
            return self.answer(501, b"<Error><Code>NotImplemented</Code></Error>",
                               [("Content-Type", "application/xml")])
        if put_cond and mode == "cond-412-conflict":
            return self.answer(412, b"<Error><Code>ConditionalRequestConflict</Code></Error>",
                               [("Content-Type", "application/xml")])
        deleting = self.command == "POST" and "delete" in self.path
        if (listing and mode == "list-error-200") or (deleting and mode == "delete-error-200"):
            with open(MODEFILE + ".hits", "a") as f:
                f.write("%s %s %s\n" % (mode, self.command, self.path))
            return self.answer(200, b"<Error><Code>AccessDenied</Code>"
                               b"<Message>not the answer asked for</Message></Error>",
                               [("Content-Type", "application/xml")])
        if mode == "error-200-first" and (listing or deleting):
            kind = "list" if listing else "delete"
            if kind not in error_200_done:
                error_200_done.add(kind)
                with open(MODEFILE + ".hits", "a") as f:
                    f.write("error-200-sent %s %s\n" % (self.command, self.path))
                code = b"InternalError" if listing else b"SlowDown"
                return self.answer(200, b"<Error><Code>" + code + b"</Code>"
                                   b"<Message>try again</Message></Error>",
                                   [("Content-Type", "application/xml")])
        if deleting and mode in ("delete-key-slowdown-first", "delete-key-slowdown-always",
                                 "delete-key-slowdown-dup-first",
                                 "delete-key-slowdown-but-last"):
            return self.delete_key_error(mode, body)
        if mode == "forbid-get-head" and ((self.command == "GET" and not listing) or
                                          self.command == "HEAD"):
            with open(MODEFILE + ".hits", "a") as f:
                f.write("%s %s %s\n" % (mode, self.command, self.path))
            return self.answer(403, b"<Error><Code>AccessDenied</Code></Error>",
                               [("Content-Type", "application/xml")])
        if mode == "missing-403-head-503" and self.command == "HEAD" and "/chunks/" in self.path:
            with open(MODEFILE + ".hits", "a") as f:
                f.write("%s %s %s\n" % (mode, self.command, self.path))
            return self.answer(503, b"")
        if mode == "forbid-chunks" and "/chunks/" in self.path and (chunk_get or
                                                                    self.command == "HEAD"):
            with open(MODEFILE + ".hits", "a") as f:
                f.write("%s %s %s\n" % (mode, self.command, self.path))
            return self.answer(403, b"<Error><Code>AccessDenied</Code></Error>",
                               [("Content-Type", "application/xml")])
        if mode == "forbid-put" and self.command in ("PUT", "POST"):
            with open(MODEFILE + ".hits", "a") as f:
                f.write("%s %s %s\n" % (mode, self.command, self.path))
            return self.answer(403, b"<Error><Code>AccessDenied</Code></Error>",
                               [("Content-Type", "application/xml")])
        if mode == "claim-503" and self.command == "GET" and self.path.endswith("/meta/store-id"):
            with open(MODEFILE + ".hits", "a") as f:
                f.write("%s %s %s\n" % (mode, self.command, self.path))
            return self.answer(503, b"<Error><Code>SlowDown</Code></Error>",
                               [("Content-Type", "application/xml")])
        chunk_head = self.command == "HEAD" and "/chunks/" in self.path
        if (chunk_get or chunk_head) and mode == "forbid-after-404" and seen_404:
            return self.answer(403, b"<Error><Code>AccessDenied</Code></Error>",
                               [("Content-Type", "application/xml")])
        if mode == "list-error-200-always" and listing:
            return self.answer(200, b"<Error><Code>ServiceUnavailable</Code>"
                               b"<Message>try again</Message></Error>",
                               [("Content-Type", "application/xml")])
        meta_get = self.command == "GET" and self.path.endswith("/meta/catalog.db")
        if mode == "meta-500-big" and meta_get and meta_500:
            meta_500.pop()
            with open(MODEFILE + ".hits", "a") as f:
                f.write("%s %s %s\n" % (mode, self.command, self.path))
            return self.answer(500, b"<Error><Code>InternalError</Code>" + b" " * (100 << 20) +
                               b"</Error>", [("Content-Type", "application/xml")])
        if mode == "meta-cut-first" and meta_get and meta_cut:
            meta_cut.pop()
            up = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=60)
            up.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
            r = up.getresponse()
            data = r.read()
            with open(MODEFILE + ".hits", "a") as f:
                f.write("%s %s %s %d\n" % (mode, self.command, self.path, len(data)))
            self.send_response(r.status)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if listing and mode in ("list-empty-cycle", "list-empty-first"):
            return self.list_empty(mode, body)
        if listing and mode == "list-cycle":
            return self.list_cycle(body)
        if listing and mode == "list-bomb":
            return self.answer(200, list_bomb(), [("Content-Type", "application/xml")])
        if listing and mode == "list-500":
            return self.answer(500, b"<Error><Code>InternalError</Code></Error>")
        if chunk_get and mode == "nosuchbucket":
            return self.answer(404, b"<Error><Code>NoSuchBucket</Code></Error>",
                               [("Content-Type", "application/xml")])
        if chunk_get and mode == "html404":
            return self.answer(404, b"<html><body>Not Found</body></html>",
                               [("Content-Type", "text/html")])
        up = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=60)
        up.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
        r = up.getresponse()
        data = r.read()
        if (chunk_get or chunk_head) and r.status == 404 and mode in ("missing-403",
                                                                      "missing-403-head-503"):
            return self.answer(403, b"<Error><Code>AccessDenied</Code>"
                               b"<Message>Access Denied</Message></Error>",
                               [("Content-Type", "application/xml")])
        if chunk_get and r.status == 404 and mode == "forbid-after-404":
            seen_404.append(self.path)
        if chunk_get and r.status == 200 and mode in ("garble-get", "garble-first") and data:
            data = bytearray(data)
            data[len(data) // 2] ^= 0xFF
            data = bytes(data)
        if listing and r.status == 200 and mode == "list-loop":
            data = data.replace(b"<IsTruncated>false</IsTruncated>",
                                b"<IsTruncated>true</IsTruncated>"
                                b"<NextContinuationToken>again</NextContinuationToken>")
        if listing and r.status == 200 and mode.startswith("list-size:"):
            data = re.sub(rb"<Size>[^<]*</Size>", b"<Size>" + mode[10:].encode() + b"</Size>",
                          data, count=1)
        skip = ("content-length", "transfer-encoding", "connection")
        headers = [(k, v) for k, v in r.getheaders() if k.lower() not in skip]
        if self.command == "HEAD":
            self.send_response(r.status)
            for k, v in headers:
                self.send_header(k, v)
            if r.getheader("Content-Length"):
                self.send_header("Content-Length", r.getheader("Content-Length"))
            self.end_headers()
            return
        self.answer(r.status, data, headers)

    def delete_key_error(self, mode, body):
        """delete-key-slowdown-*: see the usage."""
        keys = [k.decode() for k in re.findall(rb"<Key>(.*?)</Key>", body or b"")]
        up = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=60)
        up.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
        r = up.getresponse()
        data = r.read()
        fault_now = mode == "delete-key-slowdown-always" or not delete_key_done
        with open(MODEFILE + ".hits", "a") as f:
            if mode == "delete-key-slowdown-but-last":
                f.write("delete-round %d\n" % len(keys))
                if r.status == 200 and len(keys) > 1:
                    close = data.rindex(b"</DeleteResult>")
                    data = (data[:close] + b"".join(
                        b"<Error><Key>" + k.encode() + b"</Key><Code>SlowDown</Code>"
                        b"<Message>Please reduce your request rate.</Message></Error>"
                        for k in keys[:-1]) + data[close:])
                return self.answer(r.status, data, [("Content-Type", "application/xml")])
            if r.status == 200 and keys and fault_now:
                delete_key_done.append(keys[0])
                f.write("delete-key-error %s\n" % keys[0])
                close = data.rindex(b"</DeleteResult>")
                err = (b"<Error><Key>" + keys[0].encode() +
                       b"</Key><Code>SlowDown</Code><Message>Please reduce your request "
                       b"rate.</Message></Error>")
                if mode == "delete-key-slowdown-dup-first":
                    err += err
                data = data[:close] + err + data[close:]
            else:
                f.write("delete-asked %s\n" % " ".join(keys))
        return self.answer(r.status, data, [("Content-Type", "application/xml")])

    def list_cycle(self, body):
        """list-cycle: pages first -> A -> B -> A ... (B repeats the first)."""
        if "continuation-token=" not in self.path or "data" not in cycle:
            up = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=60)
            up.request(self.command, self.path,
                       body=body, headers=dict(self.headers.items()))
            r = up.getresponse()
            data = r.read()
            if r.status != 200:
                return self.answer(r.status, data)
            cycle["data"] = data
        data = cycle["data"]
        entries = re.findall(rb"<Contents>.*?</Contents>", data, re.S)
        head = re.sub(rb"<Contents>.*?</Contents>", b"", data, flags=re.S)
        head = re.sub(rb"<IsTruncated>.*?</IsTruncated>", b"", head)
        head = re.sub(rb"<NextContinuationToken>.*?</NextContinuationToken>", b"", head)
        half = len(entries) // 2
        if "continuation-token=A" in self.path:
            page, token = entries[half:], b"B"
        else:
            page, token = entries[:half], b"A"
        close = head.rindex(b"</ListBucketResult>")
        out = (head[:close] + b"<IsTruncated>true</IsTruncated><NextContinuationToken>" + token +
               b"</NextContinuationToken>" + b"".join(page) + head[close:])
        return self.answer(200, out, [("Content-Type", "application/xml")])

    def list_empty(self, mode, body):
        """list-empty-cycle and list-empty-first: see the usage."""
        m = re.search(r"continuation-token=([^&]*)", self.path)
        token = m.group(1) if m else ""
        if mode == "list-empty-first" and token == "E5":
            return self.answer(200, cycle["real"], [("Content-Type", "application/xml")])
        if mode == "list-empty-first" and not token:
            up = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=60)
            up.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
            r = up.getresponse()
            data = r.read()
            if r.status != 200:
                return self.answer(r.status, data)
            cycle["real"] = data
        if mode == "list-empty-cycle":
            nxt = "B" if token == "A" else "A"
        else:
            nxt = "E%d" % (int(token[1:]) + 1 if token else 1)
        out = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>'
               "<Name>b</Name><Prefix></Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys>"
               "<IsTruncated>true</IsTruncated><NextContinuationToken>%s"
               "</NextContinuationToken></ListBucketResult>" % nxt).encode()
        return self.answer(200, out, [("Content-Type", "application/xml")])

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = forward


ThreadingHTTPServer.daemon_threads = True
server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
server.serve_forever()
